"""The ``study:`` section of a scenario: a rating study from the scenario's own people.

See :mod:`simstudy.study.from_scenario` for what the study does with it; this module only declares
and checks the document, so that validating a scenario stays light.

One ``response:`` per scope: the participants are the run's people, so they rate with the
response model of the study's condition (its ``response:``, else the scenario's). A
``study.response`` is the study's own scope, accepted only where neither the scenario nor the
study's condition states a ``response:`` (a scenario whose run tables keep the logistic default);
stating both is refused as ambiguous. With neither, the study rates with the calibrated
7-point model (``{kind: rating}``). :func:`study_response` resolves the rule, and every command
(``run``, ``study``, ``power``, ``preregister``) reads the study's response through it.

Example:
    >>> spec = StudySectionSpec.model_validate({"participants": 50})
    >>> spec.response is None, spec.multiplicity
    (True, 'holm')
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ..core.bounds import MAX_SIMULATIONS, Participants
from ..core.documents import StrictModel
from ..people.response_params import RatingResponseParams
from ..people.spec import ResponseSpecs
from .hypotheses import HypothesisSpec, Multiplicity, hypothesis_problems
from .live_section import LiveSpec, live_problems

__all__ = ["RateSpec", "PowerRates", "StudyPowerSpec", "StudySectionSpec", "study_problems",
           "study_response",
           "response_scope_problems"]


class RateSpec(StrictModel):
    """One rate of a live study's power analysis and where it comes from.

    ``source``: ``assumed`` or ``pilot`` (``rate`` stated), or the path of a live pilot's
    export (``study.csv`` of ``simstudy export``, relative to the study file): the rate is then
    read from it (:func:`~simstudy.study.live_design.export_rates`) and ``rate`` is left out.
    For ``no_plan`` the default source is ``engine``: whether a participant's condition finds a
    plan is decided by the server's own code on their stated profile, so a stated no-plan rate
    is compared with the engine's, not imposed.

    Example:
        >>> RateSpec.model_validate({"rate": 0.05, "source": "assumed"}).rate
        0.05
    """

    rate: float | None = Field(None, ge=0, lt=1)
    source: str = Field("assumed", min_length=1)

    @model_validator(mode="after")
    def _stated(self) -> RateSpec:
        given = self.source in ("assumed", "pilot")
        if given and self.rate is None:
            raise ValueError(f"source {self.source!r} needs the rate (rate: ...)")
        if self.source == "engine" and self.rate is not None:
            raise ValueError("source 'engine' computes the rate: leave rate out")
        if not given and self.source != "engine" and self.rate is not None:
            raise ValueError(f"the rate is read from the export {self.source!r}: leave rate out")
        return self


class PowerRates(StrictModel):
    """The rates at which simulated live participants fail the attention checks
    (``failed_attention``), leave before the end (``dropout``: status ``timed_out``) and find
    no plan of their condition (``no_plan``), each with its source (:class:`RateSpec`)."""

    failed_attention: RateSpec = Field(default_factory=lambda: RateSpec(rate=0.0))
    dropout: RateSpec = Field(default_factory=lambda: RateSpec(rate=0.0))
    no_plan: RateSpec = Field(default_factory=lambda: RateSpec(source="engine"))

    @model_validator(mode="after")
    def _engine_decides_no_plan_only(self) -> PowerRates:
        # the engine computes whether a plan is found; nothing computes attention or dropout
        for name in ("failed_attention", "dropout"):
            if getattr(self, name).source == "engine":
                raise ValueError(f"{name}: source 'engine' is for no_plan only (the server's "
                                 "code decides whether a plan is found); state the rate "
                                 "(source: assumed or pilot) or name a live export")
        return self


class StudyPowerSpec(StrictModel):
    """``simstudy power SCENARIO``: participants needed for the policy contrast and the smooth.

    Attributes:
        participants: the participant counts to simulate.
        simulations: simulated studies per count.
        outcome: the rating tested (``act``: willingness to act).
        distance: the covariate of the smooth tested.
        contrast: the policy compared with the baseline (default: the omnibus test that any
            study policy differs from the baseline).
        alpha: significance level of each test.
        target_power: the power wanted.
        confidence: level of the Clopper-Pearson interval of each power estimate.
        read_from: the smallest N is the first whose interval's ``lower`` bound reaches the
            target (conservative), or whose point ``estimate`` does.
        workers: worker processes (default: all cores).
        sample: how simulated participants are drawn from the eligible pool:
            ``without_replacement`` (default; an N above the pool is refused) or
            ``with_replacement`` (people of the pool may take part more than once).
        sensitivity: multipliers of the main effect (the first hypothesis's driving parameter)
            at which power is also simulated at the planned N, for the sensitivity curve and
            the minimum detectable effect (empty: none).
        planned: the planned N of the sensitivity curve (default: the largest of
            ``participants``).
        rates: a live study's attention-failure, dropout and no-plan rates with their sources
            (:class:`PowerRates`).
        effect_source: where the effect that power is computed for comes from, in words (the
            preregistration states it beside the response model's parameters).
    """

    participants: list[Participants] = Field(min_length=1)
    simulations: int = Field(200, ge=1, le=MAX_SIMULATIONS)
    outcome: Literal["accept", "act"] = "act"
    distance: Literal["sparsity", "proximity"] = "sparsity"
    contrast: str | None = None
    alpha: float = Field(0.05, gt=0, lt=1)
    target_power: float = Field(0.8, gt=0, lt=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    read_from: Literal["lower", "estimate"] = "lower"
    workers: int | None = Field(None, ge=1)
    sample: Literal["without_replacement", "with_replacement"] = "without_replacement"
    sensitivity: list[float] = Field(default_factory=list)
    planned: int | None = Field(None, ge=2)
    rates: PowerRates = Field(default_factory=PowerRates)
    effect_source: str | None = None


class StudySectionSpec(StrictModel):
    """A scenario's ``study:`` section (see the module docstring).

    Attributes:
        participants: rejected applicants who take part, among those every study policy found
            a recourse for (all of them if fewer are eligible).
        condition: the condition whose people take part (default: the first).
        replication: the replication whose people take part.
        policies: the policies whose recourses are rated (default: all).
        baseline: the reference policy of the contrast (default: the first study policy).
        response: how participants rate, where the scenario states no ``response:`` (see the
            module docstring; default: the calibrated 7-point rating model).
        exclude_blocked: drop ratings of recourses that need a feature the participant truly
            cannot change, as the published study did (the default keeps them: the penalty
            they carry is part of what a policy's personalization buys).
        random_others: random recourses each participant rates besides the policies', as the
            published design showed random others (``policy`` ``random`` in the table): a
            random non-empty subset of the person's reported-actionable features, each set to
            a value uniform over its training range, every draw keyed by (seed, purpose,
            person id).
        power: the power analysis of ``simstudy power SCENARIO``.
        live: how the study runs with participants (:mod:`simstudy.live`).
        hypotheses: the study's confirmatory hypotheses (:mod:`simstudy.study.hypotheses`).
        multiplicity: the correction over the hypotheses (Holm by default).
    """

    participants: int = Field(200, ge=2)
    condition: str | None = None
    replication: int = Field(0, ge=0)
    policies: list[str] | None = Field(None, min_length=2)
    baseline: str | None = None
    response: ResponseSpecs | None = None  # type: ignore[valid-type]
    exclude_blocked: bool = False
    random_others: int = Field(0, ge=0)
    power: StudyPowerSpec | None = None
    live: LiveSpec | None = None
    hypotheses: list[HypothesisSpec] = Field(default_factory=list)
    multiplicity: Multiplicity = "holm"

    def study_policies(self, scenario_policies: list[str]) -> list[str]:
        return list(self.policies) if self.policies is not None else list(scenario_policies)

    def baseline_policy(self, scenario_policies: list[str]) -> str:
        return self.baseline or self.study_policies(scenario_policies)[0]


def study_problems(study: StudySectionSpec, policies: list[str], conditions: list[str],
                   replications: int) -> list[tuple[str, str]]:
    """``(field, reason)`` for every name in a ``study:`` section the scenario lacks."""
    out = []
    chosen = study.study_policies(policies)
    if len(chosen) < 2:
        out.append(("study.policies", "a study compares at least two policies; the scenario "
                                      f"has {policies}"))
    for i, name in enumerate(study.policies or []):
        if name not in policies:
            out.append((f"study.policies[{i}]", f"unknown policy name {name!r}; the scenario's "
                                                f"policies are {policies}"))
    if study.random_others and "random" in chosen:
        out.append(("study.random_others", "the random recourses are rated as policy 'random'; "
                                           "rename the scenario's policy 'random'"))
    if study.baseline is not None and study.baseline not in chosen:
        out.append(("study.baseline", f"{study.baseline!r} is not a study policy ({chosen})"))
    if study.condition is not None and study.condition not in conditions:
        out.append(("study.condition", f"unknown condition {study.condition!r}; the "
                                        f"scenario's conditions are {conditions}"))
    if study.replication >= replications:
        out.append(("study.replication", f"the scenario has {replications} replication(s)"))
    power = study.power
    if power is not None and power.contrast is not None and (
            power.contrast not in chosen or power.contrast == study.baseline_policy(policies)):
        out.append(("study.power.contrast", f"{power.contrast!r} is not a study policy other "
                                            "than the baseline"))
    out += hypothesis_problems(study.hypotheses, chosen)
    if power is not None and min(power.participants) < 2:
        out.append(("study.power.participants", "a study needs at least 2 participants"))
    if study.live is not None:
        out += live_problems(study.live, chosen)
    return out


def _study_condition(scenario: Any) -> Any:
    name = scenario.study.condition or scenario.conditions[0].name
    return next((c for c in scenario.conditions if c.name == name), scenario.conditions[0])


def response_scope_problems(scenario: Any) -> list[tuple[str, str]]:
    """``(field, reason)`` where a study's response is declared twice (see the module
    docstring)."""
    study = scenario.study
    if study is None or study.response is None:
        return []
    condition = _study_condition(scenario)
    if condition.response is not None:
        where = f"conditions[{condition.name}].response"
    elif "response" in scenario.model_fields_set:
        where = "response"
    else:
        return []
    return [("study.response", f"the scenario already states {where}, which the study's "
                               "participants rate with; state the response once (remove one)")]


def study_response(scenario: Any) -> tuple[Any, str]:
    """The response spec the study's participants rate with, and the field it comes from.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> study = StudySectionSpec.model_validate({})
        >>> cond = NS(name="c", response=None)
        >>> spec, where = study_response(NS(study=study, conditions=[cond], response=None,
        ...                                 model_fields_set=set()))
        >>> spec.kind, where
        ('rating', 'study.response (default)')
    """

    study = scenario.study
    condition = _study_condition(scenario)
    if study.response is not None:
        return study.response, "study.response"
    if condition.response is not None:
        return condition.response, f"conditions[{condition.name}].response"
    if "response" in scenario.model_fields_set:
        return scenario.response, "response"
    return RatingResponseParams(kind="rating"), "study.response (default)"
