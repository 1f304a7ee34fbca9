"""One adjustment of p-values for both families: the formulas, and the two rules for NaN."""

import gc

import numpy as np
import pytest
from statsmodels.stats import multitest

from simstudy.analysis.multiplicity import adjust_pvalues


def multipletests(p, method):
    # statsmodels' Holm runs a full garbage collection on every call (seconds in a large test
    # process); the values do not depend on it
    collect, gc.collect = gc.collect, lambda *args: 0
    try:
        return multitest.multipletests(p, method=method)
    finally:
        gc.collect = collect



@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bonferroni", "bonferroni"),
                                          ("bh", "fdr_bh")])
def test_adjustments_equal_statsmodels(ours, theirs):
    rng = np.random.default_rng(11)
    for _ in range(50):
        p = rng.random(int(rng.integers(1, 12))) ** 2
        expected = multipletests(p, method=theirs)[1]
        for missing in ("exclude", "count"):  # without NaN the two rules agree
            assert adjust_pvalues(p, ours, missing=missing) == pytest.approx(expected)
    assert adjust_pvalues(p, "none").tolist() == p.tolist()


def test_the_hypothesis_family_rule_equals_statsmodels():
    rng = np.random.default_rng(5)
    for _ in range(50):
        p = rng.random(int(rng.integers(1, 7))) ** 2
        for method in ("holm", "bonferroni"):
            assert adjust_pvalues(p, method, missing="count") == pytest.approx(
                multipletests(p, method=method)[1])


def test_the_audit_rule_leaves_a_nan_out_of_the_family():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.001])
    ok = np.isfinite(p)
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
        adj = adjust_pvalues(p, ours, missing="exclude")
        assert np.isnan(adj[~ok]).all()
        np.testing.assert_allclose(adj[ok], multipletests(p[ok], method=theirs)[1])


def test_a_missing_p_value_is_excluded_or_counted_as_one():
    p = np.array([0.01, 0.02, np.nan, 0.04])
    expected = {  # exclude: m = 3 over the finite three; count: m = 4 with the NaN as p = 1
        ("holm", "exclude"): [0.03, 0.04, 0.04], ("holm", "count"): [0.04, 0.06, 0.08],
        ("bonferroni", "exclude"): [0.03, 0.06, 0.12],
        ("bonferroni", "count"): [0.04, 0.08, 0.16],
        ("bh", "exclude"): [0.03, 0.03, 0.04], ("bh", "count"): [0.04, 0.04, 0.16 / 3],
        ("none", "exclude"): [0.01, 0.02, 0.04], ("none", "count"): [0.01, 0.02, 0.04]}
    for (method, missing), finite in expected.items():
        adj = adjust_pvalues(p, method, missing=missing)
        assert np.isnan(adj[2]), (method, missing)  # NaN in, NaN out under both rules
        assert adj[[0, 1, 3]].tolist() == pytest.approx(finite), (method, missing)
    # exclude matches the family without the NaN; count matches it with the NaN as p = 1
    finite = p[[0, 1, 3]]
    assert adjust_pvalues(p, "holm", missing="exclude")[[0, 1, 3]] == pytest.approx(
        multipletests(finite, method="holm")[1])
    assert adjust_pvalues(p, "holm", missing="count")[[0, 1, 3]] == pytest.approx(
        multipletests(np.nan_to_num(p, nan=1.0), method="holm")[1][[0, 1, 3]])
    assert np.isnan(adjust_pvalues([np.nan, np.nan], "holm", missing="count")).all()
    assert adjust_pvalues([], "bh").shape == (0,)


def test_an_unknown_method_or_rule_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="holm, bonferroni, bh or none"):
        adjust_pvalues([0.01, 0.2], "hochberg")
    with pytest.raises(ValueError, match="exclude or count"):
        adjust_pvalues([0.01, 0.2], "holm", missing="drop")
