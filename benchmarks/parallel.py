"""Benchmark of the executors: one scenario run with 1 worker, 2 workers and Ray, side by side.

The scenario has 4 replications x 2 policies = 8 work units (each replication trains its own
decision model, from an empty cache in every run, so every run does the same work). Prints one
JSON object: wall seconds per executor, the speed-up of 2 workers over 1, whether the three
``summary.csv`` files are byte-identical, and the machine's load average before and after (wall
times on a loaded machine are not speed figures).

    python -m benchmarks.parallel [--replications 4] [--applicants 300] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from simstudy.executors import ProcessExecutor, SerialExecutor
from simstudy.progress import set_quiet
from simstudy.runner import run_scenario
from simstudy.world.decision import ModelCache

SCENARIO = """
name: parallel-benchmark
seed: 11
replications: {replications}
world: {{kind: loan, n_samples: 4000}}
decision_model: {{epochs: 60}}
applicants: {{max_applicants: {applicants}}}
policies:
  - {{kind: oracle}}
  - {{kind: growing_spheres}}
conditions:
  - name: ranking
    population:
      actionability: {{kind: ranking, bias: uniform}}
      cost: {{shape: linear}}
      groups: {{rule: income}}
"""


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _timed(scenario: Path, out: Path, executor) -> float:
    t0 = time.perf_counter()
    with executor:
        run_scenario(scenario, out, progress=False, cache=ModelCache(out.parent / "cache"),
                     executor=executor)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=4)
    parser.add_argument("--applicants", type=int, default=300)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    args = parser.parse_args(argv)
    set_quiet(True)
    out: dict = {"units": args.replications * 2, "cpu_count": os.cpu_count(),
                 "load_before": _load()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scenario = tmp / "parallel.yaml"
        scenario.write_text(SCENARIO.format(replications=args.replications,
                                            applicants=args.applicants))
        runs = {"workers_1": lambda: SerialExecutor(), "workers_2": lambda: ProcessExecutor(2)}
        if not args.no_ray:
            from simstudy.executors import RayExecutor

            runs["ray_2"] = lambda: RayExecutor(num_cpus=2)
        seconds, summaries = {}, {}
        for name, make in runs.items():
            run_dir = tmp / name / "run"
            seconds[name] = round(_timed(scenario, run_dir, make()), 2)
            summaries[name] = (run_dir / "summary.csv").read_bytes()
    out["wall_seconds"] = seconds
    out["speedup_2_over_1"] = round(seconds["workers_1"] / seconds["workers_2"], 3)
    out["summary_identical"] = len(set(summaries.values())) == 1
    out["load_after"] = _load()
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
