"""The parameters of the built-in policies, declared once and without torch.

Each runtime policy inherits its constructor from its parameter dataclass here
(``class Wachter(WachterParams, ScaledSpacePolicy)``), and its scenario entry
(:mod:`simstudy.policies.specs`) is derived from the same dataclass
(:func:`simstudy.core.schema.derive_spec`). So a parameter, its constraint and its default are
written in one place, and documents are validated without importing the torch modules that
run the policies. What each parameter means is documented on the runtime class.

The dataclasses compare by identity (``eq=False``) like any fitted estimator.

Example:
    >>> WachterParams().lambda_growth
    10.0
    >>> GrowingSpheresParams(n_samples=50).eta
    0.05
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from annotated_types import Ge, Gt, Le

from ..core.bounds import MAX_QUESTIONS, MAX_STEPS, LearningRate, Steps

if TYPE_CHECKING:
    from .base import RecoursePolicy

__all__ = ["WachterParams", "GrowingSpheresParams", "OracleParams", "HAREParams"]


@dataclass(eq=False)
class WachterParams:
    """Parameters of :class:`~simstudy.policies.wachter.Wachter`."""

    distance: Literal["l1", "l2"] = "l2"
    lam: Annotated[float, Ge(0.0)] = 1.0
    lr: LearningRate = 0.01
    steps: Steps = 200
    rounds: Annotated[int, Ge(1), Le(100)] = 4
    # the weight grows (or stays) between rounds without a valid counterfactual
    lambda_growth: Annotated[float, Ge(1.0)] = 10.0


@dataclass(eq=False)
class GrowingSpheresParams:
    """Parameters of :class:`~simstudy.policies.growing_spheres.GrowingSpheres`."""

    n_samples: Annotated[int, Gt(0)] = 200
    eta: Annotated[float, Gt(0)] = 0.05
    select_features: bool = True


@dataclass(eq=False)
class OracleParams:
    """Parameters of :class:`~simstudy.policies.oracle.CausalOracle`."""

    n_values: Annotated[int, Ge(2), Le(200)] = 25
    grid: Literal["around_x_clipped", "span", "around_x"] = "around_x_clipped"
    plausibility: bool = True
    chunk_size: Annotated[int, Ge(1)] = 128
    progress: bool = False


@dataclass(eq=False)
class HAREParams:
    """Parameters of :class:`~simstudy.policies.hare.HARE` (``base``: the unfitted base
    generator; its document entry is the base's own entry)."""

    base: RecoursePolicy
    budget: Annotated[int, Gt(0), Le(MAX_QUESTIONS)] = 30
    iterations: Annotated[int, Gt(0), Le(MAX_STEPS)] = 1
    gamma: Annotated[float, Gt(0.0)] = 1.0
    lam: Annotated[float, Ge(0.0)] = 10.0
    steps: Annotated[int, Ge(0), Le(MAX_STEPS)] = 100
    lr: LearningRate = 0.1
    tolerance: Annotated[float, Gt(0.0)] = 1e-6
    early_stop: bool = True
    keep_best: bool = False
    search_without_base: bool = False
    same_box: bool = True
