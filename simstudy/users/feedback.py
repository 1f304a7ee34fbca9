"""Feedback oracles of simulated people: pairwise comparisons and accept / reject, with noise.

A person's hidden *loss* of a recourse ``r`` (scaled space) is either its distance to their
ground truth, ``||r - r_gt||_2``, or their weighted change ``sum_j w_j |r_j - x_j|``. Without
noise they prefer the candidate with the smaller loss and accept ``r`` when its loss is at most
their threshold. Noise models (``Δ`` = loss gap, ``δ = ||a - b||_2`` the candidates' separation):

* ``none``: the noiseless answer;
* ``bernoulli``: the answer is flipped with probability ``p``;
* ``logistic``: flipped with probability ``1 - σ(scale (δ + offset))`` (HARE's evaluation uses
  ``scale = 2``, ``offset = 1``): close candidates are confused more often. For accept / reject
  ``δ`` is the margin ``|loss - threshold|``;
* ``bradley_terry``: a Bradley-Terry / Luce choice, ``P(a) = σ(-(loss_a - loss_b) / T)``, and
  ``P(accept) = σ((threshold - loss) / T)`` with temperature ``T``.

All people answer their q-th question at once; person i's q-th answer uses the uniform keyed by
``(seed, "feedback", id_i)``, draw ``q``, so the luck of an answer depends on who is asked and
how many questions they had before, never on the batch. Each person has a query budget; asking
beyond it is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from ..rng import entity_uniforms

__all__ = ["NoiseModel", "SimulatedUsers"]


@dataclass(frozen=True)
class NoiseModel:
    """How a simulated person's answers deviate from their hidden preference.

    Attributes:
        kind: ``none``, ``bernoulli``, ``logistic`` or ``bradley_terry``.
        p: flip probability of ``bernoulli``.
        scale, offset: the logistic flip curve ``1 - σ(scale (δ + offset))``.
        temperature: the Bradley-Terry temperature.
    """

    kind: Literal["none", "bernoulli", "logistic", "bradley_terry"] = "none"
    p: float = 0.0
    scale: float = 2.0
    offset: float = 1.0
    temperature: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"flip probability must be in [0, 1], got {self.p}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")

    def probability(self, gap: torch.Tensor, separation: torch.Tensor) -> torch.Tensor:
        """Probability of answering "yes" to a question whose noiseless answer is ``gap > 0``.

        Args:
            gap: how much better "yes" is than "no" under the hidden loss (loss_b - loss_a for a
                comparison, threshold - loss for accept / reject).
            separation: ``δ`` of the logistic model.
        """
        truth = (gap >= 0).to(torch.float64)
        if self.kind == "none":
            return truth
        if self.kind == "bernoulli":
            return truth * (1 - self.p) + (1 - truth) * self.p
        if self.kind == "logistic":
            flip = 1 - torch.sigmoid(self.scale * (separation + self.offset))
            return truth * (1 - flip) + (1 - truth) * flip
        return torch.sigmoid(gap / self.temperature)


class SimulatedUsers:
    """A batch of simulated people who answer questions about recourses.

    Args:
        ids: applicant ids, ``(n,)``.
        x: scaled factuals, ``(n, d)``.
        seed: the replication's seed (keys the answer noise).
        budget: the most questions each person answers.
        noise: the noise model.
        target: scaled ground-truth recourses ``(n, d)`` (distance users), or
        weights: hidden per-feature weights ``(n, d)`` (weighted-change users).
        accept_threshold: the loss at or below which a person is satisfied.

    Attributes:
        queries: ``(n,)`` questions asked so far.
    """

    def __init__(
        self, ids: np.ndarray, x: torch.Tensor, seed: int, budget: int,
        noise: NoiseModel = NoiseModel(), target: torch.Tensor | None = None,
        weights: np.ndarray | torch.Tensor | None = None, accept_threshold: float = 0.05,
    ) -> None:
        if (target is None) == (weights is None):
            raise ValueError("give exactly one of target (ground truth) or weights")
        self.ids = np.asarray(ids)
        self.x = torch.as_tensor(x, dtype=torch.float64)
        self.budget = int(budget)
        self.noise = noise
        self.target = None if target is None else torch.as_tensor(target, dtype=torch.float64)
        self.weights = None if weights is None else torch.as_tensor(weights, dtype=torch.float64)
        self.accept_threshold = float(accept_threshold)
        self.queries = np.zeros(len(self.ids), dtype=np.int64)
        self._uniforms = torch.from_numpy(entity_uniforms(seed, "feedback", self.ids,
                                                          max(self.budget, 1)))

    def __len__(self) -> int:
        return len(self.ids)

    def loss(self, r: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden loss of recourses ``r`` (``(n, d)``, or ``(len(rows), d)`` for ``rows``)."""
        rows = slice(None) if rows is None else rows
        if self.target is not None:
            return (r - self.target[rows]).norm(dim=-1)
        moved = (r - self.x[rows]).abs()
        return torch.where(moved > 0, self.weights[rows] * moved, 0.0).sum(dim=-1)

    def _draw(self, asking: torch.Tensor) -> torch.Tensor:
        q = torch.from_numpy(self.queries)
        if bool((asking & (q >= self.budget)).any()):
            raise RuntimeError("a simulated person was asked beyond their query budget")
        u = self._uniforms.gather(1, q.clamp_max(self._uniforms.shape[1] - 1)[:, None])
        self.queries += asking.numpy().astype(np.int64)
        return u.squeeze(1)

    def compare(self, a: torch.Tensor, b: torch.Tensor, asking: torch.Tensor) -> torch.Tensor:
        """Pairwise question "do you prefer a over b?" to the people where ``asking`` is true.

        Returns:
            ``(n,)`` bool answers (true for people not asked).
        """
        gap = self.loss(b) - self.loss(a)
        yes = self._draw(asking) < self.noise.probability(gap, (a - b).norm(dim=-1))
        return yes | ~asking

    def accept(self, r: torch.Tensor, asking: torch.Tensor) -> torch.Tensor:
        """Accept / reject question "is r satisfactory?"; false for people not asked."""
        gap = self.accept_threshold - self.loss(r)
        yes = self._draw(asking) < self.noise.probability(gap, gap.abs())
        return yes & asking
