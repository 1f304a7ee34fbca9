"""The GAMM engine against mgcv reference fits and statsmodels' MixedLM."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstudy.analysis.gamm import GAMM, fit_gamm

DATA = Path(__file__).parent / "data" / "gamm"
CASES = [(s, key) for s in "abc"
         for key in json.loads((DATA / f"study_{s}.mgcv.json").read_text())]


def _close_sd(ours: float, ref: float) -> bool:
    return abs(ours - ref) <= (0.02 if ref < 0.1 else 0.1 * ref)


@pytest.mark.parametrize("study,key", CASES)
def test_agrees_with_mgcv(study, key):
    data = pd.read_csv(DATA / f"study_{study}.csv")
    ref = json.loads((DATA / f"study_{study}.mgcv.json").read_text())[key]
    response, distance = key.split("~")
    model = fit_gamm(data, response, distance)
    s = model.summary()
    assert abs(s["edf"] - ref["edf"]) <= 0.5
    assert (s["F"] < 1 and ref["F"] < 1) or abs(s["F"] - ref["F"]) <= 0.2 * ref["F"]
    for alpha in (0.05, 0.001):
        assert (s["p"] < alpha) == (ref["p"] < alpha)
    assert _close_sd(s["sd_intercept"], ref["sd_intercept"])
    assert _close_sd(s["sd_slope"], ref["sd_slope"])
    assert _close_sd(s["sd_resid"], ref["sd_resid"])
    grid = np.linspace(data[distance].min(), data[distance].max(), 5)
    np.testing.assert_allclose(model.predict(grid), list(ref["grid"].values()), atol=0.1)


def test_linear_mixed_model_matches_statsmodels():
    import statsmodels.formula.api as smf

    data = pd.read_csv(DATA / "study_c.csv")
    ours = GAMM(smooth="linear").fit(data["sparsity"].to_numpy(float),
                                     data["act"].to_numpy(float), data["uid"].to_numpy())
    md = smf.mixedlm("act ~ sparsity", data, groups="uid", re_formula="0",
                     vc_formula={"a": "1", "c": "0 + sparsity"})
    ref = md.fit(reml=True)
    assert ref.converged
    vc = dict(zip(ref.model.exog_vc.names, ref.vcomp, strict=True))
    np.testing.assert_allclose(ours.coef_[:2], ref.fe_params.to_numpy(), rtol=0.02, atol=1e-4)
    np.testing.assert_allclose(ours.sd_intercept_ ** 2, vc["a"], rtol=0.03)
    np.testing.assert_allclose(ours.sd_slope_ ** 2, vc["c"], rtol=0.05)
    np.testing.assert_allclose(ours.scale_, ref.scale, rtol=0.02)


def test_null_smooth_test_is_calibrated_on_small_studies():
    # 60 studies of 60 people with pure noise + participant effects: the 5% test rejects rarely.
    rng = np.random.default_rng(5)
    pvals = []
    for _ in range(60):
        uid = np.repeat(np.arange(60), 5)
        x = rng.integers(1, 13, uid.size).astype(float)
        y = 4 + rng.normal(0, 1, 60)[uid] + rng.normal(0, 1.0, uid.size)
        pvals.append(GAMM().fit(x, np.clip(np.round(y), 1, 7), uid).test_.p)
    assert np.mean(np.array(pvals) < 0.05) <= 0.15
    assert np.mean(np.array(pvals) < 0.5) >= 0.3  # not degenerate at p = 1


def test_detects_an_effect_and_band_covers_truth():
    rng = np.random.default_rng(2)
    uid = np.repeat(np.arange(150), 5)
    x = rng.uniform(0, 6, uid.size)
    truth = lambda v: 4 - 1.5 * np.minimum(v, 2)  # noqa: E731
    y = truth(x) + rng.normal(0, 0.8, 150)[uid] + rng.normal(0, 1.0, uid.size)
    m = GAMM(k=10).fit(x, y, uid)
    assert m.test_.p < 1e-6 and m.edf_ > 2
    band = m.predict_band(np.linspace(0.2, 5.8, 15))
    inside = (band["lower"] <= truth(band["x"]) + 0.15) & (truth(band["x"]) - 0.15 <= band["upper"])
    assert inside.mean() >= 0.8


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        GAMM().fit(np.arange(5.0), np.arange(4.0), np.arange(5))
    with pytest.raises(ValueError):
        GAMM(smooth="cubic").fit(np.arange(5.0), np.arange(5.0), np.arange(5))
