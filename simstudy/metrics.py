"""Recourse metrics, computed for whole batches of applicants.

Definitions (``Δ = θ - x`` on the intervened features ``I``, ``r`` = training range of a feature,
``w`` = the person's cost weights):

* **validity**: the decision model approves the counterfactual ``x_cf``.
* **cost** (weighted): ``|| w_I ⊙ Δ_I / r_I ||_2`` — only the intervened features count;
  their causal descendants change for free. **cost_unweighted** sets every ``w = 1`` so that
  conditions with different cost profiles compare.
* **plausibility**: ``log p(x_cf) >= log p(x)`` under the world's density.
* **hard action** (its population share is *hap*): the recourse acts on at least one of the
  person's least-preferred individually actionable features.
* **sparsity**: number of intervened features. **proximity**: ``|| (x_cf - x) / r ||_2`` over
  all features, downstream effects included.
* **violation**: the recourse intervenes on a feature the person cannot act on (must be 0).
"""

from __future__ import annotations

import numpy as np
import torch

from .population import ActionabilityProfiles
from .primitives.recourse import Recourse
from .world.base import CausalWorld

__all__ = ["Recourse", "weighted_cost", "evaluate_recourse", "RECOURSE_METRICS"]

#: Per-applicant metric columns written by :func:`evaluate_recourse`.
RECOURSE_METRICS = ("found", "valid", "plausible", "cost", "cost_unweighted", "hard_action",
                    "sparsity", "proximity", "violation", "logp", "logp_cf")


def weighted_cost(delta_scaled: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sqrt(sum_k (w_k Δ_k / r_k)^2)`` over the last axis (zero where Δ is zero).

    The sum runs over the last axis in index order so that the vectorized oracle and a
    one-by-one enumeration compute bit-identical costs.
    """
    terms = np.where(delta_scaled == 0, 0.0, weights * delta_scaled) ** 2
    total = terms[..., 0].copy()
    for k in range(1, terms.shape[-1]):
        total += terms[..., k]
    return np.sqrt(total)


def evaluate_recourse(
    world: CausalWorld,
    model: torch.nn.Module,
    x: np.ndarray | torch.Tensor,
    recourse: Recourse,
    profiles: ActionabilityProfiles,
    feature_range: np.ndarray | torch.Tensor,
) -> dict[str, np.ndarray]:
    """Counterfactuals and every per-applicant metric of a batch of recourses.

    Returns:
        Dict with ``x_cf`` ``(n, d)`` and the columns of :data:`RECOURSE_METRICS`.
    """
    xt = torch.as_tensor(x, dtype=torch.float64)
    x_np = xt.numpy()
    names = world.roles.names
    rng_ = np.asarray(torch.as_tensor(feature_range, dtype=torch.float64))
    intervened = recourse.intervened & recourse.found[:, None]
    values = np.where(intervened, recourse.values, x_np)
    with torch.no_grad():
        if recourse.counterfactual is None:
            x_cf = world.counterfactual(xt, torch.from_numpy(intervened),
                                        torch.from_numpy(values)).numpy()
        else:
            x_cf = np.where(recourse.found[:, None], recourse.counterfactual, x_np)
        approved = model(torch.from_numpy(x_cf)).numpy() >= 0
        logp = world.log_prob(xt).numpy()
        logp_cf = world.log_prob(torch.from_numpy(x_cf)).numpy()

    act_idx = [names.index(f) for f in profiles.features]
    delta_scaled = np.where(intervened, (values - x_np) / rng_, 0.0)
    d_act = delta_scaled[:, act_idx]
    w = np.where(profiles.actionable, profiles.weights, 1.0)
    acted = intervened[:, act_idx]
    outside = intervened.copy()
    outside[:, act_idx] = False
    violation = (acted & ~profiles.actionable).any(axis=1) | outside.any(axis=1)
    found = recourse.found & intervened.any(axis=1)
    return {
        "x_cf": x_cf,
        "found": found,
        "valid": found & approved,
        "plausible": found & (logp_cf >= logp),
        "cost": np.where(found, weighted_cost(d_act, w), np.nan),
        "cost_unweighted": np.where(found, weighted_cost(d_act, np.ones_like(w)), np.nan),
        "hard_action": found & (acted & profiles.least_preferred).any(axis=1),
        "sparsity": intervened.sum(axis=1),
        "proximity": np.where(found, np.linalg.norm((x_cf - x_np) / rng_, axis=1), np.nan),
        "violation": violation,
        "logp": logp,
        "logp_cf": np.where(found, logp_cf, np.nan),
    }
