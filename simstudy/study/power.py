"""Power analysis for planning a rating study: simulate, refit, test, repeat.

For every participant count N of the plan and every simulation r = 0..R-1, a study is simulated
from the assumed response model with its own keyed stream ``generator(seed, "study", N, r)`` (so
results do not depend on worker count or order), the GAMM is refitted and the smooth tested.
Power at N is the share of simulations with p < alpha, with a Clopper-Pearson interval
(Clopper & Pearson 1934): [Beta(alpha/2; x, n - x + 1), Beta(1 - alpha/2; x + 1, n - x)].

Simulations run in a process pool (spawned workers, one BLAS thread each). Each finished
simulation is appended as one line to ``parts/n{N}.csv`` in the output folder and flushed, so an
interrupted plan resumes where it stopped. Each line ends with a check (a hash of the line, of
what the simulation depends on and of the code version): a line cut short, damaged, or made for
another plan fails it and is run again. One process at a time writes the folder
(:class:`~simstudy.core.store.RunLock`); killing the command stops its workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.gamm import fit_gamm
from ..core.executors import Executor, make_executor
from ..core.intervals import clopper_pearson
from ..core.progress import progress as show_progress
from ..core.rng import generator
from ..core.store import RunLock, code_version
from ..people.rating import RatingResponse
from .simulated import simulate_study

__all__ = ["PowerTask", "SimulationTask", "run_simulation", "clopper_pearson", "run_power",
           "run_simulations", "summarize_power", "plan_key", "smallest_n", "PART_COLUMNS"]

PART_COLUMNS = ["n", "sim", "p", "edf", "F", "significant"]


@dataclass(frozen=True)
class PowerTask:
    """One simulated study of a power analysis: its base seed, number of participants and
    index (a subclass adds what the study simulates)."""

    seed: int
    n_participants: int
    sim: int

    def generator(self, purpose: str) -> np.random.Generator:
        """The study's own stream, keyed by ``(seed, purpose, n_participants, sim)``."""
        return generator(self.seed, purpose, self.n_participants, self.sim)


@dataclass(frozen=True)
class SimulationTask(PowerTask):
    """One simulated study of the plan."""

    items: int
    response: RatingResponse
    outcome: str
    distance: str
    alpha: float


def run_simulation(task: SimulationTask) -> dict:
    """Simulates, refits and tests one study; returns one row of the part file."""
    gen = task.generator("study")
    data = simulate_study(task.n_participants, task.response, gen, items=task.items)
    model = fit_gamm(data, task.outcome, task.distance)
    t = model.test_
    return {"n": task.n_participants, "sim": task.sim, "p": t.p, "edf": model.edf_, "F": t.F,
            "significant": int(t.p < task.alpha)}


def _row_check(key: str, text: str) -> str:
    return hashlib.sha256(f"{key}|{text}".encode()).hexdigest()[:16]


def _read_part(path: Path, columns: list[str] = PART_COLUMNS, key: str = "") -> pd.DataFrame:
    """The finished simulations of a part file whose check matches their line and ``key``.
    ``n``, ``sim`` and every column named ``significant*`` are integers."""
    if not path.exists():
        return pd.DataFrame(columns=columns)
    rows, rejected = [], 0
    for line in path.read_text().splitlines()[1:]:
        text, _, check = line.rpartition(",")
        parts = text.split(",")
        if len(parts) != len(columns) or check != _row_check(key, text):
            rejected += 1  # cut short by an interruption, damaged, or from another plan
            continue
        try:
            rows.append([int(v) if c in ("n", "sim") or c.startswith("significant") else float(v)
                         for c, v in zip(columns, parts, strict=True)])
        except ValueError:
            rejected += 1
    if rejected:
        print(f"{path}: {rejected} line(s) failed their check (cut short, damaged, or from "
              "another plan or code version); those simulations are run again", file=sys.stderr)
    return pd.DataFrame(rows, columns=columns).drop_duplicates("sim", keep="first")


def _append(path: Path, row: dict, columns: list[str] = PART_COLUMNS, key: str = "") -> None:
    new = not path.exists()
    # After an interruption mid-line, start a fresh line so the cut line stays isolated.
    cut = not new and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    text = ",".join(repr(row[c]) if isinstance(row[c], float) else str(row[c])
                    for c in columns)
    with path.open("a") as fh:
        if new:
            fh.write(",".join([*columns, "check"]) + "\n")
        elif cut:
            fh.write("\n")
        fh.write(f"{text},{_row_check(key, text)}\n")
        fh.flush()
        os.fsync(fh.fileno())


def smallest_n(table: pd.DataFrame, target: float, column: str = "power",
               by: str | None = None) -> Any:
    """The smallest ``n`` of a power table whose ``column`` (the point ``power`` or its
    interval's ``lower`` bound) reaches ``target``; ``None`` where no simulated ``n`` does.
    With ``by``, a dict of it per value of that column, in the table's order.

    Example:
        >>> import pandas as pd
        >>> table = pd.DataFrame({"test": ["a", "a", "b"], "n": [30, 60, 30],
        ...                       "power": [0.5, 0.85, 0.3]})
        >>> smallest_n(table, 0.8), smallest_n(table, 0.8, by="test")
        (60, {'a': 60, 'b': None})
    """
    def first(rows: pd.DataFrame) -> int | None:
        reach = rows[rows[column] >= target]
        return int(reach["n"].min()) if len(reach) else None

    if by is None:
        return first(table)
    return {name: first(rows) for name, rows in table.groupby(by, sort=False)}


def plan_key(**depends_on: Any) -> str:
    """A hash of what each simulation's row depends on besides ``(N, r)`` (the response
    model, seed, design, test) and of the code version."""
    blob = json.dumps({**{k: repr(v) for k, v in depends_on.items()}, "code": code_version()},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def run_simulations(
    tasks: list, simulate: Callable[[Any], dict], grid: list[int], simulations: int,
    out_dir: Path, columns: list[str] = PART_COLUMNS, workers: int | None = None,
    progress: bool = True, key: str = "", executor: Executor | None = None,
) -> pd.DataFrame:
    """Runs (or resumes) simulation tasks with checkpoints; returns every finished row.

    Each task has attributes ``n_participants`` and ``sim``; ``simulate(task)`` returns one row
    (a dict with every column of ``columns``), appended to ``parts/n{N}.csv`` as soon as it is
    done. Tasks whose row is already there are skipped, so an interrupted plan resumes.

    Args:
        tasks: every task of the plan (finished ones included).
        simulate: a module-level function (it is sent to spawned worker processes).
        grid: the participant counts.
        simulations: simulations per participant count.
        out_dir: folder of the ``parts/`` checkpoints.
        columns: the part files' columns.
        workers: worker processes (default: all cores); 1 runs in this process.
        progress: show progress.
        key: what the rows depend on (see :func:`plan_key`); rows made for another key are
            run again.
        executor: where simulations run (default: a local pool of ``workers``, see
            :mod:`simstudy.core.executors`); results do not depend on it.
    """
    with RunLock(out_dir):
        return _run_simulations(tasks, simulate, grid, simulations, Path(out_dir), columns,
                                workers, progress, key or plan_key(), executor)


def _run_simulations(tasks, simulate, grid, simulations, out_dir, columns, workers, progress,
                     key, executor) -> pd.DataFrame:
    parts = Path(out_dir) / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    done = {n: set(_read_part(parts / f"n{n}.csv", columns, key)["sim"].tolist())
            for n in grid}
    todo = [t for t in tasks if t.sim not in done[t.n_participants]]
    total = len(grid) * simulations
    own = executor is None
    executor = executor or make_executor("local", workers)
    try:
        with show_progress(total, initial=total - len(todo), enabled=progress,
                           desc="simulated studies", unit="study") as bar:
            for i, row in executor.map_unordered(simulate, todo):
                _append(parts / f"n{todo[i].n_participants}.csv", row, columns, key)
                bar.update()
    finally:
        if own:
            executor.close()
    frames = [_read_part(parts / f"n{n}.csv", columns, key) for n in grid]
    rows = pd.concat(frames, ignore_index=True)
    return rows[rows["sim"] < simulations].sort_values(["n", "sim"]).reset_index(drop=True)


def run_power(
    response: RatingResponse,
    participants: Iterable[int],
    simulations: int,
    out_dir: Path,
    seed: int = 0,
    items: int = 5,
    outcome: str = "act",
    distance: str = "sparsity",
    alpha: float = 0.05,
    workers: int | None = None,
    progress: bool = True,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """Runs (or resumes) every simulation of a plan; returns all per-simulation rows.

    Args:
        response: the assumed response model.
        participants: the grid of participant counts.
        simulations: simulated studies per participant count (R).
        out_dir: folder for ``parts/n{N}.csv`` checkpoints.
        seed: the plan's seed.
        items: recourses per participant.
        outcome: the rating tested (``accept`` or ``act``).
        distance: the distance covariate (``sparsity`` or ``proximity``).
        alpha: significance level of each test.
        workers: worker processes (default: all cores); 1 runs in this process.
        executor: where simulations run (default: a local pool of ``workers``).
        progress: show progress.
    """
    grid = sorted({int(n) for n in participants})
    tasks = [SimulationTask(seed, n, r, items, response, outcome, distance, alpha)
             for n in grid for r in range(simulations)]
    key = plan_key(response=response, seed=seed, items=items, outcome=outcome,
                   distance=distance, alpha=alpha)
    return run_simulations(tasks, run_simulation, grid, simulations, out_dir, PART_COLUMNS,
                           workers, progress, key, executor)


def summarize_power(rows: pd.DataFrame, target: float = 0.8, level: float = 0.95
                    ) -> tuple[pd.DataFrame, int | None]:
    """Power per participant count with Clopper-Pearson bounds, and the smallest N whose
    estimated power reaches ``target`` (None if none does)."""
    out = []
    for n, grp in rows.groupby("n"):
        x, m = int(grp["significant"].sum()), len(grp)
        lo, hi = clopper_pearson(x, m, level)
        out.append({"n": int(n), "simulations": m, "significant": x, "power": x / m,
                    "lower": lo, "upper": hi, "median_edf": float(grp["edf"].median()),
                    "median_F": float(grp["F"].median())})
    table = pd.DataFrame(out)
    return table, smallest_n(table, target)
