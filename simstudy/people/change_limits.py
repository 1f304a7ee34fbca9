"""Population documents: which way and how far each person can change each actionable
feature, drawn per person (the limits themselves: :mod:`simstudy.primitives.limits`).

A population document draws them per feature (``changes:``), from distributions that may depend
on the person's group::

    changes:
      income: {direction: {up: 0.9, any: 0.1}, bound: {share: [0.05, 0.3]}}
      savings: {direction: up, bound: {absolute: 2.0}}

``direction`` is one value or probabilities over the three; ``bound`` is ``absolute`` or
``share`` (of the range), one number or ``[low, high]`` drawn uniformly. Every draw is keyed by
``(seed, purpose, person id)``.

Example:
    >>> import numpy as np
    >>> spec = ChangeSpec.model_validate({"direction": "up", "bound": {"share": 0.5}})
    >>> limits = draw_limits({"a": spec}, ("a", "b"), np.arange(2), seed=0)
    >>> limits.direction.tolist(), limits.bound.tolist()
    ([[1, 0], [1, 0]], [[0.5, inf], [0.5, inf]])
    >>> lo, hi = limits.interval(np.array([4.0, 1.0]))
    >>> lo.tolist(), hi.tolist()
    ([[0.0, -inf], [0.0, -inf]], [[2.0, inf], [2.0, inf]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import model_validator

from ..core.documents import StrictModel
from ..core.rng import entity_uniforms
from ..primitives.limits import DIRECTIONS, ChangeLimits, Direction

__all__ = ["BoundSpec", "ChangeSpec", "draw_limits"]

class BoundSpec(StrictModel):
    """A bound on the change: ``absolute`` (feature units) or ``share`` (of its training
    range); one value, or ``[low, high]`` drawn uniformly per person."""

    absolute: float | list[float] | None = None
    share: float | list[float] | None = None

    @model_validator(mode="after")
    def _one(self) -> BoundSpec:
        given = [v for v in (self.absolute, self.share) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of `absolute` and `share`")
        if isinstance(given[0], list) and len(given[0]) != 2:
            raise ValueError("a drawn bound is [low, high]")
        low, high = _span(given[0])
        if not 0 <= low <= high:
            raise ValueError("a bound needs 0 <= low <= high")
        return self

    def draw(self, u: np.ndarray) -> tuple[np.ndarray, bool]:
        """Bounds from uniforms ``u`` and whether they are shares of the range."""
        share = self.share is not None
        low, high = _span(self.share if share else self.absolute)
        return low + (high - low) * u, share


def _span(value: float | list[float]) -> tuple[float, float]:
    return (float(value), float(value)) if np.isscalar(value) else (float(value[0]),
                                                                      float(value[1]))


class ChangeSpec(StrictModel):
    """How one feature's direction and bound are drawn (see the module docstring)."""

    direction: Direction | dict[Direction, float] = "any"
    bound: BoundSpec | None = None

    @model_validator(mode="after")
    def _probabilities(self) -> ChangeSpec:
        if isinstance(self.direction, dict):
            p = np.array(list(self.direction.values()), dtype=np.float64)
            if (p < 0).any() or p.sum() <= 0:
                raise ValueError("direction probabilities must be non-negative with a "
                                 "positive sum")
        return self

    def draw_direction(self, u: np.ndarray) -> np.ndarray:
        if isinstance(self.direction, str):
            return np.full(len(u), DIRECTIONS[self.direction], dtype=np.int8)
        names = [n for n in DIRECTIONS if n in self.direction]  # a fixed order
        p = np.array([self.direction[n] for n in names], dtype=np.float64)
        pick = np.searchsorted(np.cumsum(p / p.sum()), u, side="right")
        codes = np.array([DIRECTIONS[n] for n in names], dtype=np.int8)
        return codes[np.minimum(pick, len(names) - 1)]


def draw_limits(changes: Mapping[str, ChangeSpec], features: Sequence[str], ids: np.ndarray,
                seed: int, purpose: str = "change-limits") -> ChangeLimits:
    """Each person's direction and bound on ``features`` (a feature not in ``changes``:
    either way, unbounded); two uniforms per feature, keyed by ``(seed, purpose, id)``."""
    ids = np.asarray(ids)
    k = len(features)
    u = entity_uniforms(seed, purpose, ids, 2 * max(k, 1))
    direction = np.zeros((len(ids), k), dtype=np.int8)
    bound = np.full((len(ids), k), np.inf)
    share = np.zeros((len(ids), k), dtype=bool)
    for j, feature in enumerate(features):
        spec = changes.get(feature)
        if spec is None:
            continue
        direction[:, j] = spec.draw_direction(u[:, 2 * j])
        if spec.bound is not None:
            bound[:, j], share[:, j] = spec.bound.draw(u[:, 2 * j + 1])
    return ChangeLimits(tuple(features), direction, bound, share)
