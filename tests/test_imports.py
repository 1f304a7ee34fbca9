"""Every subpackage imports on its own in a fresh interpreter (no import cycles)."""

import subprocess
import sys

import pytest

SUBPACKAGES = ["simstudy.users", "simstudy.policies", "simstudy.sim", "simstudy.analysis",
               "simstudy.world", "simstudy.cli"]


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_imports_first(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
