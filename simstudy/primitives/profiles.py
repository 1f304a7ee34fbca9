"""Individual actionability profiles and the cost profile that weighs them.

An applicant's profile gives, per globally actionable feature, a score ``s in {1..S}``
(1 = easiest / most preferred) or 0 for "not actionable for this person" (a hard constraint).
:class:`CostProfile` turns scores into cost weights. Both are shared by the people who hold the
profiles and by the policies that honour them, so they sit below both; the samplers that draw
profiles live in :mod:`simstudy.people.population`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field

from ..core.documents import StrictModel
from .limits import ChangeLimits

__all__ = ["ActionabilityProfiles", "CostProfile", "COST_SHAPES", "cost_weight"]

#: Exponent ``p`` of each named cost profile (``None``: constant weights).
COST_SHAPES: dict[str, float | None] = {
    "constant": None, "concave": 0.5, "linear": 1.0, "convex": 2.0}


class CostProfile(StrictModel):
    """Maps actionability scores to cost weights (the ``cost:`` entry of a population).

    ``w(s) = 1 + alpha * ((s - 1) / (S - 1)) ** p`` for an actionable score ``s`` in ``1..S``:
    ``p = 0.5`` concave, ``1`` linear, ``2`` convex; the constant profile has ``w = 1``
    (indifference between actionable features). Non-actionable features get weight ``inf``.

    Attributes:
        shape: ``constant``, ``concave``, ``linear`` or ``convex``.
        alpha: weight added at the least-preferred score (``w(S) = 1 + alpha``). The paper's
            value was lost from its text. The default 3 is ``S - 1`` for the 4-level schemes
            used on Loan (4 ranks, Likert 1..4): with it the linear profile's weight *is* the
            score, ``w(s) = s`` (the least-preferred feature costs ``S`` times the most
            preferred), the simplest reading of "weights determined by the scores". The value
            is fixed by this argument, not by agreement with published figures; how results
            move with alpha in {1, 2, 3} is tabulated in ``benchmarks/ICARMA_RESULTS.md``.
        power: overrides the shape's exponent when given.
        placement: where the weight enters the cost (:func:`simstudy.metrics.weighted_cost`):
            ``outside`` the square (the paper and CARMA; default) or ``inside``.

    Example:
        >>> profile = CostProfile(shape="linear", alpha=3.0)
        >>> profile.weights(np.array([[1, 2, 3, 4, 0]]), levels=4).tolist()
        [[1.0, 2.0, 3.0, 4.0, inf]]
    """

    model_config = ConfigDict(frozen=True)

    shape: Literal["constant", "concave", "linear", "convex"] = "constant"
    alpha: float = Field(3.0, ge=0)
    power: float | None = Field(None, gt=0)
    placement: Literal["outside", "inside"] = "outside"

    @property
    def exponent(self) -> float | None:
        return self.power if self.power is not None else COST_SHAPES[self.shape]

    def weights(self, scores: np.ndarray, levels: int) -> np.ndarray:
        scores = np.asarray(scores)
        w = np.ones(scores.shape, dtype=np.float64)
        p = self.exponent
        if p is not None and levels > 1:
            w = cost_weight(np.clip((scores - 1) / (levels - 1), 0.0, 1.0), self.alpha, p)
        return np.where(scores > 0, w, np.inf)


def cost_weight(rel, alpha: float, exponent):
    """The cost weight ``w = 1 + alpha * rel ** p`` of a relative score ``rel = (s - 1) / (S - 1)``
    in ``[0, 1]``: the one home of the formula, for numpy arrays (:meth:`CostProfile.weights`)
    and torch tensors alike (iCARMA draws training profiles with it).

    Example:
        >>> cost_weight(np.array([0.0, 0.5, 1.0]), 3.0, 2.0).tolist()
        [1.0, 1.75, 4.0]
    """
    return 1.0 + alpha * rel**exponent


@dataclass
class ActionabilityProfiles:
    """Individual actionability of ``n`` people over ``K`` globally actionable features.

    Attributes:
        features: names of the globally actionable features (columns of ``scores``).
        scores: ``(n, K)`` ints; 0 = not actionable for this person, ``1..levels`` otherwise
            (1 = easiest / most preferred).
        levels: ``S``, the number of score levels.
        weights: ``(n, K)`` cost weights (``inf`` where not actionable).
        kind: how the scores were elicited (``ranking``, ``likert`` or ``all``).
        cost_placement: where the weights enter the cost (``outside`` or ``inside`` the
            square, see :func:`simstudy.metrics.weighted_cost`).
        limits: which way and how far each person can change each feature
            (:class:`~simstudy.primitives.limits.ChangeLimits`; ``None``: any way, unbounded).
    """

    features: tuple[str, ...]
    scores: np.ndarray
    levels: int
    weights: np.ndarray
    kind: str = "ranking"
    cost_placement: str = "outside"
    limits: ChangeLimits | None = None

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.int64)
        self.weights = np.asarray(self.weights, dtype=np.float64)
        if self.scores.shape != self.weights.shape or self.scores.shape[1] != len(self.features):
            raise ValueError("scores and weights must both be (n, number of features)")

    def __len__(self) -> int:
        return self.scores.shape[0]

    @property
    def actionable(self) -> np.ndarray:
        """``(n, K)`` bool: the person can act on the feature."""
        return self.scores > 0

    @property
    def n_actionable(self) -> np.ndarray:
        return self.actionable.sum(axis=1)

    @property
    def least_preferred(self) -> np.ndarray:
        """``(n, K)`` bool: actionable features with the person's worst (largest) score."""
        worst = np.where(self.actionable, self.scores, 0).max(axis=1, keepdims=True)
        return self.actionable & (self.scores == worst)

    def universal(self) -> ActionabilityProfiles:
        """The same people without personalization: every globally actionable feature is
        actionable for everyone, with score 1 and unit cost weight, any way and unbounded."""
        ones = np.ones(self.scores.shape, dtype=np.int64)
        return ActionabilityProfiles(self.features, ones, 1, ones.astype(np.float64), "universal",
                                     self.cost_placement)

    def columns_in(self, names: Sequence[str]) -> np.ndarray:
        """Where each of the profile's features sits in a feature vector ordered as ``names``
        (``columns_in(world.roles.names)`` is the world's actionable index when the profile
        covers the world's actionable features)."""
        names = list(names)
        return np.array([names.index(f) for f in self.features], dtype=np.int64)

    @classmethod
    def concat(cls, parts: Sequence[ActionabilityProfiles]) -> ActionabilityProfiles:
        """The people of ``parts`` (same features, levels, kind and placement) one after
        another."""
        first = parts[0]
        limits = [p.limits for p in parts]
        if any(lim is None for lim in limits) and any(lim is not None for lim in limits):
            raise ValueError("either every part or none has change limits")
        return cls(first.features, np.concatenate([p.scores for p in parts]), first.levels,
                   np.concatenate([p.weights for p in parts]), first.kind,
                   first.cost_placement,
                   None if limits[0] is None else ChangeLimits.concat(limits))

    def subset(self, rows: np.ndarray | slice) -> ActionabilityProfiles:
        return ActionabilityProfiles(self.features, self.scores[rows], self.levels,
                                     self.weights[rows], self.kind, self.cost_placement,
                                     None if self.limits is None else self.limits.subset(rows))
