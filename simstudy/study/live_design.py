"""The live study's design simulated: one condition per participant, as the server runs it.

A study with ``study.live`` is simulated as it runs (power for that design, not the
within-participant one of :mod:`simstudy.study.from_scenario`). The plans come from the
*live pool* (:mod:`simstudy.planning.live_pool`): for each person of the study population, the
plan each condition's policy gives them, computed by the live server's engine from the profile
they state (with the population's hidden mismatches), and their random others, measured as
the server measures them, ``blocked`` from their true actionability. One simulated study of N
analysed participants (:func:`simulate_live_table`), from its own stream
``generator(seed, "study-power", N, r)``:

1. people arrive one after another in a random order of the pool (cycled when the study needs
   more arrivals than the pool has people);
2. arrival ``i`` is assigned by the server's rule (:func:`assign_condition`): among the
   conditions that hold fewer than ``N / k`` participants counted towards their target (k
   conditions; the server's ``target_per_condition``), the one that served fewest, ties broken
   by the server's keyed draw ``entity_uniforms(live_seed, "assignment", i)``; arrivals stop
   once every condition has its target;
3. the arrival drops out with the ``dropout`` rate (status ``timed_out``: they rated a uniform
   share of their plans), else fails the attention checks with the ``failed_attention`` rate
   (status ``failed_attention``: all rated), else completes;
4. where the condition found no plan for the person's stated profile, ``no_plan`` is 1; under
   ``no_plan.rule: replace`` the replacement condition serves them (``condition``) where it
   finds a plan, else they rate the random others only and do not count towards the target;
5. each participant rates every plan they see with the study's response model, with fresh
   dispositions and rating noise (as :func:`~simstudy.study.from_scenario.simulated_table`).

The table has the export's columns (``status``, ``condition``, ``assigned_condition``,
``no_plan``, ``pilot``, ``study_version``), so :func:`~simstudy.study.exclusions.apply_exclusions`
excludes from it exactly as ``simstudy analyze`` does from an export; the hypotheses are then
tested by :func:`~simstudy.study.hypothesis_tests.evaluate_hypotheses`, the code ``analyze``
runs.

Example:
    >>> counts = {"a": 1, "b": 0, "c": 0}
    >>> assign_condition(counts, counts, ["a", "b", "c"], 0.7, target=2)
    'c'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.rng import entity_uniforms
from .exclusions import apply_exclusions
from .from_scenario import response_inputs
from .hypothesis_power import HypothesisPowerTask

__all__ = ["LivePowerTask", "LIVE_EXTRAS", "EXCLUDED", "recruitment", "assign_condition",
           "simulate_live_table", "export_rates",
           "LIVE_POOL_COLUMNS", "pool_no_plan_rates"]

#: Exclusion reasons a simulated live study counts (the file's and ``not_completed``).
EXCLUDED = ("failed_attention", "timed_out", "no_plan", "pilot", "not_completed")
#: What a simulated live study records beside its tests (part-file columns).
LIVE_EXTRAS = ("arrivals", *(f"excluded:{r}" for r in EXCLUDED))

#: The live pool's columns (one row per person x condition plan, and per person x random
#: other with ``condition`` empty).
LIVE_POOL_COLUMNS = ["person", "condition", "policy", "item", "found", "sparsity", "proximity",
                     "cost", "cost_unweighted", "blocked"]


def assign_condition(taken: dict[str, int], served: dict[str, int], conditions: Sequence[str],
                     draw: float, target: int) -> str | None:
    """The live assignment rule (:meth:`simstudy.live.database.Store.assign`): among the
    conditions still open (fewer than ``target`` participants counted towards them), the least
    filled by every participant it served (completed, no-plan ones too), ties broken by
    ``draw`` in ``[0, 1)`` over the tied conditions in study order; ``None`` when every
    condition has its target."""
    open_ = [c for c in conditions if taken[c] < target]
    if not open_:
        return None
    low = min(served[c] for c in open_)
    tied = [c for c in open_ if served[c] == low]
    return tied[min(int(draw * len(tied)), len(tied) - 1)]


def export_rates(path: str | Path) -> dict[str, float]:
    """The rates of a live pilot's export: per participant, ``failed_attention`` (status),
    ``dropout`` (status ``timed_out`` or ``returned``) and ``no_plan`` (the column), over the
    participants the export holds."""
    table = pd.read_csv(path)
    if "uid" not in table:
        raise ValueError(f"{path}: not a live export (no uid column)")
    per = table.drop_duplicates("uid")
    status = per["status"].astype(str) if "status" in per else pd.Series("completed", per.index)
    out = {"failed_attention": float((status == "failed_attention").mean()),
           "dropout": float(status.isin(["timed_out", "returned"]).mean())}
    if "no_plan" in per:
        out["no_plan"] = float(pd.to_numeric(per["no_plan"]).fillna(0).gt(0).mean())
    return out


def pool_no_plan_rates(pool: pd.DataFrame) -> dict[str, float]:
    """Per condition, the share of the pool's people whose condition found no plan."""
    plans = pool[pool["condition"] != ""]
    return {str(c): float(1.0 - g["found"].astype(bool).mean())
            for c, g in plans.groupby("condition", sort=False)}


@dataclass(frozen=True)
class LivePowerTask(HypothesisPowerTask):
    """One simulated live study (see the module docstring); ``pool`` is the live pool."""

    conditions: tuple[str, ...] = ()
    live_seed: int = 0
    no_plan_rule: str = "exclude"
    replacement: str | None = None
    exclusions: tuple[str, ...] = ()
    failed_attention: float = 0.0
    dropout: float = 0.0
    groups_of: tuple[str, ...] = ()

    def analysed_table(self) -> tuple[pd.DataFrame, dict]:
        """The simulated export with the study's exclusions applied (as ``analyze``), and the
        arrivals and exclusions it took (:data:`LIVE_EXTRAS`)."""
        table = simulate_live_table(self)
        res = apply_exclusions(table, self.exclusions)
        counts = res.counts()
        return res.kept, {"arrivals": int(table.attrs["arrivals"]),
                          **{f"excluded:{r}": int(counts.get(r, 0)) for r in EXCLUDED}}


def _plans(pool: pd.DataFrame) -> tuple[dict, dict]:
    plans = pool[pool["condition"] != ""]
    by_plan = {(int(p), str(c)): i for i, p, c in zip(plans.index, plans["person"],
                                                       plans["condition"], strict=True)}
    others = pool[pool["condition"] == ""]
    by_person = {int(p): idx.tolist() for p, idx in others.groupby("person").groups.items()}
    return by_plan, by_person


def simulate_live_table(task: LivePowerTask) -> pd.DataFrame:
    """One simulated live study's export (see the module docstring)."""
    gen = task.generator("study-power")
    pool = task.pool
    conditions = list(task.conditions)
    k = len(conditions)
    target = task.n_participants // k
    by_plan, by_person = _plans(pool)
    people = np.unique(pool["person"].to_numpy(np.int64))
    order = gen.permutation(people)
    taken, served_by = dict.fromkeys(conditions, 0), dict.fromkeys(conditions, 0)
    rows, meta = [], []
    i = 0
    while True:
        person = int(order[i % len(order)])
        draw = float(entity_uniforms(task.live_seed, "assignment", np.array([i]))[0, 0])
        assigned = assign_condition(taken, served_by, conditions, draw, target)
        if assigned is None:
            break
        u = gen.random(3)
        status = ("timed_out" if u[0] < task.dropout else
                  "failed_attention" if u[1] < task.failed_attention else "completed")
        served = assigned
        plan = by_plan[(person, assigned)]
        no_plan = not bool(pool.at[plan, "found"])
        if no_plan and task.no_plan_rule == "replace" and \
                bool(pool.at[by_plan[(person, task.replacement)], "found"]):
            # as the server: a replacement that finds no plan either leaves them in the
            # assigned condition, counted nowhere
            served = task.replacement
            plan = by_plan[(person, served)]
        shown = ([plan] if bool(pool.at[plan, "found"]) else []) + by_person.get(person, [])
        if status == "timed_out":
            shown = shown[:int(u[2] * len(shown))]
        if status == "completed":
            served_by[served] += 1
            taken[served] += int(not (no_plan and served == assigned))
        rows += shown
        meta += [(i, served, assigned, status, int(no_plan))] * len(shown)
        i += 1
    chosen = pool.loc[rows].reset_index(drop=True)
    info = pd.DataFrame(meta, columns=["uid", "condition", "assigned_condition", "status",
                                       "no_plan"])
    n = i
    z = gen.standard_normal((n, 4))
    uid = info["uid"].to_numpy(np.int64)
    accept, act = task.response.ratings(response_inputs(chosen, z[uid]),
                                        gen.random((len(chosen), 2)))
    table = pd.DataFrame({
        "uid": uid, "item": chosen["item"].to_numpy(np.int64),
        "sparsity": chosen["sparsity"].to_numpy(np.int64),
        "proximity": np.round(chosen["proximity"].to_numpy(float), 6),
        "accept": accept, "act": act, "policy": chosen["policy"].to_numpy(),
        "blocked": chosen["blocked"].to_numpy(bool).astype(np.int64),
        "cost": chosen["cost"].to_numpy(float)})
    for col in task.groups_of:
        table[col] = chosen[col].to_numpy()
    for col in ("condition", "assigned_condition", "status", "no_plan"):
        table[col] = info[col].to_numpy()
    table["pilot"], table["study_version"] = 0, 1
    table.attrs["arrivals"] = n
    return table.sort_values(["uid", "item"], kind="stable").reset_index(drop=True)


def recruitment(rows: pd.DataFrame) -> list[dict]:
    """Per N, the arrivals a simulated live study took (mean, 5% and 95% quantiles) and the
    mean excluded per reason (from the part files' rows)."""
    out = []
    for n, grp in rows.groupby("n"):
        a = grp["arrivals"].to_numpy(float)
        out.append({"n": int(n), "arrivals_mean": float(a.mean()),
                    "arrivals_q05": float(np.quantile(a, 0.05)),
                    "arrivals_q95": float(np.quantile(a, 0.95)),
                    **{f"excluded_{r}": float(grp[f"excluded:{r}"].mean()) for r in EXCLUDED}})
    return out
