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
equally keen in the event world, the run tables and a simulated study. Its parameters (the
``response: {kind: rating}`` entry) are declared without scipy in
:mod:`simstudy.people.response_params` (:class:`~simstudy.people.response_params.RatingModel`,
:class:`~simstudy.people.response_params.DistanceEffect`); this module computes with them.

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

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from .response import ResponseInputs
from .response_params import CUTS, N_CATEGORIES, DistanceEffect, RatingModel, RatingResponseParams

__all__ = [
    "PersonEffects",
    "RatingResponse",
    "published_model",
    "noise_distribution",
    "category_probabilities",
    "ratings_from_uniforms",
]


def noise_distribution(model: RatingModel) -> Any:
    """The frozen scipy distribution of a rating's noise e_ij: normal with SD ``sd_noise``, or
    logistic with the same SD (scale ``sd_noise sqrt(3) / pi``).

    Example:
        >>> from simstudy.people.response_params import RatingModel
        >>> round(float(noise_distribution(RatingModel(noise="logistic")).std()), 6)
        1.05
    """
    return _frozen_noise(model.noise, float(model.noise_scale))


@functools.lru_cache(maxsize=64)
def _frozen_noise(noise: str, scale: float) -> Any:
    # freezing a scipy distribution builds a new distribution object (docstrings included):
    # about a millisecond, more than the rating it serves
    return stats.norm(scale=scale) if noise == "normal" else stats.logistic(scale=scale)


def category_probabilities(model: RatingModel, mean: np.ndarray) -> np.ndarray:
    """P(rating = 1..7 | latent mean), shape ``(*mean.shape, 7)``.

    Example:
        >>> from simstudy.people.response_params import RatingModel
        >>> category_probabilities(RatingModel(), np.array([4.0])).argmax(axis=-1).tolist()
        [3]
    """
    cdf = noise_distribution(model).cdf(CUTS - np.asarray(mean, dtype=float)[..., None])
    upper = np.concatenate([cdf, np.ones(cdf.shape[:-1] + (1,))], axis=-1)
    lower = np.concatenate([np.zeros(cdf.shape[:-1] + (1,)), cdf], axis=-1)
    return upper - lower


def ratings_from_uniforms(model: RatingModel, mean: np.ndarray, uniforms: np.ndarray
                          ) -> np.ndarray:
    """Ratings 1..7 around the latent means, by inverse transform of keyed uniforms.

    Example:
        >>> from simstudy.people.response_params import RatingModel
        >>> ratings_from_uniforms(RatingModel(), np.array([4.0, 4.0]), np.array([0.5, 0.99]))
        array([4, 6])
    """
    e = noise_distribution(model).ppf(np.asarray(uniforms, dtype=float))
    return (1 + np.searchsorted(CUTS, np.asarray(mean, dtype=float) + e)).astype(np.int64)


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


class RatingResponse:
    """Acceptance and action ratings of recourses, vectorized over (person, recourse) pairs.

    Args:
        params: the parameters
            (:class:`~simstudy.people.response_params.RatingResponseParams`: the two rating
            models, the correlation of a person's intercepts, the distance that drives the
            ratings and the threshold of "accepts" / "acts"); or give its fields as keywords.
            The defaults are the published calibration.

    References:
        Tominaga, Yamashita & Kurashima, the 362-participant study of the published
        calibration (the full reference: :mod:`simstudy.people.response_params`).

    Example:
        >>> from simstudy.examples import response_inputs
        >>> inputs = response_inputs()
        >>> from simstudy.people import RatingResponse
        >>> p_accept, p_act = RatingResponse(distance="sparsity").probabilities(inputs)
        >>> p_accept.round(3).tolist(), p_act.round(3).tolist()
        ([0.388, 0.388, 0.388], [0.434, 0.345, 0.193])
    """

    scale: ClassVar[tuple[int, int]] = (1, N_CATEGORIES)

    def __init__(self, params: RatingResponseParams | None = None, /, **values: Any) -> None:
        self.params = params if params is not None else RatingResponseParams(**values)
        self.accept: RatingModel = self.params.accept
        self.act: RatingModel = self.params.act
        self.intercept_correlation = self.params.intercept_correlation
        self.distance = self.params.distance
        self.threshold = self.params.threshold

    def __repr__(self) -> str:
        return f"RatingResponse({self.params!r})"

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
        dist_a, dist_c = noise_distribution(self.accept), noise_distribution(self.act)
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
        accept = ratings_from_uniforms(
            self.accept, self.accept.latent_mean(d, pe.accept_intercept, pe.accept_slope),
            u[:, 0])
        act = ratings_from_uniforms(
            self.act, self.act.latent_mean(d, pe.act_intercept, pe.act_slope, inputs.blocked),
            u[:, 1])
        return accept, act

    def with_effect(self, response: str, effect: DistanceEffect) -> RatingResponse:
        """A copy with the distance effect of ``"accept"`` or ``"act"`` replaced."""
        rating = getattr(self.params, response).model_copy(update={"effect": effect})
        return RatingResponse(self.params.model_copy(update={response: rating}))


def published_model() -> RatingResponse:
    """The default model calibrated to Tominaga et al.'s study (see the module docstring): the
    defaults of :class:`RatingResponse`.

    References:
        Tominaga, Yamashita & Kurashima, the 362-participant study of the published
        calibration (the full reference: :mod:`simstudy.people.response_params`).

    Example:
        >>> from simstudy.people import published_model
        >>> model = published_model()
        >>> model.accept.intercept, model.act.intercept, model.scale
        (4.2, 4.1, (1, 7))
    """
    return RatingResponse()
