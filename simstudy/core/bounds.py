"""Declared bounds of the numeric parameters documents set, in one place.

Every step count, epoch count, layer width, learning rate, budget, sample size and seed a
document can set is bounded below by what makes sense (a positive learning rate, at least one
epoch) and above by a generous limit no study needs, so that a typing slip (``epochs: 5e9``,
``hidden: [6400000]``) is refused by ``simstudy validate`` with the field and the rule, not
found hours into a run. The bounds are ``annotated_types`` constraints that the parameters
models (the document entries, :mod:`simstudy.core.registry`) enforce.

Example:
    >>> from pydantic import TypeAdapter, ValidationError
    >>> try:
    ...     TypeAdapter(Epochs).validate_python(0)
    ... except ValidationError as exc:
    ...     print(exc.errors()[0]["msg"])
    Input should be greater than or equal to 1
"""

from __future__ import annotations

import math
from typing import Annotated

from annotated_types import Ge, Gt, Le

__all__ = ["VALUE_RANGES", "MAX_EPOCHS", "MAX_STEPS", "MAX_LAYER_WIDTH", "MAX_LEARNING_RATE",
           "MAX_SEED",
           "MAX_SIMULATIONS", "MAX_PARTICIPANTS", "MAX_RESAMPLES", "MAX_APPLICANTS",
           "MAX_QUESTIONS", "MAX_BASIS", "Epochs", "Steps", "LayerWidth", "LearningRate", "Seed",
           "Participants", "Resamples"]

#: The values a metric can take, by the kind of its per-applicant values: a proportion's mean
#: lies in [0, 1]; intervals are kept inside (:mod:`simstudy.core.intervals`).
VALUE_RANGES: dict[str, tuple[float, float]] = {
    "proportion": (0.0, 1.0), "nonnegative": (0.0, math.inf), "real": (-math.inf, math.inf)}

MAX_EPOCHS = 100_000
MAX_STEPS = 1_000_000
MAX_LAYER_WIDTH = 65_536
#: Adam and gradient steps on standardized data diverge far below this.
MAX_LEARNING_RATE = 10.0
MAX_SEED = 2**63 - 1
MAX_SIMULATIONS = 1_000_000
MAX_PARTICIPANTS = 1_000_000
MAX_RESAMPLES = 1_000_000
MAX_APPLICANTS = 10_000_000
#: Questions one person can be asked (an interactive policy's budget).
MAX_QUESTIONS = 10_000
#: Spline basis dimension of a GAMM smooth (a rating covariate has a handful of values).
MAX_BASIS = 100

Epochs = Annotated[int, Ge(1), Le(MAX_EPOCHS)]
Steps = Annotated[int, Ge(1), Le(MAX_STEPS)]
LayerWidth = Annotated[int, Ge(1), Le(MAX_LAYER_WIDTH)]
LearningRate = Annotated[float, Gt(0), Le(MAX_LEARNING_RATE)]
Seed = Annotated[int, Ge(0), Le(MAX_SEED)]
Participants = Annotated[int, Ge(2), Le(MAX_PARTICIPANTS)]
Resamples = Annotated[int, Ge(10), Le(MAX_RESAMPLES)]
