"""Running a scenario into a directory: its units, their parts, and the combined tables.

A run is a set of independent work units (:mod:`simstudy.run.units`), each computing from its key
alone, so any executor (:mod:`simstudy.core.executors`: this process, a local pool, Ray) gives the
same bytes. Only the driver writes: each finished unit goes to ``parts/`` at once, and a rerun
into the same directory skips finished units, so an interrupted run loses nothing that finished.
The combined tables are built from the parts in key order.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.documents import FieldProblem, UsageError, with_overrides
from ..core.executors import Executor, SerialExecutor
from ..core.progress import progress as show_progress
from ..core.store import (
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
from ..sim.experiment import SIM_FILES, UNIT_TABLES, write_event_world
from ..study.from_scenario import write_study_files
from ..world.decision import ModelCache
from .dictionary import write_dictionary
from .scenario import load_scenario, policy_name
from .summary import summarize_contrasts, summarize_recourse
from .tables import people_columns, recourse_table
from .units import (
    EventWorldUnit,
    RecourseUnit,
    Replication,
    RunPlan,
    UnitFailure,
    compute_unit,
    people_of,
    prepare_replication,
    replication_of,
)

#: Significant digits of the floats in summary.csv and contrasts.csv (recourse.parquet keeps
#: full precision).
SUMMARY_DIGITS = 6

__all__ = ["run_scenario", "run_units", "ScenarioRun", "RunResult", "SUMMARY_DIGITS",
           # declared in simstudy.run.units and simstudy.run.tables; importable from here too
           "recourse_table", "people_columns", "Replication", "prepare_replication",
           "RecourseUnit", "EventWorldUnit", "RunPlan", "UnitFailure", "compute_unit"]


@dataclass
class RunResult:
    run_dir: Path
    recourse: pd.DataFrame
    summary: pd.DataFrame
    manifest: dict[str, Any]



def _scenario_hash(resolved: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()



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
        group_columns = list(dict.fromkeys(c for u in units
                                           for c in infos[u.stem]["group_columns"]))
        if "privileged" in group_columns:  # assigned from the other groups: last
            group_columns = [*(c for c in group_columns if c != "privileged"), "privileged"]
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
            rep = replication_of(self.plan, sc.study.replication)
            people = people_of(self.plan, rep, study_condition)
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
        # units first, then policies in the order the scenario declares them (a policy that
        # picks among models others train, like iCARMA's best seed, is declared after them),
        # replications varying fastest. The executor keeps units that share a replication or a
        # trained model on one worker (units' ``affinity``).
        def order(ru: tuple[ScenarioRun, RecourseUnit | EventWorldUnit]) -> tuple:
            run, unit = ru
            names = [policy_name(p) for p in run.scenario.policies]
            conditions = [c.name for c in run.scenario.conditions]
            return (isinstance(unit, RecourseUnit), names.index(unit.policy),
                    conditions.index(unit.condition), unit.replication)

        work.sort(key=order)
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
        executor: where units run (default: this process); see :mod:`simstudy.core.executors`.

    References:
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026 (the population metrics of ``summary.csv``, Section 5.1).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "tiny.yaml").write_text('''
        ... name: tiny
        ... world: {kind: loan, n_samples: 400}
        ... decision_model: {epochs: 5}
        ... applicants: {max_applicants: 8}
        ... policies: [{kind: oracle}]
        ... conditions: [{name: all-4, population: {actionability: {kind: all}}}]
        ... ''')
        >>> result = run_scenario(folder / "tiny.yaml", folder / "run", progress=False,
        ...                       cache=ModelCache(folder / "cache"))
        >>> result.manifest["status"], list(result.summary["policy"].unique())
        ('complete', ['oracle'])
    """
    run = ScenarioRun.open(path, out_dir, seed, cache, executor=executor)
    return run_units([run], executor, progress)[0]
