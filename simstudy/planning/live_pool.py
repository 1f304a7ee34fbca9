"""The live pool: the plan each condition of a live study gives each person, as the server does.

For the power of a live study (:mod:`simstudy.study.live_design`), every person of the study
population that the bots would be (:class:`~simstudy.live.bots.BotCrowd`: the rejected
applicants whose profile lies in the entry page's ranges and who can change something, in the
bots' keyed order) states their profile and their *reported* actionability as a bot answers the
profile and actionability pages (:meth:`~simstudy.live.bots.BotCrowd.answer`); then the live
engine computes, for each condition, the plan the server would show
(:meth:`~simstudy.live.engine.LiveEngine.recourses`: the condition's fitted policy on the stated
profile, a questioning policy's questions answered by the person through
:meth:`~simstudy.people.People.feedback` as a bot answers them, the random others, every plan
measured by the server's code). ``blocked`` is 1 where the plan changes an item the person
truly cannot change (what they answer to "is this item in fact changeable?", as a bot does).
Person ``n`` is served with participant index ``n`` (the arrival index of bot ``n``).

The pool is computed once per study file and code version and kept in
``OUT/live_pool.parquet`` with its key (:func:`live_pool`):
``live_pool("example:personalization", "runs/power")`` prepares the study's world and policies
as ``serve`` does (minutes on 2 cores), so this module has no runnable example;
``tests/test_live_design.py`` builds a pool on a small study.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.progress import progress as show_progress
from ..core.store import checked, code_version, write_checked
from ..live.bots import BotCrowd
from ..live.engine import LiveEngine
from ..study.from_scenario import RANDOM_POLICY
from ..study.live_design import LIVE_POOL_COLUMNS

__all__ = ["live_pool", "compute_live_pool", "pool_key", "PersonFeedback"]


class PersonFeedback:
    """A person's answers to a policy that asks them questions while serving participant
    index ``index``: the people's feedback session, asked as the person (``person_id``)."""

    def __init__(self, people: Any, person_id: int) -> None:
        self.session = people.feedback()
        self.ids = np.array([person_id], dtype=np.int64)

    def prefer(self, ids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.session.prefer(self.ids, a, b)

    def accept(self, ids: np.ndarray, r: np.ndarray) -> np.ndarray:
        return self.session.accept(self.ids, r)


def compute_live_pool(engine: LiveEngine, persons: int | None = None,
                      progress: bool = True) -> pd.DataFrame:
    """The pool of a prepared engine (see the module docstring): :data:`LIVE_POOL_COLUMNS`
    plus ``applicant_id`` and the world's sensitive features of the stated profile.

    Args:
        engine: the prepared live engine.
        persons: the first ``persons`` people of the bots' order (default: all).
        progress: show progress.
    """
    crowd = BotCrowd(engine, 0)
    people = crowd.people
    n_people = len(crowd.order) if persons is None else min(persons, len(crowd.order))
    rows = []
    with show_progress(n_people, enabled=progress, desc="live pool", unit="person") as bar:
        for n in range(n_people):
            row = crowd.row(n)
            x = np.asarray(people.x[row], dtype=float)
            stated = crowd.answer(n, "actionability", "")
            scores = np.array([int(stated[f"a_{f}"]) for f in engine.actionable])
            groups = engine.group_values(x)
            base = {"person": n, "applicant_id": int(people.ids[row]), **groups}
            for condition in engine.conditions:
                asks = engine.fitted_[condition].asks_questions
                feedback = PersonFeedback(people, int(people.ids[row])) if asks else None
                shown = engine.recourses(n, condition, x, scores, [], feedback=feedback)
                mine = [s for s in shown if s.policy == condition]
                rows.append({**base, **_plan(people, row, condition, mine[0] if mine else None,
                                             engine.policies.index(condition))})
                if condition == engine.conditions[0]:
                    rows += [{**base, **_plan(people, row, "", s, s.item)} for s in shown
                             if s.policy == RANDOM_POLICY]
            bar.update()
    return pd.DataFrame(rows)


def _plan(people: Any, row: int, condition: str, shown: Any, item: int) -> dict:
    if shown is None:
        return {"condition": condition, "policy": condition, "item": item, "found": False,
                "sparsity": 0, "proximity": 0.0, "cost": np.nan, "cost_unweighted": np.nan,
                "blocked": False}
    blocked = bool(people.blocked(np.asarray(shown.intervened, bool)[None, :],
                                  np.array([row]))[0])
    return {"condition": condition, "policy": shown.policy, "item": int(item), "found": True,
            "sparsity": int(shown.sparsity), "proximity": float(shown.proximity),
            "cost": float(shown.cost), "cost_unweighted": float(shown.cost_unweighted),
            "blocked": blocked}


def pool_key(engine: LiveEngine, persons: int | None = None) -> str:
    """What the pool depends on: the study document without its hypotheses, power section and
    targets (the world, population, policies, response and live conditions), and the code
    version."""
    doc = engine.scenario.model_dump(mode="json", exclude={"study": {
        "power": True, "hypotheses": True, "multiplicity": True, "participants": True,
        "live": {"target_per_condition"}}})
    pops = {k: v.model_dump(mode="json") if hasattr(v, "model_dump") else repr(v)
            for k, v in engine.populations.items()}
    return hashlib.sha256(json.dumps({"study": doc, "populations": pops,
                                      "code": code_version(), "persons": persons},
                                     sort_keys=True, default=repr).encode()).hexdigest()


def live_pool(path: str | Path, out: str | Path, persons: int | None = None,
              progress: bool = True) -> tuple[pd.DataFrame, LiveEngine]:
    """The live pool of a study file, computed once (kept in ``OUT/live_pool.parquet``,
    checked by its bytes and its key, :func:`pool_key`, as every stored part:
    :func:`~simstudy.core.store.checked`), and the prepared engine."""
    out = Path(out)
    engine = LiveEngine(path).prepare()
    key = pool_key(engine, persons)
    table = out / "live_pool.parquet"
    if checked(table, key):
        return pd.read_parquet(table), engine
    pool = compute_live_pool(engine, persons, progress)
    missing = [c for c in LIVE_POOL_COLUMNS if c not in pool]
    if missing:
        raise RuntimeError(f"live pool lacks {missing}")
    write_checked(table, lambda tmp: pool.to_parquet(tmp, index=False), key)
    return pool, engine
