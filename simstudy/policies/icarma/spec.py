"""iCARMA's parameters model (torch-free): the scenario entry, made of the hyperparameters.

Example:
    >>> ICARMAParams(kind="icarma").training_config().epochs
    450
    >>> ICARMAParams(kind="icarma", preferences="likert", epochs=3).lr
    0.001
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

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

    ``shorten`` is how the deployed action is read (it changes no training, so a model serves
    both): ``boundary`` (default; not in the paper: the action shortened to the first point
    of ``x_A + t (theta - x_A)``, ``t = 1/n, 2/n, ..., 1`` with ``n = shorten_steps``, that
    the decision model approves in the world the policy acts in; the action itself where no
    earlier point is approved) or ``none`` (as published: the networks' action as it is).
    The amortized action network does not resolve how far each person is from the boundary:
    it goes about 1.7 times as far as validity needs, 12 times for the people nearest to
    approval, under every training term measured, which costs plausibility and cost; the
    shortened reading was chosen on the one-seed frontier (``benchmarks/ICARMA_RESULTS.md``,
    "Why iCARMA goes past the boundary").

    ``mask_choice`` is which features are acted on: ``exact`` (default; not in the paper: for
    each person, the subset of their actionable features whose deployed action is approved
    and minimizes the mask's part of the training objective, cost, plausibility and
    feasibility terms minus ``kl_weight`` times the log of the person's mask prior; the mode
    of the distribution of masks that minimizes that part exactly, which the mask network
    approximates; see
    :meth:`~simstudy.policies.icarma.policy.ICARMA.exact_masks`; it costs one deployment per
    subset of the globally actionable features) or ``network`` (as published: the mask
    network's ``logit > 0``). The mask network's logits for the features whose choice decides
    plausibility sit near even odds, so its choice follows the training seed more than the
    person; the exact reading was chosen on the one-seed frontier
    (``benchmarks/ICARMA_RESULTS.md``, "The mask's choice, measured").

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
    shorten: Literal["none", "boundary"] = "boundary"
    shorten_steps: int = Field(50, ge=1, le=1000)
    mask_choice: Literal["network", "exact"] = "exact"

    #: the fields that change how the trained action is deployed, not the training
    DEPLOYMENT: ClassVar[tuple[str, ...]] = ("shorten", "shorten_steps", "mask_choice")

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

