"""The results layout: atomic writes, the run manifest, and package versions.

A run directory holds ``manifest.json`` (everything the run used), ``recourse.parquet`` and
``summary.csv``, and ``parts/`` with one parquet file per finished unit of work. Every file is
written to a temporary name and renamed into place, so an interrupted run never leaves a
half-written file and a rerun resumes from the finished parts.

Safety of resumption: one process at a time writes a run directory (:class:`RunLock`); each
part has a ``.check`` file beside it holding its sha256 and the key of everything it depends on
(:func:`write_checked`); a part whose bytes or key do not match is moved to ``set-aside/`` and
computed again (:func:`checked`), never mixed into the results.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .documents import UsageError

if TYPE_CHECKING:  # pandas is imported by the callers that write tables; --help stays fast
    import pandas as pd

__all__ = ["check_output_dir", "check_output_file", "atomic_write", "atomic_write_text",
           "write_parquet", "write_csv", "csv_text", "neutralize_formulas", "FORMULA_STARTS",
           "package_versions", "write_manifest", "read_manifest",
           "RunLock", "code_version", "file_sha256", "write_checked", "checked",
           "set_aside"]

_PACKAGES = ("simstudy", "numpy", "scipy", "torch", "zuko", "simpy", "pandas", "pyarrow",
             "pydantic", "statsmodels", "pygam", "matplotlib")


def _probe(folder: Path, what: str) -> None:
    # os.access says yes to root on a read-only mount: try to write instead
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{what}: cannot write there ({exc.strerror or exc})") from None


def check_output_dir(path: str | Path, flag: str = "--out") -> Path:
    """Creates the output folder ``path`` or refuses it, before any work is done."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path}: exists and is not a directory")
    _probe(path, f"{flag} {path}")
    return path


def check_output_file(path: str | Path, flag: str = "--out") -> Path:
    """Refuses an output file that could not be written, before any work is done."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name")
    if path.parent.exists() and not path.parent.is_dir():
        raise UsageError(f"{flag} {path}: {path.parent} is not a directory")
    _probe(path.parent, f"{flag} {path}")
    return path


#: Name of a temporary file :func:`atomic_write` renames into place (see :func:`_tmp`).
_TMP_NAME = re.compile(r"^\..+\.tmp\d+(\.[A-Za-z0-9]+)?$")


def _remove_stale_temporaries(folder: Path) -> None:
    # Writers hold the run's lock, so once it is ours every temporary file beside the results
    # is the unfinished write of a process that was stopped (Ctrl-C, a kill): remove it.
    for path in folder.rglob(".*.tmp*"):
        if path.is_file() and _TMP_NAME.match(path.name):
            path.unlink(missing_ok=True)


def _tmp(path: Path) -> Path:
    # keep the suffix: writers such as matplotlib choose the format from it
    return path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> None:
    """Calls ``write(tmp)`` on a temporary path beside ``path``, then renames it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    write(tmp)
    os.replace(tmp, path)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralize_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell that starts like a formula (:data:`FORMULA_STARTS`)
    prefixed with ``'``, so that a spreadsheet shows it as text (OWASP's rule for CSV
    injection); numeric columns are left as they are (a negative number stays a number).

    References:
        OWASP, "CSV Injection", https://owasp.org/www-community/attacks/CSV_Injection

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"why": ["=1+1", "fine"], "v": [-1, 2]})
        >>> neutralize_formulas(df).to_dict("list")
        {'why': ["'=1+1", 'fine'], 'v': [-1, 2]}
    """
    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind == "O":  # object, str and string columns (text cells)
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str)
                                    and v.startswith(FORMULA_STARTS) else v)
    return out


def write_csv(df: pd.DataFrame, path: str | Path, digits: int | None = None,
              neutralize: bool = False) -> None:
    """Writes a CSV atomically; floats with ``digits`` significant digits (default: repr
    precision, so reruns compare byte for byte either way); with ``neutralize``, text cells
    that start like a formula are written as text (:func:`neutralize_formulas`)."""
    atomic_write(path, lambda tmp: csv_text(df, digits, neutralize, tmp))


def csv_text(df: pd.DataFrame, digits: int | None = None, neutralize: bool = False,
             path: Any = None) -> str | None:
    """The CSV of ``df`` as :func:`write_csv` writes it (to ``path``, else returned)."""
    fmt = f"%.{digits}g" if digits else "%.17g"
    if neutralize:
        df = neutralize_formulas(df)
    return df.to_csv(path, index=False, float_format=fmt)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def write_manifest(run_dir: str | Path, manifest: dict[str, Any]) -> None:
    atomic_write_text(Path(run_dir) / "manifest.json",
                      json.dumps(manifest, indent=2, sort_keys=False, default=str))


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "manifest.json").read_text())


class RunLock:
    """An exclusive lock on a run directory, held while a command writes there.

    An advisory ``flock`` on ``DIR/.lock`` (the standard library's, released by the operating
    system when the process ends, even when killed). A second writer is refused with a
    :class:`UsageError` naming the holder's process id.
    """

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / ".lock"
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise UsageError(f"{self.path.parent} is being written by another simstudy process "
                             f"(pid {holder}); wait for it to finish or choose another "
                             "--out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        _remove_stale_temporaries(self.path.parent)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@cache
def code_version() -> str:
    """The package version and a sha256 of every source file of the package (not only this
    subpackage's): results made by other code are not resumed."""
    root = Path(__file__).parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:16]}"


def _check_path(path: Path) -> Path:
    return path.with_name(path.name + ".check")


def write_checked(path: str | Path, write: Callable[[Path], Any], key: str) -> None:
    """Writes ``path`` atomically, then its ``.check`` file (sha256 of the bytes and ``key``).

    A crash between the two leaves a part without a check file, which :func:`checked` treats
    as damaged.
    """
    path = Path(path)
    atomic_write(path, write)
    atomic_write_text(_check_path(path), json.dumps({"sha256": file_sha256(path), "key": key}))


def set_aside(path: str | Path, reason: str) -> Path:
    """Moves ``path`` (and its check file) to ``set-aside/`` beside it, with a note on stderr."""
    path = Path(path)
    aside = path.parent / "set-aside"
    aside.mkdir(parents=True, exist_ok=True)
    for p in (path, _check_path(path)):
        if p.exists():
            os.replace(p, aside / p.name)
    print(f"{path.name}: {reason}; set aside in {aside} and computed again", file=sys.stderr)
    return aside / path.name


def checked(path: str | Path, key: str) -> bool:
    """True when ``path`` exists with a check file matching its bytes and ``key``.

    A part that exists but fails (no check file, other bytes, another key) is set aside.
    """
    path = Path(path)
    if not path.exists():
        return False
    try:
        record = json.loads(_check_path(path).read_text())
    except (OSError, ValueError):
        set_aside(path, "no valid check file")
        return False
    if record.get("key") != key:
        set_aside(path, "computed for other inputs")
        return False
    if record.get("sha256") != file_sha256(path):
        set_aside(path, "checksum mismatch")
        return False
    return True
