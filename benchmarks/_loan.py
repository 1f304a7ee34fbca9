"""Shared set-up of the HARE benchmarks: the Loan world, its decision model, rejected people."""

from __future__ import annotations

import numpy as np
import torch

from simstudy.policies.base import RecourseContext
from simstudy.population import ActionabilityProfiles, CostProfile, RankingSampler
from simstudy.rng import entity_uniforms, generator
from simstudy.world.data import sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache
from simstudy.world.loan import LOAN_ROLES, LoanSCM

__all__ = ["loan_setup"]


def loan_setup(n_people: int, seed: int = 0, n_samples: int = 20000):
    """``(context, x, ids, profiles)`` for the first ``n_people`` rejected deployment applicants.

    Profiles: uniform rankings with a uniform number of actionable features, linear cost weights.
    """
    world = LoanSCM()
    data = sample_world_data(world, n_samples, generator(seed, "world"))
    model, _ = ModelCache().decision_model(data, DecisionConfig(), seed)
    for p in model.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        rejected = (~model.approves(data.x_test)).nonzero().squeeze(1)[:n_people]
    ids = rejected.numpy().astype(np.int64)
    features = LOAN_ROLES.actionable
    scores, levels = RankingSampler().sample(features,
                                             entity_uniforms(seed, "actionability", ids, 2))
    weights = CostProfile("linear").weights(scores, levels)
    profiles = ActionabilityProfiles(features, scores, levels, weights)
    context = RecourseContext(world, model, data, seed)
    return context, data.x_test[rejected].numpy(), ids, profiles
