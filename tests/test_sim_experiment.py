"""Tests of replications x policies written into a run directory."""

from __future__ import annotations

import pandas as pd
import pytest
from _sim_support import PreferredFeaturePolicy, ranking_population, small_world

from simstudy.sim.experiment import SIM_FILES, run_event_world
from simstudy.sim.spec import SimulationSpec


class _Fussy(PreferredFeaturePolicy):
    """The stand-in that asks many more questions (so sessions are abandoned more often)."""

    def recommend(self, x, profiles, ids, seed=0):
        rec = super().recommend(x, profiles, ids, seed)
        rec.extras["queries"] = rec.extras["queries"] * 4
        return rec


def test_run_writes_files_with_paired_differences(tmp_path):
    world, data, model = small_world()
    spec = SimulationSpec.model_validate({
        "horizon_days": 15, "arrivals": {"kind": "cohort", "size": 80, "spread_days": 5},
        "session": {"patience_questions": 6}, "action": {"base_days": 1}})
    policies = {"plain": lambda c: PreferredFeaturePolicy().fit(c),
                "fussy": lambda c: _Fussy().fit(c)}
    tables = run_event_world(spec, world, data, model, policies, ranking_population(), [3, 4],
                             tmp_path)
    for name in SIM_FILES:
        assert (tmp_path / name).stat().st_size > 0, name
    ev = pd.read_parquet(tmp_path / "events.parquet")
    arrivals = ev[ev["event"] == "arrival"]
    # Common random numbers: within a replication both policies meet the same arrivals.
    for _, rep in arrivals.groupby("replication"):
        a = rep[rep["policy"] == "plain"][["applicant", "time"]].reset_index(drop=True)
        b = rep[rep["policy"] == "fussy"][["applicant", "time"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
    s = pd.read_csv(tmp_path / "sim_summary.csv")
    diff = s[(s["kind"] == "paired_difference") & (s["group"] == "all")
             & (s["metric"] == "approval_rate")]
    assert len(diff) == 1 and diff["policy"].iloc[0] == "fussy"
    assert diff["n_replications"].iloc[0] == 2
    m = tables["replication_metrics"]
    fussy = m[(m["policy"] == "fussy") & (m["group"] == "all")]["approval_rate"].to_numpy()
    plain = m[(m["policy"] == "plain") & (m["group"] == "all")]["approval_rate"].to_numpy()
    assert diff["mean"].iloc[0] == pytest.approx((fussy - plain).mean())
    assert not list(tmp_path.glob("*.tmp*"))
