"""Hypotheses tested as stated: directions, adjustment, multiplicity, failures."""

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from simstudy.analysis.multiplicity import adjust_pvalues
from simstudy.study.hypotheses import HypothesisSpec
from simstudy.study.hypothesis_tests import evaluate_hypotheses, one_sided_p


def _table(effect=0.8, slope=-0.6, gap=0.0, n=60, seed=0):
    rng = np.random.default_rng(seed)
    uid = np.repeat(np.arange(n), 2)
    policy = np.tile(["universal", "personal"], n)
    sparsity = rng.integers(1, 5, 2 * n)
    privileged = (np.arange(n) % 3 == 0)[uid]
    act = (4 + rng.normal(0, 0.8, n)[uid] + effect * (policy == "personal") + slope * sparsity
           + gap * privileged + rng.normal(0, 1, 2 * n))
    return pd.DataFrame({"uid": uid, "policy": policy, "sparsity": sparsity, "act": act,
                         "blocked": rng.integers(0, 2, 2 * n), "privileged": privileged})


def _h(**kw):
    return HypothesisSpec.model_validate(kw)


def test_the_direction_decides_the_p_value():
    table = _table()
    greater = _h(contrast=["personal", "universal"], direction="greater")
    less = _h(contrast=["personal", "universal"], direction="less")
    res = evaluate_hypotheses(table, [greater, less], multiplicity="none")
    assert res.loc[0, "p"] < 0.05 < res.loc[1, "p"]
    assert res.loc[0, "p"] + res.loc[1, "p"] == pytest.approx(1.0)
    falls = _h(distance="sparsity", direction="decreasing", adjust=["blocked"], smooth=False)
    rises = _h(distance="sparsity", direction="increasing", smooth=False)
    res = evaluate_hypotheses(table, [falls, rises], multiplicity="none")
    assert res.loc[0, "rejected"] and not res.loc[1, "rejected"]
    assert res.loc[0, "estimate"] < 0


def test_a_gap_compares_the_named_groups():
    table = _table(gap=1.5, n=90)
    res = evaluate_hypotheses(table, [_h(gap=["privileged", "non_privileged"],
                                         direction="greater")])
    assert res.loc[0, "rejected"] and res.loc[0, "estimate"] > 0.5
    assert res.loc[0, "n_participants"] == 90


def test_holm_adjusts_and_a_failed_fit_is_not_a_non_rejection():
    assert adjust_pvalues(np.array([0.01, 0.02, 0.03]), "holm",
                          missing="count").tolist() == pytest.approx([0.03, 0.04, 0.04])
    assert adjust_pvalues(np.array([0.01, 0.02]), "bonferroni",
                          missing="count").tolist() == pytest.approx([0.02, 0.04])
    table = _table()
    table["policy"] = "universal"  # nothing to contrast: the fit cannot be made
    res = evaluate_hypotheses(table, [_h(contrast=["personal", "universal"])])
    assert bool(res.loc[0, "failed"]) and not bool(res.loc[0, "rejected"])
    assert np.isnan(res.loc[0, "p"])


def test_one_sided_p_values():
    assert one_sided_p(0.0, "greater") == pytest.approx(0.5)
    assert one_sided_p(-1.96, "two-sided") == pytest.approx(0.05, abs=1e-3)


@pytest.mark.parametrize("doc, field", [
    ({"contrast": ["a", "b"], "distance": "sparsity"}, "exactly one"),
    ({"distance": "sparsity", "direction": "greater"}, "direction"),
    ({"contrast": ["a", "a"]}, "two different"),
    ({"gap": ["privileged", "non_privileged"], "direction": "decreasing"}, "direction"),
])
def test_malformed_hypotheses_are_refused(doc, field):
    with pytest.raises(ValidationError, match=field):
        HypothesisSpec.model_validate(doc)


def test_holm_bonferroni_and_none_reject_at_the_boundary():
    from simstudy.study.hypothesis_tests import reject

    alpha = 0.05
    # m = 3: Holm's thresholds alpha/3, alpha/2, alpha; each p sits exactly on its boundary
    p = np.array([alpha / 2, alpha / 3, alpha])
    assert reject(p, alpha, "holm").tolist() == [True, True, True]
    just_above = np.nextafter(alpha / 3, 1.0)
    assert reject(np.array([just_above, alpha / 2, alpha]), alpha, "holm").tolist() == [
        False, False, False]  # the smallest fails its threshold: the step-down stops
    assert reject(np.array([alpha / 3, 0.5, np.nan]), alpha, "bonferroni").tolist() == [
        True, False, False]
    assert reject(np.array([alpha, np.nextafter(alpha, 1.0)]), alpha, "none").tolist() == [
        True, False]
    # the family's table rejects at the boundary too: two hypotheses with p = alpha / 2 each
    table = _table()
    h = _h(contrast=["personal", "universal"], direction="greater")
    res = evaluate_hypotheses(table, [h, h.model_copy(update={"name": "again"})])
    p0 = float(res.loc[0, "p"])
    assert reject(np.array([p0, p0]), 2 * p0, "holm").all()  # p0 == (2 p0) / 2: rejected
    with pytest.raises(ValueError, match="holm, bonferroni or none"):
        reject(np.array([0.01]), alpha, "bh")  # no rejection rule here for an FDR adjustment


def test_the_smooth_keeps_the_adjust_covariate_and_few_distances_are_not_failures():
    from simstudy.analysis.gamm import fit_gamm

    rng = np.random.default_rng(3)
    n = 80
    uid = np.repeat(np.arange(n), 4)
    sparsity = rng.integers(1, 7, 4 * n).astype(float)
    blocked = rng.integers(0, 2, 4 * n).astype(float)
    # the covariate carries a large effect and is correlated with the distance
    sparsity = sparsity + 2 * blocked
    act = 4 - 0.1 * sparsity - 2.5 * blocked + rng.normal(0, 0.5, n)[uid] + rng.normal(
        0, 0.7, 4 * n)
    table = pd.DataFrame({"uid": uid, "sparsity": sparsity, "act": act, "blocked": blocked})
    h = _h(distance="sparsity", direction="decreasing", adjust=["blocked"])
    res = evaluate_hypotheses(table, [h]).iloc[0]
    with_cov = fit_gamm(table, "act", "sparsity", adjust=["blocked"])
    without = fit_gamm(table, "act", "sparsity")
    assert res["smooth_status"] == "fitted"
    assert res["smooth_p"] == pytest.approx(with_cov.test_.p)
    assert res["smooth_edf"] == pytest.approx(with_cov.edf_)
    assert with_cov.test_.p != pytest.approx(without.test_.p)  # the covariate matters here
    # three distinct distances: the smooth is not fitted, and that is not a failed fit
    few = table.assign(sparsity=np.minimum(table["sparsity"], 3).clip(1))
    res = evaluate_hypotheses(few, [h]).iloc[0]
    assert res["smooth_status"] == "too_few_distances" and not res["failed"]
    assert np.isnan(res["smooth_p"])


def test_the_smooth_power_counts_skipped_apart_from_failed():
    from simstudy.study.hypothesis_power import hypothesis_power_table

    h = _h(name="D", distance="sparsity", direction="decreasing")
    rows = pd.DataFrame({"n": [10] * 4, "sim": range(4), "p:D": [0.01] * 4,
                         "estimate:D": [-1.0] * 4, "failed:D": [0.0] * 4,
                         "significant:D": [1] * 4,
                         "smooth_p:D": [0.01, np.nan, np.nan, 0.5],
                         "smooth_skipped:D": [0.0, 1.0, 0.0, 0.0],
                         "failed:any": [0.0] * 4, "significant:all": [1] * 4})
    table = hypothesis_power_table(rows, [h], "holm").set_index("hypothesis")
    smooth = table.loc["D:smooth"]
    assert (smooth["skipped"], smooth["failed"], smooth["fitted"]) == (1, 1, 2)
    assert smooth["power"] == 0.5


def test_one_rating_per_participant_is_fitted_without_a_random_intercept(recwarn):
    rng = np.random.default_rng(1)
    n = 120
    policy = np.where(np.arange(n) % 2 == 0, "personal", "universal")
    act = 4 + 0.6 * (policy == "personal") + rng.normal(0, 1.2, n)
    table = pd.DataFrame({"uid": np.arange(n), "policy": policy, "act": act})
    h = _h(contrast=["personal", "universal"], direction="greater")
    res = evaluate_hypotheses(table, [h]).iloc[0]
    from scipy import stats

    t = stats.ttest_ind(act[policy == "personal"], act[policy == "universal"],
                        alternative="greater")
    assert res["model"] == "ols" and not res["failed"]
    assert res["p"] == pytest.approx(t.pvalue, rel=1e-9)  # pooled-variance t test
    assert not [w for w in recwarn if "random" in str(w.message).lower()]
    within = _table()
    assert evaluate_hypotheses(within, [h]).iloc[0]["model"] == "mixed"
