"""Core subcommands: ``validate``, ``run`` and ``sweep``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.documents import DocumentError, load_yaml

__all__ = ["register", "validate_files", "document_kind", "DOCUMENT_KINDS",
           "add_executor_arguments", "executor_from_args"]


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """``--workers``, ``--executor`` and ``--address``: where a command's work units run."""
    g = p.add_argument_group("where the work runs")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (local; default: all cores) or CPUs of a private "
                        "Ray instance; results do not depend on it")
    g.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local process pool (default) or a Ray cluster")
    g.add_argument("--address", default=None, metavar="ADDR",
                   help="Ray cluster to join (ray://HOST:10001, HOST:6379 or auto; default: "
                        "start a local instance)")


def executor_from_args(args: argparse.Namespace):
    """The executor (:mod:`simstudy.core.executors`) that ``add_executor_arguments``' options ask
    for."""
    from ..core.documents import UsageError
    from ..core.executors import make_executor

    if args.address is not None and args.executor != "ray":
        raise UsageError("--address needs --executor ray")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    return make_executor(args.executor, args.workers, args.address)


#: Document kinds ``validate`` reads, and the folders whose documents are of one kind.
DOCUMENT_KINDS = ("scenario", "population", "audit", "analysis", "study", "power", "sweep")
_FOLDER_KINDS = {"scenarios": "scenario", "populations": "population", "sweeps": "sweep"}


def document_kind(path: str | Path, data: object, declared: str | None = None) -> str:
    """The kind of a document: ``declared`` (``validate --as``), else its folder
    (``scenarios/``, ``populations/``), else its distinctive top-level key: ``policies``
    (scenario), ``run`` (audit), ``models`` (GAMM analysis), ``participants`` (a list: power
    plan; a number: simulated study), ``scenario`` with ``grid`` or ``variants`` (sweep);
    anything else is read as a population document."""
    if declared is not None:
        return declared
    folder = Path(path).resolve().parent.name
    if folder in _FOLDER_KINDS:
        return _FOLDER_KINDS[folder]
    keys = data if isinstance(data, dict) else {}
    if "scenario" in keys and ("grid" in keys or "variants" in keys):
        return "sweep"
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
    from ..analysis.analysis_spec import AuditSpec, PowerPlan, StudySpec
    from ..core.documents import validate_data
    from ..run.scenario import load_population, load_scenario
    from ..run.sweep import load_sweep
    from ..study.hypotheses import StudyAnalysisSpec

    models = {"audit": AuditSpec, "analysis": StudyAnalysisSpec, "power": PowerPlan,
              "study": StudySpec}
    lines: list[str] = []
    for path in paths:
        try:
            data = load_yaml(path)
            found = document_kind(path, data, kind)
            if found == "scenario":
                load_scenario(path, data)
            elif found == "sweep":
                load_sweep(path)
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
    from ..run.runner import run_scenario

    with executor_from_args(args) as executor:
        result = run_scenario(args.scenario, args.out, seed=args.seed,
                              executor=executor)
    print(f"wrote {Path(result.run_dir) / 'summary.csv'}")
    cols = [c for c in ("policy", "condition", "validity", "plausibility", "hap",
                        "cost_unweighted") if c in result.summary.columns]
    overall = result.summary[result.summary["group_by"] == "all"][cols]
    print(overall.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from ..run.sweep_runner import run_sweep

    with executor_from_args(args) as executor:
        result = run_sweep(args.sweep, args.out, executor=executor)
    cells = len(result.manifest["cells"])
    print(f"wrote {Path(result.out_dir) / 'summary.csv'} ({cells} cells)")
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
    add_executor_arguments(p)
    p.set_defaults(handler=_run)

    p = subparsers.add_parser("sweep", help="run every cell of a parameter sweep")
    p.add_argument("sweep", metavar="SWEEP")
    p.add_argument("--out", required=True, metavar="DIR", help="sweep directory (resumable)")
    add_executor_arguments(p)
    p.set_defaults(handler=_sweep)
