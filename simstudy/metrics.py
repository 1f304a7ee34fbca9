"""Recourse metrics, computed for whole batches of applicants.

Definitions (``Δ = θ - x`` on the intervened features ``I``, ``r`` = training range of a feature,
``w`` = the person's cost weights):

* **validity**: the decision model approves the counterfactual ``x_cf``.
* **cost** (weighted): only the intervened features count; their causal descendants change for
  free. With ``δ_k = Δ_k / r_k`` and ``K`` the globally actionable features, the default
  ``placement="outside"`` is the weighted squared L2 distance of the individual-actionability
  study (2026, App. A.5-B.1, Eq. 7 and 10) as CARMA's public code computes it
  (``recourse_model/loss.py``, ``compute_l2_cost``): the weight multiplies the squared change,

      ``c(Δ) = (1/K) sum_k w_k δ_k^2``;

  ``placement="inside"`` is the earlier form ``sqrt(sum_k (w_k δ_k)^2)``, whose weights are
  squared (1 to 16 at alpha = 3). CARMA divides ``Δ^2`` by the range on standardized data,
  i.e. ``Δ^2 / (σ r)``; here ``Δ^2 / r^2`` keeps the cost free of the data's spread (on Loan the
  two differ per feature by the factor ``r / σ``, 6.9-7.6). **cost_unweighted** sets every
  ``w = 1`` so that conditions with different cost profiles compare.
* **plausibility**: ``log p(x_cf) >= log p(x)`` under the world's density.
* **hard action** (its population share is *hap*): the recourse acts on at least one of the
  person's least-preferred individually actionable features.
* **sparsity**: number of intervened features. **proximity**: ``|| (x_cf - x) / r ||_2`` over
  all features, downstream effects included.
* **violation**: the recourse intervenes on a feature the person cannot act on (must be 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .population import ActionabilityProfiles
from .world.base import CausalWorld

__all__ = ["Recourse", "weighted_cost", "evaluate_recourse", "RECOURSE_METRICS",
           "COST_PLACEMENTS", "PopulationMetric", "POPULATION_METRICS"]

#: Per-applicant metric columns written by :func:`evaluate_recourse`.
RECOURSE_METRICS = ("found", "valid", "plausible", "cost", "cost_unweighted", "hard_action",
                    "sparsity", "proximity", "violation", "logp", "logp_cf")

#: Where the cost weight sits: ``outside`` the square (the paper and CARMA) or ``inside``.
COST_PLACEMENTS = ("outside", "inside")


@dataclass(frozen=True)
class PopulationMetric:
    """A population-level metric: the mean of a per-applicant column over a denominator.

    Attributes:
        column: the per-applicant column (see :data:`RECOURSE_METRICS`).
        among: who the mean runs over: ``all`` applicants, those given a recourse (``found``)
            or those whose recourse is approved (``valid``).
        complement: report ``1 - mean`` (``no_recourse`` is the complement of ``found``).
    """

    column: str
    among: str
    complement: bool = False


#: Population metrics of the summaries, each with its denominator. The individual-actionability
#: study reports cost-type figures for valid recommendations; the ``*_found`` twins average over
#: every recourse found, valid or not.
POPULATION_METRICS: dict[str, PopulationMetric] = {
    "validity": PopulationMetric("valid", "all"),
    "plausibility": PopulationMetric("plausible", "found"),
    "hap": PopulationMetric("hard_action", "found"),
    "cost": PopulationMetric("cost", "valid"),
    "cost_unweighted": PopulationMetric("cost_unweighted", "valid"),
    "sparsity": PopulationMetric("sparsity", "valid"),
    "proximity": PopulationMetric("proximity", "valid"),
    "cost_found": PopulationMetric("cost", "found"),
    "cost_unweighted_found": PopulationMetric("cost_unweighted", "found"),
    "sparsity_found": PopulationMetric("sparsity", "found"),
    "proximity_found": PopulationMetric("proximity", "found"),
    "logp_cf": PopulationMetric("logp_cf", "found"),
    "no_recourse": PopulationMetric("found", "all", complement=True),
    "violation": PopulationMetric("violation", "all"),
}


@dataclass
class Recourse:
    """What a policy recommends to ``n`` applicants.

    Attributes:
        intervened: ``(n, d)`` bool over all world features: the action ``do(X_I := θ_I)``.
        values: ``(n, d)`` intervention values θ (NaN where not intervened).
        found: ``(n,)`` bool; false is an explicit "no recourse" for that person.
        extras: policy-specific per-applicant columns (for example queries asked).
        counterfactual: optional ``(n, d)`` points proposed directly by a non-causal generator
            (Wachter, Growing Spheres, HARE). When set, they are the counterfactuals evaluated,
            instead of propagating the intervention through the world's structural equations.
    """

    intervened: np.ndarray
    values: np.ndarray
    found: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    counterfactual: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.intervened = np.asarray(self.intervened, dtype=bool)
        self.values = np.where(self.intervened, np.asarray(self.values, dtype=np.float64), np.nan)
        self.found = np.asarray(self.found, dtype=bool)

    def __len__(self) -> int:
        return self.found.shape[0]

    @classmethod
    def none(cls, n: int, d: int) -> Recourse:
        return cls(np.zeros((n, d), bool), np.full((n, d), np.nan), np.zeros(n, bool))


def cost_terms(delta_scaled, weights, placement: str = "outside"):
    """Per-feature cost terms ``w δ^2`` (``outside``) or ``(w δ)^2`` (``inside``).

    Works on numpy arrays and torch tensors alike; a zero change costs nothing even where the
    weight is infinite (a feature the person cannot act on).
    """
    if placement not in COST_PLACEMENTS:
        raise ValueError(f"unknown cost placement {placement!r}; use one of {COST_PLACEMENTS}")
    where = torch.where if isinstance(delta_scaled, torch.Tensor) else np.where
    if placement == "outside":
        return where(delta_scaled == 0, 0.0, weights * delta_scaled**2)
    return where(delta_scaled == 0, 0.0, weights * delta_scaled) ** 2


def finish_cost(total, n_features: int, placement: str = "outside"):
    """From the sum of :func:`cost_terms` to the cost: the mean over the ``K`` globally
    actionable features (``outside``) or the square root (``inside``)."""
    if placement == "outside":
        return total / n_features
    return total.sqrt() if isinstance(total, torch.Tensor) else np.sqrt(total)


def weighted_cost(delta_scaled: np.ndarray, weights: np.ndarray,
                  placement: str = "outside") -> np.ndarray:
    """The individually weighted cost over the last axis (the ``K`` globally actionable
    features; ``δ = Δ / r``):

        ``outside`` (default): ``(1/K) sum_k w_k δ_k^2``;  ``inside``: ``sqrt(sum_k (w_k δ_k)^2)``.

    The sum runs over the last axis in index order so that the vectorized oracle and a
    one-by-one enumeration compute bit-identical costs.

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for
        causal algorithmic recourse at scale", FAccT 2024 (code: ayanmaj92/carma-recourse).

    Example:
        >>> weighted_cost(np.array([[0.2, 0.0, -0.1, 0.0]]), np.array([[1.0, 2.0, 4.0, 1.0]]))
        array([0.02])
    """
    terms = cost_terms(delta_scaled, weights, placement)
    total = terms[..., 0].copy()
    for k in range(1, terms.shape[-1]):
        total += terms[..., k]
    return finish_cost(total, terms.shape[-1], placement)


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
    placement = profiles.cost_placement
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
        "cost": np.where(found, weighted_cost(d_act, w, placement), np.nan),
        "cost_unweighted": np.where(found, weighted_cost(d_act, np.ones_like(w), placement),
                                    np.nan),
        "hard_action": found & (acted & profiles.least_preferred).any(axis=1),
        "sparsity": np.where(found, intervened.sum(axis=1), 0),
        "proximity": np.where(found, np.linalg.norm((x_cf - x_np) / rng_, axis=1), np.nan),
        "violation": violation,
        "logp": logp,
        "logp_cf": np.where(found, logp_cf, np.nan),
    }
