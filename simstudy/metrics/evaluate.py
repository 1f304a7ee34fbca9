"""Counterfactuals and every per-applicant metric of a batch of recourses (the metrics'
definitions: :mod:`simstudy.metrics`)."""

from __future__ import annotations

import numpy as np
import torch

from ..primitives.profiles import ActionabilityProfiles
from ..world.base import CausalWorld
from . import Recourse, normalized_change, weighted_cost

__all__ = ["evaluate_recourse", "measure_recourse"]


def measure_recourse(
    world: CausalWorld,
    x: np.ndarray | torch.Tensor,
    recourse: Recourse,
    profiles: ActionabilityProfiles,
    feature_range: np.ndarray | torch.Tensor,
) -> dict[str, np.ndarray]:
    """Counterfactuals and the metrics of a batch of recourses that need neither the decision
    model nor the world's density (what a participant is shown of a plan, and its cost).

    Returns:
        Dict with ``x_cf`` ``(n, d)``, ``found``, ``cost``, ``cost_unweighted``,
        ``hard_action``, ``sparsity``, ``proximity`` and ``violation``.
    """
    xt = torch.as_tensor(x, dtype=torch.float64)
    x_np = xt.numpy()
    names = world.roles.names
    rng_ = np.asarray(torch.as_tensor(feature_range, dtype=torch.float64))
    intervened = recourse.intervened & recourse.found[:, None]
    values = np.where(intervened, recourse.values, x_np)
    if recourse.counterfactual is None:
        with torch.no_grad():
            x_cf = world.counterfactual(xt, torch.from_numpy(intervened),
                                        torch.from_numpy(values)).numpy()
    else:
        x_cf = np.where(recourse.found[:, None], recourse.counterfactual, x_np)

    act_idx = profiles.columns_in(names)
    categorical = world.roles.categorical_mask() if hasattr(world.roles, "scales") else None
    delta_scaled = normalized_change(np.where(intervened, values - x_np, 0.0), rng_,
                                     categorical)
    d_act = delta_scaled[:, act_idx]
    w = np.where(profiles.actionable, profiles.weights, 1.0)
    placement = profiles.cost_placement
    acted = intervened[:, act_idx]
    outside = intervened.copy()
    outside[:, act_idx] = False
    violation = (acted & ~profiles.actionable).any(axis=1) | outside.any(axis=1)
    found = recourse.found & intervened.any(axis=1)
    return {
        "x_cf": x_cf,
        "found": found,
        "cost": np.where(found, weighted_cost(d_act, w, placement), np.nan),
        "cost_unweighted": np.where(found, weighted_cost(d_act, np.ones_like(w), placement),
                                    np.nan),
        "hard_action": found & (acted & profiles.least_preferred).any(axis=1),
        "sparsity": np.where(found, intervened.sum(axis=1), 0),
        "proximity": np.where(found, np.linalg.norm(
            normalized_change(x_cf - x_np, rng_, categorical), axis=1), np.nan),
        "violation": violation,
    }


def evaluate_recourse(
    world: CausalWorld,
    model: torch.nn.Module,
    x: np.ndarray | torch.Tensor,
    recourse: Recourse,
    profiles: ActionabilityProfiles,
    feature_range: np.ndarray | torch.Tensor,
) -> dict[str, np.ndarray]:
    """Counterfactuals and every per-applicant metric of a batch of recourses:
    :func:`measure_recourse` plus validity and plausibility.

    Returns:
        Dict with ``x_cf`` ``(n, d)`` and the columns of :data:`RECOURSE_COLUMNS`.
    """
    m = measure_recourse(world, x, recourse, profiles, feature_range)
    xt = torch.as_tensor(x, dtype=torch.float64)
    found = m["found"]
    with torch.no_grad():
        approved = model(torch.from_numpy(m["x_cf"])).numpy() >= 0
        logp = world.log_prob(xt).numpy()
        logp_cf = world.log_prob(torch.from_numpy(m["x_cf"])).numpy()
    return {
        "x_cf": m["x_cf"],
        "found": found,
        "valid": found & approved,
        "plausible": found & (logp_cf >= logp),
        **{k: m[k] for k in ("cost", "cost_unweighted", "hard_action", "sparsity",
                             "proximity", "violation")},
        "logp": logp,
        "logp_cf": np.where(found, logp_cf, np.nan),
    }
