"""``simstudy export``: the live study's database as the table ``simstudy analyze`` reads.

``study.csv`` has the simulated study's schema (:data:`~simstudy.study.from_scenario.STUDY_COLUMNS`
``uid, item, sparsity, proximity, accept, act`` plus ``policy``, ``blocked``, ``cost`` and the
world's sensitive features as group columns) and the live study's own columns: ``condition``
(the policy that served the participant), ``position`` (display order), ``status``,
``attention_failures``, ``inconsistent`` (changed items whose "changeable?" answer
contradicts the stated actionability), ``assigned_condition`` (the condition first assigned),
``no_plan`` (the assigned condition found no plan), ``pilot`` (entered while the pilot flag
was on), ``study_version`` (of the study file taken) and ``plan``, the plan in the words its
page showed (the world's presentation: labels, units, display values). Distances were
computed when the
recourse was shown, by the simulator's metric code. ``blocked`` is 1 when the participant said
a changed item is not changeable for them (the published study's exclusion criterion; the
rows are kept).

``uid`` is the participant's arrival index: neither the platform ID nor its keyed hash. The open
answers go to ``study_open.csv`` (free text can hold personal data: review before sharing), and
``data_dictionary.csv`` describes both tables. Every text cell that a spreadsheet would run as a
formula is written as text (:func:`~simstudy.core.store.neutralize_formulas`).
``--drop-linkage`` deletes the linkage table, the only place platform IDs are stored.

Example:
    >>> import os, tempfile
    >>> study, answers = live_tables(Store(os.path.join(tempfile.mkdtemp(), "s.sqlite")))
    >>> list(study.columns[:6]), len(study)
    (['uid', 'item', 'sparsity', 'proximity', 'accept', 'act'], 0)
    >>> list(answers.columns)
    ['uid', 'item', 'why', 'needs_review']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.documents import UsageError
from ..core.store import write_csv
from ..run.dictionary import dictionary_table
from .database import Store

__all__ = ["live_tables", "export_study", "PARTICIPANT_COLUMNS"]

#: The columns of ``study.csv`` that describe the participant (one value per uid).
PARTICIPANT_COLUMNS = ("status", "attention_failures", "inconsistent", "assigned_condition",
                       "no_plan", "pilot", "study_version")


def live_tables(store: Any) -> tuple[Any, Any]:
    """``(study, open answers)`` DataFrames of a live study's store."""
    meta = json.loads(store.meta("study") or "{}")
    names = meta.get("features", [])
    sensitive = [s for s in meta.get("sensitive", []) if s in names]
    rows, open_rows = [], []
    for p in store.read("SELECT * FROM participants WHERE condition IS NOT NULL ORDER BY idx"):
        answers = store.answers(p["uid"])
        failures = sum(1 for k, v in answers.items() if k.startswith("check:")
                       and not v["correct"])
        x = answers.get("profile", {}).get("x")
        ratings = {k: v for k, v in answers.items() if k.startswith("rating:")}
        inconsistent = sum(len(v.get("inconsistent", [])) for v in ratings.values())
        for pos, it in enumerate(store.items(p["uid"])):
            r = ratings.get(f"rating:{pos}")
            if r is None:
                continue
            row = {"uid": p["idx"], "item": it["item"], "sparsity": it["sparsity"],
                   "proximity": round(float(it["proximity"]), 6), "accept": r["accept"],
                   "act": r["act"], "policy": it["policy"],
                   "blocked": int(not all(r["changeable"].values())),
                   "condition": p["condition"], "cost": it["cost"], "position": pos}
            for s in sensitive:
                row[s] = int(round(x[names.index(s)]))
            row.update({"status": p["status"], "attention_failures": failures,
                        "inconsistent": inconsistent,
                        "assigned_condition": p["assigned_condition"] or p["condition"],
                        "no_plan": int(p["no_plan"]), "pilot": int(p["pilot"]),
                        "study_version": int(p["study_version"]), "plan": it.get("plan", "")})
            rows.append(row)
            open_rows.append({"uid": p["idx"], "item": it["item"], "why": r["why"],
                              "needs_review": int(bool(r["why"]))})
    study = pd.DataFrame(rows, columns=["uid", "item", "sparsity", "proximity", "accept", "act",
                                        "policy", "blocked", "condition", "cost", "position",
                                        *sensitive, *PARTICIPANT_COLUMNS, "plan"])
    study = study.sort_values(["uid", "item"], kind="stable").reset_index(drop=True)
    answers = pd.DataFrame(open_rows, columns=["uid", "item", "why", "needs_review"])
    return study, answers.sort_values(["uid", "item"], kind="stable").reset_index(drop=True)


def export_study(db: str | Path, out: str | Path, drop_linkage: bool = False) -> dict[str, Any]:
    """Writes ``out`` (the study table), ``study_open.csv`` and ``data_dictionary.csv`` beside
    it; with ``drop_linkage`` deletes the linkage table afterwards.

    Returns:
        ``participants`` (distinct uids), ``rows``, ``paths`` and ``linkage_rows_dropped``.
    """
    if not Path(db).exists():
        raise UsageError(f"{db}: no such study database")
    store = Store(db)
    study, answers = live_tables(store)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    open_path = out.parent / "study_open.csv"
    write_csv(study, out, neutralize=True)
    write_csv(answers, open_path, neutralize=True)
    dictionary = dictionary_table({"study.csv": list(study.columns),
                                   "study_open.csv": list(answers.columns)})
    dict_path = out.parent / "data_dictionary.csv"
    write_csv(dictionary, dict_path, neutralize=True)
    dropped = store.drop_linkage() if drop_linkage else 0
    return {"participants": int(study["uid"].nunique()), "rows": len(study),
            "paths": [str(out), str(open_path), str(dict_path)],
            "linkage_rows_dropped": dropped}
