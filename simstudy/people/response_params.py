"""The parameters of the response models, without torch or scipy: the ``response:`` entries.

Each kind of response model (``logistic``, ``rating``, or one registered by user code) is a
row of the table of kinds (:mod:`simstudy.core.registry`, family ``response``): a parameters
model here and the runtime that takes it (:class:`~simstudy.people.response.LogisticResponse`,
:class:`~simstudy.people.rating.RatingResponse`). :data:`ResponseSpecs` is the one type of a
``response:`` entry, wherever a document states one (a scenario, a condition, a study): the kind
(default ``logistic``) is looked up in the table when the document is validated.

References:
    Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
    Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant study
    the published calibration comes from).

Example:
    >>> entry = LogisticResponseParams(act_cost_slope=1.0)
    >>> model = entry.build()
    >>> type(model).__name__, model.act_cost_slope, model.scale
    ('LogisticResponse', 1.0, (0, 1))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SerializeAsAny, WrapValidator

from ..core import registry
from ..core.documents import StrictModel

__all__ = ["ResponseParams", "LogisticResponseParams", "DistanceEffect", "RatingModel",
           "RatingResponseParams", "PUBLISHED_ACCEPT", "PUBLISHED_ACT", "ResponseSpecs",
           "N_CATEGORIES", "CUTS"]

#: the rating scale's categories, 1..7, and the cut points of the latent propensity between them
N_CATEGORIES = 7
CUTS = np.arange(1.5, N_CATEGORIES, 1.0)  # 1.5 .. 6.5


class ResponseParams(StrictModel):
    """Base of the response entries: :meth:`build` makes the runtime the table names."""

    def build(self) -> Any:
        """The response model this entry configures (its kind's runtime, given the entry)."""
        return registry.build("response", self)


class LogisticResponseParams(ResponseParams):
    """Parameters of the logistic response model, the default
    (:class:`~simstudy.people.response.LogisticResponse`):

    ``P(accept) = s(accept_intercept + accept_sd z_a)``,
    ``P(act | accept) = s(act_intercept - act_cost_slope cost + act_sd z_b)``.

    References:
        Tominaga, Yamashita & Kurashima, the 362-participant study of the published
        calibration (the full reference: :mod:`simstudy.people.response_params`).

    Example:
        >>> from simstudy.people import LogisticResponseParams
        >>> model = LogisticResponseParams(act_cost_slope=1.0).build()
        >>> type(model).__name__, model.act_cost_slope, model.scale
        ('LogisticResponse', 1.0, (0, 1))
    """

    kind: Literal["logistic"] = "logistic"
    accept_intercept: float = 1.5
    accept_sd: float = Field(1.0, ge=0.0)
    act_intercept: float = 1.5
    act_cost_slope: float = Field(2.0, ge=0.0)
    act_sd: float = Field(1.0, ge=0.0)


class DistanceEffect(StrictModel):
    """The population-level effect f(d) of distance on the latent propensity (rating points).

    ``none``: f = 0; ``linear``: f(d) = -slope (d - d_min); ``plateau``:
    f(d) = -slope (min(d, threshold) - d_min); minus ``dip`` where d <= ``dip_below``.

    Attributes:
        kind: ``"none"``, ``"linear"`` or ``"plateau"``.
        slope: fall per unit distance (positive = ratings fall with distance).
        threshold: distance beyond which a plateau effect is flat.
        d_min: distance at which f = 0 (the smallest possible distance, 1 for sparsity).
        dip: extra fall for very small distances (d <= ``dip_below``); 0 disables it.
        dip_below: distances at or below this get the dip.

    Example:
        >>> DistanceEffect(kind="plateau", slope=0.5)(np.array([1.0, 3.0, 9.0])).tolist()
        [-0.0, -1.0, -1.5]
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["none", "linear", "plateau"] = "none"
    slope: float = 0.0
    threshold: float = Field(4.0, gt=0)
    d_min: float = 1.0
    dip: float = 0.0
    dip_below: float = 0.0

    def __call__(self, d: np.ndarray) -> np.ndarray:
        d = np.asarray(d, dtype=float)
        if self.kind == "none":
            f = np.zeros_like(d)
        elif self.kind == "linear":
            f = -self.slope * (d - self.d_min)
        else:
            f = -self.slope * (np.minimum(d, self.threshold) - self.d_min)
        if self.dip:
            f = f - self.dip * (d <= self.dip_below)
        return f


class RatingModel(StrictModel):
    """One rating (acceptance or action) as a function of distance and person effects: the
    latent propensity ``b0 + f(d) + a_i + c_i (d - d_min) + e_ij``, cut at 1.5, ..., 6.5 (see
    :mod:`simstudy.people.rating`, which computes its probabilities).

    Attributes:
        intercept: latent mean at distance ``effect.d_min`` for an average person.
        effect: the distance effect f.
        sd_intercept: SD of the person random intercept a_i.
        sd_slope: SD of the person random slope c_i (per unit distance).
        sd_noise: SD of the rating-level noise e_ij.
        noise: ``"normal"`` or ``"logistic"`` (ordinal logit).
        blocked_penalty: fall when the recourse needs a feature the person cannot change.

    Example:
        >>> model = RatingModel(intercept=4.0, effect=DistanceEffect(kind="linear", slope=1.0))
        >>> model.latent_mean(np.array([1.0, 2.0]), np.zeros(2), np.zeros(2)).tolist()
        [4.0, 3.0]
    """

    model_config = ConfigDict(frozen=True)

    intercept: float = 4.0
    effect: DistanceEffect = DistanceEffect()
    sd_intercept: float = Field(1.0, ge=0)
    sd_slope: float = Field(0.0, ge=0)
    sd_noise: float = Field(1.05, gt=0)
    noise: Literal["normal", "logistic"] = "normal"
    blocked_penalty: float = 0.0

    @property
    def noise_scale(self) -> float:
        """The scale of the noise distribution: ``sd_noise`` (normal), ``sd_noise sqrt(3) / pi``
        (logistic, whose SD is then ``sd_noise``)."""
        return self.sd_noise if self.noise == "normal" else self.sd_noise * np.sqrt(3.0) / np.pi

    def latent_mean(self, d: np.ndarray, a: np.ndarray, c: np.ndarray,
                    blocked: np.ndarray | None = None) -> np.ndarray:
        """b0 + f(d) + a + c d (- penalty where blocked), before noise."""
        d = np.asarray(d, dtype=float)
        mean = self.intercept + self.effect(d) + a + c * (d - self.effect.d_min)
        if blocked is not None and self.blocked_penalty:
            mean = mean - self.blocked_penalty * np.asarray(blocked, dtype=bool)
        return mean

    def sample(self, mean: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """Ratings 1..7 drawn around the latent means."""
        mean = np.asarray(mean, dtype=float)
        draw = generator.normal if self.noise == "normal" else generator.logistic
        e = draw(0.0, self.noise_scale, size=mean.shape)
        return (1 + np.searchsorted(CUTS, mean + e)).astype(np.int64)


#: The published calibration of each rating (see :mod:`simstudy.people.rating`): acceptance
#: without a distance effect, willingness to act on a plateau over sparsity.
PUBLISHED_ACCEPT = RatingModel(intercept=4.2, effect=DistanceEffect(kind="none"),
                               sd_intercept=1.0, sd_slope=0.01, sd_noise=1.05)
PUBLISHED_ACT = RatingModel(intercept=4.1,
                            effect=DistanceEffect(kind="plateau", slope=0.7 / 3, threshold=4.0),
                            sd_intercept=0.92, sd_slope=0.03, sd_noise=1.0, blocked_penalty=2.0)


def _merged(default: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    # a partial entry keeps the default's other values, nested entries included
    out = dict(default)
    for key, value in given.items():
        out[key] = (_merged(out[key], value)
                    if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value)
    return out


def _stated(model: BaseModel, given: Mapping[str, Any]) -> BaseModel:
    # the fields a document stated stay told apart from those the default filled in
    # (:func:`simstudy.study.effects.parameter_table` reports where each value came from)
    object.__setattr__(model, "__pydantic_fields_set__", set(given) & set(type(model).model_fields))
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            nested = given.get(name)
            _stated(value, nested if isinstance(nested, Mapping) else {})
    return model


def _over(default: StrictModel) -> WrapValidator:
    def fill(value: Any, handler: Any) -> Any:
        if not isinstance(value, Mapping):
            return handler(value)
        return _stated(handler(_merged(default.model_dump(), value)), value)
    return WrapValidator(fill)


class RatingResponseParams(ResponseParams):
    """Parameters of the calibrated 7-point rating model
    (:class:`~simstudy.people.rating.RatingResponse`); a rating, or any field of one, left out
    keeps the published calibration (:data:`PUBLISHED_ACCEPT`, :data:`PUBLISHED_ACT`).

    Attributes:
        accept: the acceptance rating model.
        act: the action (willingness to act) rating model.
        intercept_correlation: correlation of a person's acceptance and action intercepts.
        distance: which distance drives the ratings, ``"sparsity"`` or ``"proximity"``.
        threshold: the rating at or above which a person accepts / acts (for probabilities).

    References:
        Tominaga, Yamashita & Kurashima, the 362-participant study of the published
        calibration (the full reference: :mod:`simstudy.people.response_params`).

    Example:
        >>> from simstudy.people import RatingResponseParams
        >>> entry = RatingResponseParams.model_validate({"act": {"intercept": 3.0}})
        >>> entry.act.intercept, entry.act.sd_noise, entry.act.effect.kind
        (3.0, 1.0, 'plateau')
        >>> model = RatingResponseParams(distance="proximity").build()
        >>> type(model).__name__, model.distance, model.scale
        ('RatingResponse', 'proximity', (1, 7))
    """

    kind: Literal["rating"] = "rating"
    accept: Annotated[RatingModel, _over(PUBLISHED_ACCEPT)] = PUBLISHED_ACCEPT
    act: Annotated[RatingModel, _over(PUBLISHED_ACT)] = PUBLISHED_ACT
    intercept_correlation: float = Field(0.5, ge=-1, le=1)
    distance: Literal["sparsity", "proximity"] = "sparsity"
    threshold: int = Field(5, ge=2, le=7)


def _response_entry(value: Any) -> Any:
    # looked up in the table when a document is validated, not when this module was imported,
    # so a response kind registered later (from user code) is a kind like any other
    if isinstance(value, StrictModel):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("a response entry is a mapping with a `kind`")
    kind = value.get("kind", "logistic")
    models = registry.entries("response")
    if kind not in models:
        raise ValueError(f"unknown response kind {kind!r}; choose from {sorted(models)}")
    return models[kind].model_validate(dict(value))


#: The one type of a ``response:`` entry: any registered response kind, chosen by its ``kind``
#: (default ``logistic``) from the table at validation time.
ResponseSpecs = Annotated[SerializeAsAny[StrictModel], BeforeValidator(_response_entry)]
