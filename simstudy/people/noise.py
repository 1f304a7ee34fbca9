"""Answer noise of simulated people, declared without torch (see
:mod:`simstudy.people.answers` for the models' formulas and
:func:`~simstudy.people.answers.answer_probability`, which applies them).

:class:`NoiseModel` is the one declaration of the noise parameters and the ``users.noise`` entry
of a scenario.

Example:
    >>> NoiseModel(kind="bernoulli", p=0.1).kind
    'bernoulli'
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..core.documents import StrictModel

__all__ = ["NoiseModel"]


class NoiseModel(StrictModel):
    """How a simulated person's answers deviate from their hidden preference.

    Attributes:
        kind: ``none``, ``bernoulli``, ``logistic`` or ``bradley_terry``.
        p: flip probability of ``bernoulli``.
        scale, offset: the logistic flip curve ``1 - σ(scale (δ + offset))``.
        temperature: the Bradley-Terry temperature.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> import torch
        >>> from simstudy.people import NoiseModel
        >>> from simstudy.people.answers import answer_probability
        >>> gap = torch.tensor([-1.0, 1.0])
        >>> answer_probability(NoiseModel(kind="bernoulli", p=0.1), gap, gap.abs()).tolist()
        [0.1, 0.9]
        >>> answer_probability(NoiseModel(), gap, gap.abs()).tolist()
        [0.0, 1.0]
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["none", "bernoulli", "logistic", "bradley_terry"] = "none"
    p: float = Field(0.0, ge=0.0, le=1.0)
    scale: float = 2.0
    offset: float = 1.0
    temperature: float = Field(0.1, gt=0.0)
