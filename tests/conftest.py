"""Shared small worlds for the tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from simstudy.policies.base import RecourseContext
from simstudy.rng import generator
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model


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
