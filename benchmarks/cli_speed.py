"""Command-line start-up: wall time of ``simstudy --help`` and of validating every shipped
document in one call, and which heavy libraries each imported.

Each command runs ``--repeat`` times in a fresh interpreter (``python -m simstudy.cli``, as the
``simstudy`` script does); the JSON gives every wall time, the median and the minimum, the
machine's load average before and after (timings taken while other work loads the machine are
not speed figures; the CPU seconds of each run, user plus system, depend less on the load), and
the heavy libraries the command imported. The validated documents are the shipped ones (under
``simstudy/resources/``) ``scenarios/*.yaml populations/*.yaml analysis/*.yaml sweeps/*.yaml``,
and separately ``scenarios/*.yaml`` alone.

    python benchmarks/cli_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "simstudy" / "resources"
HEAVY = ("torch", "pandas", "scipy", "statsmodels", "matplotlib", "zuko", "simpy")
FOLDERS = ("scenarios", "populations", "analysis", "sweeps")

# run in the child after the command: which heavy libraries it imported
_PROBE = (
    "import json, runpy, sys\n"
    "sys.argv = ['simstudy'] + json.loads(sys.argv[1])\n"
    "try:\n"
    "    runpy.run_module('simstudy.cli', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n")


def _documents(folders: tuple[str, ...] = FOLDERS) -> list[str]:
    paths = sorted(p for folder in folders for p in (SHIPPED / folder).glob("*.yaml"))
    return [str(p.relative_to(REPO)) for p in paths]


def _cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _time(argv: list[str], repeat: int, probe: bool = True) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu_seconds()
        done = subprocess.run([sys.executable, "-m", "simstudy.cli", *argv], cwd=REPO, env=env,
                              capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu_seconds() - cpu)
    heavy = None
    if probe:
        checked = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv)], cwd=REPO,
                                 env=env, capture_output=True, text=True)
        heavy = json.loads(checked.stderr.strip().splitlines()[-1])
    return {"exit_code": done.returncode, "wall_s": [round(w, 3) for w in walls],
            "median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3),
            "cpu_s": [round(c, 3) for c in cpus],
            "heavy_imports": heavy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    everything = _documents()
    scenarios = _documents(("scenarios",))
    load_before = os.getloadavg()
    result = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_before": [round(v, 2) for v in load_before],
        "help": _time(["--help"], args.repeat),
        "validate_all": {"documents": len(everything),
                         **_time(["validate", *everything], args.repeat)},
        "validate_scenarios": {"documents": len(scenarios),
                               **_time(["validate", *scenarios], args.repeat)},
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
