"""Multiple-comparison adjustment of p-values: Holm, Bonferroni, Benjamini-Hochberg.

The one home of the adjustment: the fairness audit's families of gaps
(:mod:`simstudy.analysis.audit`, where a gap without a p-value is left out of its family) and a
study's confirmatory hypotheses (:mod:`simstudy.study.hypothesis_tests`, where a failed fit
counts as a hypothesis tested and not rejected) both adjust with :func:`adjust_pvalues`, each
stating its rule for a missing p-value.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["adjust_pvalues"]

_METHODS = ("holm", "bonferroni", "bh", "none")
_MISSING = ("exclude", "count")


def adjust_pvalues(p: ArrayLike, method: str = "holm", *,
                   missing: str = "exclude") -> np.ndarray:
    """Adjusted p-values of one family of ``m`` tests.

    With the family's p-values sorted increasingly, ``p_(1) <= ... <= p_(m)`` (ties keep their
    input order, a stable sort):

    * ``holm``, Holm's step-down (family-wise error):
      ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``;
    * ``bonferroni`` (family-wise error): ``p~_i = min(1, m p_i)``;
    * ``bh``, Benjamini-Hochberg's step-up (false discovery rate):
      ``p~_(i) = min_{j >= i} min(1, m p_(j) / j)``;
    * ``none``: ``p~_i = p_i``.

    A hypothesis is rejected at level ``alpha`` where ``p~ <= alpha``. A missing p-value (NaN,
    or any value that is not finite) is NaN in the output under either rule; what it does to
    the others is ``missing``:

    * ``exclude``: it is no test at all and does not count towards ``m``;
    * ``count``: it is a test made and not rejected, entering as ``p = 1`` and counting
      towards ``m`` (the conservative reading).

    Args:
        p: the family's p-values.
        method: ``holm``, ``bonferroni``, ``bh`` or ``none``.
        missing: ``exclude`` or ``count``.

    Returns:
        The adjusted p-values (float, the shape of ``p``), NaN where ``p`` is missing.

    Raises:
        ValueError: an unknown ``method`` or ``missing`` rule.

    References:
        Holm, S. (1979). A simple sequentially rejective multiple test procedure.
        Scandinavian Journal of Statistics 6(2), 65-70.
        Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery rate: a
        practical and powerful approach to multiple testing. Journal of the Royal Statistical
        Society, Series B 57(1), 289-300.

    Example:
        >>> import numpy as np
        >>> adjust_pvalues([0.01, 0.02, 0.03], "holm").round(2).tolist()
        [0.03, 0.04, 0.04]
        >>> adjust_pvalues([0.01, 0.02, 0.03], "bh").round(2).tolist()
        [0.03, 0.03, 0.03]
        >>> p = np.array([0.01, 0.04, np.nan])
        >>> adjust_pvalues(p, "holm", missing="exclude").round(2).tolist()  # m = 2
        [0.02, 0.04, nan]
        >>> adjust_pvalues(p, "holm", missing="count").round(2).tolist()  # m = 3
        [0.03, 0.08, nan]
    """
    if method not in _METHODS:
        raise ValueError(f"unknown multiplicity method {method!r}; choose "
                         f"{', '.join(_METHODS[:-1])} or {_METHODS[-1]}")
    if missing not in _MISSING:
        raise ValueError(f"unknown missing rule {missing!r}; choose exclude or count")
    p = np.asarray(p, dtype=float)
    flat = p.ravel()
    finite = np.isfinite(flat)
    out = np.full(flat.shape, np.nan)
    if method == "none" or not finite.any():
        out[finite] = flat[finite]
        return out.reshape(p.shape)
    if missing == "exclude":
        idx = np.flatnonzero(finite)
        values = flat[idx]
    else:
        idx = np.arange(flat.size)
        values = np.where(finite, flat, 1.0)
    m = len(values)
    if method == "bonferroni":
        adjusted = np.minimum(1.0, m * values)
    else:
        order = np.argsort(values, kind="stable")
        ps = values[order]
        if method == "holm":  # running maximum of (m - i) p_(i), i = 0..m-1
            steps = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ps))
        else:  # bh: running minimum, from the largest, of m p_(i) / i, i = 1..m
            rank = np.arange(1, m + 1)
            steps = np.minimum.accumulate(np.minimum(1.0, m * ps / rank)[::-1])[::-1]
        adjusted = np.empty(m)
        adjusted[order] = steps
    out[idx] = adjusted
    out[~finite] = np.nan
    return out.reshape(p.shape)
