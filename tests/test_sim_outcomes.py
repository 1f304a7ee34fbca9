"""Tests of event-log summaries: outcomes, timelines, replication summaries, plots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _sim_support import ranking_population, small_world, stand_in_factory

from simstudy.core.intervals import mean_sd_ci
from simstudy.sim.outcomes import (
    applicant_outcomes,
    replication_metrics,
    summarize,
    timeline,
)
from simstudy.sim.plots import plot_cumulative_approvals
from simstudy.sim.spec import SimulationSpec
from simstudy.sim.world import simulate


@pytest.fixture(scope="module")
def result():
    world, data, model = small_world()
    spec = SimulationSpec.model_validate({
        "horizon_days": 30, "arrivals": {"kind": "cohort", "size": 300, "spread_days": 10},
        "action": {"base_days": 1, "per_unit_cost_days": 10},
        "request_probability_by_group": {"privileged=1": 1.0, "privileged=0": 0.5}})
    return simulate(spec, world, data, model, stand_in_factory, ranking_population(0.3), 5)


def test_outcomes_agree_with_the_log(result):
    o = applicant_outcomes(result)
    ev = result.events
    assert len(o) == len(result.applicants) == 300
    assert o["approved"].sum() == (ev["event"] == "approved").sum()
    assert (o["state"] == "active").sum() + o["approved"].sum() + o["dropped_out"].sum() == 300
    assert (o["time_to_approval"].dropna() > 0).all()
    assert o.loc[o["approved"], "applications"].min() >= 1
    assert o["recourses"].sum() == (ev["event"] == "recourse_given").sum()
    assert (o.loc[~o["approved"], "approval_time"].isna()).all()


def test_request_probability_by_group(result):
    o = applicant_outcomes(result)
    no_request = o[o["state"] == "no_request"]
    assert (no_request["group"] == "privileged=0").all() and len(no_request) > 0


def test_timeline_is_cumulative(result):
    o = applicant_outcomes(result)
    tl = timeline(o, result.horizon_days)
    for _, part in tl.groupby("group"):
        assert (np.diff(part["approved"]) >= 0).all() and (np.diff(part["arrived"]) >= 0).all()
    final = tl[(tl["group"] == "all")].iloc[-1]
    assert final["approved"] == o["approved"].sum() and final["arrived"] == 300


def test_replication_metrics_groups(result):
    m = replication_metrics(applicant_outcomes(result)).set_index("group")
    assert m.loc["all", "n"] == m.drop(index="all")["n"].sum()
    weighted = (m.drop(index="all")["approval_rate"] * m.drop(index="all")["n"]).sum()
    assert weighted / m.loc["all", "n"] == pytest.approx(m.loc["all", "approval_rate"])


def test_mean_ci_covers_and_paired_differences_are_within_replication():
    assert mean_sd_ci(np.array([1.0, 2.0, 3.0]))[2] < 2.0 < mean_sd_ci(np.array([1.0, 2.0, 3.0]))[3]
    rng = np.random.default_rng(0)
    luck = rng.normal(0, 1.0, 8)  # shared by both policies in a replication
    rows = []
    for r in range(8):
        for policy, effect in (("a", 0.0), ("b", 0.1)):
            rows.append({"policy": policy, "replication": r, "group": "all",
                         "approval_rate": 0.5 + luck[r] + effect})
    s = summarize(pd.DataFrame(rows))
    diff = s[(s["kind"] == "paired_difference") & (s["metric"] == "approval_rate")].iloc[0]
    est = s[(s["kind"] == "estimate") & (s["policy"] == "b")].iloc[0]
    assert diff["mean"] == pytest.approx(0.1)
    assert diff["ci_high"] - diff["ci_low"] < 1e-9 < est["ci_high"] - est["ci_low"]


def test_plot_writes_a_file(result, tmp_path):
    tl = timeline(applicant_outcomes(result), result.horizon_days).assign(policy="p",
                                                                          replication=0)
    path = plot_cumulative_approvals(tl, tmp_path / "approvals.png")
    assert path.stat().st_size > 1000
