"""Metrics of recourse against a simulated person's hidden ground truth (HARE's evaluation).

For a factual ``x``, a recourse ``r`` and the hidden ground truth ``r_gt``, all in [0, 1]-scaled
space:

* **GTP** (ground-truth proximity) ``= ||r - r_gt||_2``;
* **GTD** (ground-truth dissimilarity) ``= 1 - cos(r - x, r_gt - x)``; 0 when the recourse moves
  in the person's preferred direction, 2 when it moves opposite (NaN when either is zero).

:meth:`simstudy.people.People.truth_columns` applies them, with the person's hidden loss and
whether the recourse needs a feature they truly cannot change, to any policy's recourse.
"""

from __future__ import annotations

import torch

__all__ = ["ground_truth_proximity", "ground_truth_dissimilarity"]


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
