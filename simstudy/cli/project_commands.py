"""Subcommands ``examples`` and ``init``: what ships with the package, and a project from it.

* ``simstudy examples [--kind KIND]``: every shipped document, one line each: how a command
  names it (``example:NAME``), its kind of document and a one-line description; then the data
  files.
* ``simstudy init DIR [--template NAME]``: a starter project (a scenario, a live study, an
  analysis document, the populations and a README of the commands), refused unless ``DIR`` is
  new or empty (:mod:`simstudy.resources.project`).
"""

from __future__ import annotations

import argparse

from ..core.documents import UsageError
from ..resources import EXAMPLE_PREFIX, FOLDERS, examples, resource_path
from ..resources.project import TemplateError, init_project

__all__ = ["register", "example_lines"]


def example_lines(kind: str | None = None) -> list[str]:
    """The lines ``simstudy examples`` prints: address, kind and description per document.

    The address is the shortest that names one document (``example:FOLDER/NAME`` where a name
    is in two folders).

    Example:
        >>> from simstudy.cli.project_commands import example_lines
        >>> [line.split()[:2] for line in example_lines("study")][-1]
        ['example:personalization', 'study']
    """
    shipped = examples()
    count: dict[str, int] = {}
    for e in shipped:
        count[e.name] = count.get(e.name, 0) + 1
    rows = [(EXAMPLE_PREFIX + (e.name if count[e.name] == 1 else f"{e.folder}/{e.name}"),
             e.kind, e.description) for e in shipped if kind in (None, e.kind)]
    width = max((len(r[0]) for r in rows), default=0)
    return [f"{address:<{width}}  {k:<10}  {text}" for address, k, text in rows]


def _examples_cmd(args) -> int:
    for line in example_lines(args.kind):
        print(line)
    if args.kind in (None, "data"):
        data = resource_path("data")
        files = ", ".join(sorted(p.name for p in data.iterdir() if p.suffix != ".md"))
        print(f"data files ({data}, described in its README.md): {files}")
    return 0


def _init_cmd(args) -> int:
    try:
        written = init_project(args.folder, args.template)
    except TemplateError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {len(written)} files into {args.folder}; next: cd {args.folder} and follow "
          "README.md")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``examples`` and ``init``."""
    p = subparsers.add_parser("examples", help="list the documents that ship with simstudy")
    p.add_argument("--kind", default=None, choices=[*FOLDERS.values(), "data"],
                   help="only documents of this kind")
    p.set_defaults(handler=_examples_cmd)

    p = subparsers.add_parser("init", help="write a starter project into a new folder")
    p.add_argument("folder", metavar="DIR", help="the project folder (new, or empty)")
    p.add_argument("--template", default=None, metavar="NAME",
                   help="the shipped scenario or study to start from (simstudy examples; "
                        "default: quickstart and personalization)")
    p.set_defaults(handler=_init_cmd)
