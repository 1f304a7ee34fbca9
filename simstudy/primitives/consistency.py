"""Causal consistency of a recourse, checked by its values.

A recourse is an action ``do(X_I := θ_I)`` on a factual ``x`` and, for a generator that proposes
points, the point ``x'`` it shows. The point is causally consistent when

* every intervened feature takes its value, ``x'_I = θ_I``, and
* every feature not intervened either keeps its factual value for the whole recourse
  (``x'_j = x_j`` for all ``j ∉ I``: a point proposed without the world's equations, as
  Wachter and Growing Spheres do) or takes, for the whole recourse, the value the world's
  structural equations (or flow) give for the action: ``x'_j = CF(x, I, θ)_j`` for all
  ``j ∉ I``.

A point whose features not intervened are some other value, such as an interpolation between
the factual and a causal consequence, is an action nobody can carry out: a feature the person
may not act on would have to move by itself to a value no action produces. Values are compared
within ``tolerance`` times each feature's training range.

References:
    Karimi, Schölkopf, Valera (2021), "Algorithmic recourse: from counterfactual explanations to
    interventions", FAccT (abduction, action, prediction). https://arxiv.org/abs/2002.06278

Example:
    >>> import numpy as np
    >>> from simstudy.world import LoanSCM
    >>> world = LoanSCM()
    >>> x = np.array([[1.0, 30.0, 0.1, 1.0, 2.0, 1.0, 0.5]])
    >>> acts = np.zeros((1, 7), bool)
    >>> acts[0, 5] = True  # income; savings is its descendant
    >>> values = np.where(acts, 3.0, np.nan)
    >>> cf = world_counterfactual(world, x, acts, values)
    >>> halfway = cf.copy()
    >>> halfway[0, 6] = (x[0, 6] + cf[0, 6]) / 2
    >>> [bool(inconsistent_features(world, x, acts, values, p).any()) for p in (cf, halfway)]
    [False, True]
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["world_counterfactual", "inconsistent_features"]


@torch.no_grad()
def world_counterfactual(world, x: np.ndarray, intervened: np.ndarray,
                         values: np.ndarray) -> np.ndarray:
    """The world's counterfactual ``CF(x, I, θ)`` in original units, ``(n, d)`` (values where
    not intervened are ignored).

    Example:
        >>> from simstudy.world import LoanSCM
        >>> x = np.array([[1.0, 30.0, 0.1, 1.0, 2.0, 1.0, 0.5]])
        >>> acts = np.array([[False] * 5 + [True, False]])  # income := 3
        >>> cf = world_counterfactual(LoanSCM(), x, acts, np.where(acts, 3.0, np.nan))
        >>> float(cf[0, 5]), round(float(cf[0, 6] - x[0, 6]), 6)  # savings follows: 1.5 x 2
        (3.0, 3.0)
    """
    xt = torch.as_tensor(np.asarray(x, dtype=np.float64))
    inter = np.asarray(intervened, dtype=bool)
    theta = np.where(inter, np.asarray(values, dtype=np.float64), xt.numpy())
    return world.counterfactual(xt, torch.from_numpy(inter), torch.from_numpy(theta)).numpy()


def inconsistent_features(world, x: np.ndarray, intervened: np.ndarray, values: np.ndarray,
                          counterfactual: np.ndarray, feature_range: np.ndarray | None = None,
                          tolerance: float = 1e-9) -> np.ndarray:
    """``(n, d)`` bool: the features at which a shown point breaks causal consistency.

    A row is consistent when its intervened features take their values and its other features
    all keep their factual values or all equal the world's counterfactual of the action
    (module docstring); in an inconsistent row the flagged features are the intervened ones
    off their value and the others that differ from the world's counterfactual.

    Args:
        world: the causal world (``counterfactual(x, intervened, values)``).
        x: ``(n, d)`` factuals (original units).
        intervened, values: the action, ``(n, d)`` (``values`` NaN where not intervened).
        counterfactual: ``(n, d)`` the points shown.
        feature_range: ``(d,)`` units of the tolerance (default: 1 for every feature).
        tolerance: largest difference counted as equal, in units of ``feature_range``.

    Example:
        >>> from simstudy.world import LoanSCM
        >>> x = np.array([[1.0, 30.0, 0.1, 1.0, 2.0, 1.0, 0.5]])
        >>> acts = np.array([[False] * 5 + [True, False]])  # income := 3
        >>> values = np.where(acts, 3.0, np.nan)
        >>> as_point = np.where(acts, 3.0, x)  # savings kept: a point proposed without the SCM
        >>> stale = as_point.copy()
        >>> stale[0, 6] += 1.0  # savings neither kept nor following income
        >>> [inconsistent_features(LoanSCM(), x, acts, values, p).nonzero()[1].tolist()
        ...  for p in (as_point, stale)]
        [[], [6]]
    """
    x = np.asarray(x, dtype=np.float64)
    point = np.asarray(counterfactual, dtype=np.float64)
    inter = np.asarray(intervened, dtype=bool)
    unit = np.ones(x.shape[1]) if feature_range is None else np.asarray(feature_range, float)
    atol = tolerance * unit

    def close(a, b):
        return np.abs(a - b) <= atol

    caused = world_counterfactual(world, x, inter, values)
    off_value = inter & ~close(point, np.where(inter, values, point))
    as_point = (inter | close(point, x)).all(axis=1)
    as_caused = (inter | close(point, caused)).all(axis=1)
    consistent = ~off_value.any(axis=1) & (as_point | as_caused)
    return ~consistent[:, None] & (off_value | (~inter & ~close(point, caused)))
