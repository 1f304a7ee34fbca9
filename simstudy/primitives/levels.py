"""Features with levels: recourse values snapped to a feature's valid codes.

An integer-coded ordinal or categorical feature (education level, number of dependants,
employment type) takes only its codes, the keys of the world's codebook
(:attr:`~simstudy.world.base.FeatureRoles.levels`). A recourse that sets such a feature sets it
to a code: each policy's value ``v`` becomes the nearest code ``c`` among those the person
allows (inside their box ``[low, high]``, :func:`~simstudy.primitives.space.person_box`),

    ``c = argmin_{c in levels, low <= c <= high} |c - v|``  (ties: the lower code),

and a feature snapped back to its factual value is no longer acted on. A search that has just
placed ``v`` on the decision boundary snaps *outward* instead: to the nearest allowed code at
least as far from the factual ``x`` as ``v`` in the direction of the move,
``c = argmin |c - v|`` over ``(c - x) sign(v - x) >= |v - x|`` (the nearest allowed code when
there is none), so that the snapped change is not smaller than the one the boundary asked
for. A categorical feature's codes have no order, so its "nearest" code is one neighbour among
equals: acceptable for the methods that move values continuously (Wachter, Growing Spheres,
iCARMA), while the oracle tries every code. Distances and costs are then computed on the codes
(a categorical feature's change counts one unit, :func:`simstudy.metrics.normalized_change`).

Example:
    >>> import numpy as np
    >>> snapped, kept = snap_values(np.array([[2.4, 0.6]]), np.array([[True, True]]),
    ...                             np.array([[1.0, 1.0]]), {0: np.array([0.0, 1.0, 2.0, 3.0])})
    >>> snapped.tolist(), kept.tolist()
    ([[2.0, 0.6]], [[True, True]])
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["snap_values", "level_columns", "off_level"]


def level_columns(feature_names, levels: Mapping[str, tuple[float, ...]]
                  ) -> dict[int, np.ndarray]:
    """``{column: ascending codes}`` of the features with levels."""
    names = list(feature_names)
    return {names.index(f): np.asarray(codes, dtype=np.float64) for f, codes in levels.items()}


def snap_values(values: np.ndarray, intervened: np.ndarray, x: np.ndarray,
                levels: Mapping[int, np.ndarray], low: np.ndarray | None = None,
                high: np.ndarray | None = None, outward: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """Snaps the intervened values of level columns to the nearest allowed code.

    Args:
        values, intervened, x: ``(n, d)`` intervention values, where they apply, factuals.
        levels: ``{column: ascending codes}``.
        low, high: ``(n, d)`` optional bounds of the allowed values (the person's box, in the
            same units as ``values``).
        outward: snap to the nearest allowed code at least as far from ``x`` as the value, in
            the direction of the move (see above).

    Returns:
        ``(values, intervened)``: snapped copies; a column whose nearest allowed code is the
        factual value (or that has no allowed code) is no longer intervened on.
    """
    values = np.array(values, dtype=np.float64, copy=True)
    intervened = np.array(intervened, dtype=bool, copy=True)
    for j, codes in levels.items():
        rows = np.flatnonzero(intervened[:, j])
        if not len(rows):
            continue
        allowed = np.ones((len(rows), len(codes)), dtype=bool)
        if low is not None:
            allowed &= codes[None, :] >= low[rows, j, None]
        if high is not None:
            allowed &= codes[None, :] <= high[rows, j, None]
        gap = np.where(allowed, np.abs(codes[None, :] - values[rows, j, None]), np.inf)
        if outward:
            move = values[rows, j, None] - x[rows, j, None]
            beyond = (codes[None, :] - x[rows, j, None]) * np.sign(move) >= np.abs(move)
            far = np.where(beyond, gap, np.inf)
            gap = np.where(np.isfinite(far).any(axis=1, keepdims=True), far, gap)
        pick = gap.argmin(axis=1)  # the first (lower) code on a tie
        ok = np.isfinite(gap[np.arange(len(rows)), pick])
        values[rows, j] = np.where(ok, codes[pick], x[rows, j])
        intervened[rows, j] = ok & (values[rows, j] != x[rows, j])
    return values, intervened


def off_level(values: np.ndarray, intervened: np.ndarray,
              levels: Mapping[int, np.ndarray]) -> np.ndarray:
    """``(n,)`` bool: the recourse sets a level column to a value that is not one of its
    codes."""
    bad = np.zeros(len(values), dtype=bool)
    for j, codes in levels.items():
        bad |= intervened[:, j] & ~np.isin(values[:, j], codes)
    return bad
