"""Small worlds and a stand-in policy shared by the event-world tests."""

from __future__ import annotations

import numpy as np
import torch

from simstudy.core.rng import generator
from simstudy.metrics import Recourse
from simstudy.people import PeopleSpec
from simstudy.policies.base import RecoursePolicy
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.world.data import sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.loan import LoanSCM

#: Direction in which each Loan feature raises the approval score.
DIRECTION = {"loan_amount": -1.0, "loan_duration": -1.0, "income": 1.0, "savings": 1.0}


class PreferredFeaturePolicy(RecoursePolicy):
    """Moves the person's most-preferred actionable feature just past the decision boundary.

    The smallest sufficient change along the feature's approval direction is found by bisection
    on the model's decision of the causal counterfactual; a small margin keeps the answer off
    the boundary. Reports ``queries`` (two per reported-actionable feature) so that session
    patience matters.
    """

    kind = "preferred-feature"

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        ctx = self.context_
        names = ctx.feature_names
        n, d = x.shape
        scores = np.where(profiles.actionable, profiles.scores, 10**6)
        best = scores.argmin(axis=1)
        has = profiles.actionable.any(axis=1)
        col = np.array([names.index(profiles.features[b]) for b in best], dtype=np.int64)
        sign = np.array([DIRECTION[profiles.features[b]] for b in best])
        span = 2.0 * ctx.feature_range[col]
        rows = np.arange(n)
        xt = torch.from_numpy(x)
        mask = np.zeros((n, d), dtype=bool)
        mask[rows, col] = True
        maskt = torch.from_numpy(mask)

        def approves(step: np.ndarray) -> np.ndarray:
            vals = x.copy()
            vals[rows, col] = x[rows, col] + sign * step
            with torch.no_grad():
                cf = ctx.world.counterfactual(xt, maskt, torch.from_numpy(vals))
                return (ctx.model(cf) >= 0).numpy()

        lo, hi = np.zeros(n), span.copy()
        found = has & approves(hi)
        for _ in range(18):
            mid = 0.5 * (lo + hi)
            ok = approves(mid)
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        values = np.full((n, d), np.nan)
        values[rows, col] = x[rows, col] + sign * (hi + 0.02 * ctx.feature_range[col])
        queries = 2.0 * profiles.actionable.sum(axis=1)
        return Recourse(mask & found[:, None], values, found, {"queries": queries})


def small_world(n_data: int = 600, epochs: int = 5, seed: int = 0):
    """The Loan SCM, its data and a quickly trained decision model."""
    torch.set_num_threads(1)
    world = LoanSCM()
    data = sample_world_data(world, n_data, generator(seed, "data"))
    model = train_decision_model(data, DecisionConfig(epochs=epochs), seed)
    return world, data, model


def ranking_population(mismatch: float = 0.0, **sections) -> PeopleSpec:
    """Rankings with a random threshold; privileged people (30%, at random) rank income and
    savings first, the others loan amount and duration; ``mismatch``: share of people with a
    hidden non-actionable feature."""
    return PeopleSpec.model_validate({
        "population": {"actionability": {"kind": "ranking"},
                       "groups": {"rule": "random", "privileged_share": 0.3},
                       "hidden_mismatch_probability": mismatch},
        **sections})


def stand_in_factory(context):
    return PreferredFeaturePolicy().fit(context)
