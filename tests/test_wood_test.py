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


def test_psum_chisq_is_exact_for_chi2_and_f():
    from simstudy.analysis.wood_test import psum_chisq

    for x in (0.3, 3.0, 12.0):
        np.testing.assert_allclose(psum_chisq(x, np.ones(3)), stats.chi2.sf(x, 3), atol=1e-8)
    # sum of r chi^2_1 minus (d / k0) chi^2_k0 > 0  <=>  F(r, k0) > d / r.
    for d, k0 in ((2.0, 40), (9.0, 300), (30.0, 1700)):
        np.testing.assert_allclose(psum_chisq(0.0, [1, 1, 1, -d / k0], [1, 1, 1, k0]),
                                   stats.f.sf(d / 3, 3, k0), atol=1e-8)


def test_fractional_rank_p_uses_the_exact_mixture_tail():
    from simstudy.analysis.wood_test import psum_chisq

    rng = np.random.default_rng(3)
    x = rng.normal(size=(100, 2))
    v = np.linalg.inv(x.T @ x)
    res = smooth_test(np.array([0.05, 0.02]), x, v, 1.5, res_df=-1)
    # rank 1.5: one weighted pair (1 + nu +- sqrt((1 + nu)(1 - nu))) / 2, nu = 0.5.
    w = np.array([(1.5 + np.sqrt(0.75)) / 2, (1.5 - np.sqrt(0.75)) / 2])
    assert res.p <= 1 and abs(res.p - psum_chisq(res.stat, w)) < 0.05
