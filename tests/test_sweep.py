"""Sweeps: cells from a grid and variants, validated up front, run and resumed."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from _sweep_support import POP, SWEEP, write_sweep

import simstudy
from simstudy.cli import main
from simstudy.core.documents import DocumentError
from simstudy.run.sweep import expand_cells, load_sweep, set_path
from simstudy.run.sweep_runner import run_sweep
from simstudy.world.decision import ModelCache


@pytest.fixture()
def sweep_file(tmp_path):
    return write_sweep(tmp_path)


def test_cells_combine_variants_with_the_grid():
    cells = expand_cells({"seed": [0, 1], "replications": [2]}, [])
    assert [c.label for c in cells] == ["seed=0__replications=2", "seed=1__replications=2"]
    assert cells[1].overrides == {"seed": 1, "replications": 2}


def test_set_path_reads_a_population_file_it_enters(tmp_path):
    (tmp_path / "pop.yaml").write_text(POP)
    doc = {"conditions": [{"name": "a", "population": "pop.yaml"}]}
    set_path(doc, "conditions[0].population.cost.alpha", 1.0, tmp_path)
    assert doc["conditions"][0]["population"]["cost"] == {"shape": "linear", "alpha": 1.0}
    with pytest.raises(ValueError, match="no item"):
        set_path(doc, "conditions[3].name", "b", tmp_path)


def test_every_cell_is_validated_before_anything_runs(sweep_file, tmp_path, capsys):
    spec, cells = load_sweep(sweep_file)
    assert len(cells) == 4
    bad = sweep_file.read_text().replace("[constant, convex]", "[constant, cubic]")
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(DocumentError) as err:
        load_sweep(tmp_path / "bad.yaml")
    lines = [str(p) for p in err.value.problems]
    assert len(lines) == 2 and all("cell " in ln and "shape=cubic" in ln for ln in lines)
    assert all("conditions[0].population.cost.shape" in ln for ln in lines)
    (tmp_path / "typo.yaml").write_text(SWEEP.replace("grid:", "gird:"))
    assert main(["validate", str(tmp_path / "typo.yaml")]) == 2
    assert "gird: unknown key" in capsys.readouterr().err


def test_sweep_runs_every_cell_and_resumes(sweep_file, tmp_path):
    cache = ModelCache(tmp_path / "cache")
    out = tmp_path / "out"
    res = run_sweep(sweep_file, out, progress=False, cache=cache)
    table = pd.read_csv(out / "summary.csv")
    assert table["cell"].nunique() == 4
    assert {"variant", "conditions[0].population.cost.shape"} <= set(table.columns)
    per_cell = table.groupby("cell").size()
    assert (per_cell == per_cell.iloc[0]).all()
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["cells"]) == 4
    # the cells differ where they should: cost shape changes cost, not validity
    alls = table[table["group_by"] == "all"].set_index("cell")
    plain = alls[alls["variant"] == "plain"]
    assert plain["cost"].nunique() == 2
    # an interrupted sweep resumes: remove one cell's part and the combined table
    first = res.manifest["cells"][0]["label"]
    for marker in (out / "cells" / first / "parts").glob("*.json"):
        marker.unlink()
    before = (out / "summary.csv").read_bytes()
    (out / "summary.csv").unlink()
    run_sweep(sweep_file, out, progress=False, cache=cache)
    assert (out / "summary.csv").read_bytes() == before


def test_a_killed_sweep_resumes_to_the_same_bytes(tmp_path):
    # The sweep runs as a command with two workers and is killed (SIGKILL, no clean-up) once
    # its first unit is stored; rerunning it computes only what is missing and writes the
    # bytes of an uninterrupted run.
    sweep = write_sweep(tmp_path / "doc")
    base = sweep.parent / "base.yaml"
    base.write_text(base.read_text().replace("replications: 1", "replications: 2"))
    reference = tmp_path / "reference"
    run_sweep(sweep, reference, progress=False, cache=ModelCache(tmp_path / "cache-a"))

    out = tmp_path / "out"
    env = {**os.environ, "SIMSTUDY_CACHE": str(tmp_path / "cache-b"),
           "PYTHONPATH": os.pathsep.join([str(Path(simstudy.__file__).parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "simstudy.cli", "--quiet", "sweep", str(sweep), "--out",
           str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not list(out.glob("cells/*/parts/*.json")) and time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before its first unit was stored"
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    total = 8  # 4 cells x 2 replications x 1 policy
    stored = len(list(out.glob("cells/*/parts/*.json")))
    assert 0 < stored < total and not (out / "summary.csv").exists()
    assert json.loads((out / "sweep.json").read_text())["status"] == "running"

    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "sweep.json").read_text())["status"] == "complete"
    assert (out / "summary.csv").read_bytes() == (reference / "summary.csv").read_bytes()
    for cell in (reference / "cells").iterdir():
        for name in ("summary.csv", "recourse.parquet"):
            assert (out / "cells" / cell.name / name).read_bytes() == \
                (cell / name).read_bytes(), f"{cell.name}/{name}"
