"""Standard normal draws keyed by entity, like :func:`~simstudy.core.rng.entity_uniforms`.

Kept apart from :mod:`simstudy.core.rng` because the inverse normal CDF comes from scipy, which
documents are read without.

Example:
    >>> from simstudy.core.rng import entity_uniforms
    >>> z = entity_normals(7, "example", [3, 9], n_draws=2)
    >>> z.shape, bool((entity_normals(7, "example", [9], n_draws=2) == z[1]).all())
    ((2, 2), True)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from scipy.special import ndtri

from .rng import entity_uniforms

__all__ = ["entity_normals"]


def entity_normals(
    seed: int, purpose: int | str, ids: Iterable[int] | np.ndarray, n_draws: int = 1
) -> np.ndarray:
    """Standard normal draws keyed by ``(seed, purpose, id, draw)``: the inverse normal CDF
    ``Φ^{-1}(u)`` of :func:`~simstudy.core.rng.entity_uniforms`."""
    return ndtri(entity_uniforms(seed, purpose, ids, n_draws))
