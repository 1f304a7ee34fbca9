"""Answer noise of simulated people, declared without torch (see
:mod:`simstudy.people.answers` for the models' formulas).

:class:`NoiseModel` is the one declaration of the noise parameters: the ``users.noise`` entry of
a scenario is derived from it (:class:`~simstudy.people.spec.NoiseSpec`).

Example:
    >>> NoiseModel("bernoulli", p=0.1).kind
    'bernoulli'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from annotated_types import Ge, Gt, Le

from ..core.schema import check_constraints

if TYPE_CHECKING:
    import torch

__all__ = ["NoiseModel"]


@dataclass(frozen=True)
class NoiseModel:
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
        >>> gap = torch.tensor([-1.0, 1.0])
        >>> NoiseModel("bernoulli", p=0.1).probability(gap, gap.abs()).tolist()
        [0.1, 0.9]
        >>> NoiseModel("none").probability(gap, gap.abs()).tolist()
        [0.0, 1.0]
    """

    kind: Literal["none", "bernoulli", "logistic", "bradley_terry"] = "none"
    p: Annotated[float, Ge(0.0), Le(1.0)] = 0.0
    scale: float = 2.0
    offset: float = 1.0
    temperature: Annotated[float, Gt(0.0)] = 0.1

    def __post_init__(self) -> None:
        check_constraints(self)

    def probability(self, gap: torch.Tensor, separation: torch.Tensor) -> torch.Tensor:
        """Probability of answering "yes" to a question whose noiseless answer is ``gap > 0``.

        Args:
            gap: how much better "yes" is than "no" under the hidden loss (loss_b - loss_a for a
                comparison, threshold - loss for accept / reject).
            separation: ``δ`` of the logistic model.
        """
        import torch  # the answers are tensors; the document entry validates without torch

        truth = (gap >= 0).to(torch.float64)
        if self.kind == "none":
            return truth
        if self.kind == "bernoulli":
            return truth * (1 - self.p) + (1 - truth) * self.p
        if self.kind == "logistic":
            flip = 1 - torch.sigmoid(self.scale * (separation + self.offset))
            return truth * (1 - flip) + (1 - truth) * flip
        return torch.sigmoid(gap / self.temperature)
