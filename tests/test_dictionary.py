"""Readable outputs: every column of every table described beside the results, metric rows
that agree with the metric table, summaries in the scenario's order with rounded floats."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstudy.metrics import METRICS, RECOURSE_COLUMNS, Metric, metrics_of, register_metric
from simstudy.run.dictionary import describe, undescribed
from simstudy.run.runner import SUMMARY_DIGITS, run_scenario
from simstudy.run.summary import summarize_recourse
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


def written_tables(folder: Path) -> dict[str, list[str]]:
    """Columns of every table a run wrote, found by walking its folder (not by asking the
    dictionary which tables it knows); the run's parts are its scratch space."""
    tables = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.suffix not in (".csv", ".parquet") or "parts" in rel.parts:
            continue
        if path.name != "data_dictionary.csv":
            tables[str(rel)] = (list(pd.read_parquet(path).columns) if path.suffix == ".parquet"
                                else list(pd.read_csv(path, nrows=0).columns))
    return tables


def mismatches(dictionary: pd.DataFrame, tables: dict[str, list[str]],
               metrics: dict[str, Metric]) -> list[str]:
    """Every way ``dictionary`` (a ``data_dictionary.csv``) fails the written tables or the
    metric table: a column without a row, a metric row whose meaning, unit or denominator is
    not the metric's, a per-applicant metric column not described as computed."""
    d = dictionary.fillna("").set_index(["table", "column"])
    problems = [f"{t}: {c}: no row" for t, cols in tables.items() for c in cols
                if (t, c) not in d.index or d.loc[(t, c), "meaning"] == "NOT DESCRIBED"]
    for table in ("summary.csv", "contrasts.csv"):
        for name, metric in metrics.items():
            if metric.table != "recourse" or not metric.summarized:
                continue
            for column in (name, f"{name}_ci_low", f"{name}_ci_high"):
                if column not in tables.get(table, ()):
                    continue
                if (table, column) not in d.index:
                    continue  # reported above
                row = d.loc[(table, column)]
                if row["unit"] != metric.unit:
                    problems.append(f"{table}: {column}: unit {row['unit']!r}")
                if column == name:
                    if metric.meaning not in row["meaning"]:
                        problems.append(f"{table}: {column}: meaning {row['meaning']!r}")
                    if not row["denominator"].startswith(metric.denominator + ", "):
                        problems.append(f"{table}: {column}: denominator "
                                        f"{row['denominator']!r}")
                elif f"`{name}`" not in row["meaning"]:
                    problems.append(f"{table}: {column}: meaning {row['meaning']!r}")
    for name, (meaning, unit) in RECOURSE_COLUMNS.items():
        key = ("recourse.parquet", name)
        if key in d.index and tuple(d.loc[key, ["meaning", "unit"]]) != (meaning, unit):
            problems.append(f"recourse.parquet: {name}: not as computed")
    return problems


#: Whom each denominator of the dictionary names, read from the recourse table directly.
WHO = {"applicants asking for recourse": lambda r: np.ones(len(r), bool),
       "applicants given a recourse": lambda r: r["found"].to_numpy(bool),
       "applicants whose recourse is approved": lambda r: (r["found"] & r["valid"]).to_numpy()}


def test_every_column_of_every_table_agrees_with_the_metric_table(run):
    dictionary = pd.read_csv(run / "data_dictionary.csv")
    tables = written_tables(run)
    assert {"recourse.parquet", "summary.csv", "contrasts.csv", "sim/zz/outcomes.parquet",
            "sim/zz/events.parquet"} <= set(tables)
    assert set(dictionary["table"]) == set(tables)  # no table left out, none invented
    assert mismatches(dictionary, tables, METRICS) == []
    # the *_found twins have their own rows, over a denominator of their own
    rows = dictionary[dictionary["table"] == "summary.csv"].set_index("column")
    assert rows.loc["cost", "denominator"] != rows.loc["cost_found", "denominator"]
    assert rows.loc["cost", "meaning"] == rows.loc["cost_found", "meaning"]


def test_the_check_fails_on_a_missing_row_or_a_wrong_denominator(run):
    dictionary = pd.read_csv(run / "data_dictionary.csv")
    tables = written_tables(run)
    gone = dictionary[~((dictionary["table"] == "summary.csv")
                        & (dictionary["column"] == "sparsity_found"))]
    assert mismatches(gone, tables, METRICS) == ["summary.csv: sparsity_found: no row"]
    # the drift of before: cost-type figures described as among every recourse found
    drifted = {**METRICS, "cost": Metric(**{**METRICS["cost"].__dict__, "among": "found"})}
    problems = mismatches(dictionary, tables, drifted)
    assert [p.split(": denominator")[0] for p in problems] == ["summary.csv: cost",
                                                              "contrasts.csv: cost"]
    wrong_unit = dictionary.copy()
    wrong_unit.loc[(wrong_unit["table"] == "contrasts.csv")
                   & (wrong_unit["column"] == "hap_ci_low"), "unit"] = "features"
    assert mismatches(wrong_unit, tables, METRICS) == ["contrasts.csv: hap_ci_low: unit "
                                                       "'features'"]


def test_the_denominators_described_are_those_computed(run):
    """The summary's figure is the mean over whom the dictionary names, checked on the run's
    people with some found recourses made invalid, so that every denominator differs."""
    recourse = pd.read_parquet(run / "recourse.parquet")
    found = recourse.index[recourse["found"]]
    recourse.loc[found[::3], "valid"] = False
    summary = summarize_recourse(recourse).query("group_by == 'all'")
    rows = pd.DataFrame(describe("summary.csv", summary.columns)).set_index("column")
    distinct = set()
    for name, metric in metrics_of("recourse", summarized=True).items():
        who = WHO[rows.loc[name, "denominator"].split(", per replication")[0]]
        for (policy, condition), block in recourse.groupby(["policy", "condition"]):
            per_rep = []
            for _, r in block.groupby("replication"):
                value = pd.to_numeric(r[metric.column]).to_numpy(float)[who(r)]
                value = value[np.isfinite(value)]
                per_rep.append(1 - value.mean() if metric.complement else value.mean())
            mine = (summary["policy"] == policy) & (summary["condition"] == condition)
            got = summary.loc[mine, name].item()
            assert got == pytest.approx(np.mean(per_rep), nan_ok=True), (name, policy)
        distinct.add(rows.loc[name, "denominator"])
    assert len(distinct) == 3


@pytest.fixture
def hap_valid():
    metric = register_metric("hap_valid", Metric(
        column="hard_action", among="valid", label="hap (approved)", direction="lower",
        unit="share", values="proportion",
        meaning="share of approved recourses acting on a least-preferred feature"))
    yield metric
    METRICS.pop("hap_valid")


def test_a_metric_declared_in_test_code_reaches_summary_and_dictionary(run, tmp_path,
                                                                       hap_valid):
    """Adding a metric is one declaration: registered here, the run's summary and contrasts
    carry it and the dictionary describes it from the declaration."""
    metric = hap_valid
    again = tmp_path / "run"
    shutil.copytree(run, again)  # its parts are complete: only the tables are written again
    run_scenario(run.parent / "scenario.yaml", again, progress=False,
                 cache=ModelCache(run.parent / "cache"))
    summary = pd.read_csv(again / "summary.csv")
    assert {"hap_valid", "hap_valid_ci_low", "hap_valid_ci_high"} <= set(summary.columns)
    assert "hap_valid" in pd.read_csv(again / "contrasts.csv").columns
    recourse = pd.read_parquet(again / "recourse.parquet")
    for (policy, condition), block in recourse.groupby(["policy", "condition"]):
        approved = [r.loc[r["valid"], "hard_action"].mean() for _, r in block.groupby(
            "replication")]
        mine = ((summary["policy"] == policy) & (summary["condition"] == condition)
                & (summary["group_by"] == "all"))
        assert summary.loc[mine, "hap_valid"].item() == pytest.approx(
            np.nanmean(approved), abs=10.0 ** -SUMMARY_DIGITS, nan_ok=True)
    dictionary = pd.read_csv(again / "data_dictionary.csv")
    assert mismatches(dictionary, written_tables(again), METRICS) == []
    row = dictionary.set_index(["table", "column"]).loc[("summary.csv", "hap_valid")]
    assert row["meaning"].startswith(metric.meaning) and row["unit"] == "share"
    assert row["denominator"].startswith("applicants whose recourse is approved")


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
