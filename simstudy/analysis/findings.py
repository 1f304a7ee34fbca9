"""Findings of a fairness audit: plain-language paragraphs read from its tables.

A :class:`Finding` is a title, whether it holds in the run, and a paragraph. This module holds
what any set of findings needs (looking up a gap or a contrast, writing an estimate with its
interval) and the generic one: hidden disparities, gaps absent under the baseline condition and
present elsewhere (:func:`hidden_findings`). Findings of a particular paper live beside it
(:mod:`simstudy.analysis.case_study`).

Example:
    >>> fmt_ci(0.25, 0.1, 0.4)
    '+0.250 [+0.100, +0.400]'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..metrics import METRICS
from .audit import AuditResult

__all__ = ["Finding", "hidden_findings", "metric_label", "fmt_ci", "fmt_gap", "find_gap",
           "find_contrast", "excludes_zero", "interval"]


@dataclass
class Finding:
    """One finding: a title, whether it holds in this run, and a plain-language paragraph."""

    title: str
    reproduced: bool | None
    text: str


def metric_label(metric: str) -> str:
    """The metric table's label of ``metric`` (its own name if not in the table)."""
    return METRICS[metric].label if metric in METRICS else metric


def fmt_ci(est: float, lo: float, hi: float, digits: int = 3) -> str:
    """``est [lo, hi]`` with signs; ``n/a`` without an estimate, ``est`` without an interval."""
    if not np.isfinite(est):
        return "n/a"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{est:+.{digits}f}"
    return f"{est:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def find_gap(result: AuditResult, policy: str, condition: str, metric: str,
             comparison: str) -> pd.Series | None:
    """The audit's gap row of one recourse metric and comparison (None if absent)."""
    g = result.gaps
    if not len(g):
        return None
    sel = g[(g["source"] == "recourse") & (g["policy"] == policy) & (g["condition"] == condition)
            & (g["metric"] == metric) & (g["comparison"] == comparison)]
    return sel.iloc[0] if len(sel) else None


def find_contrast(result: AuditResult, policy: str, metric: str, comparison: str, condition: str,
                  versus: str) -> pd.Series | None:
    """The audit's contrast row: a gap under ``condition`` minus under ``versus``."""
    c = result.contrasts
    if not len(c):
        return None
    sel = c[(c["source"] == "recourse") & (c["policy"] == policy) & (c["metric"] == metric)
            & (c["comparison"] == comparison) & (c["condition"] == condition)
            & (c["versus"] == versus)]
    return sel.iloc[0] if len(sel) else None


def fmt_gap(row: pd.Series | None) -> str:
    """A gap row as ``estimate [interval], adjusted p = ...``."""
    if row is None:
        return "n/a"
    return f"{fmt_ci(row['estimate'], row['ci_low'], row['ci_high'])}, adjusted p = " \
           f"{row['p_adjusted']:.3g}"


def excludes_zero(row: pd.Series | None, sign: int) -> bool:
    """Whether the row's interval lies above zero (``sign > 0``) or below it."""
    if row is None:
        return False
    return bool(row["ci_low"] > 0) if sign > 0 else bool(row["ci_high"] < 0)


def interval(row: pd.Series | None) -> tuple[float, float, float]:
    """``(estimate, ci_low, ci_high)`` of a row, NaN without one."""
    if row is None:
        return np.nan, np.nan, np.nan
    return row["estimate"], row["ci_low"], row["ci_high"]


def hidden_findings(result: AuditResult) -> list[Finding]:
    """One "hidden disparity" paragraph per gap absent under the baseline, present elsewhere."""
    out = []
    for _, h in result.hidden.iterrows():
        out.append(Finding(
            f"Hidden disparity: {h['comparison']} in {metric_label(h['metric'])} "
            f"under {h['condition']} ({h['policy']}, {h['source']})", True,
            f"The gap is {fmt_ci(h['estimate'], h['ci_low'], h['ci_high'])} (adjusted p = "
            f"{h['p_adjusted']:.3g}) under {h['condition']}, but "
            f"{fmt_ci(h['baseline_estimate'], h['baseline_ci_low'], h['baseline_ci_high'])} "
            f"(adjusted p = {h['baseline_p_adjusted']:.3g}) under the baseline condition "
            f"'{result.settings.get('baseline')}': an audit ignoring individual actionability "
            f"would not see it."))
    return out
