"""The analysis documents: GAMM analysis specs, simulated studies and power plans (YAML)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..core.bounds import (
    MAX_BASIS,
    MAX_PARTICIPANTS,
    MAX_RESAMPLES,
    MAX_SEED,
    MAX_SIMULATIONS,
    Participants,
)
from ..core.documents import StrictModel
from ..core.registry import kinds
from ..metrics import METRICS
from ..people.response_params import RatingResponseParams

__all__ = ["ModelSpec", "ContrastAnalysisSpec", "AnalysisSpec", "StudySpec", "PowerPlan",
           "AuditSpec"]


class ModelSpec(StrictModel):
    """One GAMM: ``response ~ s(distance, k) + s(group, re) + s(group, distance, re)``."""

    response: str
    distance: str
    k: int | None = Field(None, ge=3, le=MAX_BASIS,
                          description="basis size; default min(10, distinct - 1)")
    family: str = Field(
        "gaussian", description="a registered family: gaussian (ratings as interval data), "
        "binomial (0/1, logit) or ocat (ordered categories of the rating scale, cumulative "
        "logit)")

    @field_validator("family")
    @classmethod
    def _registered_family(cls, value: str) -> str:
        if value not in kinds("family"):
            raise ValueError(f"unknown family {value!r}; choose from {kinds('family')}")
        return value


class ContrastAnalysisSpec(StrictModel):
    """The policy contrast ``rating ~ policy + (1 | participant)`` (fitted when the table has
    the ``column``; see :mod:`simstudy.study.contrast`)."""

    column: str = Field("policy", min_length=1, description="column naming the policy")
    baseline: str | None = Field(None, description="reference policy (default: first sorted)")
    responses: list[str] = Field(["accept", "act"], min_length=1)
    level: float = Field(0.95, gt=0, lt=1, description="confidence level of the intervals")


class AnalysisSpec(StrictModel):
    """What ``simstudy analyze`` fits to a rating table."""

    group: str = "uid"
    models: list[ModelSpec] = Field(min_length=1)
    contrast: ContrastAnalysisSpec = ContrastAnalysisSpec()
    scale: tuple[int, int] | None = Field(
        (1, 7), description="lowest and highest rating; values outside are refused (null: "
        "no check)")
    ordinal: bool = Field(True, description="also fit the cumulative-logit sensitivity model")

    @field_validator("scale")
    @classmethod
    def _scale_ordered(cls, v):
        if v is not None and v[0] >= v[1]:
            raise ValueError(f"the lowest rating must be below the highest, got {list(v)}")
        return v

    exploratory_pygam: bool = Field(False, description="also fit exploratory pygam GAMs")
    plot: bool = True
    # reading a survey export (simstudy.study.survey); a study's hypotheses are added one
    # floor up (simstudy.study.hypotheses.StudyAnalysisSpec)
    separator: Literal["auto", ",", ";", "\t"] = Field(
        "auto", description="the export's separator (auto: sniffed from the header)")
    qualtrics: bool = Field(False, description="skip the two rows Qualtrics writes under "
                            "the column names")
    columns: dict[str, str] = Field(default_factory=dict, description="analysis name -> "
                                    "export column, e.g. {uid: ResponseId, accept: Q12_1}")
    levels: dict[str, int] = Field(default_factory=dict, description="text ratings -> their "
                                   "numbers, e.g. {\"Strongly agree\": 7, \"Agree\": 6}")

    @field_validator("levels")
    @classmethod
    def _levels_distinct(cls, v: dict[str, int]) -> dict[str, int]:
        folded = [k.strip().casefold() for k in v]
        if any(not k for k in folded):
            raise ValueError("an empty label")
        if len(set(folded)) < len(folded):
            raise ValueError("two labels differ only in case or spaces")
        return v


class StudySpec(StrictModel):
    """A simulated study of the published design."""

    seed: int = Field(ge=0, le=MAX_SEED)
    participants: int = Field(gt=1, le=MAX_PARTICIPANTS)
    items: int = Field(5, ge=2, le=100)
    pool_size: int = Field(4057, gt=10, le=MAX_PARTICIPANTS)
    exclude_immutable: bool = True
    response: RatingResponseParams = RatingResponseParams()


class PowerPlan(StrictModel):
    """``simstudy power``: simulate R studies per participant count and test the smooth."""

    seed: int = Field(ge=0, le=MAX_SEED)
    participants: list[Participants] = Field(min_length=1)
    simulations: int = Field(1000, ge=1, le=MAX_SIMULATIONS)
    items: int = Field(5, ge=2, le=100)
    outcome: Literal["accept", "act"] = "act"
    distance: Literal["sparsity", "proximity"] = "sparsity"
    alpha: float = Field(0.05, gt=0, lt=1)
    target_power: float = Field(0.8, gt=0, lt=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    workers: int | None = Field(None, ge=1)
    response: RatingResponseParams = RatingResponseParams()



class AuditSpec(StrictModel):
    """``simstudy audit SPEC.yaml``: a fairness audit of a finished run.

    ``run`` and ``out`` are relative to the document (to the working directory for a shipped
    document, ``simstudy audit example:audit_case_study``). ``case_study`` maps the roles of the
    case-study check (``baseline``, ``random``, ``income``, ``race``) to condition names.
    """

    run: str = Field(min_length=1, description="run directory (simstudy run --out)")
    out: str | None = Field(None, min_length=1,
                            description="report path (default RUN/audit.html)")
    by: list[str] | None = Field(None, min_length=1,
                                 description="group columns (default: gender, race present)")
    baseline: str | None = Field(None, description="no-personalization condition (default: "
                                                   "'baseline' when the run has it)")
    metrics: list[str] | None = Field(None, description="names from the metric table "
                                      "(simstudy.metrics.METRICS); default: the audited ones")
    bootstrap: int = Field(1000, ge=10, le=MAX_RESAMPLES)
    permutations: int = Field(1000, ge=10, le=MAX_RESAMPLES)
    alpha: float = Field(0.05, gt=0, lt=1)
    correction: Literal["holm", "bh", "none"] = "holm"
    family: Literal["table", "audit"] = "table"
    seed: int = Field(0, ge=0, le=MAX_SEED)
    case_study: dict[Literal["baseline", "random", "income", "race"], str] = {
        "baseline": "baseline", "random": "random", "income": "income", "race": "race"}
    notes: str = ""

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, names: list[str] | None) -> list[str] | None:
        unknown = [n for n in names or () if n not in METRICS]
        if unknown:
            raise ValueError(f"unknown metric {unknown[0]!r}; choose from {sorted(METRICS)}")
        return names
