"""Population documents: how individual actionability, costs and groups are assigned.

A population document states how individual actionability is assigned::

    actionability: {kind: ranking, bias: uniform, n_actionable: 2}
    cost: {shape: linear, alpha: 3.0}
    groups: {rule: income, privileged: {bias: privileged}, non_privileged: {bias: non_privileged}}
    hidden_mismatch_probability: 0.25   # one reported-actionable feature is in truth not

The entries configure the runtime samplers and rules of :mod:`simstudy.people.population` (the
cost entry is :class:`~simstudy.primitives.profiles.CostProfile` itself); the world supplies
the ranking distributions, the income-like and sensitive features that the rules read
(:class:`~simstudy.world.base.FeatureRoles`), unless the document names them.

Example:
    >>> spec = PopulationSpec.model_validate({"groups": {"rule": "income"}})
    >>> spec.group_columns()
    ['privileged']
    >>> spec.feature_problems(("a", "b"), None, ())[0][0]
    'groups.income_feature'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from ..core.documents import DocumentProblem, StrictModel
from ..core.rng import entity_uniforms
from ..primitives.profiles import ActionabilityProfiles, CostProfile
from .change_limits import ChangeSpec, draw_limits
from .population import (
    AllActionableSampler,
    BiasName,
    GroupAssignment,
    LikertSampler,
    RankingSampler,
    assign_groups,
)

__all__ = ["ActionabilitySpec", "GroupProfileSpec", "GroupsSpec", "PopulationSpec",
           "population_problems"]


class ActionabilitySpec(StrictModel):
    """How each person's individual actionability scores are drawn.

    ``ranking``: a permutation from ``bias`` and a threshold leaving ``n_actionable`` features
    (``null``: uniform over 1..K). ``likert``: scores uniform in 1..``levels`` (0 included when
    ``allow_not_actionable``). ``all``: no personalization. :meth:`sampler` makes the sampler
    (:class:`~simstudy.people.population.RankingSampler`,
    :class:`~simstudy.people.population.LikertSampler`,
    :class:`~simstudy.people.population.AllActionableSampler`).

    References:
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> import numpy as np
        >>> from simstudy.people import ActionabilitySpec
        >>> sampler = ActionabilitySpec(n_actionable=2).sampler()
        >>> uniforms = np.random.default_rng(0).random((4, 2))
        >>> scores, levels = sampler.sample(("a", "b", "c"), uniforms)
        >>> (scores > 0).sum(axis=1).tolist(), levels
        ([2, 2, 2, 2], 3)
    """

    bias: BiasName | tuple[Annotated[float, Field(ge=0)], ...] = "uniform"
    n_actionable: int | None = Field(None, ge=0, le=16)
    levels: int = Field(4, ge=2, le=10)
    allow_not_actionable: bool = False
    kind: Literal["ranking", "likert", "all"] = "ranking"

    def sampler(self, bias: Any = None, rankings: Mapping[str, Sequence[str]] | None = None):
        """The sampler of this document (``bias`` overrides the document's; ``rankings``: the
        world's named ranking distributions)."""
        if self.kind == "ranking":
            chosen = self.bias if bias is None else bias
            chosen = tuple(chosen) if isinstance(chosen, list) else chosen
            return RankingSampler(chosen, self.n_actionable, dict(rankings or {}))
        if self.kind == "likert":
            return LikertSampler(levels=self.levels,
                                 allow_not_actionable=self.allow_not_actionable)
        return AllActionableSampler()


class GroupProfileSpec(StrictModel):
    """A group's ranking distribution and, optionally, its own directions and bounds of change
    (replacing the population's ``changes`` for the group's members)."""

    bias: BiasName | list[Annotated[float, Field(ge=0)]]
    changes: dict[str, ChangeSpec] | None = None


class GroupsSpec(GroupAssignment):
    """Group-correlated assignment of a privileged and a non-privileged ranking distribution:
    the assignment (:class:`~simstudy.people.population.GroupAssignment`, whose fields these
    are; the features its rules read are the world's roles unless the document names them) and
    each group's ranking distribution.

    References:
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> from simstudy.people import GroupsSpec
        >>> spec = GroupsSpec(rule="income", privileged_share=0.3)
        >>> spec.assignment().rule, spec.assignment().privileged_share
        ('income', 0.3)
    """

    privileged: GroupProfileSpec = GroupProfileSpec(bias="privileged")
    non_privileged: GroupProfileSpec = GroupProfileSpec(bias="non_privileged")

    def assignment(self, income: str | None = None, sensitive: str | None = None
                   ) -> GroupAssignment:
        """The runtime rule; ``income``, ``sensitive``: the world's features, used where the
        document names none."""
        rule = {name: getattr(self, name) for name in GroupAssignment.model_fields}
        return GroupAssignment(**{**rule, "income_feature": self.income_feature or income,
                                  "gender_feature": self.gender_feature or sensitive})


class PopulationSpec(StrictModel):
    """A population document: actionability sampler, cost profile, optional groups.

    Attributes:
        hidden_mismatch_probability: probability that one feature a person reports as
            actionable is in truth not actionable for them (their hidden profile).
        labels: readable labels of the codes of the group columns the population adds (audits
            and reports name groups with them).

    Example:
        >>> from simstudy.people import PopulationSpec
        >>> spec = PopulationSpec.model_validate({"actionability": {"n_actionable": 2},
        ...                                      "hidden_mismatch_probability": 0.1})
        >>> spec.actionability.kind, spec.cost.shape, spec.group_columns()
        ('ranking', 'constant', [])
    """

    description: str = ""
    actionability: ActionabilitySpec = ActionabilitySpec()
    cost: CostProfile = CostProfile()
    groups: GroupsSpec | None = None
    stylized_attribute: str | None = Field(
        None, description="add a stylized binary attribute (equal gender x attribute cells) "
                          "that affects nothing, for audits")
    hidden_mismatch_probability: float = Field(0.0, ge=0.0, le=1.0)
    changes: dict[str, ChangeSpec] = Field(
        default_factory=dict, description="per globally actionable feature, how each person's "
                                          "direction (up, down, any) and bound on the change "
                                          "are drawn (simstudy.people.change_limits)")
    hidden_bound_factor: float = Field(
        1.0, gt=0.0, le=1.0, description="a person with a hidden mismatch can in truth change "
                                         "each feature only this share of their reported bound")
    labels: dict[str, dict[int, str]] = Field(
        default_factory=dict, description="readable labels of the codes of the group columns "
                                          "this population adds, e.g. {race: {0: white, 1: "
                                          "non-white}} (0 = the majority group)")

    def biases(self) -> list[tuple[str, Any]]:
        """``(field, bias)`` of every ranking distribution this population draws from."""
        named = ([("actionability.bias", self.actionability.bias)]
                 if self.actionability.kind == "ranking" else [])
        if self.groups is not None:
            named += [("groups.privileged.bias", self.groups.privileged.bias),
                      ("groups.non_privileged.bias", self.groups.non_privileged.bias)]
        return named

    @model_validator(mode="after")
    def _probabilities_not_all_zero(self) -> PopulationSpec:
        for field, bias in self.biases():
            if not isinstance(bias, str) and not any(p > 0 for p in bias):
                raise ValueError(f"{field}: explicit ranking probabilities are all zero; at "
                                 "least one must be positive")
        return self

    @model_validator(mode="after")
    def _groups_need_rankings(self) -> PopulationSpec:
        if self.groups is not None and self.actionability.kind != "ranking":
            raise ValueError("groups assign ranking distributions; actionability.kind must be "
                             "'ranking'")
        unknown = set(self.labels) - set(self.group_columns())
        if unknown:
            raise ValueError(f"labels name columns this population does not add: "
                             f"{sorted(unknown)} (it adds: {self.group_columns()})")
        return self

    def ranking_problems(self, known: Sequence[str]) -> list[tuple[str, str]]:
        """``(field, reason)`` for each ranking distribution named here that the world does not
        name (``known``; ``uniform`` and explicit probability lists need no name)."""
        return [(field, f"the world names no ranking distribution {bias!r} (it names: "
                        f"{', '.join(['uniform', *known])})")
                for field, bias in self.biases()
                if isinstance(bias, str) and bias != "uniform" and bias not in known]

    def actionable_problems(self, n_features: int) -> list[tuple[str, str]]:
        """``(field, reason)`` for counts and probability vectors that do not fit a world with
        ``n_features`` globally actionable features: ``n_actionable`` above it, and explicit
        ranking probabilities not one per permutation (``n_features!`` values)."""
        out = []
        a = self.actionability
        if a.kind == "ranking" and a.n_actionable is not None and a.n_actionable > n_features:
            out.append(("actionability.n_actionable",
                        f"{a.n_actionable} is above the world's {n_features} actionable "
                        "features"))
        n_perms = math.factorial(n_features)
        for field, bias in self.biases():
            if not isinstance(bias, str) and len(bias) != n_perms:
                out.append((field, f"{len(bias)} explicit ranking probabilities; the world's "
                                   f"{n_features} actionable features have {n_perms} "
                                   "rankings, one probability each"))
        return out

    def feature_problems(self, names: Sequence[str], income: str | None,
                         sensitive: Sequence[str]) -> list[tuple[str, str]]:
        """``(field, reason)`` for each feature the group rules need that the world (features
        ``names``, income-like feature ``income``, sensitive features ``sensitive``) lacks."""
        out = []
        g = self.groups
        for field, name in (("groups.income_feature", g and g.income_feature),
                            ("groups.gender_feature", g and g.gender_feature)):
            if name is not None and name not in names:
                out.append((field, f"the world has no feature {name!r} (its features: "
                                   f"{', '.join(names)})"))
        if g is not None and g.rule == "income" and g.income_feature is None and income is None:
            out.append(("groups.income_feature", "the world names no income-like feature; "
                                                 "name the feature the income rule ranks on"))
        attribute_rule = (g is not None and g.rule == "attribute" and g.gender_feature is None)
        if (attribute_rule or self.stylized_attribute is not None) and not sensitive:
            field = "groups.gender_feature" if attribute_rule else "stylized_attribute"
            out.append((field, "the world names no sensitive feature to balance the attribute "
                               "within"))
        return out

    def change_problems(self, actionable: Sequence[str]) -> list[tuple[str, str]]:
        """``(field, reason)`` for each feature given directions or bounds that is not one of
        the world's globally actionable features (``actionable``)."""
        named = [("changes", f) for f in self.changes]
        if self.groups is not None:
            for group in ("privileged", "non_privileged"):
                named += [(f"groups.{group}.changes", f)
                          for f in getattr(self.groups, group).changes or {}]
        return [(f"{field}.{f}", f"not a globally actionable feature of the world (those "
                                 f"are: {', '.join(actionable)})")
                for field, f in named if f not in actionable]

    def limits(self, actionable: tuple[str, ...], ids: np.ndarray, seed: int,
               privileged: np.ndarray | None = None):
        """Each person's reported directions and bounds
        (:class:`~simstudy.people.change_limits.ChangeLimits`), or ``None`` when the document gives
        none; a group's own ``changes`` replace the population's for its members."""
        groups = self.groups
        own = [] if groups is None else [groups.privileged.changes,
                                         groups.non_privileged.changes]
        if not self.changes and not any(own):
            return None
        limits = draw_limits(self.changes, actionable, ids, seed)
        if privileged is None or not any(c is not None for c in own):
            return limits
        for members, changes in ((privileged, own[0]), (~privileged, own[1])):
            if changes is not None:
                group = draw_limits(changes, actionable, ids, seed)
                for name in ("direction", "bound", "share"):
                    getattr(limits, name)[members] = getattr(group, name)[members]
        return limits

    def group_columns(self) -> list[str]:
        """The group columns people of this population carry."""
        out = []
        if self.stylized_attribute is not None:
            out.append(self.stylized_attribute)
        if self.groups is not None:
            out.append("privileged")
            if self.groups.rule == "attribute":
                out.append(self.groups.attribute)
        return out

    def draw(self, x: np.ndarray, feature_names: Sequence[str], actionable: tuple[str, ...],
             ids: np.ndarray, seed: int, rankings: Mapping[str, Sequence[str]] | None = None,
             income: str | None = None, sensitive: Sequence[str] = (),
             ) -> tuple[ActionabilityProfiles, dict[str, np.ndarray]]:
        """Reported actionability profiles and group columns, keyed by ``(seed, purpose, id)``.

        Two conditions differing only in the cost profile give the same people the same
        rankings. ``rankings``, ``income``, ``sensitive``: the world's named ranking
        distributions, income-like feature and sensitive features (``world.roles``).
        """
        ids = np.asarray(ids)
        groups: dict[str, np.ndarray] = {}
        within = sensitive[0] if len(sensitive) else None
        if self.stylized_attribute is not None:
            groups.update({k: v for k, v in assign_groups(
                GroupAssignment(rule="attribute", attribute=self.stylized_attribute,
                                gender_feature=within),
                x, feature_names, ids, seed).items() if k != "privileged"})
        uniforms = entity_uniforms(seed, "actionability", ids, 8)
        privileged = None
        if self.groups is None:
            scores, levels = self.actionability.sampler(None, rankings).sample(actionable,
                                                                               uniforms)
        else:
            assigned = assign_groups(self.groups.assignment(income, within), x, feature_names,
                                     ids, seed)
            groups.update(assigned)
            privileged = assigned["privileged"]
            s_priv, levels = self.actionability.sampler(
                self.groups.privileged.bias, rankings).sample(actionable, uniforms)
            s_non, _ = self.actionability.sampler(
                self.groups.non_privileged.bias, rankings).sample(actionable, uniforms)
            scores = np.where(privileged[:, None], s_priv, s_non)
        cost = self.cost
        profiles = ActionabilityProfiles(actionable, scores, levels, cost.weights(scores, levels),
                                         self.actionability.kind, cost.placement,
                                         self.limits(tuple(actionable), ids, seed, privileged))
        return profiles, groups


def population_problems(conditions: Sequence[Any], populations: Mapping[str, PopulationSpec],
                        world: Any, source: str) -> list[DocumentProblem]:
    """Ranking distributions and group-rule features the conditions' populations name that
    the world (a world entry with a torch-free ``roles()``) lacks, as document problems."""
    roles = getattr(world, "roles", None)
    problems = []
    for i, cond in enumerate(conditions):
        if roles is None or cond.name not in populations:
            continue
        inline = isinstance(cond.population, PopulationSpec)
        known, population = roles(), populations[cond.name]
        problems += [DocumentProblem(source, f"conditions[{i}].population.{field}",
                                     reason if inline else f"{reason} (in {cond.population})")
                     for field, reason in [
                         *population.ranking_problems(tuple(known.rankings)),
                         *population.actionable_problems(len(known.actionable)),
                         *population.feature_problems(known.names, known.income,
                                                      known.sensitive),
                         *population.change_problems(known.actionable)]]
    return problems
