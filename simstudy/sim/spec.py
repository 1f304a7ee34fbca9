"""The declarative description of an event world (the ``simulation:`` block of a scenario).

Every duration is in days. Defaults describe a plausible consumer-lending process; each knob is
documented where it is used in :mod:`simstudy.sim.world`. Who the people are, including how they
accept and act on a recourse and what they truly cannot change, is not described here but by the
scenario's people sections (:mod:`simstudy.people.spec`): the event world runs on the same
people as the run tables.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..core.documents import StrictModel

__all__ = [
    "PoissonArrivals",
    "CohortArrivals",
    "SessionSpec",
    "ActionTimeSpec",
    "RetrainingSpec",
    "SimulationSpec",
]

Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Days = Annotated[float, Field(ge=0.0)]


class PoissonArrivals(StrictModel):
    """Applicants arrive as a Poisson process of ``rate_per_day`` over the whole horizon."""

    kind: Literal["poisson"] = "poisson"
    rate_per_day: float = Field(gt=0.0)


class CohortArrivals(StrictModel):
    """``size`` applicants arrive together at day 0, or uniformly over ``spread_days``."""

    kind: Literal["cohort"] = "cohort"
    size: int = Field(gt=0)
    spread_days: Days = 0.0


class SessionSpec(StrictModel):
    """The recourse session.

    Attributes:
        latency_days: compute latency of the policy before the answer is shown.
        question_time_days: mean time a person takes to answer one question (policies that ask,
            such as HARE, report the questions asked in ``Recourse.extras["queries"]``).
        question_time_sd: log-scale spread of a person's answering speed (lognormal factor).
        patience_questions: mean of a person's patience in questions (exponential); a person
            who is asked more questions than their patience abandons the session. ``None``:
            unlimited patience.
    """

    latency_days: Days = 0.0
    question_time_days: Days = 2.0 / (24 * 60)
    question_time_sd: float = Field(0.5, ge=0.0)
    patience_questions: float | None = Field(None, gt=0.0)


class ActionTimeSpec(StrictModel):
    """How long carrying out a recourse takes, and how completely it is carried out.

    ``duration = base_days + per_unit_cost_days * cost / capacity`` with the person's effort
    capacity ``capacity ~ LogNormal(0, capacity_sd)`` and ``cost`` the weighted recourse cost.
    With probability ``partial_probability`` the person achieves only a fraction
    ``f ~ Uniform(partial_min, 1)`` of every recommended change.
    """

    base_days: Days = 7.0
    per_unit_cost_days: Days = 90.0
    capacity_sd: float = Field(0.5, ge=0.0)
    partial_probability: Probability = 0.1
    partial_min: Probability = 0.5


class RetrainingSpec(StrictModel):
    """Periodic retraining of the decision model on recent applications.

    Attributes:
        every_days: retraining period (a multiple of the simulation window).
        window_days: applications of the last ``window_days`` form the training set, labelled
            by the world's true label rule.
        epochs: training epochs of each new model.
        min_samples: retraining is skipped while fewer applications are available.
    """

    every_days: float = Field(gt=0.0)
    window_days: float = Field(gt=0.0)
    epochs: int = Field(20, gt=0)
    min_samples: int = Field(200, gt=1)


class SimulationSpec(StrictModel):
    """An event world: arrivals, decisions, recourse sessions, acting, re-applying, retraining.

    Attributes:
        horizon_days: simulated time.
        window_days: the lender's batch window: applications are decided, and recourse requests
            answered, at window boundaries, all of a window at once.
        arrivals: the arrival process.
        request_probability: probability that a rejected person asks for recourse.
        request_probability_by_group: overrides per group label (``"column=value"``, e.g.
            ``"privileged=0"``, see ``group_column``).
        group_column: population group column used for group-dependent behaviour and reports.
        session, action: the session and acting-time models.
        max_attempts: most recourses one person asks for; rejected after that, they give up.
        reapply_delay_days: time from completing an action to re-applying.
        retry_delay_days: time from a failed action to re-applying unchanged.
        retraining: optional periodic retraining of the decision model.
        batch_size: cap on rows per policy / model call (the event log does not depend on it).
        lookahead: answer, in one policy call, every recourse request already determined
            before the next retraining (people who will arrive or re-apply, are rejected and
            ask), instead of one call per window. A request's inputs (the person's features,
            reported profile and the model version) are fixed when it is scheduled, so a
            policy whose answers do not depend on who else is in the batch gives the same
            event log either way; policies with per-call fixed costs (gradient searches such
            as Wachter and HARE) run many times faster. ``false``: one call per window.

    Example:
        >>> from simstudy.sim import SimulationSpec
        >>> spec = SimulationSpec.model_validate(
        ...     {"horizon_days": 30, "arrivals": {"kind": "poisson", "rate_per_day": 5}})
        >>> spec.arrivals.kind, spec.window_days, spec.request_probability
        ('poisson', 1.0, 0.8)
    """

    horizon_days: float = Field(365.0, gt=0.0)
    window_days: float = Field(1.0, gt=0.0)
    arrivals: Annotated[PoissonArrivals | CohortArrivals, Field(discriminator="kind")]
    request_probability: Probability = 0.8
    request_probability_by_group: dict[str, Probability] = Field(default_factory=dict)
    group_column: str = "privileged"
    session: SessionSpec = Field(default_factory=SessionSpec)
    action: ActionTimeSpec = Field(default_factory=ActionTimeSpec)
    max_attempts: int = Field(3, ge=0)
    reapply_delay_days: Days = 0.0
    retry_delay_days: Days = 7.0
    retraining: RetrainingSpec | None = None
    batch_size: int | None = Field(None, gt=0)
    lookahead: bool = False

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data):
        # name the new home of the people's settings rather than "extra field not permitted"
        if isinstance(data, dict):
            if "response" in data:
                raise ValueError("response: the response model belongs to the people; give it "
                                 "as the scenario's top-level `response:`")
            if "hidden_mismatch_probability" in data:
                raise ValueError("hidden_mismatch_probability: what people truly cannot change "
                                 "belongs to their population; give it in the population "
                                 "document")
        return data

    @model_validator(mode="after")
    def _check(self) -> SimulationSpec:
        if self.retraining is not None:
            ratio = self.retraining.every_days / self.window_days
            if abs(ratio - round(ratio)) > 1e-9:
                raise ValueError("retraining.every_days must be a multiple of window_days")
        if self.window_days > self.horizon_days:
            raise ValueError("window_days must not exceed horizon_days")
        if not math.isfinite(self.horizon_days / self.window_days):
            raise ValueError("horizon_days / window_days must be finite")
        return self
