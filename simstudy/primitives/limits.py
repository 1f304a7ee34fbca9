"""Which way and how far each person can change each actionable feature.

Per person ``i`` and globally actionable feature ``k``: a direction ``d_ik`` in ``{up, down,
any}`` and a bound ``b_ik >= 0`` on the change (``inf``: none), given in the feature's units or
as a share of its training range ``r_k``. A recourse may set feature ``k`` to ``v`` only when

    ``lo_ik <= v - x_ik <= hi_ik``, with ``lo = -B`` unless ``d = up`` (then 0) and
    ``hi = B`` unless ``d = down`` (then 0), ``B = b`` or ``b r_k``.

The limits travel with the actionability profiles, below both the people who hold them and the
policies that honour them; a population document draws them
(:mod:`simstudy.people.change_limits`).

References:
    Mothilal, Sharma & Tan, "Explaining machine learning classifiers through diverse
    counterfactual explanations" (DiCE: permitted ranges), FAT* 2020,
    https://arxiv.org/abs/1905.07697.
    Ustun, Spangher & Liu, "Actionable recourse in linear classification" (monotone
    constraints), FAT* 2019, https://arxiv.org/abs/1809.06514.

Example:
    >>> import numpy as np
    >>> limits = ChangeLimits(("a", "b"), [[1, 0], [1, 0]], [[0.5, np.inf], [0.5, np.inf]],
    ...                       [[True, False], [True, False]])
    >>> lo, hi = limits.interval(np.array([4.0, 1.0]))
    >>> lo.tolist(), hi.tolist()
    ([[0.0, -inf], [0.0, -inf]], [[2.0, inf], [2.0, inf]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["DIRECTIONS", "Direction", "ChangeLimits", "limit_violations"]

#: direction codes: +1 only up, -1 only down, 0 either way
DIRECTIONS: dict[str, int] = {"up": 1, "down": -1, "any": 0}
Direction = Literal["up", "down", "any"]


@dataclass
class ChangeLimits:
    """Directions and bounds of ``n`` people over ``K`` features (see the module docstring).

    Attributes:
        features: the features (columns), the profile's globally actionable ones.
        direction: ``(n, K)`` int8, ``+1`` up only, ``-1`` down only, ``0`` either.
        bound: ``(n, K)`` float, the bound on ``|change|`` (``inf``: none).
        share: ``(n, K)`` bool, the bound is a share of the feature's range.
    """

    features: tuple[str, ...]
    direction: np.ndarray
    bound: np.ndarray
    share: np.ndarray

    def __post_init__(self) -> None:
        self.direction = np.asarray(self.direction, dtype=np.int8)
        self.bound = np.asarray(self.bound, dtype=np.float64)
        self.share = np.asarray(self.share, dtype=bool)

    def __len__(self) -> int:
        return self.direction.shape[0]

    def subset(self, rows: np.ndarray | slice) -> ChangeLimits:
        return ChangeLimits(self.features, self.direction[rows], self.bound[rows],
                            self.share[rows])

    @classmethod
    def concat(cls, parts: Sequence[ChangeLimits]) -> ChangeLimits:
        """The people of ``parts`` (same features) one after another."""
        return cls(parts[0].features, np.concatenate([p.direction for p in parts]),
                   np.concatenate([p.bound for p in parts]),
                   np.concatenate([p.share for p in parts]))

    def interval(self, feature_range: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``, each ``(n, K)``: the allowed change ``v - x`` of each feature, given
        the features' training ranges ``(K,)``."""
        size = np.where(self.share, self.bound * np.asarray(feature_range)[None, :], self.bound)
        lo = np.where(self.direction > 0, 0.0, -size)
        hi = np.where(self.direction < 0, 0.0, size)
        return lo, hi


def limit_violations(limits: ChangeLimits, x: np.ndarray, intervened: np.ndarray,
                     values: np.ndarray, feature_range: np.ndarray, columns: np.ndarray,
                     rtol: float = 1e-9) -> np.ndarray:
    """``(n,)`` bool: the recourse sets a feature against the person's direction or beyond
    their bound. ``x``, ``intervened``, ``values`` are ``(n, d)`` over all features;
    ``columns`` the position of each of the limits' features among them; ``rtol`` is in units
    of the feature's range (round-off of a value placed exactly on the bound)."""
    lo, hi = limits.interval(feature_range[columns])
    change = np.where(intervened[:, columns], values[:, columns] - x[:, columns], 0.0)
    slack = rtol * np.asarray(feature_range)[columns][None, :]
    bad = (change < lo - slack) | (change > hi + slack)
    return (bad & intervened[:, columns]).any(axis=1)
