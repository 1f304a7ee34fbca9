import numpy as np
import pytest

from simstudy.analysis.smooth import ThinPlateSpline, default_basis_size


def test_basis_is_centred_with_linear_null_space():
    x = np.random.default_rng(0).uniform(0, 10, 300)
    tp = ThinPlateSpline(10).fit(x)
    b = tp.transform(x)
    assert b.shape == (300, 9)
    np.testing.assert_allclose(b.sum(axis=0), 0, atol=1e-8)
    assert tp.rank_ == 8 and tp.penalty_[-1] == 0
    # The unpenalized column is an affine function of x (the linear trend).
    coef = np.polyfit(x, b[:, -1], 1)
    np.testing.assert_allclose(np.polyval(coef, x), b[:, -1], atol=1e-8)


def test_new_points_interpolate_the_basis_and_basis_size_rule():
    x = np.repeat(np.arange(1.0, 13.0), 5)
    assert default_basis_size(x) == 10
    assert default_basis_size(np.arange(4.0)) == 3
    tp = ThinPlateSpline(10).fit(x)
    np.testing.assert_allclose(tp.transform(np.array([3.0])), tp.transform(x)[10:11], atol=1e-10)
    with pytest.raises(ValueError):
        ThinPlateSpline(10).fit(np.arange(5.0))
