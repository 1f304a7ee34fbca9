"""The live study's database under faults (corrupted, truncated, read-only, full, deleted while
serving) and study versions: one line and exit 2, or ``/healthz`` 503, and nothing confirmed
that is not stored."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import warnings
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from _live_support import prepared_engine, small_study_file  # noqa: E402

from simstudy.cli import main  # noqa: E402
from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.database import Store, StoreError  # noqa: E402
from simstudy.live.export import live_tables  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _filled(path: Path) -> Path:
    """A study database of many pages, every write in the main file."""
    store = Store(path)
    with store.write() as db:
        db.execute("INSERT INTO participants (uid, idx, status, entered_at, updated_at) "
                   "VALUES ('u', 0, 'entered', 0, 0)")
        for i in range(400):
            db.execute("INSERT INTO answers VALUES ('u', ?, ?, 0)", (f"p{i}", "x" * 200))
    store.read("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _serve_refused(capsys, study: Path, db: Path, *extra: str) -> str:
    capsys.readouterr()
    code = main(["serve", str(study), "--db", str(db), "--port", str(_port()), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    err = [e for e in err if not e.startswith("note:")]
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_corrupted_and_truncated_databases_are_refused_in_one_line(tmp_path, capsys):
    study = small_study_file(tmp_path)
    bad = _filled(tmp_path / "corrupt.sqlite")
    data = bytearray(bad.read_bytes())
    data[4096 * 3:4096 * 3 + 512] = os.urandom(512)  # a page of the answers overwritten
    bad.write_bytes(bytes(data))
    assert str(bad) in _serve_refused(capsys, study, bad)
    short = _filled(tmp_path / "short.sqlite")
    with open(short, "r+b") as f:
        f.truncate(short.stat().st_size // 2)
    assert str(short) in _serve_refused(capsys, study, short)
    with pytest.raises(StoreError):
        Store(short).check()


def _mounted(folder: Path, size: str) -> bool:
    """A small filesystem at ``folder`` (administrator rights only)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_read_only_database_is_refused_in_one_line(tmp_path, capsys):
    study = small_study_file(tmp_path)
    folder, view = tmp_path / "rw", tmp_path / "ro"
    folder.mkdir()
    view.mkdir()
    if _mounted(folder, "4m"):
        # as root every file is writable: the database is seen through a read-only mount
        try:
            _filled(folder / "s.sqlite")
            for args in (["--bind", str(folder), str(view)],
                         ["-o", "remount,ro,bind", str(view)]):
                assert subprocess.run(["mount", *args]).returncode == 0
            line = _serve_refused(capsys, study, view / "s.sqlite")
        finally:
            for m in (view, folder):
                subprocess.run(["umount", "-l", str(m)], capture_output=True)
    elif hasattr(os, "geteuid") and os.geteuid() != 0:
        db = _filled(folder / "s.sqlite")
        os.chmod(db, 0o444)
        os.chmod(folder, 0o555)
        try:
            line = _serve_refused(capsys, study, db)
        finally:
            os.chmod(folder, 0o755)
    else:
        pytest.skip("no way to make a read-only file here")
    assert "s.sqlite" in line and "readonly" in line.replace("-", "").replace(" ", "")


def test_a_full_disk_is_refused_in_one_line(tmp_path, capsys):
    study = small_study_file(tmp_path)
    mount = tmp_path / "tiny"
    mount.mkdir()
    if not _mounted(mount, "256k"):
        pytest.skip("mounting a small filesystem needs administrator rights")
    try:
        db = mount / "s.sqlite"
        Store(db)
        try:  # the rest of the disk filled
            with open(mount / "filler", "wb") as f:
                for _ in range(1024):
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        assert "full" in _serve_refused(capsys, study, db)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _flow(tmp_path, **store):
    return StudyFlow(prepared_engine(), Store(tmp_path / "s.sqlite", **store), b"test-key")


def _enter(client, pid):
    r = client.post("/", params={"PROLIFIC_PID": pid}, data={"page": "start"},
                    follow_redirects=False)
    return r


def test_a_full_database_while_serving_answers_503_and_stores_nothing_unsaid(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow, entry_limit="none"), raise_server_exceptions=False)
    u = _enter(client, "PID-1").headers["location"]
    pages = flow.store.read("PRAGMA page_count")[0][0]
    # the database may not grow any more (SQLite's max_page_count: a full disk in small)
    full = Store(tmp_path / "s.sqlite", max_pages=pages + 4)
    flow.store = full
    flow.store.study_version(flow.study_sha256, flow.live.consent)
    with full.write() as db:
        db.execute("CREATE TABLE filler (x BLOB)")
    try:  # every page it may have filled
        with full.write() as db:
            for _ in range(1000):
                db.execute("INSERT INTO filler VALUES (?)", (os.urandom(512),))
    except sqlite3.OperationalError as exc:
        assert "full" in str(exc)
    h = client.get("/healthz")
    assert h.status_code == 503 and h.json()["status"] == "store"
    # answers and entries go on until one does not fit: each confirmed one is stored, the
    # first that is not stored is answered 503
    outcomes = []
    r = client.post(u, data={"page": "consent", "consent": "yes"}, follow_redirects=False)
    outcomes.append((r.status_code, "consent" in full.answers(u[3:])))
    for n in range(200):
        r = _enter(client, f"PID-{n + 2}")
        outcomes.append((r.status_code, full.find(f"PID-{n + 2}", b"test-key") is not None))
        if r.status_code == 503:
            break
    assert all(stored == (code == 303) for code, stored in outcomes), outcomes
    assert outcomes[-1] == (503, False) and "not saved" in r.text


def test_a_database_deleted_while_serving_answers_503(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow), raise_server_exceptions=False)
    u = _enter(client, "PID-1").headers["location"]
    assert client.get("/healthz").status_code == 200
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp_path / 's.sqlite'}{suffix}").unlink(missing_ok=True)
    h = client.get("/healthz")
    assert h.status_code == 503 and "removed" in h.json()["reason"]
    r = client.post(u, data={"page": "consent", "consent": "yes"}, follow_redirects=False)
    assert r.status_code == 503  # not confirmed: it would have gone to a deleted file
    assert _enter(client, "PID-2").status_code == 503


def test_serving_another_study_file_needs_a_new_version(tmp_path, capsys):
    study = small_study_file(tmp_path)
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    assert client.get("/healthz").json()["study_version"] == 1
    client.post(_enter(client, "PID-1").headers["location"],
                data={"page": "consent", "consent": "no"})
    v = flow.store.versions()
    assert len(v) == 1 and v[0]["sha256"] == flow.study_sha256
    assert v[0]["consent"] == flow.live.consent
    changed = tmp_path / "changed" / "study.yaml"
    changed.parent.mkdir()
    changed.write_text(study.read_text().replace("target_per_condition: 2",
                                                 "target_per_condition: 3") + "\n# v2\n")
    line = _serve_refused(capsys, changed, tmp_path / "s.sqlite")
    assert "another study file" in line and "--new-version" in line
    # with --new-version: the next version, carried by every participant entering from now on
    store = Store(tmp_path / "s.sqlite")
    from simstudy.core.store import file_sha256

    assert store.study_version(file_sha256(changed), "new consent", new_version=True) == 2
    assert store.study_version(file_sha256(changed), "new consent") == 2
    assert store.enter("PID-2", None, None, b"test-key")["study_version"] == 2
    assert store.participant(store.find("PID-1", b"test-key")["uid"])["study_version"] == 1
    with pytest.raises(StoreError, match="another study file"):
        Store(tmp_path / "s.sqlite").study_version(flow.study_sha256, "x")
    assert "study_version" in live_tables(store)[0].columns
