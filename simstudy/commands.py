"""Core subcommands: ``validate`` and ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .documents import DocumentError, load_yaml

__all__ = ["register", "validate_files", "document_kind", "DOCUMENT_KINDS"]


#: Document kinds ``validate`` reads, and the folders whose documents are of one kind.
DOCUMENT_KINDS = ("scenario", "population", "audit", "analysis", "study", "power")
_FOLDER_KINDS = {"scenarios": "scenario", "populations": "population"}


def document_kind(path: str | Path, data: object, declared: str | None = None) -> str:
    """The kind of a document: ``declared`` (``validate --as``), else its folder
    (``scenarios/``, ``populations/``), else its distinctive top-level key: ``policies``
    (scenario), ``run`` (audit), ``models`` (GAMM analysis), ``participants`` (a list: power
    plan; a number: simulated study); anything else is read as a population document."""
    if declared is not None:
        return declared
    folder = Path(path).resolve().parent.name
    if folder in _FOLDER_KINDS:
        return _FOLDER_KINDS[folder]
    keys = data if isinstance(data, dict) else {}
    if "policies" in keys:
        return "scenario"
    if "run" in keys:
        return "audit"
    if "models" in keys:
        return "analysis"
    if "participants" in keys:
        return "power" if isinstance(keys["participants"], list) else "study"
    return "population"


def validate_files(paths: list[str], kind: str | None = None) -> list[str]:
    """Validates scenario, population and analysis documents; returns one line per problem.

    Each document's kind comes from :func:`document_kind`; a scenario is checked with the
    population files it names.
    """
    from .analysis.documents import AnalysisSpec, AuditSpec, PowerPlan, StudySpec
    from .documents import validate_data
    from .scenario import load_population, load_scenario

    models = {"audit": AuditSpec, "analysis": AnalysisSpec, "power": PowerPlan,
              "study": StudySpec}
    lines: list[str] = []
    for path in paths:
        try:
            data = load_yaml(path)
            found = document_kind(path, data, kind)
            if found == "scenario":
                load_scenario(path)
            elif found == "population":
                load_population(path)
            else:
                validate_data(data, models[found], str(path))
        except DocumentError as exc:
            lines.extend(str(p) for p in exc.problems)
    return lines


def _validate(args: argparse.Namespace) -> int:
    problems = validate_files(args.files, args.kind)
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
    p.add_argument("--as", dest="kind", choices=DOCUMENT_KINDS, default=None,
                   help="read every FILE as this kind of document (default: by folder, "
                        "then by its distinctive key)")
    p.set_defaults(handler=_validate)

    p = subparsers.add_parser("run", help="run a scenario and write its results")
    p.add_argument("scenario", metavar="SCENARIO")
    p.add_argument("--out", required=True, metavar="DIR", help="run directory")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.set_defaults(handler=_run)
