import numpy as np

from simstudy.analysis.permutation import permutation_smooth_test, permute_within_groups


def test_permutation_stays_within_each_participant():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 6, 40)
    values = rng.normal(size=40)
    out = permute_within_groups(values, groups, np.random.default_rng(1))
    assert not np.array_equal(out, values)
    for g in np.unique(groups):
        np.testing.assert_array_equal(np.sort(out[groups == g]), np.sort(values[groups == g]))
    again = permute_within_groups(values, groups, np.random.default_rng(1))
    np.testing.assert_array_equal(out, again)


def test_permutation_p_is_smallest_under_a_strong_effect_and_valid_under_the_null():
    rng = np.random.default_rng(2)
    uid = np.repeat(np.arange(20), 4)
    x = rng.integers(1, 8, uid.size).astype(float)
    base = rng.normal(0, 1, 20)[uid] + rng.normal(0, 1, uid.size)
    strong = permutation_smooth_test(x, base - 0.6 * x, uid, 4, np.random.default_rng(3))
    assert strong["p"] == 0.2 and strong["asymptotic_p"] < 1e-6
    null = permutation_smooth_test(x, base, uid, 4, np.random.default_rng(3))
    assert null["p"] in {k / 5 for k in range(1, 6)}
