"""The documents and data that ship inside the package, read with :mod:`importlib.resources`.

The example scenarios, populations, live studies, analysis documents, sweeps and data files live
in folders of this package (``scenarios/``, ``populations/``, ``studies/``, ``analysis/``,
``sweeps/``, ``data/``), so an installed wheel carries them. Documents refer to each other by
paths relative to their own file (``population: ../populations/hard_k4.yaml``), which holds as
well inside the package as in a copy.

A shipped document is addressed on the command line as ``example:NAME`` (see
:func:`example_path`): ``NAME`` is its file name without ``.yaml`` (``example:quickstart``), or
``FOLDER/NAME`` where two folders hold the same name (``example:analysis/study_personalization``).
A prefix, not a bare name, so that a file of the same name in the working directory is never
shadowed and ``simstudy run quickstart`` does not guess. Outputs a shipped document names (an
audit's ``run`` and ``out``) are read from the working directory, never from the package.

Example:
    >>> from simstudy.resources import example_path, examples
    >>> example_path("example:quickstart").name
    'quickstart.yaml'
    >>> next(e for e in examples() if e.name == "quickstart").kind
    'scenario'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["FOLDERS", "EXAMPLE_PREFIX", "Example", "resource_root", "resource_path", "examples",
           "example_path", "is_example", "is_shipped", "UnknownExample"]

#: the folders of shipped documents and the kind of document each holds
FOLDERS: dict[str, str] = {"scenarios": "scenario", "populations": "population",
                           "studies": "study", "analysis": "analysis", "sweeps": "sweep"}
#: how a shipped document is addressed where a path is expected
EXAMPLE_PREFIX = "example:"


class UnknownExample(LookupError):
    """An ``example:NAME`` that names no shipped document, or more than one."""


@dataclass(frozen=True)
class Example:
    """One shipped document: its name, folder, kind of document, one-line description, path."""

    name: str
    folder: str
    kind: str
    description: str
    path: Path


def resource_root() -> Path:
    """The folder holding the shipped documents and data (a real directory of the install)."""
    root = resources.files(__name__)
    if not isinstance(root, Path):  # a zip import: documents read each other by path
        raise RuntimeError(f"simstudy's resources are not on the file system ({root}); "
                           "install simstudy from a wheel or a source tree")
    return root


def resource_path(*parts: str) -> Path:
    """The path of a shipped file: ``resource_path("data", "german_credit.csv")``."""
    return resource_root().joinpath(*parts)


def _description(path: Path) -> str:
    # the document's ``description:`` (first sentence), else its leading comment's first sentence
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("description:"):
            rest = line[len("description:"):].strip().strip("'\"")
            body = [rest] if rest not in (">", "|", ">-", "|-") else []
            body += [s.strip().strip("'\"") for s in lines[i + 1:] if s.startswith(" ")][:6]
            return _first_sentence(" ".join(body))
    comment = []
    for line in lines:
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("#").strip())
    return _first_sentence(" ".join(comment))


def _first_sentence(text: str, limit: int = 110) -> str:
    # up to the first full stop or question mark, cut at a word before ``limit`` characters
    text = re.sub(r"\s+", " ", text).strip()
    match = re.search(r"[.?](\s|$)", text)
    text = text[: match.start() + 1] if match else text
    if len(text) > limit:
        text = text[: text.rfind(" ", 0, limit - 3)].rstrip(" ,;:") + "..."
    return text


def examples() -> list[Example]:
    """Every shipped document, by folder then name."""
    root = resource_root()
    out = []
    for folder, kind in FOLDERS.items():
        for path in sorted((root / folder).glob("*.yaml")):
            out.append(Example(path.stem, folder, kind, _description(path), path))
    return out


def is_example(text: str | Path) -> bool:
    """Whether ``text`` addresses a shipped document (``example:NAME``)."""
    return isinstance(text, str) and text.startswith(EXAMPLE_PREFIX)


def is_shipped(path: str | Path) -> bool:
    """Whether ``path`` lies among the shipped documents (inside the installed package)."""
    return Path(path).resolve().is_relative_to(resource_root().resolve())


def example_path(text: str) -> Path:
    """The path of the shipped document ``example:NAME`` (or ``example:FOLDER/NAME``).

    Raises :class:`UnknownExample` (one line: the known names, or the candidates) when the name
    matches no document or several.
    """
    name = text[len(EXAMPLE_PREFIX):] if is_example(text) else text
    name = name.removesuffix(".yaml")
    folder, _, stem = name.rpartition("/")
    found = [e for e in examples() if e.name == stem and (not folder or e.folder == folder)]
    if len(found) == 1:
        return found[0].path
    if found:
        raise UnknownExample(f"{text}: names {len(found)} shipped documents, say which: "
                             + ", ".join(f"{EXAMPLE_PREFIX}{e.folder}/{e.name}" for e in found))
    raise UnknownExample(f"{text}: no shipped document of that name (list them with "
                         "'simstudy examples')")
