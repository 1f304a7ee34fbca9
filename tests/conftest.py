"""Small shared fixtures: a Loan data sample and a linear decision model (no training)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from simstudy.policies.base import RecourseContext
from simstudy.population import ActionabilityProfiles, RankingSampler
from simstudy.rng import entity_uniforms, generator
from simstudy.world.data import sample_world_data
from simstudy.world.loan import LOAN_ROLES, LoanSCM

ACTIONABLE = LOAN_ROLES.actionable


class LinearApproval(torch.nn.Module):
    """Approval logit ``(-L - D + I + S) / 2 - 1``: a monotone stand-in for the trained MLP."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float32)
        return (-x[:, 3] - x[:, 4] + x[:, 5] + x[:, 6]) / 2 - 1.0


@pytest.fixture(scope="session")
def loan_context() -> RecourseContext:
    world = LoanSCM()
    data = sample_world_data(world, 400, generator(0, "world"))
    return RecourseContext(world, LinearApproval(), data, 0)


@pytest.fixture(scope="session")
def rejected(loan_context):
    """Up to 24 rejected applicants: ``(x, ids, profiles)`` with 1 to 4 actionable features."""
    x = loan_context.data.x_test
    with torch.no_grad():
        idx = (loan_context.model(x) < 0).nonzero().squeeze(1)[:24]
    ids = idx.numpy().astype(np.int64)
    scores, levels = RankingSampler().sample(ACTIONABLE, entity_uniforms(0, "act", ids, 2))
    profiles = ActionabilityProfiles(ACTIONABLE, scores, levels,
                                     np.where(scores > 0, 1.0, np.inf))
    return x[idx].numpy(), ids, profiles
