"""Running a scenario: worlds, decision models, populations and policies, per replication.

For replication ``r`` of a scenario with base seed ``s``, the replication seed is
``derive_seed(s, "replication", r)``; the world sample, the decision model and the people (one
:class:`~simstudy.people.People` per condition: profiles, hidden truth, answers, dispositions)
are keyed from it by purpose (see :mod:`simstudy.rng`). Every policy of a replication sees the
same world, model and people, and gets the same seed, ``derive_seed(seed, "policies")``, so
policies compare person by person. Every policy's recourse is measured against the people's
hidden truth (:meth:`People.truth_columns`; ``*_base`` for the base of a refining policy) and
their response model (``p_accept``, ``p_act``: accepting, and acting once accepted).

A run is a set of independent work units, each keyed: a replication x condition x policy of
the recourse tables (:class:`RecourseUnit`) and, with a ``simulation:`` section, a replication x
condition x policy of the event world (:class:`EventWorldUnit`). A unit computes from its key
alone (models it shares with other units come from the content-hash cache, trained once), so
any executor (:mod:`simstudy.executors`: this process, a local pool, Ray) gives the same bytes.
Only the driver writes: each finished unit goes to ``parts/`` at once, and a rerun into the same
directory skips finished units, so an interrupted run loses nothing that finished. The combined
tables are built from the parts in key order.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from .dictionary import write_dictionary
from .documents import FieldProblem, UsageError, with_overrides
from .executors import Executor, SerialExecutor
from .metrics import Recourse, evaluate_recourse
from .people import People
from .policies.base import RecourseContext, RecoursePolicy
from .primitives.space import ScaledSpace
from .progress import is_quiet, set_quiet
from .progress import progress as show_progress
from .rng import derive_seed
from .scenario import load_scenario, people_specs, policy_name
from .scenario_study import write_study_files
from .sim.experiment import SIM_FILES, UNIT_TABLES, simulate_tables, write_event_world
from .store import (
    RunLock,
    check_output_dir,
    checked,
    code_version,
    file_sha256,
    package_versions,
    read_manifest,
    write_checked,
    write_csv,
    write_manifest,
    write_parquet,
)
from .summary import summarize_contrasts, summarize_recourse
from .world.decision import ModelCache

#: Significant digits of the floats in summary.csv and contrasts.csv (recourse.parquet keeps
#: full precision).
SUMMARY_DIGITS = 6

__all__ = ["run_scenario", "recourse_table", "people_columns", "RunResult", "Replication",
           "prepare_replication", "ScenarioRun", "RecourseUnit", "EventWorldUnit", "run_units"]


@dataclass
class RunResult:
    run_dir: Path
    recourse: pd.DataFrame
    summary: pd.DataFrame
    manifest: dict[str, Any]


@dataclass
class Replication:
    """Everything one replication shares across conditions and policies."""

    index: int
    seed: int
    context: RecourseContext
    x: np.ndarray
    ids: np.ndarray
    info: dict[str, Any]


def _scenario_hash(resolved: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()


def recourse_table(
    people: People, recourse_metrics: dict[str, np.ndarray], intervened: np.ndarray,
    values: np.ndarray, extras: dict[str, np.ndarray], meta: dict[str, Any],
) -> pd.DataFrame:
    """One row per applicant: ids, groups, profile, action, factual and counterfactual, metrics."""
    names = people.feature_names
    prof = people.reported
    cols: dict[str, Any] = {k: np.full(len(people), v) for k, v in meta.items()}
    cols["applicant_id"] = people.ids
    for sensitive in ("gender",):
        if sensitive in names:
            cols[sensitive] = people.x[:, names.index(sensitive)].astype(np.int64)
    for key, val in people.groups.items():
        cols[key] = val
    cols["n_actionable"] = prof.n_actionable
    for k, f in enumerate(prof.features):
        j = names.index(f)
        cols[f"score_{f}"] = prof.scores[:, k]
        cols[f"weight_{f}"] = prof.weights[:, k]
        cols[f"can_{f}"] = people.true_actionable[:, k]
        cols[f"act_{f}"] = intervened[:, j]
        cols[f"theta_{f}"] = values[:, j]
    for j, f in enumerate(names):
        cols[f"x_{f}"] = people.x[:, j]
        cols[f"xcf_{f}"] = recourse_metrics["x_cf"][:, j]
    for key, val in recourse_metrics.items():
        if key != "x_cf":
            cols[key] = val
    for key, val in extras.items():
        cols[key] = val
    return pd.DataFrame(cols)


def people_columns(people: People, rec: Recourse, ev: dict[str, np.ndarray],
                   feature_range: np.ndarray) -> dict[str, np.ndarray]:
    """A recourse measured against the people: hidden truth and response probabilities.

    Args:
        people: who received the recourses (row ``i`` of ``rec`` is ``people.ids[i]``).
        rec: the policy's recourse.
        ev: its metrics (:func:`~simstudy.metrics.evaluate_recourse`).
        feature_range: the training range of every feature.

    Returns:
        :meth:`People.truth_columns` plus ``p_accept`` and ``p_act`` (NaN where no recourse).
    """
    found = ev["found"]
    intervened = rec.intervened & rec.found[:, None]
    out = people.truth_columns(ev["x_cf"], found, intervened)
    delta = np.where(intervened, np.abs(np.nan_to_num(rec.values - people.x)), 0.0)
    inputs = people.response_inputs(np.arange(len(people)), ev["cost"], ev["cost_unweighted"],
                                    intervened.sum(axis=1), (delta / feature_range).sum(axis=1),
                                    out["blocked"])
    p_accept, p_act = people.response.probabilities(inputs)
    out["p_accept"] = np.where(found, p_accept, np.nan)
    out["p_act"] = np.where(found, p_act, np.nan)
    return out


def _policy_table(people: People, rec: Recourse, context: RecourseContext,
                  meta: dict[str, Any]) -> pd.DataFrame:
    """The run-table rows of one policy's recourse for one condition's people."""
    world, model, fr = context.world, context.model, context.feature_range
    ev = evaluate_recourse(world, model, people.x, rec, people.reported, fr)
    extras = {**rec.extras, **people_columns(people, rec, ev, fr)}
    if rec.base is not None:
        ev_base = evaluate_recourse(world, model, people.x, rec.base, people.reported, fr)
        base = people.truth_columns(ev_base["x_cf"], ev_base["found"],
                                    rec.base.intervened & rec.base.found[:, None])
        extras.update({f"{k}_base": v for k, v in base.items()
                       if k in ("user_loss", "gtp", "gtd", "blocked")})
    return recourse_table(people, ev, rec.intervened & rec.found[:, None], rec.values, extras,
                          meta)


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
    context = RecourseContext(world, model, data, seed)
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
class RecourseUnit:
    """Replication x condition x policy of the recourse tables."""

    plan: RunPlan
    replication: int
    condition: str
    policy: str

    @property
    def stem(self) -> str:
        return f"rep{self.replication:03d}__{self.condition}__{self.policy}"


@dataclass(frozen=True)
class EventWorldUnit:
    """Replication x condition x policy of the event world."""

    plan: RunPlan
    replication: int
    condition: str
    policy: str

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


def _replication(plan: RunPlan, index: int) -> Replication:
    return _memo(("replication", _plan_key(plan), index), lambda: prepare_replication(
        plan.scenario, index, plan.base_seed, ModelCache(plan.cache_root), progress=False,
        base_dir=plan.base_dir))


def _policy_spec(plan: RunPlan, name: str) -> Any:
    return next(p for p in plan.scenario.policies if policy_name(p) == name)


def _build_policy(spec: Any) -> RecoursePolicy:
    return spec.policy()


def _fitted_policy(plan: RunPlan, rep: Replication, name: str) -> RecoursePolicy:
    # Fitted afresh for every unit (cheap: trained models come from the cache), so no unit
    # depends on what another unit did to a policy in the same worker.
    return _build_policy(_policy_spec(plan, name)).fit(rep.context)


def _people(plan: RunPlan, rep: Replication, condition: str) -> People:
    """The condition's people of a replication (hidden preferences and answers keyed on the
    policies' stream, as every unit of the replication shares)."""
    spec = people_specs(plan.scenario, plan.populations)[condition]
    space = ScaledSpace.from_context(rep.context)
    return spec.build(rep.x, rep.ids, rep.seed, rep.context.feature_names,
                      rep.context.world.roles.actionable, space,
                      preference_seed=derive_seed(rep.seed, "policies"),
                      immutable=rep.context.world.roles.immutable)


def compute_recourse_unit(unit: RecourseUnit) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The recourse table of one unit and what the manifest records about it."""
    plan, r = unit.plan, unit.replication
    rep = _replication(plan, r)
    people = _people(plan, rep, unit.condition)
    policy = _fitted_policy(plan, rep, unit.policy)
    t0 = time.time()
    asks = {"feedback": people.feedback()} if policy.asks_questions else {}
    rec = policy.recommend(rep.x, people.reported, rep.ids, derive_seed(rep.seed, "policies"),
                           **asks)
    seconds = time.time() - t0
    table = _policy_table(people, rec, rep.context,
                          {"replication": r, "seed": rep.seed, "condition": unit.condition,
                           "policy": unit.policy})
    info = {"replication": rep.info, "policy_hashes": policy.model_hashes(),
            "seconds": round(seconds, 3)}
    return table, info


def compute_event_world_unit(unit: EventWorldUnit) -> tuple[dict[str, pd.DataFrame], dict]:
    """The event-world tables of one replication x condition x policy, and its timings."""
    plan, r = unit.plan, unit.replication
    rep = _replication(plan, r)
    people = people_specs(plan.scenario, plan.populations)[unit.condition]
    policy_spec = _policy_spec(plan, unit.policy)
    ctx = rep.context

    def factory(context: RecourseContext) -> RecoursePolicy:
        return _build_policy(policy_spec).fit(context)

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


@dataclass
class ScenarioRun:
    """One scenario run into one directory: its units, their parts, and the combined tables.

    ``open`` validates and takes the directory's lock; ``pending()`` lists the units without a
    checked part; ``store(unit, result)`` writes a finished unit's part; ``finish()`` combines
    the parts into the run files; ``close()`` releases the lock.
    """

    path: Path
    out: Path
    plan: RunPlan
    manifest: dict[str, Any]
    lock: RunLock
    started: float = field(default_factory=time.time)

    @classmethod
    def open(cls, path: str | Path, out_dir: str | Path, seed: int | None = None,
             cache: ModelCache | None = None, loaded: tuple[Any, dict] | None = None,
             executor: Executor | None = None) -> ScenarioRun:
        """Validates the scenario and prepares (or reopens) its run directory.

        ``loaded``: an already validated ``(scenario, populations)`` (as a sweep builds them);
        relative paths then resolve against ``path``'s folder as well.
        """
        path = Path(path)
        scenario, populations = loaded if loaded is not None else load_scenario(path)
        scenario = with_overrides(scenario, {"seed": ("--seed", seed)}, str(path))
        base_seed = scenario.seed
        out = check_output_dir(out_dir)
        cache = cache or ModelCache()
        lock = RunLock(out).__enter__()
        try:
            resolved = {
                "scenario": scenario.model_dump(mode="json"),
                "populations": {k: v.model_dump(mode="json") for k, v in populations.items()},
            }
            resolved_hash = _scenario_hash(resolved)
            data_files = getattr(scenario.world, "data_files", lambda base_dir: [])(path.parent)
            data_sha256 = {str(f): file_sha256(f) for f in data_files}
            # everything a part depends on besides its own unit: reused parts must share it
            run_key = _scenario_hash({"resolved": resolved_hash, "seed": base_seed,
                                      "data": data_sha256, "code": code_version()})
            if (out / "manifest.json").exists():
                previous = read_manifest(out)
                if previous.get("run_key", previous.get("resolved_sha256")) != run_key:
                    raise UsageError(f"{out} holds a run of a different scenario, seed, data "
                                     "file or simstudy code; choose another --out directory")
            manifest: dict[str, Any] = {
                "status": "running",
                "scenario_file": str(path),
                "scenario_name": scenario.name,
                "base_seed": base_seed,
                "resolved_sha256": resolved_hash,
                "run_key": run_key,
                "code_version": code_version(),
                "data_files": data_sha256,
                "resolved": resolved,
                "versions": package_versions(),
                "torch_threads": 1,
                "executor": (executor or SerialExecutor()).describe(),
                "replications": [],
            }
            write_manifest(out, manifest)
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        plan = RunPlan(scenario, populations, base_seed, path.parent.resolve(),
                       Path(cache.root).resolve(), str(path), os.urandom(8).hex())
        return cls(path, out, plan, manifest, lock)

    def close(self) -> None:
        self.lock.__exit__(None, None, None)

    @property
    def scenario(self) -> Any:
        return self.plan.scenario

    def units(self) -> list[RecourseUnit | EventWorldUnit]:
        sc = self.scenario
        keys = [(r, c.name, policy_name(p)) for r in range(sc.replications)
                for c in sc.conditions for p in sc.policies]
        units: list[RecourseUnit | EventWorldUnit] = [RecourseUnit(self.plan, *k) for k in keys]
        if sc.simulation is not None:
            units += [EventWorldUnit(self.plan, *k) for k in keys]
        return units

    def _key(self, unit: RecourseUnit | EventWorldUnit) -> str:
        return _scenario_hash({"run": self.manifest["run_key"], "unit": unit.stem})

    def _marker(self, unit: RecourseUnit | EventWorldUnit) -> Path:
        # Written last: a unit with its checked marker is complete.
        return self.out / "parts" / f"{unit.stem}.json"

    def _files(self, unit: RecourseUnit | EventWorldUnit) -> list[Path]:
        parts = self.out / "parts"
        if isinstance(unit, RecourseUnit):
            return [parts / f"{unit.stem}.parquet"]
        return [parts / unit.stem / f"{name}.parquet" for name in UNIT_TABLES]

    def pending(self) -> list[RecourseUnit | EventWorldUnit]:
        """Units without a complete part: its files and its marker, each matching its check
        file (bytes and key); a damaged or foreign part is set aside and computed again."""
        out = []
        for u in self.units():
            key = self._key(u)
            if not all([checked(f, key) for f in [*self._files(u), self._marker(u)]]):
                out.append(u)
        return out

    def store(self, unit: RecourseUnit | EventWorldUnit, result: tuple[Any, dict]) -> None:
        tables, info = result
        key = self._key(unit)
        files = self._files(unit)
        if isinstance(unit, RecourseUnit):
            tables = {"recourse": tables}
        for table, path in zip(tables.values(), files, strict=True):
            write_checked(path, lambda tmp, t=table: t.to_parquet(tmp, index=False), key)
        text = json.dumps(info, indent=1, default=str)
        write_checked(self._marker(unit), lambda tmp: tmp.write_text(text), key)

    def finish(self) -> RunResult:
        sc, out, parts = self.scenario, self.out, self.out / "parts"
        units = [u for u in self.units() if isinstance(u, RecourseUnit)]
        infos = {u.stem: json.loads(self._marker(u).read_text()) for u in units}
        reps = []
        for r in range(sc.replications):
            mine = [u for u in units if u.replication == r]
            info = dict(infos[mine[0].stem]["replication"])
            info["policies"] = {u.policy: infos[u.stem]["policy_hashes"] for u in mine}
            info["seconds"] = {f"{u.condition}/{u.policy}": infos[u.stem]["seconds"]
                               for u in mine}
            reps.append(info)
        self.manifest["replications"] = reps
        recourse = pd.concat([pd.read_parquet(parts / f"{u.stem}.parquet") for u in units],
                             ignore_index=True)
        group_columns = [c for c in ("gender", "race", "privileged") if c in recourse.columns]
        summary = summarize_recourse(recourse, group_columns)
        write_parquet(recourse, out / "recourse.parquet")
        write_csv(summary, out / "summary.csv", digits=SUMMARY_DIGITS)
        outputs = ["recourse.parquet", "summary.csv"]
        if sc.contrasts:
            pairs = [(c.policy, c.baseline, c.condition, c.baseline_condition)
                     for c in sc.contrasts]
            write_csv(summarize_contrasts(recourse, pairs, group_columns), out / "contrasts.csv",
                      digits=SUMMARY_DIGITS)
            outputs.append("contrasts.csv")
        if sc.study is not None:
            study_condition = sc.study.condition or sc.conditions[0].name
            rep = _replication(self.plan, sc.study.replication)
            people = _people(self.plan, rep, study_condition)
            outputs += write_study_files(sc, recourse, people, rep.context,
                                         [policy_name(p) for p in sc.policies], out)
        if sc.simulation is not None:
            self._finish_event_world()
            outputs += list(SIM_FILES)
        write_dictionary(out)
        outputs.append("data_dictionary.csv")
        self.manifest["status"] = "complete"
        self.manifest["wall_seconds"] = round(time.time() - self.started, 2)
        self.manifest["outputs"] = outputs
        write_manifest(out, self.manifest)
        return RunResult(out, recourse, summary, self.manifest)

    def _finish_event_world(self) -> None:
        """Event-world files per condition: beside the run files with one condition, else in
        ``sim/<condition>/``; replications x policies in key order, the first policy the
        baseline of the paired differences."""
        sc, parts = self.scenario, self.out / "parts"
        timings = {}
        for cond in sc.conditions:
            units = [u for u in self.units() if isinstance(u, EventWorldUnit)
                     and u.condition == cond.name]
            tables = [{k: pd.read_parquet(parts / u.stem / f"{k}.parquet") for k in UNIT_TABLES}
                      for u in units]
            target = self.out if len(sc.conditions) == 1 else self.out / "sim" / cond.name
            write_event_world(tables, policy_name(sc.policies[0]), target)
            for u in units:
                timings[u.stem] = json.loads(self._marker(u).read_text())["timings"]
        self.manifest["event_world_seconds"] = timings


def run_units(runs: Sequence[ScenarioRun], executor: Executor | None = None,
              progress: bool = True, desc: str | None = None) -> list[RunResult]:
    """Runs the pending units of several runs through one executor and one progress bar, then
    combines each run's parts; returns one result per run. Releases the runs' locks."""
    try:
        executor = executor or SerialExecutor()
        work = [(run, unit) for run in runs for unit in run.pending()]
        # Results are stored by key, so the submission order is free: the long event-world
        # units first, and replications varying fastest, so that concurrent workers train
        # different replications' models rather than wait on one cache entry.
        work.sort(key=lambda ru: (isinstance(ru[1], RecourseUnit), ru[1].policy,
                                  ru[1].condition, ru[1].replication))
        total = sum(len(run.units()) for run in runs)
        with show_progress(total, initial=total - len(work), unit="unit", enabled=progress,
                           desc=desc or (runs[0].scenario.name if len(runs) == 1
                                         else "units")) as bar:
            for i, result in executor.map_unordered(compute_unit, [u for _, u in work]):
                run, unit = work[i]
                if isinstance(result, UnitFailure):
                    raise FieldProblem(result.field, result.reason).in_file(run.plan.source)
                run.store(unit, result)
                bar.update(1)
        return [run.finish() for run in runs]
    finally:
        for run in runs:
            run.close()


def run_scenario(
    path: str | Path, out_dir: str | Path, seed: int | None = None, progress: bool = True,
    cache: ModelCache | None = None, executor: Executor | None = None,
) -> RunResult:
    """Runs a scenario file and writes ``manifest.json``, ``recourse.parquet``, ``summary.csv``.

    Args:
        path: the scenario YAML.
        out_dir: the run directory (created; finished parts found there are reused).
        seed: overrides the scenario's base seed.
        progress: show a progress bar.
        cache: where trained models are cached (default: ``$SIMSTUDY_CACHE`` or
            ``./.simstudy_cache``).
        executor: where units run (default: this process); see :mod:`simstudy.executors`.
    """
    run = ScenarioRun.open(path, out_dir, seed, cache, executor=executor)
    return run_units([run], executor, progress)[0]
