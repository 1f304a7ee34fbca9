"""Summaries of recourse tables: metrics per policy x condition x group, over replications.

Population-level metrics follow the individual-actionability study (2026, Section 5.1). Each
is declared once, with its column and denominator, in :data:`simstudy.metrics.METRICS`:

* ``validity``: share of applicants whose recourse is approved (no recourse counts as invalid);
* ``plausibility``, ``hap``, ``logp_cf``: among applicants who received a recourse;
* ``cost``, ``cost_unweighted``, ``sparsity``, ``proximity``: means among applicants whose
  recourse is valid, as published; the ``*_found`` twins average over every recourse found;
* ``no_recourse``: share for whom the policy found nothing; ``violation``: share of recourses
  acting on a feature the person cannot change.

A table written before a metric existed still summarizes: the metric is computed from the
table's other columns where its declaration says how (:attr:`~simstudy.metrics.Metric.derive`),
else left out with one line saying the table predates it
(:func:`~simstudy.metrics.readable_metrics`).

Numeric per-applicant columns that no metric reads (policy extras such as queries asked) are
averaged over every applicant.

Each metric is computed per replication and reported as the mean over replications with a
95% interval that stays inside the metric's range (:mod:`simstudy.core.intervals`, the rule the
fairness audit shares): a proportion gets the Wilson score interval at its effective sample
size (replication spread included; one replication gets the Wilson interval over its people),
other metrics the Student-t interval over replications intersected with their range (a
single replication gives none); the policies' numeric extras keep the plain Student-t interval.

A contrast compares two policies that served the same people in the same replications: the
replication-level difference ``metric(policy) - metric(baseline)``, reported as the mean over
replications with a 95% Student-t interval. The policies share every random draw (common random
numbers), so the pairing removes the spread between worlds and populations.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..core.intervals import mean_sd_ci, metric_interval
from ..metrics import RECOURSE_COLUMNS, Metric, metrics_of, readable_metrics

__all__ = ["replication_metrics", "summarize_recourse", "summarize_contrasts", "mean_ci"]

_KEYS = ("policy", "condition")
#: Columns of a recourse table that identify a row rather than measure it.
_ID_COLUMNS = ("replication", "seed", "condition", "policy", "applicant_id", "n_actionable")


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of replication-level values."""
    m, _, lo, hi = mean_sd_ci(values, level)
    return m, lo, hi


#: Prefix of the per-replication count columns behind each metric (``counts=True``).
_COUNT = "count_of_"


def _metrics(block: pd.DataFrame, metrics: dict[str, Metric], extras: Sequence[str],
             counts: bool = False) -> dict[str, float]:
    out = {"n": float(len(block))}
    for name, metric in metrics.items():
        out[name] = metric.mean(block)
        if counts:
            out[_COUNT + name] = float(metric.count(block))
    for col in extras:
        out[col] = float(pd.to_numeric(block[col], errors="coerce").mean())
    return out


def _extra_columns(df: pd.DataFrame, group_columns: Sequence[str]) -> list[str]:
    measured = {m.column for m in metrics_of("recourse").values()}
    skip = {*_ID_COLUMNS, *RECOURSE_COLUMNS, *measured, *group_columns}
    prefixes = ("x_", "xcf_", "score_", "weight_", "act_", "theta_", "can_")
    return [c for c in df.columns if c not in skip and not c.startswith(prefixes)
            and pd.api.types.is_numeric_dtype(df[c])]


def replication_metrics(df: pd.DataFrame, group_columns: Sequence[str] = (),
                        counts: bool = False, source: str | None = None) -> pd.DataFrame:
    """One row per replication x policy x condition x group (``group_by = all`` included);
    ``counts`` adds ``count_of_<metric>``, the people in each metric's denominator.
    ``source`` names the table in the line about metrics it predates."""
    df, metrics = readable_metrics(df, summarized=True, source=source)
    extras = _extra_columns(df, group_columns)
    rows = []
    for by in ("all", *group_columns):
        keys = ["replication", *_KEYS] + ([] if by == "all" else [by])
        for key, block in df.groupby(keys, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            group = "all" if by == "all" else str(key[-1])
            rows.append({"replication": key[0], "policy": key[1], "condition": key[2],
                         "group_by": by, "group": group,
                         **_metrics(block, metrics, extras, counts)})
    return pd.DataFrame(rows)


def summarize_recourse(df: pd.DataFrame, group_columns: Sequence[str] = (),
                       source: str | None = None) -> pd.DataFrame:
    """Mean and 95% CI over replications of every metric, per policy x condition x group.

    The metrics and their denominators are those of :data:`simstudy.metrics.METRICS`
    (``summarized``), followed by the policies' numeric extras averaged over everyone. A metric
    the table predates is computed from its other columns or left out (one
    :class:`~simstudy.metrics.RunPredatesMetric` warning, naming ``source``).

    References:
        Individual-actionability study (2026), Section 5.1 (the population metrics);
        Wilson (1927), JASA 22:209-212, and Student-t intervals (:mod:`simstudy.core.intervals`).

    Example:
        >>> import pandas as pd
        >>> rows = pd.DataFrame({"replication": [0, 0, 1, 1], "policy": "p", "condition": "c",
        ...     "found": [True, False, True, True], "valid": [True, False, False, True],
        ...     "plausible": True, "hard_action": False, "cost": [1.0, None, 2.0, 4.0],
        ...     "cost_unweighted": 1.0, "sparsity": 1, "proximity": 1.0, "logp_cf": 0.0,
        ...     "violation": False})
        >>> summarize_recourse(rows)[["validity", "cost", "no_recourse"]].round(2).values.tolist()
        [[0.5, 2.5, 0.25]]
    """
    per_rep = replication_metrics(df, group_columns, counts=True, source=source)
    metric_cols = [c for c in per_rep.columns if not c.startswith(_COUNT)
                   and c not in ("replication", "policy", "condition", "group_by", "group")]
    kinds = {name: m.values for name, m in metrics_of("recourse", summarized=True).items()}
    rows = []
    for key, block in per_rep.groupby(["policy", "condition", "group_by", "group"], sort=False):
        row = dict(zip(("policy", "condition", "group_by", "group"), key, strict=True))
        row["replications"] = int(block["replication"].nunique())
        for col in metric_cols:
            m, lo, hi = mean_ci(block[col].to_numpy())
            if col in kinds:
                counts = block.get(_COUNT + col)
                lo, hi = metric_interval(kinds[col], block[col].to_numpy(),
                                         None if counts is None else counts.to_numpy())
            row[col] = m
            if col != "n":
                row[f"{col}_ci_low"], row[f"{col}_ci_high"] = lo, hi
        rows.append(row)
    return _in_document_order(pd.DataFrame(rows), df, group_columns)


def _in_document_order(table: pd.DataFrame, df: pd.DataFrame, group_columns: Sequence[str],
                       first: str = "policy") -> pd.DataFrame:
    """Rows ordered as the scenario lists policies (or contrast pairs) and conditions, ``all``
    before the group columns, instead of alphabetically. A ``pair`` column is dropped."""
    if not len(table):
        return table
    rank = {"policy": {v: i for i, v in enumerate(pd.unique(df["policy"]))},
            "condition": {v: i for i, v in enumerate(pd.unique(df["condition"]))},
            "group_by": {v: i for i, v in enumerate(("all", *group_columns))}}
    order = pd.DataFrame({
        "first": table["pair"] if first == "pair" else table["policy"].map(rank["policy"]),
        "condition": table["condition"].map(rank["condition"]),
        "group_by": table["group_by"].map(rank["group_by"]), "group": table["group"]})
    index = order.sort_values(list(order.columns), kind="stable").index
    return table.loc[index].drop(columns="pair", errors="ignore").reset_index(drop=True)


def summarize_contrasts(df: pd.DataFrame, pairs: Sequence[tuple],
                        group_columns: Sequence[str] = (), source: str | None = None
                        ) -> pd.DataFrame:
    """Paired differences ``policy - baseline`` of every metric, per condition x group.

    Args:
        df: the recourse table of a run.
        pairs: ``(policy, baseline)`` names, compared within every condition, or
            ``(policy, baseline, condition, baseline_condition)``: ``policy`` in ``condition``
            against ``baseline`` in ``baseline_condition`` (``None`` conditions: within each).
        group_columns: columns to break the contrasts down by, besides ``all``.
        source: names the table in the line about metrics it predates.

    Returns:
        One row per pair x condition x group: each metric's mean difference over the
        replications both ran, with its 95% interval (``*_ci_low``, ``*_ci_high``); a
        cross-condition pair has ``condition`` ``"<condition> vs <baseline_condition>"``.
    """
    per_rep = replication_metrics(df, group_columns, source=source)
    metric_cols = [c for c in per_rep.columns
                   if c not in ("replication", "condition", "group_by", "group", "policy", "n")]
    rows = []
    for pair_index, pair in enumerate(pairs):
        policy, baseline, cond, base_cond = (*pair, None, None)[:4]
        mine = per_rep[per_rep["policy"] == policy]
        theirs = per_rep[per_rep["policy"] == baseline]
        keys = ["replication", "condition", "group_by", "group"]
        if cond is not None:
            mine = mine[mine["condition"] == cond].assign(condition=f"{cond} vs {base_cond}")
            theirs = theirs[theirs["condition"] == base_cond].assign(
                condition=f"{cond} vs {base_cond}")
        joined = mine.merge(theirs, on=keys, suffixes=("", "_baseline"))
        for key, block in joined.groupby(["condition", "group_by", "group"], sort=False):
            row = {"pair": pair_index,
                   "policy": policy, "baseline": baseline,
                   **dict(zip(("condition", "group_by", "group"), key, strict=True)),
                   "replications": int(block["replication"].nunique())}
            for col in metric_cols:
                m, lo, hi = mean_ci((block[col] - block[f"{col}_baseline"]).to_numpy())
                row[col], row[f"{col}_ci_low"], row[f"{col}_ci_high"] = m, lo, hi
            rows.append(row)
    # pairs in the scenario's order, then conditions and groups as in a summary
    return _in_document_order(pd.DataFrame(rows), df, group_columns, first="pair")
