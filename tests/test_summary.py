"""A run made before a metric existed still summarizes and audits: the metric is computed from
the run's other columns where its declaration says how, else left out with one line."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from simstudy.cli import main
from simstudy.metrics import METRICS, Metric, RunPredatesMetric, readable_metrics
from simstudy.run.runner import run_scenario
from simstudy.run.summary import summarize_contrasts, summarize_recourse
from simstudy.world.decision import ModelCache

OLD_RUN = """
name: older-run
seed: 5
replications: 2
world: {kind: loan, n_samples: 800}
decision_model: {epochs: 10}
applicants: {max_applicants: 30}
policies:
  - {kind: oracle, n_values: 4}
  - {kind: oracle, name: no-plausibility, n_values: 4, plausibility: false}
conditions:
  - name: two
    population: {actionability: {kind: ranking, n_actionable: 2}}
"""


def _max_change(rows: pd.DataFrame) -> np.ndarray:
    # the largest raw change of any feature (0 without recourse): from x_* and xcf_* columns
    names = [c[2:] for c in rows.columns if c.startswith("x_") and f"xcf_{c[2:]}" in rows]
    if not names:
        raise KeyError("x_*, xcf_*")
    change = np.abs(rows[[f"xcf_{n}" for n in names]].to_numpy(float)
                    - rows[[f"x_{n}" for n in names]].to_numpy(float))
    return np.where(rows["found"], change.max(axis=1), np.nan)


#: metrics added after the run was made: one the run's columns give, one they cannot
MAX_CHANGE = Metric(column="max_change", among="found", label="largest change",
                    direction="lower", unit="feature units", values="nonnegative",
                    audited=True, meaning="largest change of one feature", derive=_max_change)
QUERIES = Metric(column="queries_asked", among="all", label="queries", direction="lower",
                 unit="queries", values="nonnegative", audited=True,
                 meaning="questions the policy asked the person")


@pytest.fixture(scope="module")
def old_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("old")
    (folder / "s.yaml").write_text(OLD_RUN)
    run_scenario(folder / "s.yaml", folder / "run", progress=False,
                 cache=ModelCache(folder / "cache"))
    return folder / "run"


@pytest.fixture
def newer_metrics(monkeypatch):
    monkeypatch.setitem(METRICS, "max_change", MAX_CHANGE)
    monkeypatch.setitem(METRICS, "queries_asked", QUERIES)


def test_the_older_run_lacks_the_new_columns(old_run):
    columns = pd.read_parquet(old_run / "recourse.parquet").columns
    assert "max_change" not in columns and "queries_asked" not in columns


def test_an_older_run_summarizes_with_metrics_added_since(old_run, newer_metrics):
    rows = pd.read_parquet(old_run / "recourse.parquet")
    with pytest.warns(RunPredatesMetric) as caught:
        summary = summarize_recourse(rows, source=str(old_run))
    # computed where the declaration says how, from the run's own columns
    everyone = summary[summary["group_by"] == "all"]
    expected = [np.nanmean([np.nanmean(_max_change(r)) if r["found"].any() else np.nan
                            for _, r in block.groupby("replication")])
                for _, block in rows.groupby("policy", sort=False)]
    assert np.allclose(everyone["max_change"], expected)
    assert (everyone["max_change"] > 0).all()
    # the other is left out, said in one line naming the run and the metric
    assert "queries_asked" not in summary.columns
    assert [str(w.message) for w in caught] == [
        f"{old_run}: written before the metric 'queries_asked' existed; left out"]
    # the metrics it had are unchanged
    saved = pd.read_csv(old_run / "summary.csv").query("group_by == 'all'")
    assert np.allclose(saved["validity"], everyone["validity"], atol=1e-6)
    assert np.allclose(saved["cost"], everyone["cost"], atol=1e-6, equal_nan=True)
    with pytest.warns(RunPredatesMetric):
        contrasts = summarize_contrasts(rows, [("no-plausibility", "oracle")])
    assert "max_change" in contrasts.columns and "queries_asked" not in contrasts.columns


def test_without_the_new_metrics_nothing_is_said(old_run):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunPredatesMetric)
        summarize_recourse(pd.read_parquet(old_run / "recourse.parquet"))


def test_a_metric_that_needs_missing_columns_is_left_out_not_raised(newer_metrics):
    rows = pd.DataFrame({"found": [True], "valid": [True]})  # no x_/xcf_ columns either
    with pytest.warns(RunPredatesMetric, match="'max_change'"):
        _, usable = readable_metrics(rows, names=["validity", "max_change"])
    assert list(usable) == ["validity"]


def test_auditing_an_older_run_says_so_in_one_line(old_run, newer_metrics, tmp_path, capsys):
    code = main(["audit", str(old_run), "--by", "gender", "--bootstrap", "20",
                 "--permutations", "20", "--out", str(tmp_path / "audit.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0, err
    assert err == ["simstudy audit: the run's recourse table: written before the metric "
                   "'queries_asked' existed; left out"]
    metrics = set(pd.read_csv(tmp_path / "audit_groups.csv")["metric"])
    assert "max_change" in metrics and "queries_asked" not in metrics
