"""Shared small worlds for the tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from simstudy.core.rng import entity_uniforms, generator
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.loan import LOAN_ROLES


@pytest.fixture(scope="session")
def loan_world():
    return LoanSCM()


@pytest.fixture(scope="session")
def small_loan_context(loan_world):
    """A 4,000-sample Loan world with a briefly trained decision model."""
    data = sample_world_data(loan_world, 4000, generator(7, "test-world"))
    model = train_decision_model(data, DecisionConfig(epochs=60), seed=3)
    return RecourseContext(loan_world, model, data, seed=7)


@pytest.fixture(scope="session")
def rejected(small_loan_context):
    ctx = small_loan_context
    with torch.no_grad():
        rej = ~ctx.model.approves(ctx.data.x_test).numpy()
    ids = np.flatnonzero(rej)
    return ctx.data.x_test.numpy()[ids], ids


ACTIONABLE = LOAN_ROLES.actionable


class LinearApproval(torch.nn.Module):
    """Approval logit ``(-L - D + I + S) / 2 - 1``: a monotone stand-in for the trained MLP."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float32)
        return (-x[:, 3] - x[:, 4] + x[:, 5] + x[:, 6]) / 2 - 1.0


@pytest.fixture(scope="session")
def lin_ctx() -> RecourseContext:
    """A 400-sample Loan world with :class:`LinearApproval` (fast: nothing to train)."""
    world = LoanSCM()
    data = sample_world_data(world, 400, generator(0, "world"))
    return RecourseContext(world, LinearApproval(), data, 0)


@pytest.fixture(scope="session")
def lin_people(lin_ctx):
    """Up to 24 rejected applicants: ``(x, ids, profiles)`` with 1 to 4 actionable features."""
    x = lin_ctx.data.x_test
    with torch.no_grad():
        idx = (lin_ctx.model(x) < 0).nonzero().squeeze(1)[:24]
    ids = idx.numpy().astype(np.int64)
    scores, levels = RankingSampler().sample(ACTIONABLE, entity_uniforms(0, "act", ids, 2))
    profiles = ActionabilityProfiles(ACTIONABLE, scores, levels,
                                     np.where(scores > 0, 1.0, np.inf))
    return x[idx].numpy(), ids, profiles


def make_people(ctx, x, ids, profiles, seed=0, response=None, mismatch=0.0, **users):
    """Simulated people with a given reported profile (``users`` are ``UserSettings`` fields)."""
    from simstudy.people import People, PeopleSpec
    from simstudy.primitives.space import ScaledSpace

    spec = PeopleSpec.model_validate({
        "population": {"hidden_mismatch_probability": mismatch}, "users": users,
        **({"response": response} if response is not None else {})})
    return People.from_spec(spec, x, ids, seed, ctx.feature_names, ctx.world.roles.actionable,
                            ScaledSpace.from_context(ctx), reported=profiles,
                            immutable=ctx.world.roles.immutable,
                            rankings=ctx.world.roles.rankings)
