"""Intervals inside their metric's range: the shared rule, summary.csv and the audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from simstudy.analysis.audit import audit
from simstudy.analysis.groups import Codebook
from simstudy.analysis.resampling import percentile_interval
from simstudy.core.intervals import (
    VALUE_RANGES,
    around,
    clopper_pearson,
    mean_sd_ci,
    metric_interval,
    proportion_interval,
    t_interval,
    wald_interval,
    wilson_interval,
)
from simstudy.metrics import METRICS
from simstudy.run.summary import summarize_recourse

BOOK = Codebook({"gender": {0: "female", 1: "male"}}, {"gender": 1})
TOL = 1e-12


def test_wilson_matches_statsmodels():
    for k, n in ((0, 5), (3, 10), (10, 10), (17, 40)):
        lo, hi = wilson_interval(k / n, n)
        np.testing.assert_allclose((lo, hi), proportion_confint(k, n, method="wilson"),
                                   atol=1e-12)


def test_between_replication_spread_reads_like_the_t_interval_near_one_half():
    # shares 0.4 / 0.6 over many people each: the spread governs; near p = 1/2 the interval
    # is the Student-t interval over the two replications (df 1), as wide
    shares, counts = [0.4, 0.6], [10_000, 10_000]
    lo, hi = proportion_interval(shares, counts)
    t_lo, t_hi = t_interval(shares)
    t_lo, t_hi = max(t_lo, 0.0), min(t_hi, 1.0)
    assert 0.0 <= lo and hi <= 1.0 and lo < 0.5 < hi
    assert (hi - lo) == pytest.approx(t_hi - t_lo, rel=0.15)


def test_replication_spread_widens_the_interval():
    # same mean and people, but replications that disagree: the interval must be wider
    alike = proportion_interval([0.5, 0.5, 0.5], [20, 20, 20])
    apart = proportion_interval([0.1, 0.5, 0.9], [20, 20, 20])
    assert apart[1] - apart[0] > alike[1] - alike[0]
    # replications agreeing: the binomial variance over all 60 people
    assert alike == pytest.approx(wilson_interval(0.5, 60))


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 30)), min_size=1, max_size=6))
def test_proportion_interval_inside_zero_one_and_around_the_estimate(pairs):
    counts = np.array([n for _, n in pairs], dtype=float)
    shares = np.array([min(k, n) / n for k, n in pairs])
    lo, hi = proportion_interval(shares, counts)
    assert 0.0 <= lo <= shares.mean() <= hi <= 1.0


@given(st.lists(st.floats(0, 1e3), min_size=2, max_size=6))
def test_t_interval_respects_bounds(values):
    lo, hi = t_interval(values, bounds=(0.0, np.inf))
    assert lo >= 0.0 and lo <= np.mean(values) + 1e-9 * (1 + np.mean(values)) and hi >= lo


@st.composite
def recourse_tables(draw):
    """Small recourse tables: 1-4 replications, 1-8 people, two policies, a gender column."""
    reps = draw(st.integers(1, 4))
    n = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    p_found = draw(st.sampled_from([0.0, 0.3, 0.9, 1.0]))
    p_valid = draw(st.sampled_from([0.0, 0.5, 1.0]))
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(reps):
        gender = rng.integers(0, 2, n)
        for policy in ("a", "b"):
            found = rng.random(n) < p_found
            valid = found & (rng.random(n) < p_valid)
            cost = np.where(found, rng.exponential(0.05, n) * rng.integers(0, 2, n), np.nan)
            rows.append(pd.DataFrame({
                "replication": r, "condition": "c", "policy": policy,
                "applicant_id": np.arange(n), "gender": gender, "found": found,
                "valid": valid, "plausible": found & (rng.random(n) < 0.5),
                "hard_action": found & (rng.random(n) < 0.5), "violation": False,
                "cost": cost, "cost_unweighted": cost,
                "sparsity": np.where(found, rng.integers(1, 4, n), np.nan),
                "proximity": cost, "logp_cf": np.where(found, rng.normal(0, 3, n), np.nan)}))
    return pd.concat(rows, ignore_index=True)


def _check_range(lo, hi, estimate, low, high):
    ok = np.isfinite(lo)
    assert (lo[ok] >= low - TOL).all() and (hi[ok] <= high + TOL).all()
    assert (lo[ok] <= estimate[ok]).all() and (estimate[ok] <= hi[ok]).all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recourse_tables())
def test_no_summary_interval_outside_its_metric_range(table):
    summary = summarize_recourse(table, ["gender"])
    for name, metric in METRICS.items():
        if name not in summary.columns:
            continue
        low, high = VALUE_RANGES[metric.values]
        _check_range(summary[f"{name}_ci_low"].to_numpy(float),
                     summary[f"{name}_ci_high"].to_numpy(float),
                     summary[name].to_numpy(float), low, high)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recourse_tables())
def test_no_audit_interval_outside_its_metric_range(table):
    result = audit(table, by=["gender"], n_bootstrap=20, n_permutations=20, codebook=BOOK)
    for metric, rows in result.groups.groupby("metric"):
        low, high = VALUE_RANGES[METRICS[metric].values]
        _check_range(rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float),
                     rows["estimate"].to_numpy(float), low, high)
    gaps = result.gaps if len(result.gaps) else pd.DataFrame(columns=["metric"])
    for metric, rows in gaps.groupby("metric"):
        low, high = VALUE_RANGES[METRICS[metric].values]
        lo, hi = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
        ok = np.isfinite(lo)
        assert (lo[ok] >= low - high - TOL).all() and (hi[ok] <= high - low + TOL).all()


def test_summary_and_audit_give_a_proportion_the_same_interval():
    rng = np.random.default_rng(3)
    rows = []
    for r in range(3):
        n = 40
        found = rng.random(n) < 0.8
        rows.append(pd.DataFrame({
            "replication": r, "condition": "c", "policy": "p", "applicant_id": np.arange(n),
            "gender": rng.integers(0, 2, n), "found": found,
            "valid": found & (rng.random(n) < 0.6 + 0.1 * r), "plausible": found,
            "hard_action": found & (rng.random(n) < 0.3), "violation": False, "cost": 1.0,
            "cost_unweighted": 1.0, "sparsity": 1, "proximity": 1.0, "logp_cf": 0.0}))
    table = pd.concat(rows, ignore_index=True)
    summary = summarize_recourse(table, ["gender"]).set_index(["group_by", "group"])
    groups = audit(table, by=["gender"], n_bootstrap=50, n_permutations=50,
                   codebook=BOOK).groups.set_index(["metric", "grouping", "group"])
    for metric in ("validity", "plausibility", "hap"):
        for key, audit_key in ((("all", "all"), ("all", "all")),
                               (("gender", "0"), ("gender", "female")),
                               (("gender", "1"), ("gender", "male"))):
            ours = summary.loc[key, [metric, f"{metric}_ci_low", f"{metric}_ci_high"]]
            theirs = groups.loc[(metric, *audit_key), ["estimate", "ci_low", "ci_high"]]
            np.testing.assert_allclose(ours.to_numpy(float), theirs.to_numpy(float),
                                       rtol=1e-12)


def test_event_world_shares_stay_inside_zero_one():
    from simstudy.sim.outcomes import PROPORTION_METRICS, summarize

    # two replications that disagree a lot: the Student-t interval would leave [0, 1]
    rows = pd.DataFrame({"policy": "p", "replication": [0, 1], "group": "all", "n": [5, 6],
                         "approval_rate": [1.0, 0.5], "dropout_rate": [0.0, 0.5],
                         "active_rate": [0.0, 0.0], "recourses_per_person": [1.0, 3.0]})
    table = summarize(rows).set_index("metric")
    for m in PROPORTION_METRICS:
        assert 0.0 <= table.loc[m, "ci_low"] <= table.loc[m, "mean"] <= table.loc[m, "ci_high"]
        assert table.loc[m, "ci_high"] <= 1.0
    # not a share: the Student-t interval (which would reach below zero here) cut at zero
    assert table.loc["recourses_per_person", "ci_low"] == 0.0


def test_wilson_holds_zero_and_one():
    # the bound at p = 1 was 1 - 2^-53 < 1 (the audit drew a negative error bar and stopped)
    assert wilson_interval(1.0, 10)[1] == 1.0 and wilson_interval(0.0, 10)[0] == 0.0
    assert around(1.0, 0.7, 0.9999999999999999) == (0.7, 1.0)


def _holds(estimate, interval):
    lo, hi = interval
    assert lo <= estimate <= hi, (estimate, lo, hi)


levels = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
shares01 = st.floats(0, 1) | st.sampled_from([0.0, 1.0])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400), st.integers(1, 400), st.floats(0.01, 1e4), levels)
def test_every_proportion_interval_holds_its_estimate(k, n, n_eff, level):
    k = min(k, n)
    _holds(k / n, wilson_interval(k / n, n, level))
    _holds(k / n, wilson_interval(k / n, n_eff, level))
    _holds(k / n, clopper_pearson(k, n, level))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(shares01, st.integers(1, 50)), min_size=1, max_size=8), levels)
def test_replication_share_intervals_hold_their_mean(pairs, level):
    shares = np.array([p for p, _ in pairs])
    counts = np.array([n for _, n in pairs], dtype=float)
    _holds(float(shares.mean()), proportion_interval(shares, counts, level))
    _holds(float(shares.mean()), metric_interval("proportion", shares, counts, level))


values = st.lists(st.floats(-1e6, 1e6) | st.sampled_from([0.0, 1.0]), min_size=2, max_size=10)


@settings(max_examples=200, deadline=None)
@given(values, levels)
def test_mean_intervals_hold_their_mean(v, level):
    m, _, lo, hi = mean_sd_ci(v, level)
    _holds(m, (lo, hi))
    _holds(float(np.mean(v)), t_interval(v, level))
    _holds(float(np.mean(v)), metric_interval("real", v, level=level))
    nonneg = np.abs(v)
    _holds(float(np.mean(nonneg)), metric_interval("nonnegative", nonneg, level=level))
    _holds(float(np.mean(nonneg)), t_interval(nonneg, level, bounds=(0.0, np.inf)))


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(0, 1e6), levels)
def test_wald_interval_holds_its_estimate(estimate, se, level):
    _holds(estimate, wald_interval(estimate, se, level))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=60), st.floats(-2e3, 2e3),
       st.sampled_from([0.01, 0.05, 0.1, 0.5]))
def test_bootstrap_interval_holds_its_estimate(boot, estimate, alpha):
    # a biased statistic's resamples can all lie on one side of it
    _holds(estimate, percentile_interval(np.array(boot), alpha, estimate))
