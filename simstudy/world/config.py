"""Training configurations of the decision model and the causal flow, declared without torch.

Each is the one declaration of its parameters, constraints and defaults, a frozen document
model: the trainers (:func:`simstudy.world.decision.train_decision_model`,
:func:`simstudy.world.flow.fit_causal_flow`) take it, and a scenario's ``decision_model:`` and
``world.flow:`` entries are validated by it.

Example:
    >>> DecisionConfig().to_json()["hidden"]
    [32, 32]
    >>> FlowConfig(epochs=2).epochs
    2
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import AfterValidator, ConfigDict, Field

from ..core.bounds import MAX_APPLICANTS, Epochs, LayerWidth, LearningRate, Seed
from ..core.documents import StrictModel

__all__ = ["DecisionConfig", "FlowConfig", "FlowSettings", "SplitShares"]


class _Config(StrictModel):
    # a configuration is a value: frozen, and hashable like one
    model_config = ConfigDict(frozen=True)

    def to_json(self) -> dict:
        """The fields as JSON values (``hidden`` as a list), in declaration order."""
        values = self.model_dump()
        values["hidden"] = list(self.hidden)  # type: ignore[attr-defined]
        return values


class DecisionConfig(_Config):
    """Training configuration of the decision model (defaults: the published set-up); the
    scenario's ``decision_model:`` entry when the model is trained.

    Attributes:
        hidden: hidden-layer widths of the multilayer perceptron.
        epochs, batch_size, lr, weight_decay: Adam training.
        class_weight: ``none`` (the published set-up: every applicant weighs one) or
            ``balanced`` (the loss weighs both classes equally, so that the model does not
            answer the majority class for everyone on a small, unbalanced table such as German
            credit's 70 % good applicants).

    Example:
        >>> from simstudy.world import DecisionConfig
        >>> DecisionConfig(hidden=(8,), epochs=3).to_json()
        {'hidden': [8], 'epochs': 3, 'batch_size': 256, 'lr': 0.001, 'weight_decay': 0.0}
    """

    hidden: tuple[LayerWidth, ...] = (32, 32)
    epochs: Epochs = 500
    batch_size: Annotated[int, Gt(0), Le(MAX_APPLICANTS)] = 256
    lr: LearningRate = 1e-3
    weight_decay: Annotated[float, Ge(0)] = 0.0
    class_weight: Literal["none", "balanced"] = "none"

    def to_json(self) -> dict:
        # a field at its default is left out, so the published set-up keeps its cache key
        values = super().to_json()
        if values["class_weight"] == "none":
            del values["class_weight"]
        return values

    def obtain(self, data: Any, cache: Any, seed: int, base_dir: str | Path = ".",
               progress: bool = False) -> tuple[Any, dict]:
        """The model trained on ``data`` (from the cache when it holds it) and its record."""
        return cache.decision_model(data, self, seed, progress=progress)


class FlowConfig(_Config):
    """Architecture and training of a causal flow.

    Attributes:
        hidden: hidden widths of each causal layer's conditioner (the study's tuned value: 64).
        layers: number of causal masked affine layers.
        spline_bins: bins of the element-wise rational-quadratic splines (0: no splines).
        epochs, batch_size, lr, weight_decay: Adam training; ``patience`` epochs without
            validation improvement stop it early.

    References:
        Javaloy, Sánchez-Martín & Valera, "Causal normalizing flows: from theory to practice",
        NeurIPS 2023, https://arxiv.org/abs/2306.05415.

    Example:
        >>> from simstudy.world import FlowConfig
        >>> config = FlowConfig(epochs=5, spline_bins=0)
        >>> config.hidden, config.layers, config.epochs
        ((64, 64), 1, 5)
    """

    hidden: tuple[LayerWidth, ...] = (64, 64)
    layers: Annotated[int, Ge(1), Le(100)] = 1
    spline_bins: Annotated[int, Ge(0), Le(1000)] = 8
    epochs: Epochs = 300
    batch_size: Annotated[int, Ge(1), Le(MAX_APPLICANTS)] = 256
    lr: LearningRate = 3e-3
    weight_decay: Annotated[float, Ge(0)] = 0.0
    patience: Annotated[int, Ge(0)] = 25


class FlowSettings(FlowConfig):
    """A causal flow's architecture and training (:class:`FlowConfig`) and the seed of its
    training: the ``flow:`` of a ``causal_flow`` world.

    Example:
        >>> settings = FlowSettings.model_validate({"epochs": 5, "seed": 2})
        >>> settings.seed, settings.config() == FlowConfig(epochs=5)
        (2, True)
    """

    seed: Seed = 0

    def config(self) -> FlowConfig:
        """The architecture and training without the seed (what a trained flow records)."""
        return FlowConfig(**self.model_dump(exclude={"seed"}))


def _check_shares(v: tuple[float, float, float]) -> tuple[float, float, float]:
    if min(v) <= 0 or abs(sum(v) - 1.0) > 1e-9:
        raise ValueError("split must be three positive shares summing to 1")
    return v


# Train / validation / deployment shares in a document (YAML gives a list; strict=False lets
# it become the tuple).
SplitShares = Annotated[tuple[float, float, float], Field(strict=False),
                        AfterValidator(_check_shares)]
