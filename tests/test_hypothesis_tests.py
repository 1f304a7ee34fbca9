"""Hypotheses tested as stated: directions, adjustment, multiplicity, failures."""

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from simstudy.study.hypotheses import HypothesisSpec
from simstudy.study.hypothesis_tests import adjust_p, evaluate_hypotheses, one_sided_p


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
    assert adjust_p(np.array([0.01, 0.02, 0.03]), "holm").tolist() == pytest.approx(
        [0.03, 0.04, 0.04])
    assert adjust_p(np.array([0.01, 0.02]), "bonferroni").tolist() == pytest.approx([0.02, 0.04])
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
