"""iCARMA's parameters model (torch-free): the scenario entry, made of the hyperparameters.

Example:
    >>> ICARMAParams(kind="icarma").training_config().epochs
    450
    >>> ICARMAParams(kind="icarma", preferences="likert", epochs=3).lr
    0.001
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import model_validator

from ...core.bounds import Seed
from ..params import PolicyParams
from .config import ICARMAConfig

__all__ = ["ICARMAParams"]


class ICARMAParams(PolicyParams, ICARMAConfig):
    """Parameters of :class:`~simstudy.policies.icarma.policy.ICARMA`: its hyperparameters
    (:class:`ICARMAConfig`) and how it is trained and deployed.

    ``preferences`` picks the paper's rank-based or score-based hyperparameter set; a value given
    replaces the set's. The cost profile's ``alpha`` and weight placement are not iCARMA's: they
    are the population's (``cost:`` of the population document), read when the policy is
    fitted, so the networks are trained for the people they serve. ``seeds`` trains one model
    per seed and deploys the best on validation; ``cache: false`` trains afresh instead of
    using the run's model cache.

    Example:
        >>> params = ICARMAParams.model_validate({"kind": "icarma", "preferences": "likert",
        ...                                       "epochs": 3, "seeds": [0, 1]})
        >>> params.epochs, params.lr, params.seeds, params.training_config().alpha
        (3, 0.001, [0, 1], None)
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient
    kind: Literal["icarma"] = "icarma"
    seeds: list[Seed] | None = None
    cache: bool = True

    @model_validator(mode="before")
    @classmethod
    def _cost_is_the_populations(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("alpha", "cost_placement"):
                if data.get(key) is not None:
                    raise ValueError(
                        f"{key}: iCARMA is trained for the cost profile of the population it "
                        "serves; set it in the population's `cost:` (alpha, placement)")
        return data

    @classmethod
    def check_example(cls) -> dict:
        """Brief training for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "icarma", "epochs": 2, "batch_size": 64, "cache": False}

