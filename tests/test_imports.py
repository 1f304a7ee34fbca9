"""The package's structure: every subpackage imports on its own in a fresh interpreter (no
import cycles), and no module hides a cycle with an import inside a function.

Only three kinds of import sit inside functions, so that ``--help`` and ``validate`` stay fast:
the command-line handlers; the heavy libraries (torch, pandas, scipy, ...), imported where work
starts; and the few modules listed with their reason that import one of the package's heavy
modules where it is needed (document modules validate without torch and import the runtime
they build only in their ``build`` methods).
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
#: command-line entry points, whose handlers import what they need when they run
LAZY_ENTRY_POINTS = {str(p.relative_to(ROOT).as_posix()) for p in (ROOT / "cli").glob("*.py")}
#: optional extras (``pip install simstudy[models]``, ``simstudy[ray]``, ``simstudy[live]``),
#: imported only when a model file, the Ray executor or the live study's server needs them
OPTIONAL_EXTRAS = {"skops", "onnxruntime", "ray", "starlette", "uvicorn", "httpx"}
#: libraries slow to import (torch alone takes seconds): imported where the work starts
HEAVY_LIBRARIES = {"torch", "pandas", "scipy", "statsmodels", "matplotlib", "pyarrow", "zuko",
                   "simpy", "pygam"}
#: modules that import one of the package's own heavy modules where it is needed, and why
DEFERRING_MODULES = {
    "world/specs.py": "document entries (torch-free) build their runtime",
    "policies/specs.py": "document entries (torch-free) build their policy",
    "run/sweep.py": "a sweep document validates without the runner",
    "sim/experiment.py": "matplotlib only where the figure is drawn",
}


def test_every_subpackage_is_listed():
    assert {"simstudy.people", "simstudy.primitives", "simstudy.policies",
            "simstudy.sim"} <= set(SUBPACKAGES)


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_imports_first(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _allowed(node, deferring: bool) -> bool:
    if isinstance(node, ast.ImportFrom) and node.level > 0:
        return deferring  # one of the package's own modules, imported where it is needed
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
        a.name for a in node.names]
    return all(n.split(".")[0] in OPTIONAL_EXTRAS | HEAVY_LIBRARIES for n in names)


def _function_imports(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text())
    deferring = path.relative_to(root).as_posix() in DEFERRING_MODULES
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{path.relative_to(root)}:{node.lineno} in {fn.name}"
                      for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))
                      and not _allowed(node, deferring)]
    return found


def test_no_import_inside_a_function_outside_the_command_line():
    offenders = [hit for path in sorted(ROOT.rglob("*.py"))
                 if path.relative_to(ROOT).as_posix() not in LAZY_ENTRY_POINTS
                 for hit in _function_imports(path)]
    assert offenders == []


def test_the_check_sees_a_function_level_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\n\ndef f():\n    import os\n    from . import x\n"
                     "    import torch\n    return os, x, torch\n")
    assert _function_imports(probe, tmp_path) == ["probe.py:4 in f", "probe.py:5 in f"]


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
