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

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .population import ActionabilityProfiles
from .primitives.recourse import Recourse
from .world.base import CausalWorld

__all__ = ["Recourse", "weighted_cost", "evaluate_recourse", "RECOURSE_COLUMNS", "Metric",
           "METRICS", "register_metric", "metrics_of"]

#: Per-applicant columns written by :func:`evaluate_recourse`.
RECOURSE_COLUMNS = ("found", "valid", "plausible", "cost", "cost_unweighted", "hard_action",
                    "sparsity", "proximity", "violation", "logp", "logp_cf")

#: Who a metric's mean runs over (see :class:`Metric`).
DENOMINATORS = ("all", "found", "valid", "finite")


@dataclass(frozen=True)
class Metric:
    """A population metric: the mean of one per-applicant column over a denominator.

    The one declaration from which the run summaries (``summary.csv``), the fairness audit,
    the audit document's choices and the report's labels and order are derived.

    Attributes:
        column: the per-applicant column (of ``recourse.parquet`` or the event world's
            ``outcomes.parquet``, see ``table``).
        among: the applicants the mean runs over: ``all``, those given a recourse
            (``found``), those whose recourse is approved (``valid``), or those whose value is
            finite (``finite``, e.g. time to approval among the approved). Rows whose value is
            not finite never count.
        label: a readable name.
        higher_is_better: direction, for wording findings (``None``: neither).
        table: ``recourse`` or ``outcomes`` (the event world's per-applicant outcomes).
        complement: report ``1 - mean`` (``no_recourse`` is the complement of ``found``).
        summarized: a column of the run summary.
        audited: audited by default.

    Example:
        >>> import pandas as pd
        >>> m = Metric("cost", "found", "cost", higher_is_better=False)
        >>> m.mean(pd.DataFrame({"found": [True, True, False], "cost": [1.0, 3.0, None]}))
        2.0
    """

    column: str
    among: str
    label: str
    higher_is_better: bool | None
    table: str = "recourse"
    complement: bool = False
    summarized: bool = True
    audited: bool = False

    def __post_init__(self) -> None:
        if self.among not in DENOMINATORS:
            raise ValueError(f"unknown denominator {self.among!r}; use one of {DENOMINATORS}")

    def defined(self, rows: pd.DataFrame) -> np.ndarray:
        """Which rows the mean runs over (bool per row)."""
        value = pd.to_numeric(rows[self.column], errors="coerce").to_numpy(dtype=float)
        chosen = np.isfinite(value)
        if self.among in ("found", "valid"):
            chosen &= rows["found"].to_numpy(bool)
        if self.among == "valid":
            chosen &= rows["valid"].to_numpy(bool)
        return chosen

    def mean(self, rows: pd.DataFrame) -> float:
        """The metric over ``rows`` (NaN when nobody is in the denominator)."""
        chosen = self.defined(rows)
        if not chosen.any():
            return np.nan
        value = float(rows[self.column][chosen].mean())
        return 1.0 - value if self.complement else value


#: Every population metric, in the order of the summaries and the report. Cost-type figures
#: and log-densities are means among applicants given a recourse; the audit compares groups on
#: unweighted cost so that conditions with different cost profiles compare.
METRICS: dict[str, Metric] = {
    "validity": Metric("valid", "all", "validity", True, audited=True),
    "plausibility": Metric("plausible", "found", "plausibility", True, audited=True),
    "hap": Metric("hard_action", "found", "hap", False, audited=True),
    "cost": Metric("cost", "found", "cost", False),
    "cost_unweighted": Metric("cost_unweighted", "found", "cost (unweighted)", False,
                              audited=True),
    "sparsity": Metric("sparsity", "found", "sparsity", False),
    "proximity": Metric("proximity", "found", "proximity", False),
    "logp_cf": Metric("logp_cf", "found", "counterfactual log-density", True, audited=True),
    "no_recourse": Metric("found", "all", "no recourse", False, complement=True),
    "violation": Metric("violation", "all", "violation", False),
    "approval_rate": Metric("approved", "all", "approval rate", True, table="outcomes",
                            audited=True),
    "time_to_approval": Metric("time_to_approval", "finite", "time to approval (days)", False,
                               table="outcomes", audited=True),
    "dropout_rate": Metric("dropped_out", "all", "dropout rate", False, table="outcomes",
                           audited=True),
}


def register_metric(name: str, metric: Metric) -> Metric:
    """Adds (or replaces) a population metric; it then appears in summaries, audits and
    reports. Its column must be a per-applicant column of its table.

    Example:
        >>> m = register_metric("sparsity_valid", Metric("sparsity", "valid", "sparsity of "
        ...                     "valid recourses", higher_is_better=False))
        >>> "sparsity_valid" in metrics_of("recourse", summarized=True)
        True
        >>> _ = METRICS.pop("sparsity_valid")
    """
    METRICS[name] = metric
    return metric


def metrics_of(table: str = "recourse", *, summarized: bool | None = None,
               audited: bool | None = None) -> dict[str, Metric]:
    """The registered metrics of one table, optionally only those summarized or audited."""
    return {k: m for k, m in METRICS.items() if m.table == table
            and (summarized is None or m.summarized == summarized)
            and (audited is None or m.audited == audited)}


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
        Dict with ``x_cf`` ``(n, d)`` and the columns of :data:`RECOURSE_COLUMNS`.
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
