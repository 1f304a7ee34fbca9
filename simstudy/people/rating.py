"""How people rate a recourse: acceptance and willingness to act on a 7-point scale.

Each rating comes from a latent propensity (in rating points)

    eta_ij = b0 + f(d_ij) + a_i + c_i d_ij + e_ij,   a_i ~ N(0, sd_a^2), c_i ~ N(0, sd_c^2),

for person i and recourse j at distance d_ij (sparsity or proximity), cut into the categories
1..7 at the half points 1.5, ..., 6.5. With normal e_ij this is an ordinal probit-type model on
the rating scale; with logistic e_ij (scale sd * sqrt(3) / pi) it is a cumulative-logit (ordinal
logit) model with the same cut points. The distance effect f is one of

* ``none``: f = 0;
* ``linear``: f(d) = -slope * (d - d_min);
* ``plateau``: f(d) = -slope * (min(d, threshold) - d_min): falls over small distances and is
  flat beyond the threshold (the shape Tominaga et al. report for action);

plus an optional ``dip`` for changes so small they look arbitrary ("That's it?"): f is lowered
by ``dip`` where d <= ``dip_below``. Willingness to act drops by ``blocked_penalty`` when the
recourse needs a feature the person says they cannot change.

The two ratings together form :class:`RatingResponse`, the ``rating`` kind of the
:class:`~simstudy.people.response.ResponseModel` protocol: "accepts" / "acts" means a rating at
or above ``threshold``. Its person effects come from the standard-normal dispositions the
simulated people carry (:meth:`RatingResponse.effects_from_normals`), so the same person is
equally keen in the event world, the run tables and a simulated study.

Default calibration (:func:`published_model`): Tominaga et al. (362 participants x 5 recourses;
1,738 ratings analysed) report for action vs sparsity a GAMM smooth with EDF 4.25 and F = 18.46
(p < 0.001), for acceptance no relation (F = 0.00, p = 1.00), and large participant effects. The
default model's components were set so simulated studies of that design reproduce those figures:
random-intercept SDs of about 0.9-1.0 and residual SDs of about 1.05-1.1 rating points (the
magnitudes mgcv estimates on study data of this kind), acceptance with no distance effect, and
action falling by 0.55 rating points from 1 to 4 changed features and flat beyond (EDF and F
medians checked by ``benchmarks/replication.py``; see its output in the project report).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated, ClassVar, Literal

import numpy as np
from annotated_types import Ge, Gt, Le

from ..core.registry import register
from ..core.schema import derive_spec
from .response import ResponseInputs

__all__ = [
    "DistanceEffect",
    "RatingModel",
    "PersonEffects",
    "RatingResponse",
    "published_model",
    "N_CATEGORIES",
    "EffectSpec",
    "RatingSpec",
    "RatingResponseSpec",
]

N_CATEGORIES = 7
_CUTS = np.arange(1.5, N_CATEGORIES, 1.0)  # 1.5 .. 6.5


@dataclass(frozen=True)
class DistanceEffect:
    """The population-level effect f(d) of distance on the latent propensity (rating points).

    Attributes:
        kind: ``"none"``, ``"linear"`` or ``"plateau"``.
        slope: fall per unit distance (positive = ratings fall with distance).
        threshold: distance beyond which a plateau effect is flat.
        d_min: distance at which f = 0 (the smallest possible distance, 1 for sparsity).
        dip: extra fall for very small distances (d <= ``dip_below``); 0 disables it.
        dip_below: distances at or below this get the dip.
    """

    kind: Literal["none", "linear", "plateau"] = "none"
    slope: float = 0.0
    threshold: Annotated[float, Gt(0)] = 4.0
    d_min: float = 1.0
    dip: float = 0.0
    dip_below: float = 0.0

    def __call__(self, d: np.ndarray) -> np.ndarray:
        d = np.asarray(d, dtype=float)
        if self.kind == "none":
            f = np.zeros_like(d)
        elif self.kind == "linear":
            f = -self.slope * (d - self.d_min)
        elif self.kind == "plateau":
            f = -self.slope * (np.minimum(d, self.threshold) - self.d_min)
        else:
            raise ValueError(f"unknown distance effect {self.kind!r}")
        if self.dip:
            f = f - self.dip * (d <= self.dip_below)
        return f


@dataclass(frozen=True)
class RatingModel:
    """One rating (acceptance or action) as a function of distance and person effects.

    Attributes:
        intercept: latent mean at distance ``effect.d_min`` for an average person.
        effect: the distance effect f.
        sd_intercept: SD of the person random intercept a_i.
        sd_slope: SD of the person random slope c_i (per unit distance).
        sd_noise: SD of the rating-level noise e_ij.
        noise: ``"normal"`` or ``"logistic"`` (ordinal logit).
        blocked_penalty: fall when the recourse needs a feature the person cannot change.
    """

    intercept: float = 4.0
    effect: DistanceEffect = field(default_factory=DistanceEffect)
    sd_intercept: Annotated[float, Ge(0)] = 1.0
    sd_slope: Annotated[float, Ge(0)] = 0.0
    sd_noise: Annotated[float, Gt(0)] = 1.05
    noise: Literal["normal", "logistic"] = "normal"
    blocked_penalty: float = 0.0

    def _noise_dist(self):
        from scipy import stats  # scipy where ratings are computed; documents validate fast

        if self.noise == "normal":
            return stats.norm(scale=self.sd_noise)
        if self.noise == "logistic":
            return stats.logistic(scale=self.sd_noise * np.sqrt(3.0) / np.pi)
        raise ValueError(f"unknown noise {self.noise!r}")

    def latent_mean(self, d: np.ndarray, a: np.ndarray, c: np.ndarray,
                    blocked: np.ndarray | None = None) -> np.ndarray:
        """b0 + f(d) + a + c d (- penalty where blocked), before noise."""
        d = np.asarray(d, dtype=float)
        mean = self.intercept + self.effect(d) + a + c * (d - self.effect.d_min)
        if blocked is not None and self.blocked_penalty:
            mean = mean - self.blocked_penalty * np.asarray(blocked, dtype=bool)
        return mean

    def category_probs(self, mean: np.ndarray) -> np.ndarray:
        """P(rating = 1..7 | latent mean), shape ``(*mean.shape, 7)``."""
        cdf = self._noise_dist().cdf(_CUTS - np.asarray(mean, dtype=float)[..., None])
        upper = np.concatenate([cdf, np.ones(cdf.shape[:-1] + (1,))], axis=-1)
        lower = np.concatenate([np.zeros(cdf.shape[:-1] + (1,)), cdf], axis=-1)
        return upper - lower

    def from_uniforms(self, mean: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """Ratings 1..7 around the latent means, by inverse transform of keyed uniforms."""
        e = self._noise_dist().ppf(np.asarray(uniforms, dtype=float))
        return (1 + np.searchsorted(_CUTS, np.asarray(mean, dtype=float) + e)).astype(np.int64)

    def sample(self, mean: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """Ratings 1..7 drawn around the latent means."""
        mean = np.asarray(mean, dtype=float)
        if self.noise == "normal":
            e = generator.normal(0.0, self.sd_noise, size=mean.shape)
        else:
            e = generator.logistic(0.0, self.sd_noise * np.sqrt(3.0) / np.pi, size=mean.shape)
        return (1 + np.searchsorted(_CUTS, mean + e)).astype(np.int64)


#: The published calibration of each rating (see the module docstring): acceptance without a
#: distance effect, willingness to act on a plateau over sparsity.
PUBLISHED_ACCEPT = RatingModel(intercept=4.2, effect=DistanceEffect("none"), sd_intercept=1.0,
                               sd_slope=0.01, sd_noise=1.05)
PUBLISHED_ACT = RatingModel(intercept=4.1,
                            effect=DistanceEffect("plateau", slope=0.7 / 3, threshold=4.0),
                            sd_intercept=0.92, sd_slope=0.03, sd_noise=1.0, blocked_penalty=2.0)


@dataclass(frozen=True)
class PersonEffects:
    """Per-person random effects (rating points) for acceptance and action."""

    accept_intercept: np.ndarray
    accept_slope: np.ndarray
    act_intercept: np.ndarray
    act_slope: np.ndarray

    def __len__(self) -> int:
        return len(self.accept_intercept)

    def take(self, index: np.ndarray) -> PersonEffects:
        """Effects of the people at ``index`` (e.g. one row per rating)."""
        return PersonEffects(*(np.asarray(v)[index] for v in
                               (self.accept_intercept, self.accept_slope,
                                self.act_intercept, self.act_slope)))


@dataclass(frozen=True)
class RatingResponse:
    """Acceptance and action ratings of recourses, vectorized over (person, recourse) pairs.

    Attributes:
        accept: the acceptance rating model (default: the published calibration).
        act: the action (willingness to act) rating model (default: the published calibration).
        intercept_correlation: correlation of a person's acceptance and action intercepts.
        distance: which distance drives the ratings, ``"sparsity"`` or ``"proximity"``.
        threshold: the rating at or above which a person accepts / acts (for probabilities).

    References:
        Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
        Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant
        study the published calibration comes from).

    Example:
        >>> from simstudy.examples import response_inputs
        >>> inputs = response_inputs()
        >>> from simstudy.people import RatingResponse
        >>> p_accept, p_act = RatingResponse(distance="sparsity").probabilities(inputs)
        >>> p_accept.round(3).tolist(), p_act.round(3).tolist()
        ([0.388, 0.388, 0.388], [0.434, 0.345, 0.193])
    """

    accept: RatingModel = PUBLISHED_ACCEPT
    act: RatingModel = PUBLISHED_ACT
    intercept_correlation: Annotated[float, Ge(-1), Le(1)] = 0.5
    distance: Literal["sparsity", "proximity"] = "sparsity"
    threshold: Annotated[int, Ge(2), Le(7)] = 5

    scale: ClassVar[tuple[int, int]] = (1, N_CATEGORIES)

    def sample_people(self, n: int, generator: np.random.Generator) -> PersonEffects:
        """Draws person effects for ``n`` people."""
        return self.effects_from_normals(generator.standard_normal((n, 4)))

    def effects_from_normals(self, z: np.ndarray) -> PersonEffects:
        """Person effects from standard normals ``z`` ``(n, 4)``: accept intercept, accept
        slope, action intercept (before correlating with acceptance), action slope."""
        z = np.asarray(z, dtype=float)
        r = float(np.clip(self.intercept_correlation, -1.0, 1.0))
        act_z = r * z[:, 0] + np.sqrt(1.0 - r * r) * z[:, 2]
        return PersonEffects(
            accept_intercept=self.accept.sd_intercept * z[:, 0],
            accept_slope=self.accept.sd_slope * z[:, 1],
            act_intercept=self.act.sd_intercept * act_z,
            act_slope=self.act.sd_slope * z[:, 3],
        )

    def rate(self, distance: np.ndarray, person_effects: PersonEffects,
             generator: np.random.Generator, blocked: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
        """Acceptance and action ratings (1..7) for each (person, recourse) row.

        Args:
            distance: distance of each recourse, shape (n,).
            person_effects: effects aligned with ``distance`` (use :meth:`PersonEffects.take`).
            generator: the random stream for the rating noise.
            blocked: whether each recourse needs a feature the person cannot change.
        """
        pe = person_effects
        accept = self.accept.sample(
            self.accept.latent_mean(distance, pe.accept_intercept, pe.accept_slope), generator)
        act = self.act.sample(
            self.act.latent_mean(distance, pe.act_intercept, pe.act_slope, blocked), generator)
        return accept, act

    def rating_probabilities(self, distance: np.ndarray, person_effects: PersonEffects,
                             blocked: np.ndarray | None = None
                             ) -> tuple[np.ndarray, np.ndarray]:
        """P(accept rating >= threshold) and P(act rating >= threshold) for each row."""
        pe = person_effects
        dist_a, dist_c = self.accept._noise_dist(), self.act._noise_dist()
        cut = self.threshold - 0.5
        m_a = self.accept.latent_mean(distance, pe.accept_intercept, pe.accept_slope)
        m_c = self.act.latent_mean(distance, pe.act_intercept, pe.act_slope, blocked)
        return dist_a.sf(cut - m_a), dist_c.sf(cut - m_c)

    # -- the ResponseModel protocol ------------------------------------------------------------
    def _person(self, inputs: ResponseInputs) -> tuple[np.ndarray, PersonEffects]:
        n = len(inputs)
        zero = np.zeros(n)

        def given(v):
            return zero if v is None else np.asarray(v, dtype=float)

        z = np.column_stack([given(inputs.accept_effect), given(inputs.accept_slope_effect),
                             given(inputs.act_effect), given(inputs.act_slope_effect)])
        d = inputs.sparsity if self.distance == "sparsity" else inputs.proximity_l1
        return np.asarray(d, dtype=float), self.effects_from_normals(z)

    def probabilities(self, inputs: ResponseInputs) -> tuple[np.ndarray, np.ndarray]:
        """P(accept rating >= threshold) and P(act rating >= threshold); with independent
        rating noise given the person, the latter is also P(act | accept)."""
        d, effects = self._person(inputs)
        return self.rating_probabilities(d, effects, inputs.blocked)

    def ratings(self, inputs: ResponseInputs, uniforms: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Acceptance and action ratings 1..7 from ``(n, 2)`` uniforms."""
        d, pe = self._person(inputs)
        u = np.asarray(uniforms, dtype=float)
        accept = self.accept.from_uniforms(
            self.accept.latent_mean(d, pe.accept_intercept, pe.accept_slope), u[:, 0])
        act = self.act.from_uniforms(
            self.act.latent_mean(d, pe.act_intercept, pe.act_slope, inputs.blocked), u[:, 1])
        return accept, act

    def with_effect(self, response: str, effect: DistanceEffect) -> RatingResponse:
        """A copy with the distance effect of ``"accept"`` or ``"act"`` replaced."""
        return replace(self, **{response: replace(getattr(self, response), effect=effect)})


def published_model() -> RatingResponse:
    """The default model calibrated to Tominaga et al.'s study (see the module docstring): the
    defaults of :class:`RatingResponse`.

    References:
        Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
        Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant
        study the published calibration comes from).

    Example:
        >>> from simstudy.people import published_model
        >>> model = published_model()
        >>> model.accept.intercept, model.act.intercept, model.scale
        (4.2, 4.1, (1, 7))
    """
    return RatingResponse()


#: The ``rating`` response entry; omitted parts (a whole rating or any field of one) keep the
#: calibrated published values, the defaults of :class:`RatingResponse`.
RatingResponseSpec = register("response", derive_spec(RatingResponse, kind="rating", doc="""
Document entry of :class:`RatingResponse` (fields and defaults are its constructor's).

References:
    Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
    Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant
    study the published calibration comes from).

Example:
    >>> from simstudy.people import RatingResponseSpec
    >>> model = RatingResponseSpec(kind="rating", distance="proximity").build()
    >>> type(model).__name__, model.distance, model.scale
    ('RatingResponse', 'proximity', (1, 7))
"""))
#: Entries of one rating's model and of a distance effect, for documents that configure them.
RatingSpec = derive_spec(RatingModel, name="RatingSpec")
EffectSpec = derive_spec(DistanceEffect, name="EffectSpec")
