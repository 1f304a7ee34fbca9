"""The preregistered exclusions of a live study's export, applied before any test.

A live export (``simstudy export``, one row per rating) carries per participant their
``status`` (``completed``, ``failed_attention``, ``no_consent``, ``timed_out``, ``returned``),
the ``condition`` that served them and the ``assigned_condition`` first drawn, ``no_plan`` (1:
the assigned condition found no plan for their stated profile) and ``pilot`` (1: entered while
the researcher's pilot flag was on). The study file's ``live.exclusions`` names which of the
reasons :data:`~simstudy.study.live_section.EXCLUSION_REASONS` exclude a participant from the
confirmatory analysis; the rule, per participant, in this order (the first reason that applies
is recorded):

* ``failed_attention``: ``status == failed_attention``;
* ``timed_out``: ``status == timed_out``;
* ``no_plan``: ``no_plan == 1`` and the participant was not served by a replacement
  (``condition == assigned_condition``; under the file's ``no_plan.rule: replace`` the
  replacement condition's plan was rated, and they are analysed in that condition);
* ``pilot``: ``pilot == 1``;
* ``not_completed``: a status other than ``completed``, ``failed_attention`` and
  ``timed_out`` (``returned``, ``no_consent``): not a participation, always excluded, reported
  under its own name.

An older export lacking one of these columns reads it at its neutral value (``status``
completed, ``no_plan`` 0, ``pilot`` 0, ``assigned_condition`` the served condition) and says so
in one note per column. A table with none of the live columns (a simulated study's) is not a
live export: nothing is excluded and no note is made.

``simstudy analyze`` and every simulated study of ``simstudy power`` call
:func:`apply_exclusions`: the same code excludes the same participants in both.

Example:
    >>> import pandas as pd
    >>> table = pd.DataFrame({"uid": [0, 0, 1, 2], "act": [5, 4, 6, 2],
    ...                       "status": ["completed", "completed", "failed_attention",
    ...                                  "completed"]})
    >>> res = apply_exclusions(table, ["failed_attention", "no_plan"])
    >>> res.kept["uid"].unique().tolist(), res.excluded.to_dict(orient="records")
    ([0, 2], [{'uid': 1, 'reason': 'failed_attention'}])
    >>> res.notes[0]
    'no column no_plan: read as 0 (an export written before it)'
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from .live_section import EXCLUSION_REASONS

__all__ = ["Exclusions", "apply_exclusions", "LIVE_COLUMNS", "exclusion_rule",
           "record_exclusions"]

#: The export's per-participant columns the exclusions read, with their neutral values.
LIVE_COLUMNS = {"status": "completed", "no_plan": 0, "pilot": 0, "assigned_condition": None}

_NEEDS = {"failed_attention": "status", "timed_out": "status", "no_plan": "no_plan",
          "pilot": "pilot"}


@dataclass
class Exclusions:
    """The rows kept, who was excluded and why (``uid, reason``, one row per participant),
    and notes on columns read at their neutral value."""

    kept: pd.DataFrame
    excluded: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Excluded participants per reason."""
        return {str(k): int(v) for k, v in self.excluded["reason"].value_counts().items()}

    def summary(self, group: str = "uid") -> str:
        """One line: analysed and excluded participants, per reason."""
        n_kept = int(self.kept[group].nunique()) if len(self.kept) else 0
        parts = ", ".join(f"{n} {r}" for r, n in sorted(self.counts().items())) or "none"
        return (f"{n_kept} participant(s) analysed; {len(self.excluded)} excluded ({parts})")


def exclusion_rule(reasons: Sequence[str], no_plan_rule: str = "exclude") -> list[str]:
    """The exclusion rule in words, one line per reason (for the preregistration).

    Example:
        >>> exclusion_rule(["failed_attention"])[0].startswith("failed_attention")
        True
    """
    words = {
        "failed_attention": "failed_attention: status `failed_attention` (failed the stated "
                            "number of instructed-response attention checks)",
        "timed_out": "timed_out: status `timed_out` (did not finish within the time a slot is "
                     "held)",
        "no_plan": "no_plan: the assigned condition found no plan for the stated profile and "
                   "no replacement condition served them" + (
                       " (rule `replace`: those served by the replacement are analysed in it)"
                       if no_plan_rule == "replace" else " (rule `exclude`)"),
        "pilot": "pilot: entered while the pilot flag was on",
    }
    out = [words[r] for r in EXCLUSION_REASONS if r in reasons]
    out.append("not_completed: status `returned` or `no_consent` (no participation), always")
    return out


def _column(table: pd.DataFrame, name: str, notes: list[str], live: bool) -> pd.Series:
    if name in table:
        return table[name]
    neutral = LIVE_COLUMNS[name]
    if live:
        shown = "the served condition" if neutral is None else repr(neutral)
        notes.append(f"no column {name}: read as {shown} (an export written before it)")
    if neutral is None:
        return table["condition"] if "condition" in table else pd.Series(None, table.index)
    return pd.Series(neutral, index=table.index)


def apply_exclusions(table: pd.DataFrame, reasons: Sequence[str], group: str = "uid"
                     ) -> Exclusions:
    """Applies the exclusion rule of the module docstring.

    Args:
        table: the long rating table (a live export or a simulated one).
        reasons: the reasons that exclude (a subset of
            :data:`~simstudy.study.live_section.EXCLUSION_REASONS`).
        group: the participant column.

    Returns:
        :class:`Exclusions`.
    """
    unknown = [r for r in reasons if r not in EXCLUSION_REASONS]
    if unknown:
        raise ValueError(f"unknown exclusion reason {unknown[0]!r}; choose from "
                         f"{list(EXCLUSION_REASONS)}")
    live = any(c in table for c in ("status", "no_plan", "pilot", "assigned_condition"))
    empty = pd.DataFrame({group: pd.Series(dtype=table[group].dtype if group in table
                                           else object), "reason": pd.Series(dtype=str)})
    if not live:
        return Exclusions(table, empty)
    notes: list[str] = []
    needed = {_NEEDS[r] for r in reasons} | {"status"}
    if "no_plan" in reasons:
        needed.add("assigned_condition")
    cols = {name: _column(table, name, notes, live) for name in LIVE_COLUMNS if name in needed}
    status = cols["status"].astype(str)
    reason = pd.Series("", index=table.index, dtype=object)

    def mark(mask: np.ndarray, name: str) -> None:
        reason[(reason == "") & mask] = name

    if "failed_attention" in reasons:
        mark((status == "failed_attention").to_numpy(), "failed_attention")
    if "timed_out" in reasons:
        mark((status == "timed_out").to_numpy(), "timed_out")
    if "no_plan" in reasons:
        served = cols["assigned_condition"].astype(str) == (
            table["condition"].astype(str) if "condition" in table
            else cols["assigned_condition"].astype(str))
        flag = pd.to_numeric(cols["no_plan"], errors="coerce").fillna(0).to_numpy() > 0
        mark(flag & served.to_numpy(), "no_plan")
    if "pilot" in reasons:
        mark(pd.to_numeric(cols["pilot"], errors="coerce").fillna(0).to_numpy() > 0, "pilot")
    mark(~status.isin(["completed", "failed_attention", "timed_out"]).to_numpy(),
         "not_completed")
    # one reason per participant: the first row's (the columns are per participant)
    per = pd.DataFrame({group: table[group], "reason": reason}).drop_duplicates(group)
    out = per[per["reason"] != ""].sort_values(group, kind="stable").reset_index(drop=True)
    kept = table[~table[group].isin(out[group])].reset_index(drop=True)
    return Exclusions(kept, out, notes)


def record_exclusions(res: Exclusions, out: Path | None, source: str, group: str = "uid",
                      stream: TextIO | None = None) -> None:
    """Says who was excluded and why (one line, the notes on neutral columns once each) and
    writes ``exclusions.csv`` (``uid, reason``) in ``out``."""
    stream = sys.stdout if stream is None else stream
    for note in res.notes:
        print(f"{source}: {note}", file=sys.stderr)
    print(f"exclusions: {res.summary(group)}", file=stream)
    if out is not None:
        res.excluded.to_csv(Path(out) / "exclusions.csv", index=False)
