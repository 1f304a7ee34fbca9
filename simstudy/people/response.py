"""How people respond to a recourse: do they accept it, and do they act on it?

One protocol, :class:`ResponseModel`, serves the event world, the run tables and the simulated
studies. A model maps what a person sees of a recourse (its cost, sparsity and proximity, and
whether it needs a feature the person truly cannot change) and the person's own dispositions
(standard-normal effects drawn once per person by :class:`~simstudy.people.People`) to

* ``probabilities``: ``P(accept)`` and ``P(act | accept)``, each in ``[0, 1]``;
* ``ratings``: an acceptance and an action answer on the model's scale (``scale``), drawn by
  inverse transform from uniforms the caller keys by person and recourse.

Kinds are rows of the table of kinds (:func:`simstudy.core.registry.register`, family
``response``): a parameters model (:mod:`simstudy.people.response_params`) and the runtime that
takes it: ``logistic`` (here) and ``rating``, the calibrated 7-point model of the published
study (:mod:`simstudy.people.rating`). A scenario picks one with ``response: {kind: ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from scipy.special import expit

from .response_params import LogisticResponseParams

__all__ = ["ResponseInputs", "ResponseModel", "LogisticResponse"]


@dataclass(frozen=True)
class ResponseInputs:
    """What a response model may use, one entry per (person, recourse) row, shape ``(n,)``.

    Attributes:
        cost: weighted recourse cost (the person's own cost weights).
        cost_unweighted: the same with unit weights.
        sparsity: number of features the recourse changes.
        proximity_l1: sum over changed features of ``|change| / feature range`` (the distance of
            the acceptance / action user study).
        accept_effect, act_effect: the person's standard-normal dispositions to accept and to
            act (:attr:`People.dispositions`).
        accept_slope_effect, act_slope_effect: standard-normal person effects on how distance
            matters to them (used by models with random slopes).
        blocked: the recourse needs a feature the person truly cannot change.

    Example:
        >>> import numpy as np
        >>> from simstudy.people import ResponseInputs
        >>> z = np.zeros(3)
        >>> cost = np.array([0.0, 0.5, 2.0])
        >>> inputs = ResponseInputs(cost=cost, cost_unweighted=cost, sparsity=np.array([0, 1, 3]),
        ...                         proximity_l1=np.array([0.0, 0.2, 0.9]), accept_effect=z,
        ...                         act_effect=z)
        >>> len(inputs), inputs.blocked is None
        (3, True)
    """

    cost: np.ndarray
    cost_unweighted: np.ndarray
    sparsity: np.ndarray
    proximity_l1: np.ndarray
    accept_effect: np.ndarray
    act_effect: np.ndarray
    accept_slope_effect: np.ndarray | None = None
    act_slope_effect: np.ndarray | None = None
    blocked: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.cost)


@runtime_checkable
class ResponseModel(Protocol):
    """Vectorized acceptance and action of recourses (see the module docstring).

    Example:
        >>> from simstudy.examples import response_inputs
        >>> inputs = response_inputs()
        >>> from simstudy.people import LogisticResponse, ResponseModel
        >>> model: ResponseModel = LogisticResponse()
        >>> isinstance(model, ResponseModel), model.scale
        (True, (0, 1))
        >>> p_accept, p_act = model.probabilities(inputs)
        >>> p_act.round(3).tolist()
        [0.818, 0.622, 0.076]
    """

    #: lowest and highest answer of :meth:`ratings`
    scale: tuple[int, int]

    def probabilities(self, inputs: ResponseInputs) -> tuple[np.ndarray, np.ndarray]:
        """Returns ``(p_accept, p_act_given_accept)``, each ``(n,)`` in ``[0, 1]``."""
        ...

    def ratings(self, inputs: ResponseInputs, uniforms: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Acceptance and action answers, ints on :attr:`scale`, from ``(n, 2)`` uniforms."""
        ...


class LogisticResponse:
    """Logistic default: acceptance does not depend on distance, action falls with cost.

    ``P(accept) = s(a0 + sd_a * z_a)`` and ``P(act | accept) = s(b0 - b1 * cost + sd_b * z_b)``,
    mirroring the user-study finding that acceptance shows no relation to distance while the
    willingness to act decreases with it; person effects carry the large between-person
    variance seen there. Its ratings are yes / no (``scale = (0, 1)``).

    Args:
        params: the parameters (:class:`~simstudy.people.response_params.LogisticResponseParams`);
            or give its fields as keywords.

    References:
        Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
        Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant
        study the published calibration comes from).

    Example:
        >>> import numpy as np
        >>> from simstudy.examples import response_inputs
        >>> inputs = response_inputs()
        >>> from simstudy.people import LogisticResponse
        >>> p_accept, p_act = LogisticResponse(act_cost_slope=2.0).probabilities(inputs)
        >>> p_accept.round(3).tolist(), p_act.round(3).tolist()
        ([0.818, 0.818, 0.818], [0.818, 0.622, 0.076])
        >>> LogisticResponse().ratings(inputs, np.full((3, 2), 0.5))
        (array([1, 1, 1]), array([1, 1, 0]))
    """

    scale: ClassVar[tuple[int, int]] = (0, 1)

    def __init__(self, params: LogisticResponseParams | None = None, /, **values: Any) -> None:
        self.params = params if params is not None else LogisticResponseParams(**values)
        self.accept_intercept = self.params.accept_intercept
        self.accept_sd = self.params.accept_sd
        self.act_intercept = self.params.act_intercept
        self.act_cost_slope = self.params.act_cost_slope
        self.act_sd = self.params.act_sd

    def __repr__(self) -> str:
        return f"LogisticResponse({self.params!r})"

    def probabilities(self, inputs: ResponseInputs) -> tuple[np.ndarray, np.ndarray]:
        accept = expit(self.accept_intercept + self.accept_sd * inputs.accept_effect)
        act = expit(self.act_intercept - self.act_cost_slope * np.nan_to_num(inputs.cost)
                    + self.act_sd * inputs.act_effect)
        return accept, act

    def ratings(self, inputs: ResponseInputs, uniforms: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        p_accept, p_act = self.probabilities(inputs)
        u = np.asarray(uniforms, dtype=np.float64)
        return (u[:, 0] < p_accept).astype(np.int64), (u[:, 1] < p_act).astype(np.int64)
