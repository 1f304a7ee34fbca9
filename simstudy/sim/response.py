"""How people respond to a recourse: do they accept it, and do they carry it out?

A response model maps properties of each recourse (its cost and distance) and each person's
own disposition (two standard-normal effects, drawn once per person) to two probabilities:
accepting the recourse, and acting on it once accepted. The simulator draws the outcomes itself
with keyed uniforms, so any model that implements :class:`ResponseModel` (for example the
calibrated models fitted to the acceptance / action user study) plugs in unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import expit

from .spec import LogisticResponseSpec

__all__ = ["ResponseInputs", "ResponseModel", "LogisticResponse", "build_response_model"]


@dataclass(frozen=True)
class ResponseInputs:
    """What a response model may use, one entry per person (all arrays of shape ``(n,)``).

    Attributes:
        cost: weighted recourse cost (the person's own cost weights).
        cost_unweighted: the same with unit weights.
        sparsity: number of features the recourse changes.
        proximity_l1: sum over changed features of ``|change| / feature range`` (the distance of
            the acceptance / action user study).
        accept_effect, act_effect: the person's standard-normal dispositions.
    """

    cost: np.ndarray
    cost_unweighted: np.ndarray
    sparsity: np.ndarray
    proximity_l1: np.ndarray
    accept_effect: np.ndarray
    act_effect: np.ndarray


@runtime_checkable
class ResponseModel(Protocol):
    """Vectorized acceptance and action probabilities."""

    def probabilities(self, inputs: ResponseInputs) -> tuple[np.ndarray, np.ndarray]:
        """Returns ``(p_accept, p_act_given_accept)``, each ``(n,)`` in ``[0, 1]``."""
        ...


@dataclass(frozen=True)
class LogisticResponse:
    """Logistic default: acceptance does not depend on distance, action falls with cost.

    ``P(accept) = s(a0 + sd_a * z_a)`` and ``P(act | accept) = s(b0 - b1 * cost + sd_b * z_b)``,
    mirroring the user-study finding that acceptance shows no relation to distance while the
    willingness to act decreases with it; person effects carry the large between-person
    variance seen there.
    """

    accept_intercept: float = 1.5
    accept_sd: float = 1.0
    act_intercept: float = 1.5
    act_cost_slope: float = 2.0
    act_sd: float = 1.0

    def probabilities(self, inputs: ResponseInputs) -> tuple[np.ndarray, np.ndarray]:
        accept = expit(self.accept_intercept + self.accept_sd * inputs.accept_effect)
        act = expit(self.act_intercept - self.act_cost_slope * np.nan_to_num(inputs.cost)
                    + self.act_sd * inputs.act_effect)
        return accept, act


def build_response_model(spec: LogisticResponseSpec) -> ResponseModel:
    """The response model a spec describes."""
    return LogisticResponse(spec.accept_intercept, spec.accept_sd, spec.act_intercept,
                            spec.act_cost_slope, spec.act_sd)
