import numpy as np
from scipy import stats

from simstudy.analysis.wood_test import liu_tail, mixture_f_tail, smooth_test


def test_liu_tail_is_exact_for_equal_weights():
    for x in (0.5, 3.0, 9.0):
        np.testing.assert_allclose(liu_tail(x, np.ones(3)), stats.chi2.sf(x, 3), rtol=1e-10)


def test_mixture_f_tail_approximates_f():
    np.testing.assert_allclose(mixture_f_tail(4.0, np.ones(3), 40), stats.f.sf(4 / 3, 3, 40),
                               rtol=0.03)


def test_integer_rank_reduces_to_an_f_test():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    b = np.array([0.2, -0.1, 0.05])
    v = np.linalg.inv(x.T @ x) * 1.3
    res = smooth_test(b, x, v, 3.0, res_df=150)
    t = b @ (x.T @ x) @ b / 1.3
    np.testing.assert_allclose(res.stat, t, rtol=1e-8)
    np.testing.assert_allclose(res.F, t / 3, rtol=1e-8)
    assert res.ref_df == 3.0
    if res.p > 0.5:
        np.testing.assert_allclose(res.p, stats.f.sf(t / 3, 3, 150), rtol=1e-8)
    frac = smooth_test(b, x, v, 2.4, res_df=150)
    assert frac.ref_df == 2.4 and 0 < frac.p <= 1
