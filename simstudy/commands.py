"""Core subcommands: ``validate`` and ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .documents import DocumentError, load_yaml

__all__ = ["register", "validate_files"]


def validate_files(paths: list[str]) -> list[str]:
    """Validates scenario, population and analysis documents; returns one line per problem.

    The kind of document is told by its distinctive top-level key: ``policies`` (scenario, with
    the population files it names), ``run`` (audit), ``models`` (GAMM analysis),
    ``participants`` (a list: power plan; a number: simulated study); anything else is read as
    a population document.
    """
    from .analysis.documents import AnalysisSpec, AuditSpec, PowerPlan, StudySpec
    from .documents import validate_data
    from .scenario import load_population, load_scenario

    lines: list[str] = []
    for path in paths:
        try:
            data = load_yaml(path)
            keys = data if isinstance(data, dict) else {}
            if "policies" in keys:
                load_scenario(path)
            elif "run" in keys:
                validate_data(data, AuditSpec, str(path))
            elif "models" in keys:
                validate_data(data, AnalysisSpec, str(path))
            elif "participants" in keys:
                model = PowerPlan if isinstance(keys["participants"], list) else StudySpec
                validate_data(data, model, str(path))
            else:
                load_population(path)
        except DocumentError as exc:
            lines.extend(str(p) for p in exc.problems)
    return lines


def _validate(args: argparse.Namespace) -> int:
    problems = validate_files(args.files)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"{len(args.files)} document(s) valid")
    return 2 if problems else 0


def _run(args: argparse.Namespace) -> int:
    from .runner import run_scenario

    result = run_scenario(args.scenario, args.out, seed=args.seed)
    print(f"wrote {Path(result.run_dir) / 'summary.csv'}")
    cols = [c for c in ("policy", "condition", "validity", "plausibility", "hap",
                        "cost_unweighted") if c in result.summary.columns]
    overall = result.summary[result.summary["group_by"] == "all"][cols]
    print(overall.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("validate",
                              help="check scenario, population and analysis documents")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(handler=_validate)

    p = subparsers.add_parser("run", help="run a scenario and write its results")
    p.add_argument("scenario", metavar="SCENARIO")
    p.add_argument("--out", required=True, metavar="DIR", help="run directory")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.set_defaults(handler=_run)
