"""Fairness audits of recourse: metrics per group and intersection, gaps, and their uncertainty.

For every policy and condition of a run, each metric is estimated per group of one attribute
(``gender``, ``race``, ...) and per cell of their intersection (``gender x race``). Within a
replication ``r`` the estimate for a group ``G`` is the mean over the people of ``G`` for whom the
metric is defined (its denominator in :data:`simstudy.metrics.METRICS`: every applicant for
validity, those given a recourse for cost, log-density, plausibility and hap), and the reported
estimate is the mean over replications:

    m(G) = (1/R) sum_r  sum_{i in G_r} d_i v_i / sum_{i in G_r} d_i,

with ``v_i`` the person's value and ``d_i`` whether it is defined. A **gap** is the difference
between a focal and a reference group, ``m(focal) - m(reference)`` (female - male, non-white -
white, non-privileged - privileged; see :class:`~simstudy.analysis.groups.Codebook`).

Uncertainty:

* **Bootstrap intervals** (percentile, Efron & Tibshirani 1993, ch. 13): people are resampled
  with replacement within each replication and each intersection cell (a stratified bootstrap,
  so group sizes stay fixed). The draws are keyed by (seed, source, replication, cell) through
  :mod:`simstudy.core.rng`, so the conditions of a run, which face the same applicants, are
  resampled
  with the same people: contrasts between conditions (does a gap widen?) get paired intervals.
  A group's estimate of a proportion (validity, plausibility, hap, approval and dropout rates)
  instead gets the interval ``summary.csv`` gives the same figure: the Wilson score interval at
  its effective sample size (:mod:`simstudy.core.intervals`), inside [0, 1] by construction.
* **Permutation p-values** (Good 2005, ch. 3): the focal / reference labels are permuted among
  the people of the two groups within each replication; ``p = (1 + #{|T*| >= |T|}) / (1 + P)``
  for the replication-averaged gap ``T``.
* **Multiple comparisons**: over the group comparisons of each policy, condition and metric
  (or, with ``family="audit"``, over every gap of the audit), Holm's step-down adjustment (Holm
  1979, family-wise error) or the Benjamini-Hochberg step-up adjustment (1995, false
  discovery rate), by :func:`simstudy.analysis.multiplicity.adjust_pvalues`; a gap without a
  p-value is left out of its family.

A **hidden disparity** is a gap that is absent under the no-personalization baseline
(adjusted ``p >= alpha`` and its interval, of non-zero width, covers zero) and present under
a condition with individual actionability (adjusted ``p < alpha`` and its interval excludes
zero).

Who is compared with whom (group labels, reference levels, intersection cells) is declared in
:mod:`simstudy.analysis.groups`; the per-cell sums, the bootstrap and the permutations in
:mod:`simstudy.analysis.resampling`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.intervals import around, metric_interval
from ..metrics import Metric, metrics_of, readable_metrics
from .groups import Codebook, Comparison, cell_name, comparisons, groupings
from .multiplicity import adjust_pvalues
from .resampling import CellSums, accumulate, mean_over_reps, percentile_interval, ratio

__all__ = ["AuditResult", "audit", "adjust_pvalues"]


@dataclass
class AuditResult:
    """Tables of an audit (see :func:`audit`).

    Attributes:
        groups: per source, policy, condition, metric and group: ``grouping`` (``all``, an
            attribute, or ``gender x race``), ``group``, ``n`` (mean people per replication
            with the metric defined), ``estimate``, ``ci_low``, ``ci_high``.
        gaps: per source, policy, condition, metric and comparison (``focal - reference``):
            ``estimate``, interval, ``p_value``, ``p_adjusted``, ``significant``.
        contrasts: between conditions, per comparison and metric: ``gap(condition) -
            gap(versus)`` with a paired bootstrap interval.
        extremes: per condition and metric, the intersection cell with the highest estimate
            and its margin over the runner-up, with a bootstrap interval.
        hidden: gaps absent under the baseline and present under a condition.
        settings: the audit's settings (for the report).
    """

    groups: pd.DataFrame
    gaps: pd.DataFrame
    contrasts: pd.DataFrame
    extremes: pd.DataFrame
    hidden: pd.DataFrame
    settings: dict = field(default_factory=dict)


def _sources(recourse: pd.DataFrame, outcomes: pd.DataFrame | None, by: Sequence[str],
             metrics: Sequence[str] | None) -> list[tuple[str, pd.DataFrame, dict, str]]:
    # (source name, table, metrics it has, id column) for the recourse rows and the outcomes.
    chosen = set(metrics) if metrics is not None else None
    known = {**metrics_of("recourse"), **metrics_of("outcomes")}
    unknown = (chosen or set()) - set(known)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; choose from {sorted(known)}")

    def pick(table: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, dict[str, Metric]]:
        # a metric the table predates is computed from its other columns, or left out (a line)
        return readable_metrics(table, kind, audited=None if chosen is not None else True,
                                names=chosen, source=f"the run's {kind} table")

    sources = [("recourse", *pick(recourse, "recourse"), "applicant_id")]
    if outcomes is not None and len(outcomes):
        sources.append(("event world", *pick(outcomes, "outcomes"), "applicant"))
    for name, table, _, _ in sources:
        missing = [c for c in by if c not in table.columns]
        if missing:
            raise ValueError(f"{name} table has no column {missing}; it has "
                             f"{sorted(c for c in table.columns if c[:2] not in ('x_', 'xc'))}")
    return sources


@dataclass
class _Tables:
    groups: list = field(default_factory=list)
    gaps: list = field(default_factory=list)
    contrasts: list = field(default_factory=list)
    extremes: list = field(default_factory=list)
    codebook: Codebook = field(default_factory=Codebook)


def audit(
    recourse: pd.DataFrame, by: Sequence[str], baseline: str | None = None,
    metrics: Sequence[str] | None = None, outcomes: pd.DataFrame | None = None,
    n_bootstrap: int = 1000, n_permutations: int = 1000, alpha: float = 0.05,
    correction: str = "holm", family: str = "table", seed: int = 0,
    codebook: Codebook | None = None,
) -> AuditResult:
    """Audits a run's recourse (and event-world outcomes) by groups and their intersection.

    Args:
        recourse: ``recourse.parquet`` rows (``replication``, ``condition``, ``policy``,
            ``applicant_id``, the ``by`` columns and the metric columns).
        by: group attributes; intersections are taken over all of them.
        baseline: the no-personalization condition for hidden-disparity lines (``None``: none).
        metrics: names in :data:`simstudy.metrics.METRICS` (default: the audited ones). One
            the table predates is computed from its other columns or left out, said in one
            line (:func:`~simstudy.metrics.readable_metrics`).
        outcomes: the event world's per-applicant outcomes with ``condition``, ``policy``,
            ``replication``, ``applicant`` and the ``by`` columns (optional).
        n_bootstrap: bootstrap resamples.
        n_permutations: label permutations per gap.
        alpha: test level; intervals have level ``1 - alpha``.
        correction: ``holm``, ``bh`` or ``none``.
        family: the comparisons corrected together: ``table`` (the group comparisons of one
            policy, condition and metric) or ``audit`` (every gap of the audit; needs enough
            permutations that ``1 / (P + 1)`` clears ``alpha`` divided by the number of tests).
        seed: base seed of the bootstrap and permutation streams.
        codebook: labels and reference levels of the group codes (the world's and the
            populations'; see :func:`simstudy.cli.study_commands.run_codebook`).

    References:
        Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13; Good (2005),
        *Permutation, Parametric and Bootstrap Tests of Hypotheses*, ch. 3; Holm (1979),
        Scand. J. Statist. 6:65-70; Benjamini & Hochberg (1995), JRSS B 57:289-300.

    Example:
        >>> import numpy as np, pandas as pd
        >>> rows = pd.DataFrame({"replication": 0, "condition": "c", "policy": "p",
        ...     "applicant_id": np.arange(40), "gender": np.arange(40) % 2, "found": True,
        ...     "valid": np.random.default_rng(0).random(40) < 0.6})
        >>> book = Codebook({"gender": {0: "female", 1: "male"}}, {"gender": 1})
        >>> result = audit(rows, by=["gender"], metrics=["validity"], n_bootstrap=50,
        ...                n_permutations=50, codebook=book)
        >>> list(result.gaps["comparison"])
        ['gender: female - male']
    """
    by = list(by)
    tables = _Tables(codebook=codebook or Codebook())
    for source, table, defs, id_col in _sources(recourse, outcomes, by, metrics):
        _audit_source(tables, source, table, defs, id_col, by, baseline, n_bootstrap,
                      n_permutations, alpha, seed)
    settings = {"by": by, "baseline": baseline, "n_bootstrap": n_bootstrap,
                "n_permutations": n_permutations, "alpha": alpha, "correction": correction,
                "family": family, "seed": seed}
    return _result(tables, _adjust(pd.DataFrame(tables.gaps, columns=_GAP_COLUMNS), family,
                                   correction, alpha),
                   settings)


#: The columns of each table, so that a table with no rows (one group only, one condition)
#: still has them and every reader of it can select by column.
_KEY = ["source", "policy", "condition", "metric"]
_INTERVAL = ["estimate", "ci_low", "ci_high"]
_GROUP_COLUMNS = [*_KEY, "grouping", "group", "n", *_INTERVAL]
_GAP_COLUMNS = [*_KEY, "grouping", "comparison", "focal", "reference", *_INTERVAL, "p_value"]
_CONTRAST_COLUMNS = ["source", "policy", "metric", "comparison", "condition", "versus", "gap",
                     "gap_versus", *_INTERVAL]
_EXTREME_COLUMNS = [*_KEY, "grouping", "highest", "highest_estimate", "runner_up",
                    "runner_up_estimate", "margin", "ci_low", "ci_high", "share_highest"]


def _result(tables: _Tables, gaps: pd.DataFrame, settings: dict) -> AuditResult:
    # the tables of an audit with its settings, the codes' legend and the number of tests
    settings = {**settings, "codes": tables.codebook.legend(settings["by"]),
                "tests": int(gaps["p_value"].notna().sum()) if len(gaps) else 0}
    return AuditResult(pd.DataFrame(tables.groups, columns=_GROUP_COLUMNS), gaps,
                       pd.DataFrame(tables.contrasts, columns=_CONTRAST_COLUMNS),
                       pd.DataFrame(tables.extremes, columns=_EXTREME_COLUMNS),
                       _hidden(gaps, settings["baseline"], settings["alpha"]), settings)


def _audit_source(tables: _Tables, source: str, table: pd.DataFrame, defs: dict[str, Metric],
                  id_col: str, by: list[str], baseline: str | None, n_bootstrap: int,
                  n_permutations: int, alpha: float, seed: int) -> None:
    # One source's steps: accumulate cell sums (bootstrap and permutation draws included),
    # estimate groups and gaps, then contrast conditions.
    if not defs:
        return
    # A condition without the attribute (no ``privileged`` under the baseline) is left out.
    table = table.dropna(subset=by)
    if not len(table):
        return
    levels = {a: sorted(int(v) for v in pd.unique(table[a].dropna())) for a in by}
    cells = list(itertools.product(*(levels[a] for a in by)))
    comps = comparisons(by, levels, cells, tables.codebook)
    sums = accumulate(table, defs, by, cells, comps, id_col, source, n_bootstrap,
                      n_permutations, seed)
    boot_gap: dict[tuple, np.ndarray] = {}
    for (policy, condition), per_metric in sums.items():
        for m, cs in per_metric.items():
            base = {"source": source, "policy": policy, "condition": condition, "metric": m}
            _estimate_rows(tables, base, cs, by, levels, cells, comps, alpha, boot_gap,
                           defs[m].values)
    _contrast_rows(tables, source, list(sums), list(defs), comps, baseline, boot_gap, alpha)


def _estimate_rows(tables: _Tables, base: dict, cs: CellSums, by: list[str], levels: Mapping,
                   cells: list, comps: list[Comparison], alpha: float, boot_gap: dict,
                   metric_kind: str = "real") -> None:
    # Group estimates (a proportion's interval by the shared rule of simstudy.core.intervals,
    # others by the percentile bootstrap), gaps with permutation p-values, and the highest
    # intersection cell.
    for grouping, label, cset in groupings(by, levels, cells, tables.codebook):
        estimate = cs.estimate(cset)
        if metric_kind == "proportion":
            # the rule summary.csv uses for the same figure (simstudy.core.intervals)
            counts = cs.n[:, cset].sum(1)
            lo, hi = around(estimate, *metric_interval(
                "proportion", ratio(cs.s[:, cset].sum(1), counts), counts, 1 - alpha))
        else:
            lo, hi = percentile_interval(cs.bootstrap(cset), alpha, estimate)
        tables.groups.append({**base, "grouping": grouping, "group": label,
                              "n": float(cs.n[:, cset].sum(1).mean()),
                              "estimate": estimate, "ci_low": lo, "ci_high": hi})
    for q, comp in enumerate(comps):
        gap = float(mean_over_reps(cs.gap[q]))
        bgap = cs.bootstrap(comp.focal_cells) - cs.bootstrap(comp.reference_cells)
        boot_gap[(base["policy"], base["condition"], base["metric"], comp.name)] = bgap
        t_perm = mean_over_reps(cs.perm_gap[q])
        fin = np.isfinite(t_perm)
        p = (float((1 + np.sum(np.abs(t_perm[fin]) >= abs(gap) - 1e-12)) / (1 + fin.sum()))
             if np.isfinite(gap) and fin.any() else np.nan)
        lo, hi = percentile_interval(bgap, alpha, gap)
        tables.gaps.append({**base, "grouping": comp.grouping, "comparison": comp.name,
                            "focal": comp.focal, "reference": comp.reference, "estimate": gap,
                            "ci_low": lo, "ci_high": hi, "p_value": p})
    if len(by) < 2:
        return
    ests = np.array([cs.estimate(np.array([c])) for c in range(len(cells))])
    if np.isfinite(ests).sum() < 2:
        return
    order = np.argsort(np.where(np.isfinite(ests), -ests, np.inf))
    top, second = order[0], order[1]
    cb = np.stack([cs.bootstrap(np.array([c])) for c in range(len(cells))], axis=1)
    margin = cb[:, top] - np.nanmax(np.delete(cb, top, axis=1), axis=1)
    lo, hi = percentile_interval(margin, alpha, float(ests[top] - ests[second]))
    tables.extremes.append({**base, "grouping": " x ".join(by),
                            "highest": cell_name(by, cells[top], tables.codebook),
                            "highest_estimate": float(ests[top]),
                            "runner_up": cell_name(by, cells[second], tables.codebook),
                            "runner_up_estimate": float(ests[second]),
                            "margin": float(ests[top] - ests[second]), "ci_low": lo,
                            "ci_high": hi, "share_highest": float(np.mean(margin > 0))})


def _contrast_rows(tables: _Tables, source: str, blocks: list[tuple], metrics: list[str],
                   comps: list[Comparison], baseline: str | None, boot_gap: dict,
                   alpha: float) -> None:
    # Differences of a gap between two conditions, with a paired bootstrap interval.
    conditions = list(dict.fromkeys(c for _, c in blocks))
    policies = list(dict.fromkeys(p for p, _ in blocks))
    for policy, m, comp in itertools.product(policies, metrics, comps):
        for a, b in itertools.permutations(conditions, 2):
            if a == baseline or (conditions.index(a) < conditions.index(b) and b != baseline):
                continue  # each unordered pair once; the baseline is always 'versus'
            ka, kb = (policy, a, m, comp.name), (policy, b, m, comp.name)
            if ka not in boot_gap or kb not in boot_gap:
                continue
            ga = _row_estimate(tables.gaps, source, policy, a, m, comp.name)
            gb = _row_estimate(tables.gaps, source, policy, b, m, comp.name)
            lo, hi = percentile_interval(boot_gap[ka] - boot_gap[kb], alpha, ga - gb)
            tables.contrasts.append({"source": source, "policy": policy, "metric": m,
                                     "comparison": comp.name, "condition": a, "versus": b,
                                     "gap": ga, "gap_versus": gb, "estimate": ga - gb,
                                     "ci_low": lo, "ci_high": hi})


def _adjust(gaps: pd.DataFrame, family: str, correction: str, alpha: float) -> pd.DataFrame:
    # Multiple-comparison adjustment over the family, and the significance verdict.
    if not len(gaps):
        return gaps.assign(p_adjusted=pd.Series(dtype=float), significant=pd.Series(dtype=bool))
    if family == "audit":
        gaps["p_adjusted"] = adjust_pvalues(gaps["p_value"].to_numpy(), correction,
                                            missing="exclude")
    else:
        gaps["p_adjusted"] = np.nan
        for _, idx in gaps.groupby(["source", "policy", "condition", "metric"]).groups.items():
            gaps.loc[idx, "p_adjusted"] = adjust_pvalues(
                gaps.loc[idx, "p_value"].to_numpy(), correction, missing="exclude")
    gaps["significant"] = ((gaps["p_adjusted"] < alpha)
                           & ((gaps["ci_low"] > 0) | (gaps["ci_high"] < 0)))
    return gaps


def _row_estimate(rows: list[dict], source: str, policy: str, condition: str, metric: str,
                  comparison: str) -> float:
    for row in reversed(rows):
        if (row["source"], row["policy"], row["condition"], row["metric"],
                row["comparison"]) == (source, policy, condition, metric, comparison):
            return row["estimate"]
    return np.nan


def _hidden(gaps: pd.DataFrame, baseline: str | None, alpha: float) -> pd.DataFrame:
    cols = ["source", "policy", "metric", "comparison", "condition", "estimate", "ci_low",
            "ci_high", "p_adjusted", "baseline_estimate", "baseline_ci_low", "baseline_ci_high",
            "baseline_p_adjusted"]
    if baseline is None or not len(gaps) or baseline not in set(gaps["condition"]):
        return pd.DataFrame(columns=cols)
    keys = ["source", "policy", "metric", "comparison"]
    base = gaps[gaps["condition"] == baseline].set_index(keys)
    # A zero-width baseline interval means the metric is constant there (hap is 1 for everyone
    # when all features score alike): no evidence either way, so no "hidden" claim.
    absent = base[(base["p_adjusted"] >= alpha) & (base["ci_low"] <= 0) & (base["ci_high"] >= 0)
                  & (base["ci_high"] > base["ci_low"])]
    rows = []
    for _, g in gaps[(gaps["condition"] != baseline) & gaps["significant"]].iterrows():
        k = tuple(g[c] for c in keys)
        if k in absent.index:
            b = absent.loc[k]
            rows.append({**{c: g[c] for c in cols[:9]},
                         "baseline_estimate": b["estimate"], "baseline_ci_low": b["ci_low"],
                         "baseline_ci_high": b["ci_high"],
                         "baseline_p_adjusted": b["p_adjusted"]})
    return pd.DataFrame(rows, columns=cols)
