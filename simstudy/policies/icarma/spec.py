"""iCARMA's scenario entry, derived from :class:`ICARMAConfig` and :class:`ICARMAParams`
(the policy's constructor) without importing torch, so documents naming iCARMA validate fast.

Example:
    >>> ICARMASpec(kind="icarma").config().epochs
    450
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from ...core.registry import register
from ...core.schema import derive_spec, resolve_runtime
from ..specs import PolicySpec
from .config import CostShapeName, ICARMAConfig, ICARMAParams

__all__ = ["ICARMASpec"]


from ...core.bounds import LayerWidth

_Hidden = list[LayerWidth] | None
#: the hyperparameters as document fields: every one optional ("keep the preference set's
#: value"), except the set itself; tuples are lists in a document
_CONFIG_FIELDS = derive_spec(
    ICARMAConfig, base=PolicySpec, optional=True, name="ICARMAConfigFields",
    replace={"preferences": (Literal["ranking", "likert"], "ranking"),
             "mask_hidden": (_Hidden, None), "action_hidden": (_Hidden, None),
             "cost_shapes": (list[CostShapeName] | None, None)})


@lambda entry: register("policy", entry)
class ICARMASpec(derive_spec(ICARMAParams, runtime="simstudy.policies.icarma.policy:ICARMA",
                             kind="icarma", base=_CONFIG_FIELDS, name="ICARMASpec",
                             exclude=("config", "progress"), replace={"cache": (bool, True)})):
    """Scenario entry of iCARMA.

    ``preferences`` picks the paper's rank-based or score-based hyperparameter set; any other
    hyperparameter of :class:`ICARMAConfig` left out keeps that set's value. Train with the
    ``alpha`` and ``cost_placement`` of the population it will serve (the network sees weights
    scaled by ``alpha``). ``seeds`` trains one model per seed and deploys the best on
    validation; ``cache: false`` trains afresh instead of using the run's model cache.

    Example:
        >>> ICARMASpec(kind="icarma", preferences="likert", epochs=3).config().lr
        0.001
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient

    @classmethod
    def check_example(cls) -> dict:
        """Brief training for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "icarma", "epochs": 2, "batch_size": 64, "cache": False}

    def config(self) -> ICARMAConfig:
        overrides = {f.name: getattr(self, f.name) for f in dataclasses.fields(ICARMAConfig)
                     if f.name != "preferences" and getattr(self, f.name) is not None}
        overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
        return ICARMAConfig.for_preferences(self.preferences, **overrides)

    def build(self):
        """The unfitted :class:`~simstudy.policies.icarma.policy.ICARMA` as configured."""
        return resolve_runtime(self.runtime)(self.config(), **self.arguments())
