"""Benchmark of a whole scenario run as a user starts it: from an empty model cache, every unit.

Runs the scenario (default: the shipped ``scenarios/world_year.yaml``) with ``--workers`` local
workers and prints one JSON object: wall seconds, CPU seconds of this process and its helpers, peak
resident memory, the seconds of every event-world unit (its phases, from the manifest), the
event-world estimates with their intervals, and the machine's load average before and after
(wall times on a loaded machine are not speed figures).

With ``--compare-per-window`` the same scenario is also run with ``simulation.lookahead: false``
(one policy call per daily window, the reference behaviour, much slower) and the JSON says, for
every estimate, whether each run's mean lies inside the other's interval.

    OMP_NUM_THREADS=1 python -m benchmarks.scenario_run [--scenario FILE]
        [--workers 2] [--compare-per-window]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from simstudy.core.executors import make_executor
from simstudy.core.progress import set_quiet
from simstudy.run.runner import ScenarioRun, run_units
from simstudy.run.scenario import load_scenario
from simstudy.world.decision import ModelCache

ROOT = Path(__file__).resolve().parents[1]


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _usage() -> tuple[float, float]:
    """CPU seconds and peak resident GB, of this process and its (finished) children."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return cpu, max(me.ru_maxrss, kids.ru_maxrss) / 2**20  # ru_maxrss is in KiB on Linux


def _run(path: Path, doc: dict, out: Path, workers: int) -> tuple[dict, pd.DataFrame]:
    scenario, populations = load_scenario(path, data=doc, source=str(path))
    t0, (c0, _) = time.perf_counter(), _usage()
    with make_executor("local", workers) as executor:
        run = ScenarioRun.open(path, out / "run", cache=ModelCache(out / "cache"),
                               loaded=(scenario, populations), executor=executor)
        result = run_units([run], executor, progress=False)[0]
    wall = time.perf_counter() - t0
    cpu, peak = _usage()
    sim = pd.read_csv(out / "run" / "sim_summary.csv")
    units = {stem: {k: round(v, 1) for k, v in t.items()}
             for stem, t in result.manifest.get("event_world_seconds", {}).items()}
    return ({"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu - c0, 1),
             "peak_memory_gb": round(peak, 3), "event_world_unit_seconds": units}, sim)


def _estimates(sim: pd.DataFrame) -> pd.DataFrame:
    return sim[sim["kind"] == "estimate"].set_index(["policy", "group", "metric"])


def _agreement(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """Whether each mean lies inside the other run's interval, estimate by estimate."""
    joined = pd.merge(_estimates(a), _estimates(b), left_index=True, right_index=True,
                      suffixes=("_a", "_b")).dropna(subset=["mean_a", "mean_b"])
    # equal means count as agreeing where an interval is undefined (no spread)
    inside = (joined["mean_a"] == joined["mean_b"]) | (
        joined["mean_a"].between(joined["ci_low_b"], joined["ci_high_b"])
        & joined["mean_b"].between(joined["ci_low_a"], joined["ci_high_a"]))
    outside = joined[~inside]
    return {"estimates_compared": int(len(joined)), "within_intervals": int(inside.sum()),
            "outside": [{"policy": p, "group": g, "metric": m,
                         "lookahead": _numbers(r.mean_a, r.ci_low_a, r.ci_high_a),
                         "per_window": _numbers(r.mean_b, r.ci_low_b, r.ci_high_b)}
                        for (p, g, m), r in outside.iterrows()]}


def _numbers(*values: float) -> list[float | None]:
    """Rounded, with an undefined value as ``null`` (JSON has no NaN)."""
    return [None if pd.isna(v) else round(float(v), 4) for v in values]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "simstudy" / "resources" / "scenarios"
                                                  / "world_year.yaml"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--compare-per-window", action="store_true",
                        help="also run with simulation.lookahead: false and compare estimates")
    args = parser.parse_args(argv)
    set_quiet(True)
    path = Path(args.scenario).resolve()
    doc = yaml.safe_load(path.read_text())
    out: dict = {"scenario": str(path), "workers": args.workers, "cpu_count": os.cpu_count(),
                 "load_before": _load()}
    with tempfile.TemporaryDirectory() as tmp:
        out["as_shipped"], sim = _run(path, doc, Path(tmp) / "shipped", args.workers)
        out["estimates"] = [
            {"policy": p, "group": g, "metric": m, "mean_ci": _numbers(r["mean"], r["ci_low"],
                                                                       r["ci_high"])}
            for (p, g, m), r in _estimates(sim).iterrows() if g == "all"]
        if args.compare_per_window and doc.get("simulation"):
            reference = {**doc, "simulation": {**doc["simulation"], "lookahead": False}}
            out["per_window"], sim_ref = _run(path, reference, Path(tmp) / "per_window",
                                              args.workers)
            out["agreement"] = _agreement(sim, sim_ref)
    out["load_after"] = _load()
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
