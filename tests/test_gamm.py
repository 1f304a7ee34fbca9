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
    assert abs(s["edf"] - ref["edf"]) <= 0.01
    assert abs(s["p"] - ref["p"]) <= 0.005  # mgcv 1.8-41's exact mixture tail
    assert s["reml_converged"]
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


FAMILIES = Path(__file__).parent / "data" / "gamm_families"


def test_two_optimum_criterion_reaches_the_better_optimum():
    # A null study whose REML criterion has a near-linear optimum (edf 1) and a better,
    # wigglier one that mgcv reaches (edf 3.83, p 0.200).
    data = pd.read_csv(FAMILIES / "two_optima.csv")
    ref = json.loads((FAMILIES / "two_optima.mgcv.json").read_text())
    x, y, uid = (data[c].to_numpy(float) for c in ("sparsity", "rating", "uid"))
    single = GAMM(multistart=False).fit(x, y, uid)
    multi = GAMM().fit(x, y, uid)
    assert multi.reml_.starts == 2
    assert multi.reml_.objective < single.reml_.objective - 1e-3
    assert abs(multi.edf_ - ref["edf"]) <= 0.01 and abs(single.edf_ - ref["edf"]) > 1
    assert abs(multi.test_.p - ref["p"]) <= 0.005


def test_three_valued_covariate_fits_with_k_raised():
    from simstudy.analysis.gamm import FitWarning
    from simstudy.analysis.ordinal import fit_ordinal

    data = pd.read_csv(FAMILIES / "ocat_three_values.csv")
    with pytest.warns(FitWarning, match="raised to the minimum 3"):
        model = fit_gamm(data, "y", "sparsity")
    assert model.k_ == 3 and np.isfinite(model.test_.p)
    assert any("raised" in w for w in model.warnings_)
    with pytest.warns(FitWarning, match="ordinal fit: basis dimension k=2 raised"):
        out = fit_ordinal(data, "y", "sparsity")
    assert out["df"] == 2 and 0 <= out["p"] <= 1
    with pytest.warns(FitWarning, match="raised"):
        assert fit_ordinal(data, "y", "sparsity", k=2)["df"] == 2


def test_impossible_fits_say_why():
    rng = np.random.default_rng(0)
    uid = np.repeat(np.arange(20), 4)
    y = rng.normal(size=uid.size)
    with pytest.raises(ValueError, match="at least 3 distinct covariate values, got 2"):
        GAMM().fit(rng.integers(0, 2, uid.size).astype(float), y, uid)
    with pytest.raises(ValueError, match="at least 2 participants, got 1"):
        GAMM().fit(rng.uniform(size=uid.size), y, np.zeros(uid.size))


def test_unconverged_reml_is_reported_with_a_warning():
    from simstudy.analysis.gamm import FitWarning

    data = pd.read_csv(DATA / "study_c.csv")
    with pytest.warns(FitWarning, match="did not converge"):
        model = GAMM(max_iter=1).fit(data["sparsity"].to_numpy(float),
                                     data["act"].to_numpy(float), data["uid"].to_numpy())
    assert model.summary()["reml_converged"] is False
