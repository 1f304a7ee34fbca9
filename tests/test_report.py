"""Audit reports: self-contained HTML, Markdown, the CLI, rendering."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch
from test_audit import synthetic_recourse

from simstudy.analysis.audit import audit
from simstudy.analysis.groups import run_codebook
from simstudy.analysis.report import render_html, render_markdown
from simstudy.cli import main

torch.set_num_threads(1)

CASE = {"baseline": {"female": 0.3},
        "random": {"female": 0.4},
        "income": {"female": 0.8},
        "race": {"female": 0.3, "nonwhite": 0.4, "cell": 0.3}}
MANIFEST = {"scenario_name": "synthetic-case", "scenario_file": "x.yaml", "base_seed": 3,
            "resolved_sha256": "ab" * 32, "status": "complete", "versions": {"numpy": "2"},
            "replications": [{"seed": 11, "decision_model": {"state_dict_sha256": "cd" * 32,
                                                             "test_accuracy": 0.9}}],
            "resolved": {"scenario": {"name": "synthetic-case", "world": {"kind": "loan"}},
                         "populations": {"race": {"stylized_attribute": "race", "labels": {
                             "race": {"0": "white", "1": "non-white"}}}}}}


@pytest.fixture(scope="module")
def case_result():
    df = synthetic_recourse(5, n=400, conditions=CASE)
    return audit(df, ["gender", "race"], baseline="baseline", n_bootstrap=200,
                 n_permutations=200, codebook=run_codebook(MANIFEST)[0])


def test_html_is_self_contained_and_small(case_result):
    page = render_html(case_result, MANIFEST, "runs/x")
    assert page.count("data:image/png;base64,") >= 2  # per-group metrics and gaps
    # Nothing is fetched: no external src/href and no script.
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", page)
    assert "<script" not in page
    assert len(page.encode()) < 2_000_000
    for text in ("Provenance", "ab" * 32, "Hidden disparity", "(reproduced)", "female",
                 "Codes: gender 0 = female, 1 = male; race 0 = white, 1 = non-white."):
        assert text in page
    md = render_markdown(case_result, MANIFEST)
    assert md.startswith("# Fairness audit") and "| policy |" in md


def _write_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    synthetic_recourse(7, n=150, conditions=CASE).to_parquet(run / "recourse.parquet")
    (run / "manifest.json").write_text(json.dumps(MANIFEST))
    return run


def test_cli_audit_writes_report_and_tables(tmp_path, capsys):
    run = _write_run(tmp_path)
    code = main(["audit", str(run), "--by", "gender", "race", "--bootstrap", "50",
                 "--permutations", "50", "--out", str(tmp_path / "rep" / "audit.html")])
    assert code == 0
    for name in ("audit.html", "audit.md", "audit_gaps.csv", "audit_groups.csv",
                 "audit_hidden.csv", "audit_contrasts.csv"):
        assert (tmp_path / "rep" / name).stat().st_size > 0
    assert "hidden disparities" in capsys.readouterr().out
    spec = tmp_path / "audit.yaml"
    spec.write_text("run: run\nout: out/a.html\nby: [race]\nbootstrap: 20\npermutations: 20\n")
    assert main(["audit", str(spec)]) == 0 and (tmp_path / "out" / "a.md").exists()


def test_cli_audit_refuses_bad_input(tmp_path, capsys):
    run = _write_run(tmp_path)
    assert main(["audit", str(run), "--by", "religion", "--bootstrap", "20"]) == 2
    assert "no column" in capsys.readouterr().err
    assert main(["audit", str(tmp_path)]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: run\nbootstrap: -1\ncolour: red\n")
    assert main(["audit", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bootstrap" in err and "colour" in err


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


# CI installs Chromium (.ci/run): there a missing browser fails instead of skipping.
@pytest.mark.skipif(_chromium() is None and not os.environ.get("CI"),
                    reason="headless Chromium (chromium / chromium-browser) is not on PATH")
def test_report_renders_in_headless_chromium(case_result, tmp_path):
    assert _chromium() is not None, "CI must install Chromium (see .ci/run)"
    page = tmp_path / "audit.html"
    page.write_text(render_html(case_result, MANIFEST, "runs/x"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={shot}",
             "--window-size=1200,2000", "--enable-logging=stderr", "--v=0",
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": profile})
    assert shot.exists() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line
               or "Uncaught" in line]
    assert not console, console
