"""Observational data sets drawn from a world, split as the published experiments split them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.rng import generator
from .base import CausalWorld, FeatureRoles
from .config import SplitShares  # the document type of a split, re-exported

__all__ = ["WorldData", "sample_world_data", "sampled_world", "tensor_hash", "SplitShares"]


def tensor_hash(*tensors: torch.Tensor | np.ndarray) -> str:
    """Content hash (sha256, hex) of the bytes of the given arrays, in order.

    Example:
        >>> import numpy as np, torch
        >>> from simstudy.world import tensor_hash
        >>> tensor_hash(np.zeros(3)) == tensor_hash(torch.zeros(3, dtype=torch.float64))
        True
        >>> len(tensor_hash(np.zeros(3), np.ones(2)))
        64
    """
    h = hashlib.sha256()
    for t in tensors:
        arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        h.update(str(arr.dtype).encode())
        h.update(str(arr.shape).encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


@dataclass
class WorldData:
    """Train / validation / deployment splits of features and labels.

    Attributes:
        roles: the world's feature roles.
        x_train, y_train, x_val, y_val, x_test, y_test: features ``(n, d)`` float64 and labels.
        lower, upper: per-feature minimum and maximum of the training split (the feasible range).

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import LoanSCM, sample_world_data
        >>> data = sample_world_data(LoanSCM(), 100, generator(0, "example"))
        >>> tuple(data.x_train.shape), tuple(data.x_test.shape), data.lower.shape[0]
        ((50, 7), (25, 7), 7)
    """

    roles: FeatureRoles
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def lower(self) -> torch.Tensor:
        return self.x_train.min(dim=0).values

    @property
    def upper(self) -> torch.Tensor:
        return self.x_train.max(dim=0).values

    @property
    def feature_range(self) -> torch.Tensor:
        return (self.upper - self.lower).clamp_min(1e-12)

    def content_hash(self) -> str:
        return tensor_hash(self.x_train, self.y_train, self.x_val, self.y_val, self.x_test,
                           self.y_test)


def sample_world_data(
    world: CausalWorld,
    n_samples: int,
    generator: np.random.Generator,
    split: tuple[float, float, float] = (0.5, 0.25, 0.25),
) -> WorldData:
    """Samples ``n_samples`` rows from a world that knows its label and splits them.

    The world must have a ``label(x, generator)`` method (known SCMs do).

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import LoanSCM, sample_world_data
        >>> data = sample_world_data(LoanSCM(), 200, generator(0, "example"), split=(0.6, 0.2, 0.2))
        >>> len(data.x_train), len(data.x_val), len(data.x_test)
        (120, 40, 40)
    """
    if n_samples < 4:
        raise ValueError(f"n_samples must be at least 4, got {n_samples}")
    if abs(sum(split) - 1.0) > 1e-9 or min(split) <= 0:
        raise ValueError(f"split must be three positive shares summing to 1, got {split}")
    x = world.sample(n_samples, generator)
    y = world.label(x, generator)  # type: ignore[attr-defined]
    n_train = int(round(split[0] * n_samples))
    n_val = int(round(split[1] * n_samples))
    parts = (slice(0, n_train), slice(n_train, n_train + n_val), slice(n_train + n_val, None))
    return WorldData(world.roles, *(t for s in parts for t in (x[s], y[s])))


def sampled_world(world: CausalWorld, params: Any, seed: int) -> tuple[CausalWorld, WorldData,
                                                                     dict]:
    """``(world, data, info)`` of a world that knows its label, as a world entry builds it.

    ``data`` is the world's sample of ``params.n_samples`` draws split by ``params.split``,
    drawn from the stream ``"world-sample"`` of ``seed``; ``info`` is what a run records of it
    (``params.kind`` and the data's hash).

    Example:
        >>> from simstudy.world import LoanSCM, LoanWorldSpec
        >>> _, data, info = sampled_world(LoanSCM(), LoanWorldSpec(n_samples=200), seed=0)
        >>> len(data.x_test), info["kind"], info["data_sha256"] == data.content_hash()
        (50, 'loan', True)
    """
    data = sample_world_data(world, params.n_samples, generator(seed, "world-sample"),
                             params.split)
    return world, data, {"kind": params.kind, "data_sha256": data.content_hash()}
