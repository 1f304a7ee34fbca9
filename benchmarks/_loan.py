"""Shared set-up of the HARE benchmarks: the Loan world, its decision model, rejected people."""

from __future__ import annotations

import numpy as np
import torch

from simstudy.core.rng import entity_uniforms, generator
from simstudy.metrics import evaluate_recourse
from simstudy.people import People, PeopleSpec
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.primitives.space import ScaledSpace
from simstudy.world.data import sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache
from simstudy.world.loan import LOAN_ROLES, LoanSCM

__all__ = ["loan_setup", "people_for", "truth"]


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
    weights = CostProfile(shape="linear").weights(scores, levels)
    profiles = ActionabilityProfiles(features, scores, levels, weights)
    context = RecourseContext(world, model, data, seed)
    return context, data.x_test[rejected].numpy(), ids, profiles


def people_for(context, x, ids, profiles, seed: int = 0, **users) -> People:
    """The simulated people behind ``loan_setup``'s applicants (``users``: UserSettings fields)."""
    return People.from_spec(
        PeopleSpec.model_validate({"users": users}),
        x, ids, seed, context.feature_names, context.world.roles.actionable,
        ScaledSpace.from_context(context), reported=profiles,
        immutable=context.world.roles.immutable)


def truth(context, people: People, rec) -> dict[str, np.ndarray]:
    """A recourse measured against the people's hidden truth, as in the run tables."""
    ev = evaluate_recourse(context.world, context.model, people.x, rec, people.reported,
                           context.feature_range)
    return people.truth_columns(ev["x_cf"], ev["found"], rec.intervened & rec.found[:, None])
