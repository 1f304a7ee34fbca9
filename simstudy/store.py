"""The results layout: atomic writes, the run manifest, and package versions.

A run directory holds ``manifest.json`` (everything the run used), ``recourse.parquet`` and
``summary.csv``, and ``parts/`` with one parquet file per finished unit of work. Every file is
written to a temporary name and renamed into place, so an interrupted run never leaves a
half-written file and a rerun resumes from the finished parts.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .documents import UsageError

__all__ = ["check_output_dir", "check_output_file", "atomic_write", "atomic_write_text",
           "write_parquet", "write_csv", "package_versions",
           "write_manifest", "read_manifest"]

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


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    # repr-precision floats so reruns compare byte for byte
    atomic_write(path, lambda tmp: df.to_csv(tmp, index=False, float_format="%.17g"))


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
