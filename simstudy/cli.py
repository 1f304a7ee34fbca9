"""The ``simstudy`` command line.

Each subsystem contributes its subcommands through a ``register(subparsers)`` function listed in
:data:`COMMAND_MODULES`; the handler a subcommand sets with ``set_defaults(handler=...)`` receives
the parsed arguments and returns an exit code. Problems with user documents
(:class:`~simstudy.documents.DocumentError`) become ``FILE: field: reason`` lines and exit
code 2, never a traceback.

Command modules import their heavy dependencies (torch, pandas, the models) inside the
handlers, so ``--help`` and ``validate`` start quickly. ``--quiet`` (before or after the command
name) silences every progress display (:mod:`simstudy.progress`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .documents import DocumentError, UsageError
from .progress import set_quiet

__all__ = ["main", "build_parser", "COMMAND_MODULES", "UsageError"]

COMMAND_MODULES = [
    "simstudy.commands",
    "simstudy.analysis.commands",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simstudy",
        description="Simulation and user studies of personalized algorithmic recourse.")
    quiet_help = "no progress display"
    parser.add_argument("--quiet", action="store_true", help=quiet_help)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    for sub in subparsers.choices.values():
        # the same flag after the command name; SUPPRESS keeps a leading --quiet
        sub.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                         help=quiet_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    set_quiet(args.quiet)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except DocumentError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"simstudy {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished results are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
