"""Faults a run must survive: concurrent writers, changed inputs, damaged parts and cache files,
and a killed command with worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstudy.cli import main
from simstudy.core.store import RunLock
from simstudy.world.decision import ModelCache

SCENARIO = {
    "name": "faults",
    "seed": 0,
    "replications": 2,
    "world": {"kind": "loan", "n_samples": 1200},
    "decision_model": {"epochs": 3},
    "applicants": {"max_applicants": 6},
    "policies": [{"kind": "oracle"}],
    "conditions": [{"name": "two", "population": {
        "actionability": {"kind": "ranking", "bias": "uniform", "n_actionable": 2}}}],
}


@pytest.fixture()
def scenario(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSTUDY_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


def _run(scenario: Path, out: Path, capsys) -> tuple[int, str]:
    # one worker: the units run in this process, so capsys sees what they print
    code = main(["--quiet", "run", str(scenario), "--out", str(out), "--workers", "1"])
    return code, capsys.readouterr().err


def test_a_second_writer_is_refused(scenario, tmp_path, capsys):
    out = tmp_path / "run"
    with RunLock(out):
        code, err = _run(scenario, out, capsys)
    assert code == 2 and "being written by another simstudy process" in err
    assert str(os.getpid()) in err
    assert not (out / "manifest.json").exists()
    code, err = _run(scenario, out, capsys)  # the lock is gone with its holder
    assert code == 0, err


def test_concurrent_processes_never_mix_their_results(scenario, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-m", "simstudy.cli", "--quiet", "run",
                               str(scenario), "--out", str(out), "--seed", str(seed)],
                              env=env, stderr=subprocess.PIPE, text=True)
             for seed in (1, 2)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    # one writes; the other is refused (by the lock, or afterwards as another seed's directory)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "another simstudy process" in refused or "different scenario, seed" in refused
    assert "Traceback" not in refused
    manifest = yaml.safe_load((out / "manifest.json").read_text())
    recourse = pd.read_parquet(out / "recourse.parquet")
    assert set(recourse["seed"]) <= {r["seed"] for r in manifest["replications"]}


def test_changed_data_under_an_existing_out_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMSTUDY_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    n = 80
    a = rng.normal(size=n)
    b = a + rng.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": b, "y": np.where(a + b > 0, "yes", "no")})
    frame.to_csv(tmp_path / "data.csv", index=False)
    doc = {**SCENARIO, "replications": 1, "decision_model": {"epochs": 2},
           "world": {"kind": "causal_flow", "source": "csv", "flow": {"epochs": 1},
                     "csv": {"path": "data.csv", "label": "y", "positive": "yes",
                             "features": [{"name": "a"}, {"name": "b", "parents": ["a"]}],
                             "immutable": ["a"], "actionable": ["b"]}},
           "conditions": [{"name": "one", "population": {
               "actionability": {"kind": "ranking", "n_actionable": 1}}}]}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "run"
    code, err = _run(path, out, capsys)
    assert code == 0, err
    before = (out / "summary.csv").read_bytes()
    frame.loc[0, "b"] += 1.0
    frame.to_csv(tmp_path / "data.csv", index=False)
    code, err = _run(path, out, capsys)
    assert code == 2 and "data file" in err and "Traceback" not in err
    assert (out / "summary.csv").read_bytes() == before


def test_a_damaged_or_foreign_part_is_set_aside_and_recomputed(scenario, tmp_path, capsys):
    out = tmp_path / "run"
    code, err = _run(scenario, out, capsys)
    assert code == 0, err
    summary = (out / "summary.csv").read_bytes()
    parts = sorted((out / "parts").glob("*.parquet"))
    assert len(parts) == 2
    # flip bytes in the middle of one part; copy the other replication's part over the second
    data = bytearray(parts[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    parts[0].write_bytes(bytes(data))
    (out / "summary.csv").unlink()
    code, err = _run(scenario, out, capsys)
    assert code == 0, err
    assert "checksum mismatch" in err
    assert (out / "summary.csv").read_bytes() == summary
    parts[1].write_bytes(parts[0].read_bytes())
    (out / "parts" / (parts[1].name + ".check")).write_bytes(
        (out / "parts" / (parts[0].name + ".check")).read_bytes())
    code, err = _run(scenario, out, capsys)
    assert code == 0, err
    assert "computed for other inputs" in err
    assert (out / "summary.csv").read_bytes() == summary
    assert len(list((out / "parts" / "set-aside").glob("*.parquet"))) == 2


def test_a_damaged_cache_file_is_set_aside_and_trained_again(scenario, tmp_path, capsys):
    code, err = _run(scenario, tmp_path / "a", capsys)
    assert code == 0, err
    cache = ModelCache(tmp_path / "cache")
    models = sorted(Path(cache.root).glob("decision-*.pt"))
    assert models
    models[0].write_bytes(models[0].read_bytes()[:100])  # truncated
    code, err = _run(scenario, tmp_path / "b", capsys)
    assert code == 0, err
    assert "failed its check" in err and "Traceback" not in err
    assert ((tmp_path / "a" / "summary.csv").read_bytes()
            == (tmp_path / "b" / "summary.csv").read_bytes())
    assert (Path(cache.root) / "set-aside" / models[0].name).exists()


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_power_leaves_no_worker_behind(tmp_path, sig):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"seed": 0, "participants": [200, 300],
                                    "simulations": 200}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "simstudy.cli", "--quiet", "power",
                             str(plan), "--out", str(tmp_path / "out"), "--workers", "2"],
                            env=env, stderr=subprocess.PIPE, text=True)
    workers: set[int] = set()
    deadline = time.time() + 300
    while time.time() < deadline and not any((tmp_path / "out" / "parts").glob("*.csv")):
        workers |= _children(proc.pid)
        time.sleep(0.2)
    workers |= _children(proc.pid)
    assert len(workers) >= 2, "the plan should have started its worker pool"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.2)
    assert not [w for w in workers if _alive(w)]
    if sig == signal.SIGTERM:
        assert "Traceback" not in proc.stderr.read()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "killpg"), reason="sends Ctrl-C to a process group")
def test_ctrl_c_with_workers_exits_130_in_one_line_and_the_rerun_resumes(tmp_path):
    # Ctrl-C in a terminal sends SIGINT to every process of the foreground group: the command
    # and its helper processes alike.
    doc = {**SCENARIO, "replications": 6, "world": {"kind": "loan", "n_samples": 4000},
           "decision_model": {"epochs": 300}, "applicants": {"max_applicants": 20}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "SIMSTUDY_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "simstudy.cli", "--quiet", "run", str(path), "--out",
            str(out), "--workers", "2"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not list((out / "parts").glob("[!.]*.parquet")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    # a unit is finished once its marker's check file is written, last (run.runner); one the
    # interrupt caught before that is computed again
    finished = {p.name: p.stat().st_mtime_ns
                for p in (out / "parts").glob("[!.]*.parquet")
                if p.with_name(f"{p.stem}.json.check").exists()}
    assert proc.returncode == 130, err
    assert err.splitlines() == ["interrupted; finished results are kept"]
    assert 1 <= len(finished) < 6, "the interrupt should land mid-run"
    assert not (out / "summary.csv").exists()
    rerun = subprocess.run([*argv[:-1], "1"], env=env, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    parts = sorted((out / "parts").glob("[!.]*.parquet"))
    assert len(parts) == 6 and (out / "summary.csv").exists()
    assert not list(out.rglob(".*.tmp*")), "an interrupted write's temporary file is left"
    # the parts finished before Ctrl-C were kept and reused, not written again
    assert {name: (out / "parts" / name).stat().st_mtime_ns for name in finished} == finished


def test_a_stopped_writers_temporary_files_are_removed_on_the_next_run(scenario, tmp_path,
                                                                       capsys):
    out = tmp_path / "out"
    (out / "parts").mkdir(parents=True)
    stale = [out / "parts" / ".rep000__two__oracle.tmp99999.parquet", out / ".summary.tmp1.csv"]
    for path in stale:
        path.write_bytes(b"half a file")
    kept = out / "parts" / "notes.txt"
    kept.write_text("not ours to remove")
    code, err = _run(scenario, out, capsys)
    assert code == 0, err
    assert not any(p.exists() for p in stale) and kept.exists()
