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
* **sparsity**: number of intervened features. **proximity**: ``|| δ(x_cf - x) ||_2`` over
  all features, downstream effects included.
* **published proximity** (the response models' and the user study's distance):
  ``sum_k |δ_k|`` over the intervened features.

Every change ``Δ_k`` counts in normalized units as the published user study counts distance
(Tominaga et al.): ``δ_k = Δ_k / r_k`` for a continuous or ordinal feature (an ordinal's codes
are ordered, so a change counts ``|Δ code| / range``), and one unit, ``δ_k = sign(Δ_k)``, for a
categorical feature (any change of category; :attr:`~simstudy.world.base.FeatureRoles.scales`).
:func:`normalized_change` is the one place this is computed; cost, proximity and the published
proximity all take it.
* **violation**: the recourse intervenes on a feature the person cannot act on (must be 0).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.bounds import VALUE_RANGES
from ..core.documents import Notice
from ..core.lazy import lazy_exports
from ..primitives.recourse import Recourse

if TYPE_CHECKING:  # the metric table is read by documents, which validate without pandas
    import pandas as pd

__all__ = ["Recourse", "normalized_change", "published_proximity", "weighted_cost",
           "cost_terms", "finish_cost", "evaluate_recourse", "measure_recourse",
           "RECOURSE_COLUMNS", "COST_PLACEMENTS", "DENOMINATORS", "VALUE_RANGES", "Metric",
           "METRICS", "register_metric", "metrics_of", "readable_metrics", "RunPredatesMetric"]

#: Where the cost weight sits: ``outside`` the square (the paper and CARMA) or ``inside``.
COST_PLACEMENTS = ("outside", "inside")

_COST_UNIT = "squared range-scaled change (placement inside: range-scaled distance)"

#: Per-applicant columns written by :func:`evaluate_recourse`: ``name: (meaning, unit)``, the
#: meaning as computed there (the run's data dictionary reads it).
RECOURSE_COLUMNS: dict[str, tuple[str, str]] = {
    "found": ("the policy returned a recourse that acts on at least one feature", "0/1"),
    "valid": ("the decision model approves the counterfactual (0 without recourse)", "0/1"),
    "plausible": ("log p(x_cf) >= log p(x) under the world's density (0 without recourse)",
                  "0/1"),
    "cost": ("weighted cost of the recourse: (1/K) sum_k w_k (delta_k / range_k)^2 over the K "
             "globally actionable features, delta_k the change the recourse sets (0 where it "
             "does not act; downstream changes cost nothing; a categorical feature's change "
             "counts range_k, one unit), w_k the person's cost weight "
             "(1 where they cannot act); with the population's `cost: {placement: inside}` "
             "sqrt(sum_k (w_k delta_k / range_k)^2); empty without recourse", _COST_UNIT),
    "cost_unweighted": ("the same cost with every weight 1 (compares across cost profiles); "
                        "empty without recourse", _COST_UNIT),
    "hard_action": ("the recourse acts on one of the person's least-preferred actionable "
                    "features (0 without recourse)", "0/1"),
    "sparsity": ("number of acted-on features (0 without recourse)", "features"),
    "proximity": ("||delta(x_cf - x)||_2 over all features, downstream effects included, "
                  "delta a change divided by the feature's range (a categorical feature: 1 "
                  "for any change); empty without recourse", "range-scaled distance"),
    "violation": ("the recourse acts on a feature the person cannot act on, or outside the "
                  "globally actionable ones (must be 0)", "0/1"),
    "logp": ("log-density of the factual point under the world", "nats"),
    "logp_cf": ("log-density of the counterfactual point under the world; empty without "
                "recourse", "nats"),
}

#: Whom a metric's mean runs over (:attr:`Metric.among`), in words, by the metric's table (the
#: event world's outcomes say nothing of recourses found or approved).
DENOMINATORS: dict[str, dict[str, str]] = {
    "all": {"recourse": "applicants asking for recourse",
            "outcomes": "applicants of the event world"},
    "found": {"recourse": "applicants given a recourse"},
    "valid": {"recourse": "applicants whose recourse is approved"},
    "finite": {"recourse": "applicants asking for recourse whose value is finite",
               "outcomes": "applicants of the event world whose value is finite"},
}

_DIRECTIONS = ("higher", "lower", None)


def _as_float(column: pd.Series) -> np.ndarray:
    # a metric column (bool, int or float, missing values as NaN or NA) as floats
    return column.to_numpy(dtype=float, na_value=np.nan)


@dataclass(frozen=True, kw_only=True)
class Metric:
    """A population metric: the mean of one per-applicant column over a denominator.

    The one declaration from which the run summaries (``summary.csv``, ``contrasts.csv``),
    their rows of the data dictionary, the fairness audit, the audit document's choices and
    the report's labels and order are derived.

    Attributes:
        column: the per-applicant column (of ``recourse.parquet`` or the event world's
            ``outcomes.parquet``, see ``table``).
        among: the applicants the mean runs over: ``all``, those given a recourse
            (``found``), those whose recourse is approved (``valid``), or those whose value is
            finite (``finite``, e.g. time to approval among the approved). Rows whose value is
            not finite never count. In words: :attr:`denominator`.
        label: a readable name.
        direction: ``higher`` or ``lower`` is better, or ``None`` (neither); the data
            dictionary states it.
        unit: the unit of the metric (``share`` for a proportion).
        meaning: one line saying what the figure is, without its denominator.
        values: what the per-applicant values can be: ``proportion`` (0/1; the mean is a
            share), ``nonnegative`` or ``real``; it sets :attr:`range`, which its intervals
            respect (:mod:`simstudy.core.intervals`).
        table: ``recourse`` or ``outcomes`` (the event world's per-applicant outcomes).
        complement: report ``1 - mean`` (``no_recourse`` is the complement of ``found``).
        summarized: a column of the run summary.
        audited: audited by default.
        derive: computes the column from a table's other columns (``rows -> values``; a
            ``KeyError`` when the table lacks those too), so that a table written before the
            metric existed still gives it (:func:`readable_metrics`); ``None``: such a table
            cannot.

    Example:
        >>> import pandas as pd
        >>> m = Metric(column="cost", among="found", label="cost", direction="lower",
        ...            unit="cost", meaning="mean cost", values="nonnegative")
        >>> m.mean(pd.DataFrame({"found": [True, True, False], "cost": [1.0, 3.0, None]}))
        2.0
        >>> m.denominator, m.range
        ('applicants given a recourse', (0.0, inf))
    """

    column: str
    among: str
    label: str
    direction: Literal["higher", "lower"] | None
    unit: str
    meaning: str
    values: str = "real"
    table: str = "recourse"
    complement: bool = False
    summarized: bool = True
    audited: bool = False
    derive: Callable[[pd.DataFrame], Any] | None = None

    def __post_init__(self) -> None:
        if self.among not in DENOMINATORS:
            raise ValueError(f"unknown denominator {self.among!r}; use one of "
                             f"{tuple(DENOMINATORS)}")
        if self.direction not in _DIRECTIONS:
            raise ValueError(f"unknown direction {self.direction!r}; use one of {_DIRECTIONS}")
        if self.values not in VALUE_RANGES:
            raise ValueError(f"unknown kind of values {self.values!r}; use one of "
                             f"{tuple(VALUE_RANGES)}")
        if self.table not in DENOMINATORS[self.among]:
            raise ValueError(f"denominator {self.among!r} does not apply to table "
                             f"{self.table!r}; use one of {tuple(DENOMINATORS[self.among])}")
        if not self.meaning.strip() or not self.unit.strip():
            raise ValueError(f"metric of {self.column!r}: give its meaning and unit")

    @property
    def denominator(self) -> str:
        """Whom the mean runs over, in words."""
        return DENOMINATORS[self.among][self.table]

    @property
    def range(self) -> tuple[float, float]:
        """The values the metric can take (``(0, 1)`` for a proportion); a difference of two
        such figures lies in ``(lo - hi, hi - lo)``."""
        return VALUE_RANGES[self.values]

    def count(self, rows: pd.DataFrame) -> int:
        """How many rows the mean runs over."""
        return int(self.defined(rows).sum())

    def defined(self, rows: pd.DataFrame) -> np.ndarray:
        """Which rows the mean runs over (bool per row)."""
        value = _as_float(rows[self.column])
        chosen = np.isfinite(value)
        if self.among in ("found", "valid"):
            chosen &= rows["found"].to_numpy(bool)
        if self.among == "valid":
            chosen &= rows["valid"].to_numpy(bool)
        return chosen

    def per_person(self, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Each row's value (``1 - value`` for a complement) and whether it counts: the
        metric is the mean of the first over the rows the second marks."""
        value = _as_float(rows[self.column])
        return (1.0 - value if self.complement else value), self.defined(rows)

    def mean(self, rows: pd.DataFrame) -> float:
        """The metric over ``rows`` (NaN when nobody is in the denominator)."""
        chosen = self.defined(rows)
        if not chosen.any():
            return np.nan
        # the column as stored (bool or float), so that summaries keep their bytes
        value = float(rows[self.column][chosen].mean())
        return 1.0 - value if self.complement else value


def _share(column: str, among: str, label: str, direction: str | None, meaning: str,
           **more) -> Metric:
    return Metric(column=column, among=among, label=label, direction=direction, unit="share",
                  meaning=meaning, values="proportion", **more)


def _among_found(metric: Metric) -> Metric:
    """The twin of a metric over valid recourses: the same mean over every recourse found."""
    return replace(metric, among="found", label=metric.label.replace(")", ", among found)")
                   if metric.label.endswith(")") else f"{metric.label} (among found)",
                   audited=False)


_COST = Metric(column="cost", among="valid", label="cost", direction="lower",
               unit=RECOURSE_COLUMNS["cost"][1], values="nonnegative",
               meaning="mean weighted cost of the recourse (recourse.parquet `cost`)")
_COST_UNWEIGHTED = Metric(column="cost_unweighted", among="valid", label="cost (unweighted)",
                          direction="lower", unit=RECOURSE_COLUMNS["cost_unweighted"][1],
                          values="nonnegative", audited=True,
                          meaning="mean unweighted cost of the recourse (recourse.parquet "
                                  "`cost_unweighted`)")
_SPARSITY = Metric(column="sparsity", among="valid", label="sparsity", direction="lower",
                   unit="features", values="nonnegative",
                   meaning="mean number of acted-on features")
_PROXIMITY = Metric(column="proximity", among="valid", label="proximity", direction="lower",
                    unit="range-scaled distance", values="nonnegative",
                    meaning="mean proximity ||delta(x_cf - x)||_2, a change in units of the "
                            "feature's range, a categorical change one unit (recourse.parquet "
                            "`proximity`)")

#: Every population metric, in the order of the summaries and the report. Cost-type figures
#: (cost, unweighted cost, sparsity, proximity) are means among applicants whose recourse is
#: valid, as the individual-actionability study reports them; their ``*_found`` twins average
#: over every recourse found, valid or not. Log-densities are means among applicants given a
#: recourse. The audit compares groups on unweighted cost so that conditions with different
#: cost profiles compare.
METRICS: dict[str, Metric] = {
    "validity": _share("valid", "all", "validity", "higher", audited=True,
                       meaning="share whose recourse the decision model approves (no recourse "
                               "counts as invalid)"),
    "plausibility": _share("plausible", "found", "plausibility", "higher", audited=True,
                           meaning="share of counterfactuals at least as likely as the factual "
                                   "point under the world's density"),
    "hap": _share("hard_action", "found", "hap", "lower", audited=True,
                  meaning="share of recourses acting on one of the person's least-preferred "
                          "actionable features (hard-action proportion)"),
    "cost": _COST,
    "cost_unweighted": _COST_UNWEIGHTED,
    "sparsity": _SPARSITY,
    "proximity": _PROXIMITY,
    "cost_found": _among_found(_COST),
    "cost_unweighted_found": _among_found(_COST_UNWEIGHTED),
    "sparsity_found": _among_found(_SPARSITY),
    "proximity_found": _among_found(_PROXIMITY),
    "logp_cf": Metric(column="logp_cf", among="found", label="counterfactual log-density",
                      direction="higher", unit="nats", audited=True,
                      meaning="mean log-density of the counterfactual point under the world"),
    "no_recourse": _share("found", "all", "no recourse", "lower", complement=True,
                          meaning="share for whom the policy found no recourse"),
    "violation": _share("violation", "all", "violation", "lower",
                        meaning="share whose recourse acts on a feature they cannot act on "
                                "(must be 0)"),
    "approval_rate": _share("approved", "all", "approval rate", "higher", table="outcomes",
                            audited=True, meaning="share approved before the horizon"),
    "time_to_approval": Metric(column="time_to_approval", among="finite",
                               label="time to approval (days)", direction="lower", unit="days",
                               values="nonnegative", table="outcomes", audited=True,
                               meaning="mean time from first application to approval"),
    "dropout_rate": _share("dropped_out", "all", "dropout rate", "lower", table="outcomes",
                           audited=True, meaning="share who gave up before approval"),
}


def register_metric(name: str, metric: Metric) -> Metric:
    """Adds (or replaces) a population metric; it then appears in summaries, their data
    dictionary rows, audits and reports. Its column must be a per-applicant column of its
    table.

    Example:
        >>> m = register_metric("sparsity_valid", Metric(
        ...     column="sparsity", among="valid", label="sparsity of valid recourses",
        ...     direction="lower", unit="features", meaning="mean number of acted-on features"))
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


class RunPredatesMetric(Notice):
    """A table was written before a metric existed and cannot give it: the metric is left out
    of what is computed from the table (one line names it)."""


def readable_metrics(rows: pd.DataFrame, table: str = "recourse", *,
                     summarized: bool | None = None, audited: bool | None = None,
                     names: Collection[str] | None = None, source: str | None = None
                     ) -> tuple[pd.DataFrame, dict[str, Metric]]:
    """The metrics of ``table`` that ``rows`` can give, and ``rows`` with the computable ones.

    The metrics are those :func:`metrics_of` selects (only ``names`` when given).

    A metric whose column ``rows`` lacks (a run made before the metric existed) is computed by
    its :attr:`Metric.derive` from the other columns; when it has none, or those columns are
    missing too, it is left out and one :class:`RunPredatesMetric` warning names every metric
    left out. ``source`` names the table in that line (default: ``the <table> table``).

    Example:
        >>> import pandas as pd
        >>> old = pd.DataFrame({"found": [True], "valid": [True], "plausible": [True],
        ...     "hard_action": [False], "cost": [1.0], "cost_unweighted": [1.0],
        ...     "sparsity": [1], "proximity": [0.5], "logp_cf": [0.0]})     # no violation
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     rows, usable = readable_metrics(old, summarized=True)
        >>> "violation" in usable, "validity" in usable
        (False, True)
        >>> print(caught[0].message)
        the recourse table: written before the metric 'violation' existed; left out
    """
    usable: dict[str, Metric] = {}
    added: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for name, metric in metrics_of(table, summarized=summarized, audited=audited).items():
        if names is not None and name not in names:
            continue
        if metric.column in rows.columns or metric.column in added:
            usable[name] = metric
            continue
        if metric.derive is not None:
            try:
                added[metric.column] = metric.derive(rows)
            except KeyError:  # it needs columns the table lacks as well
                pass
            else:
                usable[name] = metric
                continue
        missing[name] = metric.column
    if added:
        rows = rows.assign(**added)
    if missing:
        names = ", ".join(repr(n) if n == c else f"{n!r} (column {c!r})"
                          for n, c in missing.items())
        plural = "s" if len(missing) > 1 else ""
        warnings.warn(f"{source or f'the {table} table'}: written before the metric{plural} "
                      f"{names} existed; left out", RunPredatesMetric, stacklevel=2)
    return rows, usable


def normalized_change(delta: np.ndarray, feature_range: np.ndarray,
                      categorical: np.ndarray | None = None) -> np.ndarray:
    """Changes in normalized units, as the published user study counts distance:

        ``δ_k = Δ_k / r_k`` (continuous and ordinal features),
        ``δ_k = sign(Δ_k)`` (categorical features: any change of category is one unit).

    Args:
        delta: ``(..., K)`` changes ``Δ`` (0 where nothing changes).
        feature_range: ``(K,)`` training ranges ``r``.
        categorical: ``(K,)`` bool, the categorical features (``None``: none).

    References:
        Tominaga et al., the user study on acceptance and action of recourse (proximity as
        the sum of per-feature changes normalised by the feature's range, categorical 0/1).

    Example:
        >>> normalized_change(np.array([[2.0, -2.0, 0.0]]), np.array([4.0, 4.0, 4.0]),
        ...                   np.array([False, True, True])).tolist()
        [[0.5, -1.0, 0.0]]
    """
    scaled = np.asarray(delta, dtype=np.float64) / np.asarray(feature_range, dtype=np.float64)
    if categorical is None or not np.any(categorical):
        return scaled
    return np.where(np.asarray(categorical, dtype=bool), np.sign(scaled), scaled)


def published_proximity(acted: np.ndarray, values: np.ndarray, x: np.ndarray,
                        feature_range: np.ndarray, categorical: np.ndarray | None = None
                        ) -> np.ndarray:
    """The published proximity ``sum_k |δ_k|`` over the acted features
    (:func:`normalized_change`: a categorical change counts one unit).

    Example:
        >>> published_proximity(np.array([[True, True, False]]), np.array([[3.0, 2.0, 9.0]]),
        ...                     np.array([[1.0, 0.0, 0.0]]), np.array([4.0, 4.0, 4.0]),
        ...                     np.array([False, True, False])).tolist()
        [1.5]
    """
    change = np.where(acted, np.nan_to_num(np.asarray(values, dtype=np.float64) - x), 0.0)
    return np.abs(normalized_change(change, feature_range, categorical)).sum(axis=-1)


def cost_terms(delta_scaled, weights, placement: str = "outside"):
    """Per-feature cost terms ``w δ^2`` (``outside``) or ``(w δ)^2`` (``inside``).

    Works on numpy arrays and torch tensors alike; a zero change costs nothing even where the
    weight is infinite (a feature the person cannot act on).
    """
    if placement not in COST_PLACEMENTS:
        raise ValueError(f"unknown cost placement {placement!r}; use one of {COST_PLACEMENTS}")
    where = sys.modules["torch"].where if _is_tensor(delta_scaled) else np.where
    if placement == "outside":
        return where(delta_scaled == 0, 0.0, weights * delta_scaled**2)
    return where(delta_scaled == 0, 0.0, weights * delta_scaled) ** 2


def finish_cost(total, n_features: int, placement: str = "outside"):
    """From the sum of :func:`cost_terms` to the cost: the mean over the ``K`` globally
    actionable features (``outside``) or the square root (``inside``)."""
    if placement == "outside":
        return total / n_features
    return total.sqrt() if _is_tensor(total) else np.sqrt(total)


def _is_tensor(value) -> bool:
    # a torch tensor exists only once torch is imported; the cost formula does not import it
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


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


# evaluating recourses needs the world and the decision model (torch): loaded on first use, so
# the metric table is read without torch
__getattr__ = lazy_exports(__name__, {"evaluate_recourse": "evaluate",
                                      "measure_recourse": "evaluate"})[0]
