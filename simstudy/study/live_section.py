"""The ``study.live:`` section: how a scenario's study is run with participants.

A study document is a scenario whose ``study:`` section gains ``live:``: the conditions (the
study's policies, one per participant, ``personalized: false`` ones included), how actionability
is elicited (``binary``: can / cannot change; ``ranking``: rank the features one can change;
``likert``: how easily, ``1..levels``, or cannot), the questionnaire of the published design,
the attention checks, the target number of participants per condition and the completion codes
of the recruitment platform::

    study:
      live:
        elicitation: ranking
        target_per_condition: 20
        attention_checks:
          - {after: profile, prompt: "Please select 'Rarely'.",
             options: [Never, Rarely, Often, Always], correct: Rarely}
          - {after: ratings, prompt: "Please select 'Agree'.",
             options: [Disagree, Agree], correct: Agree}
        completion: {completed: C1, failed_attention: C2, no_consent: C3}

Attention checks follow the rules recruitment platforms accept as grounds for rejection: at
least two; instructed-response items (the prompt names the option to choose, so they test
attention to the question itself, never memory); no scale with a neutral option (an odd-length
scale has a middle; options such as "neutral" or "not sure" are refused).

Example:
    >>> spec = LiveSpec.model_validate({"attention_checks": [
    ...     {"after": "profile", "prompt": "Select 'No'.", "options": ["Yes", "No"],
    ...      "correct": "No"},
    ...     {"after": "ratings", "prompt": "Select 'Yes'.", "options": ["Yes", "No"],
    ...      "correct": "Yes"}]})
    >>> spec.elicitation, spec.questionnaire.scale_points
    ('ranking', 7)
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from pydantic import Field, model_validator

from ..core.documents import StrictModel

__all__ = ["AttentionCheckSpec", "QuestionnaireSpec", "CompletionSpec", "NoPlanSpec", "LiveSpec",
           "EXCLUSION_REASONS", "ExclusionReason", "ATTENTION_PLACES", "NEUTRAL_WORDS",
           "live_problems"]

#: Where an attention check may stand: after the profile page, after the actionability page,
#: after the first rating page, or after the last one.
ATTENTION_PLACES = ("profile", "actionability", "first_rating", "ratings")
#: Option labels read as a neutral middle (refused in attention checks).
NEUTRAL_WORDS = ("neutral", "neither", "undecided", "not sure", "no opinion", "don't know",
                 "unsure", "indifferent")


class AttentionCheckSpec(StrictModel):
    """One instructed-response item: ``prompt`` asks for ``correct`` among ``options``."""

    after: Literal["profile", "actionability", "first_rating", "ratings"]
    prompt: str = Field(min_length=1)
    options: list[str] = Field(min_length=2)
    correct: str

    @model_validator(mode="after")
    def _rules(self) -> AttentionCheckSpec:
        if self.correct not in self.options:
            raise ValueError(f"correct {self.correct!r} is not one of the options {self.options}")
        if len(set(self.options)) != len(self.options):
            raise ValueError("options repeat")
        if self.correct.lower() not in self.prompt.lower():
            raise ValueError("an instructed-response item names the option to choose in its "
                             f"prompt; {self.correct!r} is not in it (no memory recall items)")
        neutral = [o for o in self.options if any(w in o.lower() for w in NEUTRAL_WORDS)]
        if neutral:
            raise ValueError(f"option {neutral[0]!r} is a neutral option; attention checks use "
                             "scales without one")
        if len(self.options) >= 3 and len(self.options) % 2 == 1:
            raise ValueError(f"{len(self.options)} options make a scale with a neutral middle; "
                             "use an even number")
        return self


class QuestionnaireSpec(StrictModel):
    """The rating page of the published design: two ``scale_points``-point questions, an open
    "why", and per changed item whether it is in fact changeable for the participant."""

    accept: str = "Is the AI system's plan a reasonable explanation for the rejection?"
    act: str = "Would you carry out the plan to obtain approval?"
    why: str = "Why? Please explain your answers in a sentence or two."
    changeable: str = "Is this item in fact changeable for you?"
    scale_points: Literal[7] = 7
    low_label: str = "Not at all"
    high_label: str = "Completely"


class CompletionSpec(StrictModel):
    """The platform's completion codes per outcome and the redirect (``{code}`` in it)."""

    completed: str = Field(min_length=1)
    failed_attention: str = Field(min_length=1)
    no_consent: str = Field(min_length=1)
    redirect: str = "https://app.prolific.com/submissions/complete?cc={code}"

    @model_validator(mode="after")
    def _codes(self) -> CompletionSpec:
        codes = [self.completed, self.failed_attention, self.no_consent]
        if len(set(codes)) != 3:
            raise ValueError("the three completion codes must differ (one per outcome)")
        if "{code}" not in self.redirect:
            raise ValueError("redirect must contain {code}")
        return self


class NoPlanSpec(StrictModel):
    """What happens to a participant whose condition finds no plan for their stated profile.

    ``exclude``: they finish the study (rating the random plans) but are not counted towards
    their condition's target and are excluded from the confirmatory analysis. ``replace``: the
    ``replacement`` condition serves them instead; the export keeps both conditions.
    """

    rule: Literal["exclude", "replace"] = "exclude"
    replacement: str | None = None

    @model_validator(mode="after")
    def _replacement(self) -> NoPlanSpec:
        if (self.rule == "replace") != (self.replacement is not None):
            raise ValueError("rule 'replace' needs a replacement condition, and only it does")
        return self


#: An exclusion ``simstudy analyze`` applies to a live export, by participant status or flag.
ExclusionReason = Literal["failed_attention", "no_plan", "timed_out", "pilot"]
#: Every exclusion reason, in the order they are applied.
EXCLUSION_REASONS: tuple[str, ...] = get_args(ExclusionReason)

_DEFAULT_DEBRIEFING = (
    "Thank you for taking part. Some of the plans you rated were not computed for your "
    "profile: besides the plan of the AI system under study, you were shown plans made of "
    "random changes, so that we can compare how people rate them. No plan shown here is "
    "advice about a real loan.")

_DEFAULT_CONSENT = (
    "This study asks you to enter a loan applicant's profile, to say which of its items you "
    "could change, and to rate plans an AI system suggests for obtaining approval. It takes "
    "about 10 minutes. Your answers are stored under a pseudonymous code; your platform ID is "
    "kept apart, only for payment, and deleted after payment. You may stop at any time.")


class LiveSpec(StrictModel):
    """A scenario study's ``live:`` part (see the module docstring).

    Attributes:
        conditions: the policies serving participants, one per participant (default: the
            study's policies).
        elicitation: how participants state what they can change.
        likert_levels: levels of the ``likert`` scheme.
        target_per_condition: participants wanted per condition.
        questionnaire: the rating page's questions.
        attention_checks: instructed-response items (at least two).
        reject_after_failures: failed checks that give the ``failed_attention`` code.
        completion: completion codes and redirect.
        consent: the consent text.
        timeout_minutes: an unfinished participant's slot is held at most this long; then it
            is released and the participant is marked ``timed_out`` (they cannot complete).
        framing: ``own_profile`` (participants enter their own profile) or ``vignette``
            (they imagine the applicant described by ``vignette``, as Tominaga et al. framed
            theirs: imagine applying for a car loan).
        vignette: the scenario text shown with ``framing: vignette``.
        platform: the recruitment platform whose rules the server applies (``prolific``:
            PROLIFIC_PID format, STUDY_ID, statuses; ``none``: any participant id).
        study_id: the platform's study id that entry links must carry (``prolific``).
        no_plan: the rule for a participant whose condition finds no plan.
        debriefing: the last page's text (discloses the random plans).
        exclusions: who ``simstudy analyze`` excludes from the confirmatory analysis.
        version: the study file's version (1 for the first; raise it with every change made
            after participants took part): the export's ``study_version`` and the
            preregistration's "study version".
        locale: the language of the pages' texts: a shipped locale (``en``, ``de``) or a
            YAML file relative to the study file; keys it lacks are English.
        strings: page texts replacing the locale's, by dotted key (``title.profile: ...``).
        templates: a folder (relative to the study file) of page templates replacing the
            shipped ones of the same name (Jinja2, autoescaped).
    """

    conditions: list[str] | None = Field(None, min_length=2)
    elicitation: Literal["binary", "ranking", "likert"] = "ranking"
    likert_levels: int = Field(4, ge=2, le=10)
    target_per_condition: int = Field(20, ge=1)
    questionnaire: QuestionnaireSpec = Field(default_factory=QuestionnaireSpec)
    attention_checks: list[AttentionCheckSpec] = Field(min_length=2)
    reject_after_failures: int = Field(2, ge=1)
    completion: CompletionSpec = Field(default_factory=lambda: CompletionSpec(
        completed="COMPLETED", failed_attention="FAILEDCHECK", no_consent="NOCONSENT"))
    consent: str = _DEFAULT_CONSENT
    timeout_minutes: float = Field(90.0, gt=0)
    framing: Literal["own_profile", "vignette"] = "own_profile"
    vignette: str | None = None
    platform: Literal["prolific", "none"] = "none"
    study_id: str | None = None
    no_plan: NoPlanSpec = Field(default_factory=NoPlanSpec)
    debriefing: str = _DEFAULT_DEBRIEFING
    exclusions: list[ExclusionReason] = Field(
        default_factory=lambda: list(EXCLUSION_REASONS))
    version: int = Field(1, ge=1)
    locale: str = Field("en", min_length=1)
    strings: dict[str, str] = Field(default_factory=dict)
    templates: str | None = None

    @model_validator(mode="after")
    def _failures(self) -> LiveSpec:
        if self.reject_after_failures > len(self.attention_checks):
            raise ValueError(f"reject_after_failures {self.reject_after_failures} exceeds the "
                             f"{len(self.attention_checks)} attention checks")
        if self.framing == "vignette" and not self.vignette:
            raise ValueError("framing 'vignette' needs the vignette text (vignette: ...)")
        return self

    def live_conditions(self, study_policies: list[str]) -> list[str]:
        return list(self.conditions) if self.conditions is not None else list(study_policies)


_CODE = re.compile(r"^[A-Za-z0-9_-]+$")


def live_problems(live: LiveSpec, study_policies: list[str]) -> list[tuple[str, str]]:
    """``(field, reason)`` for every name or code in ``study.live`` the scenario refuses."""
    out = []
    for i, name in enumerate(live.conditions or []):
        if name not in study_policies:
            out.append((f"study.live.conditions[{i}]", f"{name!r} is not a study policy "
                                                       f"({study_policies})"))
    if live.conditions is not None and len(set(live.conditions)) != len(live.conditions):
        out.append(("study.live.conditions", "a condition is named twice"))
    replacement = live.no_plan.replacement
    if replacement is not None and replacement not in live.live_conditions(study_policies):
        out.append(("study.live.no_plan.replacement", f"{replacement!r} is not a live condition "
                                                      f"({live.live_conditions(study_policies)})"))
    if live.platform == "prolific" and not live.study_id:
        out.append(("study.live.study_id", "platform 'prolific' needs the platform's study id "
                                           "that entry links carry (STUDY_ID)"))
    for field in ("completed", "failed_attention", "no_consent"):
        if not _CODE.match(getattr(live.completion, field)):
            out.append((f"study.live.completion.{field}", "a code is letters, digits, _ and -"))
    return out
