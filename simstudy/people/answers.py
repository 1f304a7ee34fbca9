"""How simulated people answer questions: pairwise comparisons and accept / reject, with noise.

A person's hidden *loss* of a recourse ``r`` (scaled space) is either its distance to their
ground truth, ``||r - r_gt||_2``, or their weighted change ``sum_j w_j |r_j - x_j|``. Without
noise they prefer the candidate with the smaller loss and accept ``r`` when its loss is at most
their threshold (:attr:`People.accept_threshold`, derived from their model unless set).
Noise models (``Δ`` = loss gap, ``δ = ||a - b||_2`` the candidates' separation):

* ``none``: the noiseless answer;
* ``bernoulli``: the answer is flipped with probability ``p``;
* ``logistic``: flipped with probability ``1 - σ(scale (δ + offset))`` (HARE's evaluation uses
  ``scale = 2``, ``offset = 1``): close candidates are confused more often. For accept / reject
  ``δ`` is the margin ``|loss - threshold|``;
* ``bradley_terry``: a Bradley-Terry / Luce choice, ``P(a) = σ(-(loss_a - loss_b) / T)``, and
  ``P(accept) = σ((threshold - loss) / T)`` with temperature ``T``.

Person i's q-th answer in a session uses the uniform keyed by
``(preference_seed, "feedback", id_i)``,
draw ``q``, so the luck of an answer depends on who is asked and how many questions they had
before, never on the batch.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from ..core.rng import entity_uniforms
from ..primitives.space import ScaledSpace
from .noise import NoiseModel

__all__ = ["NoiseModel", "PeopleFeedback", "Answerers", "answer_probability"]


def answer_probability(noise: NoiseModel, gap: torch.Tensor, separation: torch.Tensor
                       ) -> torch.Tensor:
    """Probability of answering "yes" to a question whose noiseless answer is ``gap > 0``.

    ``none``: ``1[gap >= 0]``; ``bernoulli``: flipped with probability ``p``; ``logistic``:
    flipped with probability ``1 - σ(scale (δ + offset))``; ``bradley_terry``:
    ``σ(gap / T)`` (see the module docstring).

    Args:
        noise: the person's answer noise.
        gap: how much better "yes" is than "no" under the hidden loss (loss_b - loss_a for a
            comparison, threshold - loss for accept / reject).
        separation: ``δ`` of the logistic model.

    Example:
        >>> gap = torch.tensor([-1.0, 1.0])
        >>> answer_probability(NoiseModel(kind="bernoulli", p=0.1), gap, gap.abs()).tolist()
        [0.1, 0.9]
    """
    truth = (gap >= 0).to(torch.float64)
    if noise.kind == "none":
        return truth
    if noise.kind == "bernoulli":
        return truth * (1 - noise.p) + (1 - truth) * noise.p
    if noise.kind == "logistic":
        flip = 1 - torch.sigmoid(noise.scale * (separation + noise.offset))
        return truth * (1 - flip) + (1 - truth) * flip
    return torch.sigmoid(gap / noise.temperature)


class Answerers(Protocol):
    """What answering needs of the people (:class:`~simstudy.people.People` is one): who they
    are, their hidden loss and threshold, and their answer noise."""

    ids: np.ndarray
    x: np.ndarray
    space: ScaledSpace
    preference_seed: int

    def rows(self, ids: np.ndarray) -> np.ndarray: ...

    def loss(self, points: np.ndarray, rows: np.ndarray | None = None,
             x: np.ndarray | None = None) -> np.ndarray: ...

    @property
    def noise(self) -> NoiseModel: ...

    @property
    def accept_threshold(self) -> np.ndarray: ...


class PeopleFeedback:
    """One question session with simulated people: satisfies
    :class:`~simstudy.primitives.feedback.Feedback`.

    Answers come from the people's hidden loss (:meth:`People.loss`) through their noise
    model; questions are counted per person from 0 when the session opens (a recourse request),
    and the q-th answer's luck is draw ``q`` of ``(seed, "feedback", id)``.

    Args:
        people: who answers.
        x: ``(len(people), d)`` the people's current features (default: ``people.x``); the
            loss of a weighted-change preference is measured from them.
        noise: the answer noise (default: the people's own).

    Attributes:
        queries: ``(len(people),)`` questions each person answered in this session.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context, small_people
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> people = small_people(context, ids, x, profiles)
        >>> from simstudy.people import PeopleFeedback
        >>> feedback = PeopleFeedback(people)
        >>> feedback.prefer(ids, x, x + 1.0).tolist(), feedback.accept(ids, x).shape
        ([True, True, True], (3,))
    """

    def __init__(self, people: Answerers, x: np.ndarray | None = None,
                 noise: NoiseModel | None = None) -> None:
        self.people = people
        self.x = people.x if x is None else np.asarray(x, dtype=np.float64)
        self.noise = people.noise if noise is None else noise
        self.queries = np.zeros(len(people), dtype=np.int64)

    def _draw(self, rows: np.ndarray) -> torch.Tensor:
        q = self.queries[rows]
        u = entity_uniforms(self.people.preference_seed, "feedback", self.people.ids[rows],
                            int(q.max()) + 1 if len(q) else 1)
        self.queries[rows] += 1
        return torch.from_numpy(u[np.arange(len(rows)), q])

    def _loss(self, rows: np.ndarray, points: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(self.people.loss(points, rows=rows, x=self.x[rows]))

    def prefer(self, ids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """"Do you prefer ``a`` over ``b``?" (see :class:`~simstudy.primitives.Feedback`)."""
        rows = self.people.rows(ids)
        gap = self._loss(rows, b) - self._loss(rows, a)
        space = self.people.space
        separation = (space.scale(a) - space.scale(b)).norm(dim=-1)
        return (self._draw(rows) < answer_probability(self.noise, gap, separation)).numpy()

    def accept(self, ids: np.ndarray, r: np.ndarray) -> np.ndarray:
        """"Is ``r`` satisfactory?" (see :class:`~simstudy.primitives.Feedback`)."""
        rows = self.people.rows(ids)
        gap = torch.from_numpy(self.people.accept_threshold[rows]) - self._loss(rows, r)
        return (self._draw(rows) < answer_probability(self.noise, gap, gap.abs())).numpy()
