"""Every ``Example:`` in a docstring under simstudy/ runs and shows what it says."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for path in (ROOT / "simstudy").rglob("*.py")
    if "Example:" in path.read_text(encoding="utf-8"))


def test_the_examples_are_found():
    assert "simstudy.runner" in MODULES and "simstudy.analysis.audit" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes, writes here
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name}: an 'Example:' without a doctest"
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed"
