"""The command line's quick paths: ``--help`` and ``validate`` import none of the heavy
libraries (torch alone takes seconds to import), so they answer at once.

Timings are measured by ``benchmarks/cli_speed.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "simstudy" / "resources"
#: libraries that must not be imported on the quick paths
HEAVY = ("torch", "pandas", "scipy", "statsmodels", "matplotlib", "zuko", "simpy")


def _imported_heavy(*argv: str) -> tuple[int, list[str]]:
    """Runs ``simstudy ARGV`` in a fresh interpreter; its exit code and the heavy libraries it
    imported."""
    code = (
        "import json, sys\n"
        "from simstudy.cli import main\n"
        "try:\n"
        f"    rc = main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        "    rc = exc.code\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print(json.dumps({'rc': rc, 'heavy': heavy}), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    last = json.loads(done.stderr.strip().splitlines()[-1])
    return last["rc"], last["heavy"]


def _shipped_documents() -> list[str]:
    """Every shipped document (iCARMA's included: its entry is torch-free too)."""
    paths = sorted(p for folder in ("scenarios", "populations", "analysis", "sweeps")
                   for p in (RESOURCES / folder).glob("*.yaml"))
    return [str(p.relative_to(REPO)) for p in paths]


def test_help_imports_no_heavy_library():
    assert _imported_heavy("--help") == (0, [])
    assert _imported_heavy("run", "--help") == (0, [])


def test_validating_the_shipped_documents_imports_no_heavy_library(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"name: seeds\nscenario: {RESOURCES / 'scenarios' / 'quickstart.yaml'}\n"
                     "grid: {seed: [0, 1]}\n")
    documents = _shipped_documents()
    assert len(documents) >= 35
    assert any("icarma" in d for d in documents)
    assert _imported_heavy("validate", *documents, str(sweep)) == (0, [])


def test_the_check_sees_a_heavy_import(tmp_path):
    # ``run`` loads the runner (torch) before it reads the scenario
    rc, heavy = _imported_heavy("run", str(tmp_path / "missing.yaml"), "--out",
                                str(tmp_path / "out"))
    assert rc == 2 and "torch" in heavy
