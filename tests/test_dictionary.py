"""Readable outputs: every column of every table described beside the results, summaries in
the scenario's order with rounded floats."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from simstudy.run.dictionary import describe, undescribed
from simstudy.run.runner import SUMMARY_DIGITS, run_scenario
from simstudy.world.decision import ModelCache

SCENARIO = """
name: dictionary
seed: 0
replications: 2
world: {kind: loan, n_samples: 1200}
decision_model: {epochs: 10}
applicants: {max_applicants: 15}
policies:
  - {kind: oracle, name: zeta, n_values: 5}
  - {kind: growing_spheres, name: alpha}
conditions:
  - name: zz
    population:
      actionability: {kind: ranking, bias: uniform}
      groups: {rule: random, privileged_share: 0.3}
  - name: aa
    population:
      actionability: {kind: ranking, n_actionable: 4}
      groups: {rule: random, privileged_share: 0.5}
      stylized_attribute: race
contrasts:
  - {policy: alpha, baseline: zeta}
simulation:
  horizon_days: 15
  arrivals: {kind: poisson, rate_per_day: 2}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dictionary")
    path = folder / "scenario.yaml"
    path.write_text(SCENARIO)
    run_scenario(path, folder / "run", progress=False, cache=ModelCache(folder / "cache"))
    return folder / "run"


def test_every_column_of_every_table_is_described(run):
    assert undescribed(run) == []
    dictionary = pd.read_csv(run / "data_dictionary.csv")
    tables = set(dictionary["table"])
    assert {"recourse.parquet", "summary.csv", "contrasts.csv"} <= tables
    assert any(t.endswith("outcomes.parquet") for t in tables)
    n = dictionary[(dictionary["table"] == "summary.csv") & (dictionary["column"] == "n")]
    assert "mean over replications" in n["denominator"].iloc[0]


def test_an_unknown_column_is_reported():
    (row,) = describe("summary.csv", ["policy"])
    assert row["meaning"].startswith("policy name")
    assert describe("recourse.parquet", ["mystery"])[0]["meaning"] == "NOT DESCRIBED"


def test_summaries_follow_the_document_with_rounded_floats(run):
    summary = pd.read_csv(run / "summary.csv")
    overall = summary[summary["group_by"] == "all"]
    assert list(dict.fromkeys(overall["policy"])) == ["zeta", "alpha"]
    assert list(dict.fromkeys(overall["condition"])) == ["zz", "aa"]
    assert summary["group_by"].iloc[0] == "all"
    contrasts = pd.read_csv(run / "contrasts.csv")
    assert list(dict.fromkeys(contrasts["condition"])) == ["zz", "aa"]
    text = (run / "summary.csv").read_text() + (run / "contrasts.csv").read_text()
    digits = [len(m.group(1).lstrip("-").replace(".", "").lstrip("0"))
              for m in re.finditer(r"(?<![\w.])(-?\d+\.\d+)(?![\w.])", text)]
    assert digits and max(digits) <= SUMMARY_DIGITS
