"""Binomial and ordered-categorical GAMMs against mgcv 1.8-41 fits of the same tables.

The tables and fits live in tests/data/gamm_families/ (make_data.py writes the tables,
make_reference.R the mgcv fits); R is not needed to run these tests.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstudy.analysis.families import Binomial, OrderedCategorical
from simstudy.analysis.gamm import fit_gamm

DATA = Path(__file__).parent / "data" / "gamm_families"
CASES = ["binomial_linear", "binomial_none", "binomial_plateau",
         "ocat_linear", "ocat_none", "ocat_plateau", "ocat_three_values"]


def _fit(name):
    ref = json.loads((DATA / f"{name}.mgcv.json").read_text())
    data = pd.read_csv(DATA / f"{name}.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_gamm(data, ref["response"], ref["distance"], family=ref["family"],
                         n_categories=7 if ref["family"] == "ocat" else None)
    return model, ref


@pytest.mark.parametrize("name", CASES)
def test_agrees_with_mgcv(name):
    model, ref = _fit(name)
    assert model.fit_result_.converged
    assert abs(model.edf_ - ref["edf"]) <= 0.05
    assert (model.test_.p < 0.05) == (ref["p"] < 0.05)
    # the statistic as mgcv's summary prints it: Chi.sq (T itself), not T / ref_df
    summary = model.summary()
    assert np.isnan(summary["F"])
    np.testing.assert_allclose(summary["chi_sq"], ref["stat"], rtol=0.02, atol=0.01)
    grid = np.array(ref["grid"])
    if ref["family"] == "ocat":
        np.testing.assert_allclose(model.predict_response(grid), ref["probs"], atol=0.02)
        np.testing.assert_allclose(model.cut_points_, ref["theta"], atol=0.05)
    else:
        np.testing.assert_allclose(model.predict_response(grid), ref["response_grid"],
                                   atol=0.02)
    np.testing.assert_allclose(model.predict(grid), ref["link"], atol=0.05)


def test_three_valued_covariate_raises_k_with_a_warning():
    data = pd.read_csv(DATA / "ocat_three_values.csv")
    with pytest.warns(UserWarning, match="raised to the minimum 3"):
        model = fit_gamm(data, "y", "sparsity", family="ocat", n_categories=7)
    assert model.k_ == 3 and model.test_ is not None


def _numeric_derivative(fun, x, h=1e-6):
    return (fun(x + h) - fun(x - h)) / (2 * h)


@pytest.mark.parametrize("family", [Binomial(), OrderedCategorical(7)])
def test_eta_derivatives_match_finite_differences(family):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40) if isinstance(family, Binomial) else rng.integers(1, 8, 40)
    if isinstance(family, OrderedCategorical):
        family.set_theta(rng.normal(0, 0.3, 5))
    eta = rng.normal(0, 1, 40)
    g, w, w1 = family.derivatives(y, eta)
    per_obs = [lambda e, i=i: family.loglik(y[i:i + 1], np.array([e])) for i in range(5)]
    for i in range(5):
        np.testing.assert_allclose(_numeric_derivative(per_obs[i], eta[i]), g[i], atol=1e-6)
    np.testing.assert_allclose(_numeric_derivative(lambda e: family.derivatives(y, e)[0], eta),
                               -w, atol=1e-6)
    np.testing.assert_allclose(_numeric_derivative(lambda e: family.derivatives(y, e)[1], eta),
                               w1, atol=1e-6)


def test_cut_point_derivatives_match_finite_differences():
    fam = OrderedCategorical(7)
    rng = np.random.default_rng(1)
    y, eta, tau = rng.integers(1, 8, 60), rng.normal(0, 1, 60), rng.normal(-0.1, 0.3, 5)
    fam.set_theta(tau)
    dl, dg, dw = fam.theta_derivatives(y, eta)
    for m in range(5):
        def at(t, m=m):
            shifted = tau.copy()
            shifted[m] = t
            fam.set_theta(shifted)
            ll = np.array([fam.loglik(y[i:i + 1], eta[i:i + 1]) for i in range(y.size)])
            g, w, _ = fam.derivatives(y, eta)
            return np.concatenate([ll, g, w])

        num = _numeric_derivative(at, tau[m])
        np.testing.assert_allclose(num, np.concatenate([dl[:, m], dg[:, m], dw[:, m]]),
                                   atol=1e-6)
    fam.set_theta(tau)


def test_laml_gradient_matches_finite_differences():
    from simstudy.analysis.laml import MixedDesign, _Problem
    from simstudy.analysis.smooth import ThinPlateSpline

    data = pd.read_csv(DATA / "ocat_plateau.csv").head(150)
    x = data["proximity"].to_numpy()
    basis = ThinPlateSpline(5).fit(x)
    fixed = np.column_stack([np.ones_like(x), basis.transform(x)])
    penalty = np.concatenate([[0.0], basis.penalty_])
    groups = np.unique(data["uid"], return_inverse=True)[1]
    design = MixedDesign(fixed, penalty, groups, groups.max() + 1,
                         np.column_stack([np.ones_like(x), x]))
    fam = OrderedCategorical(7)
    y = fam.check(data["y"].to_numpy())
    prob = _Problem(design, y, fam, slice(1, 5), penalty)
    params = np.concatenate([[1.0, 0.5, 2.0], fam.start_theta(y)])
    _, grad = prob.criterion(params)
    for j in range(params.size):
        step = np.zeros_like(params)
        step[j] = 1e-5
        num = (prob.criterion(params + step, gradient=False)
               - prob.criterion(params - step, gradient=False)) / 2e-5
        assert abs(num - grad[j]) < 1e-4 * max(1.0, abs(num))


def test_binomial_refuses_other_values():
    with pytest.raises(ValueError, match="0 or 1"):
        Binomial().check(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="1..7"):
        OrderedCategorical(7).check(np.array([1, 8]))


def test_collapsed_variance_restarts_to_the_better_criterion():
    # Nobody answers the top category and the intercept SD is small: from the default start
    # the criterion's flat tail towards sd = 0 stops L-BFGS-B with a zero gradient.
    from simstudy.analysis.gamm import GAMM

    ref = json.loads((DATA / "ocat_empty_top.mgcv.json").read_text())
    data = pd.read_csv(DATA / "ocat_empty_top.csv")
    assert not (data["y"] == 7).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        early = GAMM(family="ocat", n_categories=7, multistart=False).fit(
            data["sparsity"], data["y"], data["uid"])
        model = GAMM(family="ocat", n_categories=7).fit(data["sparsity"], data["y"],
                                                        data["uid"])
    assert early.sd_intercept_ < 0.01 and early.laml_.converged   # the early stop
    # the project's own criterion is lower at the restarted optimum ...
    assert model.laml_.objective < early.laml_.objective - 1e-3
    assert model.laml_.converged and model.laml_.starts > 2
    # ... which is mgcv's: both variance components agree with its fit
    assert abs(model.sd_intercept_ - ref["sd_intercept"]) < 0.01
    assert abs(model.sd_slope_ - ref["sd_slope"]) < 0.005
    np.testing.assert_allclose(model.summary()["chi_sq"], ref["stat"], rtol=0.01)
    np.testing.assert_allclose(model.predict(np.array(ref["grid"])), ref["link"], atol=0.01)
