"""The run store's helpers: what a run records of the code that made it."""

import shutil
import subprocess
import sys
from pathlib import Path

import simstudy


def _version_of(copy: Path) -> str:
    out = subprocess.run([sys.executable, "-c", "from simstudy.core.store import code_version;"
                          "print(code_version())"], cwd=copy, capture_output=True, text=True,
                         env={"PYTHONPATH": str(copy)}, check=True)
    return out.stdout.strip()


def test_code_version_changes_with_any_source_file_of_the_package(tmp_path):
    source = Path(simstudy.__file__).parent
    ignore = shutil.ignore_patterns("__pycache__", "resources")
    versions = []
    for name, edit in (("a", None), ("b", None), ("c", "live/pages.py"),
                       ("d", "core/store.py")):
        shutil.copytree(source, tmp_path / name / "simstudy", ignore=ignore)
        if edit:
            path = tmp_path / name / "simstudy" / edit
            path.write_text(path.read_text() + "\n# changed\n")
        versions.append(_version_of(tmp_path / name))
    a, b, outside_core, inside_core = versions
    assert a == b and a.startswith(simstudy.__version__ + "+")
    assert outside_core != a and inside_core != a and outside_core != inside_core
