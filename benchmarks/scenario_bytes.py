"""Fingerprints of every shipped scenario's result tables, to show a change left them alone.

Runs each shipped scenario (``simstudy/resources/scenarios/``) into ``OUT/<name>/`` and prints
one JSON object whose ``tables`` map ``<name>/<table>`` to the sha256 of ``summary.csv``,
``contrasts.csv``, ``study.csv`` and the event-world tables (``*.parquet`` except
``recourse.parquet`` and ``parts/``, ``timeline.csv``, ``sim_summary.csv``, ``models.csv``);
``scenarios`` says, per scenario, whether it ran, its exit code and wall time. ``--compare
BEFORE.json AFTER.json`` prints the tables whose bytes differ among the scenarios that ran in
both, and exits 1 when any does, when a scenario failed in either run or when the AFTER tree
lacks one of BEFORE's (a scenario new in AFTER is listed, not counted as a difference).

``--tree DIR`` runs another source tree: its package (``PYTHONPATH=DIR``) on its own shipped
scenarios (``DIR/simstudy/resources/scenarios``, or ``DIR/scenarios`` in a tree from before they
moved into the package); the tree is only read (runs, copies and caches go under ``--out``).
Every run gets a fresh model cache (``SIMSTUDY_CACHE=OUT/_cache/<name>``), so no model trained
by one tree is loaded by another.

``--quick`` runs each scenario on a temporary copy (``OUT/_quick/scenarios/<name>.yaml``) with
the small overrides of :data:`QUICK` (the JSON's ``quick`` records them and, per scenario, the
ones that applied); relative paths of the original (populations, data files, model files) are
resolved against the original file's folder. Every other setting stays, so each policy, world
kind, population, simulation and study section still runs through its own code; the same
overrides applied to two trees give equal bytes when a change left every scenario's code path
alone. Every shipped scenario runs quickly this way (measured on 2 shared cores, one worker:
5 to 32 s each, about 4 minutes for all 28); a scenario that cannot run is listed in the JSON
with its exit code and last lines of error. ``--check`` only validates the (quick) copies with
the tree's ``simstudy validate``.

Example:
    python -m benchmarks.scenario_bytes --quick --tree /work/old --out /tmp/before > before.json
    python -m benchmarks.scenario_bytes --quick --out /tmp/after > after.json
    python -m benchmarks.scenario_bytes --compare before.json after.json
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

__all__ = ["TABLES", "QUICK", "fingerprints", "quick_document", "compare", "main"]

TABLES = ("summary.csv", "contrasts.csv", "study.csv", "timeline.csv", "sim_summary.csv",
          "models.csv", "events.parquet", "outcomes.parquet", "actions.parquet")

#: The ``--quick`` overrides. A value replaces the scenario's only where it is smaller (caps),
#: and only where the scenario's document has the section it belongs to, except
#: ``max_applicants`` and the decision model's ``epochs``, which every scenario takes.
QUICK: dict[str, Any] = {
    "replications": 2,                # two: the summaries' intervals over replications run
    "world.n_samples": 2000,          # world kinds that state it (German credit has none)
    "world.flow.epochs": 2,           # causal flows (fitted world models)
    "decision_model.epochs": 10,
    # a world of real data (German credit, a CSV) is small, and 10 epochs leave its decision
    # model approving everyone, which a run refuses
    "decision_model.epochs (real data)": 100,
    "applicants.max_applicants": 20,
    "policies[kind=icarma].epochs": 2,
    "policies[kind=icarma].seeds": 2,  # the first two training seeds of a list
    "simulation.horizon_days": 30,
    "simulation.retraining": {"every_days": 10, "window_days": 10, "epochs": 2,
                              "min_samples": 20},  # so that retraining happens in 30 days
    "study.participants": 10,
}


def fingerprints(run_dir: Path) -> dict[str, str]:
    """sha256 of every result table under ``run_dir`` (see :data:`TABLES`)."""
    found = {}
    for path in sorted(run_dir.rglob("*")):
        if path.name in TABLES and "parts" not in path.relative_to(run_dir).parts:
            found[str(path.relative_to(run_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _cap(section: dict, key: str, value: int, applied: dict, label: str) -> None:
    old = section.get(key)
    if old is None or (isinstance(old, (int, float)) and old > value):
        section[key] = value
        applied[label] = [old, value]


def _absolute_paths(node: Any, folder: Path) -> Any:
    """``path:`` values anywhere in the document, made absolute against ``folder``."""
    if isinstance(node, dict):
        return {k: (str((folder / v).resolve()) if k == "path" and isinstance(v, str)
                    and not Path(v).is_absolute() else _absolute_paths(v, folder))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_absolute_paths(v, folder) for v in node]
    return node


def quick_document(data: dict, folder: Path) -> tuple[dict, dict]:
    """The scenario ``data`` (read from ``folder``) with the :data:`QUICK` overrides, and the
    overrides that applied (``label: [old, new]``).

    Example:
        >>> doc, applied = quick_document({"replications": 5, "world": {"kind": "loan",
        ...     "n_samples": 20000}, "policies": [{"kind": "icarma", "seeds": [0, 1, 2]}],
        ...     "conditions": [{"name": "a", "population": "../populations/p.yaml"}]},
        ...     Path("/x/scenarios"))
        >>> doc["replications"], doc["world"]["n_samples"], doc["policies"][0]["seeds"]
        (2, 2000, [0, 1])
        >>> doc["conditions"][0]["population"]
        '/x/populations/p.yaml'
    """
    doc = _absolute_paths(copy.deepcopy(data), folder)
    applied: dict[str, list] = {}
    _cap(doc, "replications", QUICK["replications"], applied, "replications")
    world = doc.get("world") or {}
    if "n_samples" in world:
        _cap(world, "n_samples", QUICK["world.n_samples"], applied, "world.n_samples")
    if isinstance(world.get("flow"), dict) or world.get("kind") in ("causal_flow",
                                                                    "german_credit"):
        world.setdefault("flow", {})
        _cap(world["flow"], "epochs", QUICK["world.flow.epochs"], applied, "world.flow.epochs")
    decision = doc.setdefault("decision_model", {})
    if decision is None:
        decision = doc["decision_model"] = {}
    real_data = world.get("kind") == "german_credit" or world.get("source") == "csv"
    if "path" not in decision:  # an external model is not trained
        _cap(decision, "epochs", QUICK["decision_model.epochs (real data)" if real_data else
                                       "decision_model.epochs"], applied, "decision_model.epochs")
    applicants = doc.setdefault("applicants", {}) or {}
    doc["applicants"] = applicants
    _cap(applicants, "max_applicants", QUICK["applicants.max_applicants"], applied,
         "applicants.max_applicants")
    for i, policy in enumerate(doc.get("policies") or []):
        if policy.get("kind") != "icarma":
            continue
        name = policy.get("name", f"policies[{i}]")
        _cap(policy, "epochs", QUICK["policies[kind=icarma].epochs"], applied,
             f"{name}.epochs")
        seeds = policy.get("seeds")
        if isinstance(seeds, list) and len(seeds) > QUICK["policies[kind=icarma].seeds"]:
            policy["seeds"] = seeds[: QUICK["policies[kind=icarma].seeds"]]
            applied[f"{name}.seeds"] = [seeds, policy["seeds"]]
    for condition in doc.get("conditions") or []:
        population = condition.get("population")
        if isinstance(population, str) and not Path(population).is_absolute():
            condition["population"] = str((folder / population).resolve())
    simulation = doc.get("simulation")
    if isinstance(simulation, dict):
        _cap(simulation, "horizon_days", QUICK["simulation.horizon_days"], applied,
             "simulation.horizon_days")
        if isinstance(simulation.get("retraining"), dict):
            for key, value in QUICK["simulation.retraining"].items():
                _cap(simulation["retraining"], key, value, applied,
                     f"simulation.retraining.{key}")
    study = doc.get("study")
    if isinstance(study, dict):
        _cap(study, "participants", QUICK["study.participants"], applied, "study.participants")
    return doc, applied


def compare(before: dict, after: dict) -> dict:
    """Tables whose bytes differ among the scenarios that ran in both runs; ``failed`` names
    the scenarios either run has but could not run, ``only_before`` / ``only_after`` those of
    one run's tree only."""
    def tables(run: dict) -> dict:
        return run["tables"] if "tables" in run else run  # the older flat format

    def listed(run: dict, ok: bool) -> set:
        if "scenarios" not in run:
            return {key.split("/", 1)[0] for key in run} if ok else set()
        return {name for name, s in run["scenarios"].items() if (s["returncode"] == 0) == ok}

    tb, ta = tables(before), tables(after)
    both = listed(before, True) & listed(after, True)
    failed = listed(before, False) | listed(after, False)
    keys = {k for k in tb.keys() | ta.keys() if k.split("/", 1)[0] in both}
    every_b, every_a = listed(before, True) | listed(before, False), listed(after, True) | listed(
        after, False)
    return {"scenarios_compared": sorted(both),
            "tables_compared": len(keys),
            "failed": sorted(failed),
            "only_before": sorted(every_b - every_a),
            "only_after": sorted(every_a - every_b),
            "differ": sorted(k for k in keys if tb.get(k) != ta.get(k))}


def _environment(tree: Path, out: Path, name: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["SIMSTUDY_CACHE"] = str(out / "_cache" / name)
    return env


def _commit(tree: Path) -> str | None:
    found = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True,
                           text=True)
    return found.stdout.strip() or None


def _scenario_folder(tree: Path) -> Path:
    # the shipped scenarios; a tree from before they moved into the package has them at its top
    inside = tree / "simstudy" / "resources" / "scenarios"
    return inside if inside.is_dir() else tree / "scenarios"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/scenario_bytes"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    parser.add_argument("--tree", type=Path, default=Path("."),
                        help="source tree whose package and scenarios run (default: here)")
    parser.add_argument("--quick", action="store_true",
                        help="run copies with the small overrides of QUICK")
    parser.add_argument("--check", action="store_true",
                        help="only validate the (quick) copies in the tree")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        result = compare(*(json.loads(p.read_text()) for p in args.compare))
        print(json.dumps(result, indent=1))
        return 1 if result["differ"] or result["failed"] or result["only_before"] else 0
    tree, out = args.tree.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # cwd is OUT: ``python -m`` puts the working folder first on the path, ahead of the tree
    probe = subprocess.run([sys.executable, "-c", "import simstudy; print(simstudy.__file__)"],
                           env=_environment(tree, out, "probe"), capture_output=True,
                           text=True, check=True, cwd=out)
    package = probe.stdout.strip()
    if not Path(package).resolve().is_relative_to(tree):
        print(f"{tree}: the package imported is {package}, not the tree's", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"tree": str(tree), "commit": _commit(tree), "package": package,
                              "quick": QUICK if args.quick else None, "scenarios": {},
                              "tables": {}}
    for scenario in sorted(_scenario_folder(tree).glob("*.yaml")):
        name = scenario.stem
        if args.only and name not in args.only:
            continue
        path, entry = scenario, {}
        if args.quick:
            doc, entry["overrides"] = quick_document(yaml.safe_load(scenario.read_text()),
                                                     scenario.parent)
            path = out / "_quick" / "scenarios" / scenario.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
        command = (["validate", str(path)] if args.check else
                   ["run", str(path), "--out", str(out / name), "--workers", str(args.workers)])
        if not args.check:
            shutil.rmtree(out / name, ignore_errors=True)  # a run folder resumes; start afresh
            shutil.rmtree(out / "_cache" / name, ignore_errors=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "simstudy.cli", "--quiet", *command],
                              env=_environment(tree, out, name), cwd=out, capture_output=True,
                              text=True)  # the run's stdout is JSON of its own
        entry["returncode"] = done.returncode
        entry["seconds"] = round(time.perf_counter() - start, 1)
        if done.returncode:
            entry["stderr"] = done.stderr.strip().splitlines()[-3:]
        result["scenarios"][name] = entry
        print(f"{name}: exit {done.returncode}, {entry['seconds']} s", file=sys.stderr)
        if not args.check and done.returncode == 0:
            for table, digest in fingerprints(out / name).items():
                result["tables"][f"{name}/{table}"] = digest
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0 if all(s["returncode"] == 0 for s in result["scenarios"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
