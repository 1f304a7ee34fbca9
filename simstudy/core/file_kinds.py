"""What a file given on the command line is, told by its content, and the command that reads it.

A newcomer passes the CSV where the database belongs, the Excel workbook where a CSV belongs,
the rating table where the study document belongs. Each command reads its files as one kind;
given another it would fail deep inside a reader (``sqlite3.DatabaseError``, "expected a
mapping", "no rating column"). :func:`file_kind` names the kind from the file's first bytes
(magic numbers; for text, the shape of its first lines); :func:`kind_problem` and
:func:`expect_kind` refuse a file of the wrong kind in one line that names the file, what it
is and what to do with it. Document readers use it too (:func:`~simstudy.core.documents.load_yaml`).

Kinds: ``folder``, ``missing``, ``empty``, ``sqlite``, ``excel`` (.xlsx or .xls), ``zip``,
``parquet``, ``binary``, ``csv`` (delimited text), ``yaml`` (a mapping document), ``text``.

References:
    SQLite database file format, section 1.3 "The database header":
    https://www.sqlite.org/fileformat.html. ECMA-376 (Office Open XML) part 2: the package is
    a ZIP archive. Apache Parquet file format: files begin with ``PAR1``.

Example:
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "ratings.csv")
    >>> _ = open(path, "w").write("uid,sparsity,act\\n1,2,5\\n")
    >>> file_kind(path)
    'csv'
    >>> try:
    ...     expect_kind(path, "sqlite", "export")
    ... except FileKindError as exc:
    ...     print(str(exc).split(";")[0].split(": ", 1)[1])
    is a CSV table, not a study database
"""

from __future__ import annotations

import zipfile
from pathlib import Path

__all__ = ["KIND_WORDS", "file_kind", "kind_problem", "expect_kind", "FileKindError"]

#: How each kind is named in a message.
KIND_WORDS = {
    "folder": "a folder", "missing": "no such file", "empty": "an empty file",
    "sqlite": "a SQLite database", "excel": "an Excel workbook", "zip": "a ZIP archive",
    "parquet": "a Parquet table", "binary": "a binary file", "csv": "a CSV table",
    "yaml": "a YAML document", "text": "a text file",
}

#: What each command expects, in words, and what each other kind is for.
_EXPECTED = {"sqlite": "a study database", "csv": "a rating table (CSV)",
             "yaml": "a YAML document"}
_USE = {
    "sqlite": "a live study's database is exported first: simstudy export DB --out study.csv",
    "excel": "save the sheet as CSV (UTF-8) and give that file",
    "csv": "a rating table is read by simstudy analyze DATA.csv SPEC.yaml or simstudy "
           "calibrate DATA.csv",
    "yaml": "a YAML document is the SPEC (or STUDY) argument, not the data",
    "parquet": "a run's tables are audited through their run folder: simstudy audit RUN_DIR",
    "folder": "give a file inside it",
}

_SQLITE = b"SQLite format 3\x00"
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the legacy .xls container
_SEPARATORS = (",", ";", "\t")


def _text_kind(head: bytes) -> str:
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a multi-byte character cut at the end
            return "binary"
        text = head[:exc.start].decode("utf-8-sig")
    if "\x00" in text:
        return "binary"
    lines = [ln for ln in text.splitlines()[:5] if ln.strip() and not ln.lstrip()
             .startswith("#")]
    if not lines:
        return "text"
    first = lines[0]
    if (first.rstrip().endswith(":") or ": " in first or first.startswith(("---", "- "))) \
            and not any(first.count(sep) >= 2 for sep in _SEPARATORS):
        return "yaml"
    for sep in _SEPARATORS:
        n = first.count(sep)
        if n >= 1 and (len(lines) == 1 or lines[1].count(sep) >= 1):
            return "csv"
    return "text"


def file_kind(path: str | Path) -> str:
    """The kind of the file at ``path`` (see the module docstring), from its content."""
    path = Path(path)
    if path.is_dir():
        return "folder"
    if not path.exists():
        return "missing"
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return "missing"
    if not head:
        return "empty"
    if head.startswith(_SQLITE):
        return "sqlite"
    if head.startswith(_OLE):
        return "excel"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as z:
                if any(n.startswith("xl/") for n in z.namelist()):
                    return "excel"
        except (OSError, zipfile.BadZipFile):
            pass
        return "zip"
    return _text_kind(head)


def kind_problem(path: str | Path, expected: str, command: str | None = None,
                 argument: str = "", fix_given: str | None = None) -> str | None:
    """``None`` when ``path`` is of kind ``expected`` (``sqlite``, ``csv`` or ``yaml``), else
    the one line ``ARGUMENT PATH: is KIND, not EXPECTED; FIX``.

    A text file that is neither recognisably a CSV nor a YAML document passes as either (the
    reader then names the problem). ``command`` names the command reading the file (``None``:
    any); ``fix_given`` replaces the advice given for a wrong kind.
    """
    kind = file_kind(path)
    where = f"{argument} {path}" if argument else str(path)
    reads = f"simstudy {command} reads" if command else "this reads"
    if kind == "missing":
        return f"{where}: no such file"
    if kind == expected or (kind == "text" and expected in ("csv", "yaml")):
        return None
    if kind == "empty" and expected != "sqlite":
        return f"{where}: the file is empty; give {_EXPECTED[expected]}"
    if kind == "empty":
        return (f"{where}: the file is empty, not a study database (the file simstudy serve "
                "--db writes)")
    fix = _USE.get(kind, f"{reads} {_EXPECTED[expected]}")
    if expected == "sqlite":
        fix = f"{reads} the database simstudy serve --db wrote" + (
            f"; {_USE[kind]}" if kind in ("csv", "folder") else "")
    elif expected == "yaml" and kind in ("csv", "excel"):
        table = ("the table is the DATA argument: simstudy analyze DATA.csv SPEC.yaml"
                 if command == "analyze" else _USE["csv"])
        fix = (f"{reads} a YAML document here; " if command else "") + table
    return f"{where}: is {KIND_WORDS[kind]}, not {_EXPECTED[expected]}; {fix_given or fix}"


class FileKindError(Exception):
    """A file of another kind than the command reads (the message is one line)."""


def expect_kind(path: str | Path, expected: str, command: str, argument: str = "",
                fix_given: str | None = None) -> None:
    """Refuses ``path`` unless it is of kind ``expected`` (see :func:`kind_problem`).

    Raises:
        FileKindError: one line ``ARGUMENT PATH: is KIND, not EXPECTED; FIX``.
    """
    problem = kind_problem(path, expected, command, argument, fix_given)
    if problem is not None:
        raise FileKindError(problem)
