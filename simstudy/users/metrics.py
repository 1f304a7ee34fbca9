"""Metrics of recourse against a simulated person's hidden ground truth (HARE's evaluation).

For a factual ``x``, a recourse ``r`` and the hidden ground truth ``r_gt``, all in [0, 1]-scaled
space:

* **GTP** (ground-truth proximity) ``= ||r - r_gt||_2``;
* **GTD** (ground-truth dissimilarity) ``= 1 - cos(r - x, r_gt - x)``; 0 when the recourse moves
  in the person's preferred direction, 2 when it moves opposite (NaN when either is zero);
* **redundancy**: changed features that could each be reverted to the factual alone while the
  point stays approved;
* **constraint violations**: changed features the person cannot act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    # Annotation only: the policies package imports this one (HARE's metrics).
    from ..policies.space import ScaledSpace

__all__ = ["ground_truth_proximity", "ground_truth_dissimilarity", "redundancy",
           "constraint_violations"]


def ground_truth_proximity(r: torch.Tensor, r_gt: torch.Tensor) -> torch.Tensor:
    """GTP ``||r - r_gt||_2`` per row."""
    return (r - r_gt).norm(dim=-1)


def ground_truth_dissimilarity(x: torch.Tensor, r: torch.Tensor,
                               r_gt: torch.Tensor) -> torch.Tensor:
    """GTD ``1 - cos(r - x, r_gt - x)`` per row (NaN where a direction is zero)."""
    a, b = r - x, r_gt - x
    na, nb = a.norm(dim=-1), b.norm(dim=-1)
    cos = (a * b).sum(dim=-1) / (na * nb)
    return torch.where((na > 0) & (nb > 0), 1 - cos, torch.nan)


@torch.no_grad()
def redundancy(space: ScaledSpace, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Number of changed features whose lone reversion to ``x`` keeps ``r`` approved."""
    count = torch.zeros(x.shape[0], dtype=torch.int64)
    for j in range(x.shape[1]):
        changed = r[:, j] != x[:, j]
        if not bool(changed.any()):
            continue
        trial = r.clone()
        trial[:, j] = x[:, j]
        count += (changed & space.approves(trial)).to(torch.int64)
    return count


def constraint_violations(x: torch.Tensor, r: torch.Tensor,
                          mask: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Number of changed features outside the person's actionable set."""
    m = torch.as_tensor(np.asarray(mask), dtype=torch.bool)
    return ((r != x) & ~m).sum(dim=-1)
