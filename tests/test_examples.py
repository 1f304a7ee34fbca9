"""Every ``Example:`` in a docstring under simstudy/ runs and shows what it says."""

from __future__ import annotations

import doctest
import importlib
import inspect
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for path in (ROOT / "simstudy").rglob("*.py")
    if "Example:" in path.read_text(encoding="utf-8"))


def test_the_examples_are_found():
    assert "simstudy.run.runner" in MODULES and "simstudy.analysis.audit" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes, writes here
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name}: an 'Example:' without a doctest"
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed"


#: Packages whose ``__all__`` names the public entry points.
PUBLIC_PACKAGES = ("simstudy", "simstudy.world", "simstudy.policies", "simstudy.people",
                   "simstudy.sim", "simstudy.analysis", "simstudy.primitives",
                   "simstudy.policies.icarma")

#: Entry points that implement or follow a published method, so cite it.
PUBLISHED_METHODS = ("simstudy.world:LoanSCM", "simstudy.world:CausalFlow",
                     "simstudy.policies:Wachter", "simstudy.policies:GrowingSpheres",
                     "simstudy.policies:HARE", "simstudy.policies:CausalOracle",
                     "simstudy.policies:ICARMA", "simstudy.people:RatingResponse")


def _public_entry_points() -> dict[str, object]:
    found = {}
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found[f"{package}:{name}"] = obj
    return found


def test_every_public_entry_point_has_a_runnable_example():
    entries = _public_entry_points()
    assert len(entries) >= 80 and "simstudy.sim:simulate" in entries
    lacking, unrun = [], []
    for key, obj in entries.items():
        if "Example:" not in (inspect.getdoc(obj) or ""):
            lacking.append(key)
            continue
        home = sys.modules[obj.__module__]
        tests = doctest.DocTestFinder(recurse=False).find(obj, module=home)
        if home.__name__ not in MODULES or not any(t.examples for t in tests):
            unrun.append(key)  # the module run above would not execute this example
    assert not lacking, f"public entry points without an 'Example:': {lacking}"
    assert not unrun, f"'Example:' without doctest lines the module run executes: {unrun}"


@pytest.mark.parametrize("key", PUBLISHED_METHODS)
def test_published_methods_cite_their_source(key):
    package, name = key.split(":")
    doc = inspect.getdoc(getattr(importlib.import_module(package), name)) or ""
    assert "References:" in doc, f"{key}: no 'References:' block"
