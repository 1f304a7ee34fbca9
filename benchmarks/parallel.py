"""Benchmark of the executors: one scenario run with 1 worker, 2 workers and Ray, side by side.

The scenario has the shape of the shipped recourse-table scenarios (a 20,000-sample Loan world,
the rejected applicants of its test split): 6 replications x 2 policies = 12 work units, each
replication training its own decision model from an empty cache in every run, so every run does
the same work. The 2-worker run includes starting its helper process (this process computes
beside it). Prints one JSON object: wall seconds and CPU seconds (this process and its
children) per executor, the speed-up of 2 workers over 1, the seconds of each unit's policy,
whether the three ``summary.csv`` files are byte-identical, and the machine's load average
before and after (wall times on a loaded machine are not speed figures).

    python -m benchmarks.parallel [--replications 6] [--applicants 1000] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from simstudy.core.executors import ProcessExecutor, SerialExecutor
from simstudy.core.progress import set_quiet
from simstudy.run.runner import run_scenario
from simstudy.world.decision import ModelCache

SCENARIO = """
name: parallel-benchmark
seed: 11
replications: {replications}
world: {{kind: loan, n_samples: {samples}}}
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


def _cpu() -> float:
    me, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                    resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _timed(scenario: Path, out: Path, make) -> tuple[float, float, dict]:
    t0, c0 = time.perf_counter(), _cpu()
    with make() as executor:
        result = run_scenario(scenario, out, progress=False,
                              cache=ModelCache(out.parent / "cache"), executor=executor)
    seconds = {f"rep{r['index']}/{k}": v for r in result.manifest["replications"]
               for k, v in r["seconds"].items()}
    return time.perf_counter() - t0, _cpu() - c0, seconds


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=6)
    parser.add_argument("--applicants", type=int, default=1000,
                        help="at most this many rejected applicants per replication")
    parser.add_argument("--samples", type=int, default=20000, help="world sample size")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    args = parser.parse_args(argv)
    set_quiet(True)
    out: dict = {"units": args.replications * 2, "cpu_count": os.cpu_count(),
                 "load_before": _load()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scenario = tmp / "parallel.yaml"
        scenario.write_text(SCENARIO.format(replications=args.replications,
                                            applicants=args.applicants, samples=args.samples))
        runs = {"workers_1": SerialExecutor, "workers_2": lambda: ProcessExecutor(2)}
        if not args.no_ray:
            from simstudy.core.executors import RayExecutor

            runs["ray_2"] = lambda: RayExecutor(num_cpus=2)
        seconds, cpu, summaries = {}, {}, {}
        for name, make in runs.items():
            run_dir = tmp / name / "run"
            wall, used, unit_seconds = _timed(scenario, run_dir, make)
            seconds[name], cpu[name] = round(wall, 2), round(used, 2)
            summaries[name] = (run_dir / "summary.csv").read_bytes()
            if name == "workers_1":
                out["unit_policy_seconds_1_worker"] = unit_seconds
    out["wall_seconds"] = seconds
    # Ray's workers are not children of this process: its CPU time is not counted
    out["cpu_seconds_self_and_children"] = cpu
    out["speedup_2_over_1"] = round(seconds["workers_1"] / seconds["workers_2"], 3)
    out["summary_identical"] = len(set(summaries.values())) == 1
    out["load_after"] = _load()
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
