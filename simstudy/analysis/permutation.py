"""A permutation version of the smooth test, for when the asymptotic p-value is anti-conservative.

Wood's (2013) test refers its statistic T to a mixture of chi-squares; on small rating studies
with few distinct distances and rounded ratings it can reject a true null more often than
alpha (see ``benchmarks/calibration.py``). Under the null "ratings do not depend on the
distance", the distances of one participant's ratings are exchangeable, so permuting them
within each participant keeps every participant effect and the rating distribution (rounding,
floor and ceiling included) and gives T's null distribution without a distributional model:

    p = (1 + #{b : T_b >= T}) / (1 + B),

with T_b the statistic refitted on the b-th within-participant permutation. The test is exact
when the null has no participant random slope, and close when the slopes are small. Each
permutation costs one refit (started from the observed fit's smoothing parameters).

References:
    Good, P. (2005), "Permutation, Parametric and Bootstrap Tests of Hypotheses", Springer.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> uid = np.repeat(np.arange(30), 4)
    >>> x = rng.integers(1, 8, uid.size).astype(float)
    >>> y = rng.normal(size=uid.size)
    >>> out = permutation_smooth_test(x, y, uid, 19, np.random.default_rng(1))
    >>> 0.05 <= out["p"] <= 1.0
    True
"""

from __future__ import annotations

import warnings

import numpy as np

from .gamm import GAMM, FitWarning

__all__ = ["permutation_smooth_test", "permute_within_groups"]


def permute_within_groups(values: np.ndarray, groups: np.ndarray,
                          generator: np.random.Generator) -> np.ndarray:
    """``values`` shuffled among the rows of each group (rows of other groups untouched)."""
    values = np.asarray(values)
    keys = generator.random(values.size)
    order = np.lexsort((keys, groups))          # rows grouped, random order inside a group
    sorted_rows = np.lexsort((np.arange(values.size), groups))  # rows grouped, original order
    out = np.empty_like(values)
    out[sorted_rows] = values[order]
    return out


def permutation_smooth_test(x, y, groups, n_permutations: int,
                            generator: np.random.Generator, **gamm_params) -> dict:
    """Within-participant permutation p-value of the smooth test of :class:`GAMM`.

    Args:
        x, y, groups: distance, rating and participant of each rating.
        n_permutations: B, the number of permutations (p is a multiple of 1 / (B + 1)).
        generator: the random stream of the permutations.
        **gamm_params: passed to :class:`GAMM` (``family``, ``k``, ...).

    Returns:
        ``{"p", "stat", "asymptotic_p", "n_permutations"}``.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups)
    observed = GAMM(**gamm_params).fit(x, y, groups)
    rho = observed.fit_result_.rho
    exceed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        for _ in range(n_permutations):
            xb = permute_within_groups(x, groups, generator)
            fit = GAMM(**gamm_params).fit(xb, y, groups, rho0=rho)
            exceed += fit.test_.stat >= observed.test_.stat
    return {"p": (1 + exceed) / (1 + n_permutations), "stat": observed.test_.stat,
            "asymptotic_p": observed.test_.p, "n_permutations": n_permutations}
