"""The ``simstudy`` command line.

Each subsystem contributes its subcommands through a ``register(subparsers)`` function listed in
:data:`COMMAND_MODULES`; the handler a subcommand sets with ``set_defaults(handler=...)`` receives
the parsed arguments and returns an exit code. Problems with user documents
(:class:`~simstudy.core.documents.DocumentError`) become ``FILE: field: reason`` lines and exit
code 2, never a traceback.

Command modules import their heavy dependencies (torch, pandas, the models) inside the
handlers, so ``--help`` and ``validate`` start quickly. ``--quiet`` (before or after the command
name) silences every progress display (:mod:`simstudy.core.progress`).

Wherever a command reads a document, ``example:NAME`` names a shipped one
(:mod:`simstudy.resources`): ``simstudy run example:quickstart --out runs/quickstart``.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

from ..core import __version__
from ..core.documents import DocumentError, FieldProblem, Notice, UsageError
from ..core.file_kinds import FileKindError
from ..core.progress import set_quiet
from ..resources import UnknownExample, example_path, is_example
from . import live_commands, planning_commands, project_commands, run_commands, study_commands
from .exits import INTERRUPTED, TERMINATED, Terminated, exit_code

__all__ = ["main", "build_parser", "COMMAND_MODULES", "UsageError", "DOCUMENT_ARGUMENTS",
           "INTERRUPTED", "TERMINATED", "Terminated", "exit_code"]

COMMAND_MODULES = [run_commands, study_commands, live_commands, planning_commands,
                   project_commands]

#: the arguments that name documents to read, where ``example:NAME`` stands for a shipped one
DOCUMENT_ARGUMENTS = ("files", "scenario", "sweep", "study", "spec", "plan", "target")


def _shipped_documents(args: argparse.Namespace) -> None:
    # ``example:NAME`` -> the shipped document's path (UnknownExample when none or several)
    for dest in DOCUMENT_ARGUMENTS:
        value = getattr(args, dest, None)
        if isinstance(value, list):
            setattr(args, dest, [str(example_path(v)) if is_example(v) else v for v in value])
        elif is_example(value):
            setattr(args, dest, str(example_path(value)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simstudy",
        description="Simulation and user studies of personalized algorithmic recourse.")
    quiet_help = "no progress display"
    parser.add_argument("--quiet", action="store_true", help=quiet_help)
    parser.add_argument("--version", action="version", version=f"simstudy {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    for sub in subparsers.choices.values():
        # the same flag after the command name; SUPPRESS keeps a leading --quiet
        sub.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                         help=quiet_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command modules load
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    set_quiet(args.quiet)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    if threading.current_thread() is not threading.main_thread():
        return _handle(args)
    # SIGTERM (kill, a batch queue's time limit) unwinds like Ctrl-C: worker pools are stopped
    # and finished results kept.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = _handle(args)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code in (INTERRUPTED, TERMINATED) and argv is None:
        _leave_computing_threads(code)
    return code


def _leave_computing_threads(code: int) -> None:
    """Ends an interrupted command-line process at once when a thread is still computing.

    A unit this process computes in a thread (see
    :class:`~simstudy.core.executors.ProcessExecutor`) cannot be stopped mid-way; finalizing the
    interpreter around it makes the thread unwind through torch's C++ frames and abort
    (SIGABRT, exit 134). Finished results are already on disk (written atomically), so the
    process flushes its output and exits with ``code``. Only for the program's own command
    line (``argv`` not given): a caller of :func:`main` keeps its process.
    """
    busy = [t for t in threading.enumerate()
            if t is not threading.main_thread() and t.daemon and t.is_alive()]
    if busy:
        # the stopped worker pools' semaphores are released when collected; left registered,
        # multiprocessing's resource tracker would report them as leaked
        gc.collect()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _interrupt(signum: int, frame: object) -> None:
    raise Terminated


def _notices_as_lines(command: str) -> None:
    # a Notice warning prints as ``simstudy COMMAND: message``, once per message; other
    # warnings as Python shows them
    shown = warnings.showwarning
    printed: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, Notice):
            return shown(message, category, filename, lineno, file, line)
        if str(message) not in printed:
            printed.add(str(message))
            print(f"simstudy {command}: {message}", file=sys.stderr)

    warnings.showwarning = show


def _handle(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        _notices_as_lines(args.command)
        return _handle_command(args)


#: the arguments that name files a command reads, besides :data:`DOCUMENT_ARGUMENTS`
_INPUT_ARGUMENTS = ("data", "db", "response", "prereg", "power")


def _output_over_input(args: argparse.Namespace) -> str | None:
    """The reason to refuse an ``--out`` that names a file the command reads (writing there
    would replace the pilot, the study file or the database), else ``None``."""
    out = getattr(args, "out", None)
    if not isinstance(out, str) or not Path(out).is_file():
        return None
    for dest in (*DOCUMENT_ARGUMENTS, *_INPUT_ARGUMENTS):
        values = getattr(args, dest, None)
        for value in values if isinstance(values, list) else [values]:
            if (isinstance(value, str) and dest != "out" and Path(value).is_file()
                    and Path(value).resolve() == Path(out).resolve()):
                return (f"--out {out}: is the file the command reads ({value}); writing there "
                        "would replace it; give another file name")
    return None


def _handle_command(args: argparse.Namespace) -> int:
    out = getattr(args, "out", None)
    if isinstance(out, str) and not out.strip():
        # an empty path would write into the working directory
        print(f"simstudy {args.command}: --out: empty; give a path", file=sys.stderr)
        return 2
    try:
        _shipped_documents(args)
        clash = _output_over_input(args)
        if clash is not None:
            print(f"simstudy {args.command}: {clash}", file=sys.stderr)
            return 2
        return int(args.handler(args) or 0)
    except UnknownExample as exc:
        print(f"simstudy {args.command}: {exc}", file=sys.stderr)
        return 2
    except DocumentError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except (UsageError, FieldProblem, FileKindError) as exc:
        print(f"simstudy {args.command}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # a disk that fills or a folder removed mid-run: finished parts are kept
        where = f": {exc.filename}" if exc.filename else ""
        print(f"simstudy {args.command}{where}: {exc.strerror or exc}; finished results are "
              "kept", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("interrupted; finished results are kept", file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
