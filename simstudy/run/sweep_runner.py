"""Running a sweep (its document and cells: :mod:`simstudy.run.sweep`): every unit of every
cell through one executor and one progress bar, each cell a resumable run directory, and the
sweep's ``summary.csv`` and ``sweep.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.documents import UsageError
from ..core.executors import Executor
from ..core.store import atomic_write_text, package_versions, write_csv
from .runner import SUMMARY_DIGITS, ScenarioRun, run_units
from .sweep import load_sweep

__all__ = ["SweepResult", "run_sweep"]


@dataclass
class SweepResult:
    out_dir: Path
    summary: pd.DataFrame
    manifest: dict[str, Any]


def run_sweep(path: str | Path, out_dir: str | Path, executor: Executor | None = None,
              progress: bool = True, cache: Any = None) -> SweepResult:
    """Runs (or resumes) every cell of a sweep; writes ``summary.csv`` and ``sweep.json``."""
    spec, cells = load_sweep(path)
    out = Path(out_dir)
    sweep_file = out / "sweep.json"
    document = spec.model_dump(mode="json")
    if sweep_file.exists():
        previous = json.loads(sweep_file.read_text())
        if previous.get("sweep") != document:
            raise UsageError(f"{out} holds another sweep; choose another --out directory")
    manifest: dict[str, Any] = {
        "status": "running", "sweep_file": str(path), "sweep": document,
        "versions": package_versions(),
        "cells": [{"label": c.label, "variant": c.variant, "scenario": str(base),
                   "overrides": c.overrides} for c, base, _, _ in cells],
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(sweep_file, json.dumps(manifest, indent=2, default=str))
    runs: list[ScenarioRun] = []
    try:
        for cell, base_path, scenario, populations in cells:
            runs.append(ScenarioRun.open(base_path, out / "cells" / cell.label, cache=cache,
                                         loaded=(scenario, populations), executor=executor))
    except BaseException:
        for run in runs:
            run.close()
        raise
    results = run_units(runs, executor, progress, desc=spec.name)
    frames = []
    grid_paths = list(spec.grid)
    for (cell, _, _, _), res, entry in zip(cells, results, manifest["cells"], strict=True):
        lead = {"cell": cell.label}
        if spec.variants:
            lead["variant"] = cell.variant
        for p in grid_paths:
            v = cell.overrides[p]
            lead[p] = v if isinstance(v, str | int | float | bool) else json.dumps(v)
        frames.append(res.summary.assign(**lead)[[*lead, *res.summary.columns]])
        entry["resolved_sha256"] = res.manifest["resolved_sha256"]
        entry["status"] = res.manifest["status"]
    summary = pd.concat(frames, ignore_index=True)
    write_csv(summary, out / "summary.csv", digits=SUMMARY_DIGITS)
    manifest["status"] = "complete"
    manifest["outputs"] = ["summary.csv", "cells/"]
    atomic_write_text(sweep_file, json.dumps(manifest, indent=2, default=str))
    return SweepResult(out, summary, manifest)
