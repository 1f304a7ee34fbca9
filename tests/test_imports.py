"""The package's structure: every subpackage imports on its own in a fresh interpreter (no
import cycles). That no import hides inside a function (outside the command line and the
optional extras) is checked with the import graph in ``tests/test_layers.py``.
"""

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import simstudy

ROOT = Path(simstudy.__file__).parent
SUBPACKAGES = sorted(f"simstudy.{m.name}" for m in pkgutil.iter_modules([str(ROOT)])
                     if m.ispkg)


def test_every_subpackage_is_listed():
    assert {"simstudy.people", "simstudy.primitives", "simstudy.policies",
            "simstudy.sim"} <= set(SUBPACKAGES)


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_imports_first(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _imported_subpackages(package: str) -> set[str]:
    out = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 2:
                out.add(node.module.split(".")[0])
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[0] == "simstudy" and len(parts) > 1:
                    out.add(parts[1])
    return out


def test_people_and_policies_meet_only_in_the_primitives_below_them():
    assert "people" not in _imported_subpackages("policies")
    assert "policies" not in _imported_subpackages("people")
    assert not {"people", "policies"} & _imported_subpackages("primitives")
