"""Work units of a run: what each computes from its key alone.

A run is a set of independent units, each keyed: a replication x condition x policy of the
recourse tables (:class:`RecourseUnit`) and, with a ``simulation:`` section, a replication x
condition x policy of the event world (:class:`EventWorldUnit`). For replication ``r`` of a
scenario with base seed ``s``, the replication seed is ``derive_seed(s, "replication", r)``; the
world sample, the decision model and the people (one :class:`~simstudy.people.People` per
condition) are keyed from it by purpose (see :mod:`simstudy.core.rng`). Every policy of a
replication
sees the same world, model and people, and gets the same seed, ``derive_seed(seed,
"policies")``, so policies compare person by person. Models a unit shares with other units come
from the content-hash cache (trained once), so any executor gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..core.documents import FieldProblem
from ..core.progress import is_quiet, set_quiet
from ..core.rng import derive_seed
from ..people import People
from ..policies.base import RecourseContext, RecoursePolicy
from ..primitives.space import ScaledSpace
from ..sim.experiment import simulate_tables
from ..world.decision import ModelCache
from .scenario import people_specs, policy_name
from .tables import group_columns, policy_table

__all__ = ["Replication", "prepare_replication", "RunPlan", "Unit", "RecourseUnit",
           "EventWorldUnit",
           "UnitFailure", "compute_unit", "compute_recourse_unit", "compute_event_world_unit",
           "replication_of", "people_of"]


@dataclass
class Replication:
    """Everything one replication shares across conditions and policies."""

    index: int
    seed: int
    context: RecourseContext
    x: np.ndarray
    ids: np.ndarray
    info: dict[str, Any]



def prepare_replication(scenario: Any, index: int, base_seed: int, cache: ModelCache,
                        progress: bool = False, base_dir: str | Path = ".") -> Replication:
    """World sample, decision model and recourse-seeking applicants of one replication.

    ``base_dir`` is the scenario file's folder: relative data paths resolve against it.
    """
    seed = derive_seed(base_seed, "replication", index)
    world, data, world_info = scenario.world.build(seed, cache, base_dir=base_dir)
    model, meta = scenario.decision_model.obtain(data, cache, derive_seed(seed, "decision-model"),
                                                 base_dir=base_dir, progress=progress)
    split = scenario.applicants.split
    x_split = {"test": data.x_test, "val": data.x_val, "train": data.x_train}[split]
    with torch.no_grad():
        approved = model.approves(x_split).numpy()
    if approved.all() or not approved.any():
        share = "every" if approved.all() else "no"
        raise FieldProblem("decision_model", (
            f"the trained model approves {share} applicant of the {split} split (replication "
            f"{index}); recourse needs both outcomes: check the data's label balance, epochs and "
            "lr"))
    ids = np.arange(len(x_split))
    if scenario.applicants.only_rejected:
        ids = ids[~approved]
    if scenario.applicants.max_applicants is not None:
        ids = ids[: scenario.applicants.max_applicants]
    info = {
        "index": index,
        "seed": seed,
        "world": world_info,
        "decision_model": {
            "state_dict_sha256": meta["state_dict_sha256"],
            "cache_key": meta["cache_key"],
            "test_accuracy": meta["test_accuracy"],
            "test_approval_rate": meta["test_approval_rate"],
            "seed": meta["seed"],
        },
        "applicants": {"split": split, "n": int(len(ids)),
                       "approval_rate_split": float(approved.mean())},
    }
    context = RecourseContext(world, model, data, seed, cache)
    return Replication(index, seed, context, x_split.numpy()[ids], ids, info)


@dataclass(frozen=True)
class RunPlan:
    """What every unit of a run needs to compute its key (picklable, sent to workers)."""

    scenario: Any
    populations: dict[str, Any]
    base_seed: int
    base_dir: Path
    cache_root: Path
    source: str = ""
    #: distinguishes runs in a long-lived worker: a replication is memoised within one run only
    token: str = ""


@dataclass(frozen=True)
class Unit:
    """The key of a unit: a replication x condition x policy of a run (a subclass says what it
    computes and where its part is stored)."""

    plan: RunPlan
    replication: int
    condition: str
    policy: str

    @property
    def affinity(self) -> tuple[str, int, str]:
        """What the unit shares with others, widest first: the run, the replication (world
        sample, decision model), the policy (its trained model); see
        :class:`~simstudy.core.executors.AffinityQueue`."""
        return (self.plan.token, self.replication, self.policy)


@dataclass(frozen=True)
class RecourseUnit(Unit):
    """Replication x condition x policy of the recourse tables."""

    @property
    def stem(self) -> str:
        return f"rep{self.replication:03d}__{self.condition}__{self.policy}"


@dataclass(frozen=True)
class EventWorldUnit(Unit):
    """Replication x condition x policy of the event world."""

    @property
    def stem(self) -> str:
        return f"sim/{self.condition}/rep{self.replication:03d}__{self.policy}"


# Per-process memo of the last replications: a worker given several units of one replication
# prepares it once (the cache already makes this cheap; the memo skips even the world sample and
# the model load). Replications are read-only for units.
_MEMO: dict[tuple, Any] = {}
_MEMO_SIZE = 8


def _memo(key: tuple, make: Callable[[], Any]) -> Any:
    if key not in _MEMO:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = make()
    return _MEMO[key]


def _plan_key(plan: RunPlan) -> str:
    blob = json.dumps([plan.scenario.model_dump(mode="json"),
                       {k: v.model_dump(mode="json") for k, v in plan.populations.items()},
                       plan.base_seed, str(plan.base_dir), str(plan.cache_root), plan.token],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def replication_of(plan: RunPlan, index: int) -> Replication:
    return _memo(("replication", _plan_key(plan), index), lambda: prepare_replication(
        plan.scenario, index, plan.base_seed, ModelCache(plan.cache_root), progress=False,
        base_dir=plan.base_dir))


def _policy_spec(plan: RunPlan, name: str) -> Any:
    return next(p for p in plan.scenario.policies if policy_name(p) == name)


def _build_policy(spec: Any) -> RecoursePolicy:
    return spec.policy()


def _fitted_policy(plan: RunPlan, rep: Replication, name: str, condition: str
                   ) -> RecoursePolicy:
    # Fitted afresh for every unit (cheap: trained models come from the cache), so no unit
    # depends on what another unit did to a policy in the same worker; on the context of the
    # condition's population (its cost profile)
    return _build_policy(_policy_spec(plan, name)).fit(_condition_context(
        plan, rep.context, condition))


def _condition_context(plan: RunPlan, context: RecourseContext, condition: str
                       ) -> RecourseContext:
    """The replication's context with the cost profile of the condition's population."""
    return dataclasses.replace(context, cost=plan.populations[condition].cost)


def people_of(plan: RunPlan, rep: Replication, condition: str) -> People:
    """The condition's people of a replication (hidden preferences and answers keyed on the
    policies' stream, as every unit of the replication shares)."""
    spec = people_specs(plan.scenario, plan.populations)[condition]
    space = ScaledSpace.from_context(rep.context)
    return People.from_spec(spec, rep.x, rep.ids, rep.seed, rep.context.feature_names,
                            rep.context.world.roles.actionable, space,
                            preference_seed=derive_seed(rep.seed, "policies"),
                            immutable=rep.context.world.roles.immutable,
                            rankings=rep.context.world.roles.rankings,
                            income=rep.context.world.roles.income,
                            sensitive=rep.context.world.roles.sensitive)


def compute_recourse_unit(unit: RecourseUnit) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The recourse table of one unit and what the manifest records about it."""
    plan, r = unit.plan, unit.replication
    rep = replication_of(plan, r)
    people = people_of(plan, rep, unit.condition)
    policy = _fitted_policy(plan, rep, unit.policy, unit.condition)
    t0 = time.time()
    asks = {"feedback": people.feedback()} if policy.asks_questions else {}
    rec = policy.recommend(rep.x, people.reported, rep.ids, derive_seed(rep.seed, "policies"),
                           **asks)
    seconds = time.time() - t0
    table = policy_table(people, rec, rep.context,
                          {"replication": r, "seed": rep.seed, "condition": unit.condition,
                           "policy": unit.policy})
    info = {"replication": rep.info, "policy_hashes": policy.model_hashes(),
            "seconds": round(seconds, 3),
            "group_columns": group_columns(rep.context.world.roles, people)}
    return table, info


def compute_event_world_unit(unit: EventWorldUnit) -> tuple[dict[str, pd.DataFrame], dict]:
    """The event-world tables of one replication x condition x policy, and its timings."""
    plan, r = unit.plan, unit.replication
    rep = replication_of(plan, r)
    people = people_specs(plan.scenario, plan.populations)[unit.condition]
    policy_spec = _policy_spec(plan, unit.policy)
    ctx = rep.context

    def factory(context: RecourseContext) -> RecoursePolicy:
        # the event world's contexts use the run's model cache too
        return _build_policy(policy_spec).fit(dataclasses.replace(
            _condition_context(plan, context, unit.condition), cache=ctx.cache))

    tables, timings = simulate_tables(
        plan.scenario.simulation, ctx.world, ctx.data, ctx.model, factory, people,
        rep.seed, {"policy": unit.policy, "replication": r})
    return tables, {"timings": timings}


@dataclass(frozen=True)
class UnitFailure:
    """A document value found unusable inside a unit (sent back instead of an exception, so
    that any executor reports it the same way: ``FILE: field: reason``)."""

    field: str
    reason: str


def compute_unit(unit: RecourseUnit | EventWorldUnit) -> tuple[Any, dict] | UnitFailure:
    """Computes any unit (the function executors call); quietly, as the run shows one bar."""
    quiet = is_quiet()
    set_quiet(True)
    try:
        if isinstance(unit, RecourseUnit):
            return compute_recourse_unit(unit)
        return compute_event_world_unit(unit)
    except FieldProblem as exc:
        return UnitFailure(exc.field, exc.reason)
    finally:
        set_quiet(quiet)

