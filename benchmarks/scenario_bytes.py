"""Fingerprints of every shipped scenario's result tables, to show a change left them alone.

Runs each scenario under ``scenarios/`` into ``OUT/<name>/`` and prints one JSON object mapping
``<name>/<table>`` to the sha256 of ``summary.csv``, ``contrasts.csv`` and the event-world tables
(``*.parquet`` except ``recourse.parquet`` and ``parts/``, ``timeline.csv``, ``sim_summary.csv``,
``models.csv``). ``--compare BEFORE.json AFTER.json`` prints the tables whose bytes differ and
exits 1 when any does.

Example:
    python -m benchmarks.scenario_bytes --out /tmp/before > before.json
    python -m benchmarks.scenario_bytes --out /tmp/after > after.json
    python -m benchmarks.scenario_bytes --compare before.json after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

TABLES = ("summary.csv", "contrasts.csv", "timeline.csv", "sim_summary.csv", "models.csv",
          "events.parquet", "outcomes.parquet", "actions.parquet")


def fingerprints(run_dir: Path) -> dict[str, str]:
    found = {}
    for path in sorted(run_dir.rglob("*")):
        if path.name in TABLES and "parts" not in path.relative_to(run_dir).parts:
            found[str(path.relative_to(run_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/scenario_bytes"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        print(json.dumps({"tables": len(before), "differ": differ}))
        return 1 if differ else 0
    result = {}
    for scenario in sorted(Path("scenarios").glob("*.yaml")):
        if args.only and scenario.stem not in args.only:
            continue
        out = args.out / scenario.stem
        subprocess.run([sys.executable, "-m", "simstudy.cli", "--quiet", "run", str(scenario),
                        "--out", str(out), "--workers", str(args.workers)],
                       check=True, stdout=subprocess.DEVNULL)  # this command's stdout is JSON
        for table, digest in fingerprints(out).items():
            result[f"{scenario.stem}/{table}"] = digest
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
