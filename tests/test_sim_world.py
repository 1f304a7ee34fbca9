"""Tests of the event world: determinism, batching, causality, conservation, hard constraints."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from _sim_support import (
    PreferredFeaturePolicy,
    ranking_population,
    small_world,
    stand_in_factory,
)
from pydantic import ValidationError

from simstudy.sim.spec import SimulationSpec
from simstudy.sim.world import TERMINAL_EVENTS, arrival_times, simulate
from simstudy.world.loan import LoanSCM


def make_spec(**overrides) -> SimulationSpec:
    doc = {
        "horizon_days": 45,
        "arrivals": {"kind": "poisson", "rate_per_day": 12},
        "session": {"patience_questions": 8},
        "action": {"base_days": 2, "per_unit_cost_days": 20, "partial_probability": 0.3},
        "retraining": {"every_days": 15, "window_days": 15, "epochs": 2, "min_samples": 50},
        "max_attempts": 2,
        "retry_delay_days": 1,
    }
    doc.update(overrides)
    return SimulationSpec.model_validate(doc)


@pytest.fixture(scope="module")
def setting():
    return small_world()


@pytest.fixture(scope="module")
def result(setting):
    world, data, model = setting
    return simulate(make_spec(), world, data, model, stand_in_factory, ranking_population(0.4), 1)


def test_spec_refuses_bad_documents():
    with pytest.raises(ValidationError):
        make_spec(unknown_key=1)
    with pytest.raises(ValidationError):
        make_spec(request_probability=1.5)
    with pytest.raises(ValidationError):
        make_spec(retraining={"every_days": 10.5, "window_days": 10}, window_days=1.0)


def test_poisson_arrivals_rate_and_keying():
    spec = make_spec(horizon_days=200, arrivals={"kind": "poisson", "rate_per_day": 30})
    t = arrival_times(spec, 3)
    assert np.all(np.diff(t) > 0) and t[-1] <= 200
    assert abs(len(t) - 6000) < 5 * np.sqrt(6000)
    longer = arrival_times(make_spec(horizon_days=400, arrivals={"kind": "poisson",
                                                                 "rate_per_day": 30}), 3)
    np.testing.assert_array_equal(longer[: len(t)], t)  # keyed by id, not by the horizon


def test_same_seed_same_log_and_batch_size_does_not_matter(setting, result):
    world, data, model = setting
    pop = ranking_population(0.4)
    again = simulate(make_spec(), world, data, model, stand_in_factory, pop, 1)
    pd.testing.assert_frame_equal(result.events, again.events)
    small_batches = simulate(make_spec(batch_size=7), world, data, model, stand_in_factory,
                             pop, 1)
    pd.testing.assert_frame_equal(result.events, small_batches.events)
    pd.testing.assert_frame_equal(result.actions, small_batches.actions)
    other_seed = simulate(make_spec(), world, data, model, stand_in_factory, pop, 2)
    assert not result.events.equals(other_seed.events)


def test_lookahead_answers_the_same_requests_in_fewer_calls(setting, result):
    # The stand-in policy answers row by row, so asking ahead (across windows, up to the next
    # retraining) changes no event; values only in the last bits of the float32 model.
    world, data, model = setting
    ahead = simulate(make_spec(lookahead=True), world, data, model, stand_in_factory,
                     ranking_population(0.4), 1)
    pd.testing.assert_frame_equal(ahead.events, result.events, check_exact=False, rtol=1e-4)
    pd.testing.assert_frame_equal(ahead.actions, result.actions, check_exact=False, rtol=1e-4)
    assert ahead.timings["policy_calls"] < result.timings["policy_calls"] / 2


def test_policies_face_the_same_people(setting, result):
    world, data, model = setting

    class Later(PreferredFeaturePolicy):
        def recommend(self, x, profiles, ids, seed=0, feedback=None):
            rec = super().recommend(x, profiles, ids, seed)
            rec.extras["queries"] = rec.extras["queries"] + 4
            return rec

    other = simulate(make_spec(), world, data, model, lambda c: Later().fit(c),
                     ranking_population(0.4), 1)
    pd.testing.assert_frame_equal(result.applicants, other.applicants)
    # Later models are trained on what the policies made of people, so they differ; before
    # the first retraining the same people meet the same decisions.
    def first(ev):
        return ev[ev["event"].isin(["arrival", "decision"]) & (ev["attempt"] == 0)
                  & (ev["model_version"] == 0)]

    first, first_other = first(result.events), first(other.events)
    pd.testing.assert_frame_equal(first.reset_index(drop=True),
                                  first_other.reset_index(drop=True))
    assert not result.events.equals(other.events)


def test_the_log_exercises_every_path(result):
    seen = set(result.events["event"].astype(str))
    for name in ("arrival", "decision", "approved", "rejected", "recourse_given",
                 "action_started", "action_completed", "reapplied", "action_failed",
                 "session_abandoned", "no_request"):
        assert name in seen, name
    assert len(result.models) > 1


def test_no_event_before_its_cause(result):
    ev = result.events
    assert (np.diff(ev["time"].to_numpy()) >= 0).all()
    arrival = result.applicants.set_index("applicant")["arrival_time"]
    dec = ev[ev["event"] == "decision"]
    assert (dec["time"].to_numpy() > arrival.loc[dec["applicant"]].to_numpy()).all()
    # Every approval is a positive decision at the same time, for the same application.
    key = ["applicant", "attempt", "time"]
    appr = ev[ev["event"] == "approved"][key]
    pos = dec[dec["value"] == 1.0][key]
    assert len(appr.merge(pos, on=key)) == len(appr) == len(pos)
    # A re-application never precedes the end of the action (or failure) that caused it.
    re = ev[ev["event"] == "reapplied"][["applicant", "attempt", "time"]]
    cause = ev[ev["event"].isin(["action_completed", "action_failed"])][
        ["applicant", "attempt", "time"]].copy()
    cause["attempt"] += 1
    joined = re.merge(cause, on=["applicant", "attempt"], suffixes=("", "_cause"),
                      how="left")
    assert joined["time_cause"].notna().all()
    assert (joined["time"] >= joined["time_cause"]).all()
    # Every decision on a later application follows that re-application.
    later = dec[dec["attempt"] > 0].merge(re, on=["applicant", "attempt"], suffixes=("", "_re"))
    assert len(later) == (dec["attempt"] > 0).sum()
    assert (later["time"] > later["time_re"]).all()
    # Sessions follow requests; completions follow starts.
    for first, then in (("recourse_requested", "recourse_given"),
                        ("action_started", "action_completed")):
        a = ev[ev["event"] == first][["applicant", "attempt", "time"]]
        b = ev[ev["event"] == then][["applicant", "attempt", "time"]]
        m = b.merge(a, on=["applicant", "attempt"], suffixes=("", "_first"), how="left")
        assert m["time_first"].notna().all() and (m["time"] >= m["time_first"]).all()


def test_counts_conserve(result):
    ev = result.events
    n = len(result.applicants)
    arrivals = ev[ev["event"] == "arrival"]
    assert arrivals["applicant"].is_unique and len(arrivals) == n
    terminal = ev[ev["event"].astype(str).isin(TERMINAL_EVENTS)]
    assert terminal["applicant"].is_unique
    # The terminal event is each person's last event.
    last = ev.drop_duplicates("applicant", keep="last").set_index("applicant")["event"]
    assert (last.loc[terminal["applicant"]].astype(str).to_numpy()
            == terminal["event"].astype(str).to_numpy()).all()
    active = n - len(terminal)
    assert active >= 0
    # One decision per application: arrivals plus re-applications decided by the horizon.
    dec = ev[ev["event"] == "decision"]
    assert not dec.duplicated(["applicant", "attempt"]).any()
    assert (ev["time"] <= result.horizon_days).all()


def test_never_acts_on_a_feature_they_cannot_change(result):
    acts = result.actions
    apps = result.applicants.set_index("applicant")
    assert len(acts) > 0
    for feature in ("loan_amount", "loan_duration", "income", "savings"):
        acted = acts[acts[f"target_{feature}"].notna()]["applicant"]
        assert apps.loc[acted, f"can_{feature}"].all(), feature
    for feature in ("gender", "age", "education"):
        assert acts[f"target_{feature}"].isna().all()
    failed = result.events[result.events["event"] == "action_failed"]["applicant"]
    assert apps.loc[failed, "hidden_mismatch"].all()


class _HarshLoan(LoanSCM):
    """The Loan world whose label rule rejects everyone (a drastic drift)."""

    def label(self, x, generator=None):
        return torch.zeros(x.shape[0], dtype=torch.int64)


def test_retraining_invalidates_recourse(setting):
    _, data, model = setting
    spec = make_spec(session={},
                     action={"base_days": 20, "per_unit_cost_days": 0,
                             "partial_probability": 0.0},
                     retraining={"every_days": 10, "window_days": 10, "epochs": 5,
                                 "min_samples": 20})
    res = simulate(spec, _HarshLoan(), data, model, stand_in_factory, ranking_population(), 4)
    ev = res.events
    inv = ev[ev["event"] == "recourse_invalidated"]
    assert len(inv) > 0
    given = ev[ev["event"] == "recourse_given"][["applicant", "attempt", "model_version"]]
    m = inv.merge(given.assign(attempt=given["attempt"] + 1), on=["applicant", "attempt"],
                  suffixes=("", "_given"))
    assert len(m) == len(inv) and (m["model_version"] > m["model_version_given"]).all()
    # Returns decided by a newer model are invalidated whenever they are rejected.
    late = ev[(ev["event"] == "decision") & (ev["attempt"] > 0) & (ev["model_version"] > 1)]
    assert (late["value"] == 0).all()
