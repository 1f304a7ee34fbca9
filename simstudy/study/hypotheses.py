"""Hypotheses as the researcher states them: the document entries of a study's claims.

A study (a scenario's ``study:`` section, or an analysis document) lists its confirmatory
hypotheses; :mod:`simstudy.study.hypothesis_tests` tests exactly these, in ``simstudy analyze``
on real data and in every simulated study of ``simstudy power``::

    hypotheses:
      - {contrast: [icarma, universal-oracle], response: act, direction: greater}
      - {distance: sparsity, response: act, direction: decreasing, adjust: [blocked]}
      - {gap: [privileged, non_privileged], policy: icarma, response: act}
    multiplicity: holm

Three kinds, told apart by the key that names them:

* ``contrast: [A, B]``: ratings of policy A's recourses exceed (``greater``), fall short of
  (``less``) or differ from (``two-sided``) policy B's, within participants;
* ``distance: D``: ratings fall (``decreasing``) or rise (``increasing``) with the distance D,
  tested one-sided on the linear part; the smooth is reported beside it;
* ``gap: [G1, G2]``: participants of group G1 rate (one policy's recourses, or all) higher /
  lower / differently from those of group G2 (``by``: the group column, default
  ``privileged``, whose ``1`` / ``0`` read as ``privileged`` / ``non_privileged``).

``adjust`` adds covariates (columns of the table) to the model of any kind. ``groups: COLUMN``
asks ``power`` for the power of a contrast or distance hypothesis within each group of that
column, reported beside the confirmatory family (outside the multiplicity correction).

The family is corrected for multiplicity by Holm's step-down rule (default), Bonferroni, or not
at all (``none``).

References:
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2), 65-70.

Example:
    >>> spec = HypothesisSpec.model_validate(
    ...     {"contrast": ["icarma", "universal"], "response": "act", "direction": "greater"})
    >>> spec.kind, spec.label()
    ('contrast', 'act: icarma > universal')
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..analysis.analysis_spec import AnalysisSpec
from ..core.documents import StrictModel
from .live_section import EXCLUSION_REASONS, ExclusionReason

__all__ = ["HypothesisSpec", "StudyAnalysisSpec", "Multiplicity", "hypothesis_problems",
           "hypothesis_names",
           "GROUP_VALUES"]

Multiplicity = Literal["holm", "bonferroni", "none"]

#: How the names of a gap read a 0/1 group column such as ``privileged``.
GROUP_VALUES = {"privileged": 1, "non_privileged": 0}

_SIGN = {"greater": ">", "less": "<", "two-sided": "!=", "decreasing": "falls with",
         "increasing": "rises with"}


class HypothesisSpec(StrictModel):
    """One hypothesis (see the module docstring).

    Attributes:
        name: a short name (default ``H1``, ``H2``, ... in list order).
        contrast: two policies ``[A, B]``: A's ratings against B's.
        distance: a distance column (``sparsity`` or ``proximity``).
        gap: two groups ``[G1, G2]`` of column ``by``.
        by: the group column of a gap.
        policy: the policy whose ratings a gap or a distance hypothesis reads (default: all).
        response: the rating tested (``act`` or ``accept``).
        direction: ``greater`` / ``less`` / ``two-sided`` (contrast, gap) or ``decreasing`` /
            ``increasing`` / ``two-sided`` (distance).
        adjust: covariate columns added to the model.
        groups: a group column: power is also reported within each of its groups.
        smooth: report the distance smooth (GAMM) beside a distance hypothesis's linear test.
    """

    name: str | None = Field(None, min_length=1, max_length=40)
    contrast: list[str] | None = Field(None, min_length=2, max_length=2)
    distance: Literal["sparsity", "proximity"] | None = None
    gap: list[str] | None = Field(None, min_length=2, max_length=2)
    by: str = Field("privileged", min_length=1)
    policy: str | None = None
    response: Literal["accept", "act"] = "act"
    direction: Literal["greater", "less", "two-sided", "decreasing", "increasing"] = "two-sided"
    adjust: list[str] = Field(default_factory=list)
    groups: str | None = None
    smooth: bool = True

    @model_validator(mode="after")
    def _one_kind(self) -> HypothesisSpec:
        stated = [k for k in ("contrast", "distance", "gap") if getattr(self, k) is not None]
        if len(stated) != 1:
            raise ValueError("a hypothesis names exactly one of contrast: [A, B], distance: D "
                             f"or gap: [G1, G2] (this one names {stated or 'none'})")
        ordered = self.direction in ("greater", "less")
        if self.kind == "distance" and ordered:
            raise ValueError(f"direction: a distance hypothesis is 'decreasing', 'increasing' "
                             f"or 'two-sided', not {self.direction!r}")
        if self.kind != "distance" and self.direction in ("decreasing", "increasing"):
            raise ValueError(f"direction: a {self.kind} hypothesis is 'greater', 'less' or "
                             f"'two-sided', not {self.direction!r}")
        pair = self.contrast or self.gap
        if pair is not None and pair[0] == pair[1]:
            raise ValueError(f"{self.kind}: compares two different names, not {pair}")
        if self.kind == "contrast" and self.policy is not None:
            raise ValueError("policy: a contrast names its two policies in contrast: [A, B]")
        if self.kind == "gap" and self.groups is not None:
            raise ValueError("groups: a gap already compares groups")
        return self

    @property
    def kind(self) -> str:
        """``contrast``, ``distance`` or ``gap``."""
        return next(k for k in ("contrast", "distance", "gap") if getattr(self, k) is not None)

    def label(self) -> str:
        """The claim in words, e.g. ``act: icarma > universal``."""
        sign = _SIGN[self.direction]
        adjust = f" | {', '.join(self.adjust)}" if self.adjust else ""
        where = f" ({self.policy})" if self.policy else ""
        if self.kind == "contrast":
            text = f"{self.response}: {self.contrast[0]} {sign} {self.contrast[1]}"
        elif self.kind == "distance":
            text = f"{self.response}{where} {sign if sign != '!=' else 'varies with'} " \
                   f"{self.distance} (linear part)"
        else:
            text = f"{self.response}{where}: {self.gap[0]} {sign} {self.gap[1]} (by {self.by})"
        return text + adjust


def hypothesis_problems(hypotheses: list[HypothesisSpec], policies: list[str],
                        prefix: str = "study.hypotheses") -> list[tuple[str, str]]:
    """``(field, reason)`` for every policy a hypothesis names that the study lacks, and for
    repeated names."""
    out = []
    for i, h in enumerate(hypotheses):
        names = list(h.contrast or []) + ([h.policy] if h.policy else [])
        for name in names:
            if name not in policies:
                out.append((f"{prefix}[{i}]", f"unknown policy {name!r}; the study's policies "
                                              f"are {policies}"))
    names = hypothesis_names(hypotheses)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        out.append((prefix, f"hypothesis names must be unique; repeated: {dupes}"))
    return out


def hypothesis_names(hypotheses: list[HypothesisSpec]) -> list[str]:
    """Each hypothesis's name: its own, or ``H<position>``."""
    return [h.name or f"H{i + 1}" for i, h in enumerate(hypotheses)]


class StudyAnalysisSpec(AnalysisSpec):
    """An analysis document (:class:`~simstudy.analysis.analysis_spec.AnalysisSpec`) that may
    state the study's hypotheses: ``simstudy analyze`` then tests exactly these
    (``hypotheses.csv``), at ``alpha`` with the ``multiplicity`` rule, on the participants
    left by the ``exclusions`` (:mod:`simstudy.study.exclusions`; a study file's
    ``live.exclusions`` when the study file is the spec)."""

    hypotheses: list[HypothesisSpec] = Field(default_factory=list)
    multiplicity: Multiplicity = "holm"
    alpha: float = Field(0.05, gt=0, lt=1, description="level of the hypotheses' tests")
    exclusions: list[ExclusionReason] = Field(
        default_factory=lambda: list(EXCLUSION_REASONS),
        description="who a live export's analysis excludes (simstudy.study.exclusions)")
