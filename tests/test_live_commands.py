"""``simstudy serve`` stopped during a bot run (Ctrl-C to its process group, SIGTERM): one
line, exit 130 / 143, no traceback from the server or its compute process; served again on
the same database it resumes, and the export equals that of a run never interrupted."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _live_support import small_study_file

pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

BOTS = ["--participants", "6", "--concurrency", "1", "--seed", "0"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1",
            "SIMSTUDY_CACHE": str(tmp / "cache")}


def _serve(study: Path, db: Path, tmp: Path) -> tuple[subprocess.Popen, str]:
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "simstudy.cli", "serve", str(study), "--db",
                             str(db), "--port", str(port), "--compute-workers", "1"],
                            env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}"


def _bots(study: Path, url: str, tmp: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "simstudy.cli", "--quiet", "bots",
                             str(study), "--url", url, *BOTS], env=_env(tmp),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _completed(db: Path) -> int:
    try:
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as con:
            return con.execute("SELECT COUNT(*) FROM participants WHERE status = "
                               "'completed'").fetchone()[0]
    except sqlite3.Error:
        return 0


def _stop(proc: subprocess.Popen, sig: int) -> tuple[int, list[str]]:
    """Sends ``sig`` to the server's process group (as a terminal's Ctrl-C does)."""
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if not ln.startswith(("note:", "serving "))]
    return proc.returncode, lines


def _export(db: Path, out: Path) -> bytes:
    from simstudy.cli import main

    assert main(["export", str(db), "--out", str(out)]) == 0
    return out.read_bytes()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "killpg"), reason="sends Ctrl-C to a process group")
def test_serve_stopped_mid_run_resumes_and_exports_what_an_uninterrupted_run_does(tmp_path):
    study = small_study_file(tmp_path)
    # the run never interrupted
    server, url = _serve(study, tmp_path / "whole.sqlite", tmp_path)
    bots = _bots(study, url, tmp_path)
    out, err = bots.communicate(timeout=900)
    assert bots.returncode == 0, err
    code, lines = _stop(server, signal.SIGTERM)
    assert code == 143 and len(lines) == 1 and "stopped (SIGTERM)" in lines[0], lines
    whole = _export(tmp_path / "whole.sqlite", tmp_path / "whole" / "study.csv")

    # the same run, Ctrl-C to the server and its compute process after two participants
    db = tmp_path / "cut.sqlite"
    server, url = _serve(study, db, tmp_path)
    bots = _bots(study, url, tmp_path)
    deadline = time.time() + 900
    while _completed(db) < 2 and time.time() < deadline and bots.poll() is None:
        time.sleep(0.2)
    assert _completed(db) < 6, "the interrupt should land mid-run"
    code, lines = _stop(server, signal.SIGINT)
    bots.kill()
    bots.communicate()
    assert code == 130, lines
    assert len(lines) == 1 and lines[0].startswith("simstudy serve: stopped (SIGINT)"), lines
    assert str(db) in lines[0]
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    # served again on the same database, the same bots finish the run
    server, url = _serve(study, db, tmp_path)
    bots = _bots(study, url, tmp_path)
    out, err = bots.communicate(timeout=900)
    assert bots.returncode == 0, err
    code, lines = _stop(server, signal.SIGTERM)
    assert code == 143 and len(lines) == 1, lines
    assert _export(db, tmp_path / "cut" / "study.csv") == whole
