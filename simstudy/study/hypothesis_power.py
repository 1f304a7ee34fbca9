"""Power per hypothesis, jointly and per group, with failed fits as their own count.

Each simulated study of ``simstudy power SCENARIO`` (:func:`simulated_table`) is tested with
the study's hypotheses exactly as ``simstudy analyze`` tests real data
(:func:`~simstudy.study.hypothesis_tests.evaluate_hypotheses`: the stated directions, the
``adjust`` covariates, the multiplicity rule). One part-file row per simulation holds, per
hypothesis ``H``, ``p:H`` (unadjusted), ``estimate:H``, ``failed:H`` and ``significant:H``
(rejected after the family's adjustment), the smooth's ``smooth_p:H`` beside a distance
hypothesis, and per group of a hypothesis's ``groups`` column ``significant:H[col=value]``
(unadjusted, outside the family); ``significant:all`` is 1 when every hypothesis is rejected in
the same simulated study and ``failed:any`` when any fit failed.

Power of ``H`` at N is the share rejected among the simulations whose fit of ``H`` succeeded,
with its Clopper-Pearson interval; the failed fits are reported in their own column (never
counted as "not significant"). The smooth beside a distance hypothesis (fitted with the
hypothesis's ``adjust`` covariates) is not fitted where the rows hold fewer than 4 distinct
distances: those studies are counted as ``skipped``, apart from the failed fits. Joint power
is the share of simulations in which all hypotheses are rejected, among those where no fit
failed.

Example:
    >>> h = HypothesisSpec.model_validate({"contrast": ["a", "b"], "direction": "greater"})
    >>> hypothesis_columns([h])[2:6]
    ['p:H1', 'estimate:H1', 'failed:H1', 'significant:H1']
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .from_scenario import StudyPowerTask
from .hypotheses import HypothesisSpec, hypothesis_names
from .hypothesis_tests import evaluate_hypotheses, evaluate_hypothesis, group_mask
from .power import clopper_pearson

__all__ = ["HypothesisPowerTask", "simulate_hypotheses_study", "hypothesis_columns",
           "hypothesis_power_table", "group_values", "POWER_TABLE_COLUMNS"]

#: Columns of ``power.csv`` of a study with hypotheses.
POWER_TABLE_COLUMNS = ["hypothesis", "label", "n", "simulations", "failed", "skipped",
                       "fitted", "significant", "power", "lower", "upper"]


@dataclass(frozen=True)
class HypothesisPowerTask(StudyPowerTask):
    """One simulated study tested with the study's hypotheses."""

    hypotheses: tuple[HypothesisSpec, ...] = ()
    multiplicity: str = "holm"
    groups: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (hypothesis, column, values)


def group_values(pool: pd.DataFrame, column: str) -> tuple[str, ...]:
    """The values of a group column in the pool, as text (``privileged`` / ``non_privileged``
    for a 0/1 ``privileged`` column)."""
    values = pool[column]
    if column == "privileged" and (pd.api.types.is_bool_dtype(values)
                                   or pd.api.types.is_numeric_dtype(values)):
        return ("privileged", "non_privileged")
    return tuple(sorted(values.astype(str).unique()))


def hypothesis_columns(hypotheses: list[HypothesisSpec],
                       groups: tuple[tuple[str, str, tuple[str, ...]], ...] = (),
                       extras: tuple[str, ...] = ()) -> list[str]:
    """The part files' columns for a family of hypotheses (``extras``: what a design records
    beside the tests, e.g. a live study's arrivals)."""
    cols = ["n", "sim", *extras]
    for name, h in zip(hypothesis_names(hypotheses), hypotheses, strict=True):
        cols += [f"p:{name}", f"estimate:{name}", f"failed:{name}", f"significant:{name}"]
        if h.kind == "distance" and h.smooth:
            cols += [f"smooth_p:{name}", f"smooth_skipped:{name}"]
    for name, column, values in groups:
        for v in values:
            cols += [f"failed:{name}[{column}={v}]", f"significant:{name}[{column}={v}]"]
    return [*cols, "failed:any", "significant:all"]


def simulate_hypotheses_study(task: HypothesisPowerTask) -> dict:
    """Simulates one study and tests its hypotheses; one part-file row."""
    table, extras = task.analysed_table()
    alpha = task.power.alpha
    hyps = list(task.hypotheses)
    names = hypothesis_names(hyps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hundreds of refits: per-fit notes would flood the log
        res = evaluate_hypotheses(table, hyps, alpha, task.multiplicity)
    row: dict = {"n": task.n_participants, "sim": task.sim, **extras}
    for name, h, r in zip(names, hyps, res.itertuples(index=False), strict=True):
        row[f"p:{name}"] = float(r.p)
        row[f"estimate:{name}"] = float(r.estimate)
        row[f"failed:{name}"] = float(bool(r.failed))
        row[f"significant:{name}"] = int(bool(r.rejected))
        if h.kind == "distance" and h.smooth:
            row[f"smooth_p:{name}"] = float(r.smooth_p)
            row[f"smooth_skipped:{name}"] = float(r.smooth_status == "too_few_distances")
    by_name = dict(zip(names, hyps, strict=True))
    for name, column, values in task.groups:
        for v in values:
            sub = table[group_mask(table[column], v)] if column in table else table.iloc[:0]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = evaluate_hypothesis(sub, by_name[name], smooth=False)
            except ValueError:
                r = {"failed": True, "p": math.nan}
            row[f"failed:{name}[{column}={v}]"] = float(bool(r["failed"]))
            row[f"significant:{name}[{column}={v}]"] = int(not r["failed"] and r["p"] < alpha)
    row["failed:any"] = float(bool(res["failed"].any()))
    row["significant:all"] = int(bool(res["rejected"].all()))
    return row


def _power_row(name: str, label: str, n: int, significant: np.ndarray, failed: np.ndarray,
               level: float, skipped: np.ndarray | None = None) -> dict:
    skipped = np.zeros(len(failed), dtype=bool) if skipped is None else skipped
    failed = failed & ~skipped
    tested = ~failed & ~skipped
    fitted = int(tested.sum())
    x = int(significant[tested].sum())
    lo, hi = clopper_pearson(x, fitted, level) if fitted else (math.nan, math.nan)
    return {"hypothesis": name, "label": label, "n": int(n), "simulations": len(significant),
            "failed": int(failed.sum()), "skipped": int(skipped.sum()), "fitted": fitted,
            "significant": x, "power": x / fitted if fitted else math.nan, "lower": lo,
            "upper": hi}


def hypothesis_power_table(rows: pd.DataFrame, hypotheses: list[HypothesisSpec],
                           multiplicity: str, groups=(), level: float = 0.95,
                           alpha: float = 0.05) -> pd.DataFrame:
    """Power per hypothesis, the smooth beside each distance hypothesis, jointly and per group
    (:data:`POWER_TABLE_COLUMNS`), from the part files' rows."""
    names = hypothesis_names(hypotheses)
    out = []
    for n, grp in rows.groupby("n"):
        for name, h in zip(names, hypotheses, strict=True):
            failed = grp[f"failed:{name}"].to_numpy(float) > 0
            out.append(_power_row(name, f"{h.label()} [{multiplicity}]", n,
                                  grp[f"significant:{name}"].to_numpy(int), failed, level))
            if h.kind == "distance" and h.smooth:
                p = grp[f"smooth_p:{name}"].to_numpy(float)
                skip = (grp[f"smooth_skipped:{name}"].to_numpy(float) > 0
                        if f"smooth_skipped:{name}" in grp else np.zeros(len(p), dtype=bool))
                adjust = f" + {' + '.join(h.adjust)}" if h.adjust else ""
                out.append(_power_row(f"{name}:smooth", f"{h.response} ~ s({h.distance})"
                                      f"{adjust} (reported beside {name}, not tested; "
                                      f"two-sided, alpha {alpha})", n,
                                      (p < alpha).astype(int), np.isnan(p), level, skip))
        for name, column, values in groups:
            for v in values:
                key = f"{name}[{column}={v}]"
                out.append(_power_row(key, f"{name} within {column}={v} (unadjusted)", n,
                                      grp[f"significant:{key}"].to_numpy(int),
                                      grp[f"failed:{key}"].to_numpy(float) > 0, level))
        out.append(_power_row("all", f"all of {', '.join(names)} rejected in the same study "
                                     f"[{multiplicity}]", n,
                              grp["significant:all"].to_numpy(int),
                              grp["failed:any"].to_numpy(float) > 0, level))
    return pd.DataFrame(out, columns=POWER_TABLE_COLUMNS)
