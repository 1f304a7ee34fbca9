"""The documents that describe simulated people: population, users and response sections.

A population document states how individual actionability is assigned::

    actionability: {kind: ranking, bias: uniform, n_actionable: 2}
    cost: {shape: linear, alpha: 3.0}
    groups: {rule: income, privileged: {bias: privileged}, non_privileged: {bias: non_privileged}}
    hidden_mismatch_probability: 0.25   # one reported-actionable feature is in truth not

A scenario's (or a condition's) ``users:`` section states the people's hidden preferences and
how they answer questions; its ``response:`` section how they accept and act on a recourse
(a registered kind, see :mod:`simstudy.people.response`). :class:`PeopleSpec` joins the three
and builds :class:`~simstudy.people.People`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, model_validator

from ..documents import DocumentProblem, StrictModel
from ..population import (
    ActionabilityProfiles,
    AllActionableSampler,
    BiasName,
    CostProfile,
    GroupAssignment,
    LikertSampler,
    RankingSampler,
    assign_groups,
)
from ..registry import RESPONSE_SPECS
from ..rng import entity_uniforms
from ..schema import derive_spec
from . import rating as _rating  # noqa: F401 - registers the rating response kind
from .noise import NoiseModel
from .response import LogisticResponseSpec
from .settings import GROUND_TRUTH_SCALES, GROUND_TRUTH_SEARCHES, UserSettings

if TYPE_CHECKING:  # the people themselves are built with torch; documents validate without it
    from ..primitives.space import ScaledSpace
    from .people import People

__all__ = ["ActionabilitySpec", "CostSpec", "GroupsSpec", "PopulationSpec", "NoiseSpec",
           "UsersSpec", "ResponseSpecs", "PeopleSpec", "population_problems"]

class ActionabilitySpec(derive_spec(LikertSampler, name="ActionabilitySpec", base=derive_spec(
        RankingSampler, name="RankingSamplerSpec", exclude=("rankings",)))):
    """How each person's individual actionability scores are drawn.

    ``ranking``: a permutation from ``bias`` and a threshold leaving ``n_actionable`` features
    (``null``: uniform over 1..K). ``likert``: scores uniform in 1..``levels`` (0 included when
    ``allow_not_actionable``). ``all``: no personalization. The fields and defaults are the
    samplers' (:class:`~simstudy.population.RankingSampler`,
    :class:`~simstudy.population.LikertSampler`).

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

    kind: Literal["ranking", "likert", "all"] = "ranking"

    def sampler(self, bias: Any = None, rankings: Mapping[str, Sequence[str]] | None = None):
        """The sampler of this document (``bias`` overrides the document's; ``rankings``: the
        world's named ranking distributions)."""
        if self.kind == "ranking":
            chosen = self.bias if bias is None else bias
            chosen = tuple(chosen) if isinstance(chosen, list) else chosen
            return RankingSampler(chosen, self.n_actionable, dict(rankings or {}))
        if self.kind == "likert":
            return LikertSampler(self.levels, self.allow_not_actionable)
        return AllActionableSampler()


class CostSpec(derive_spec(CostProfile, name="CostSpec")):
    """Cost profile mapping scores to weights: ``w(s) = 1 + alpha ((s-1)/(S-1))^p``; the
    weights enter the cost outside the square (the paper's weighted L2) unless ``placement:
    inside`` (see :func:`simstudy.metrics.weighted_cost`). Fields and defaults are
    :class:`~simstudy.population.CostProfile`'s.

    References:
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> import numpy as np
        >>> from simstudy.people import CostSpec
        >>> profile = CostSpec(shape="linear", alpha=3.0).profile()
        >>> profile.weights(np.array([[1, 2, 3, 4]]), levels=4).tolist()
        [[1.0, 2.0, 3.0, 4.0]]
    """

    def profile(self) -> CostProfile:
        return self.build()


class GroupProfileSpec(StrictModel):
    bias: BiasName | list[float]


class GroupsSpec(derive_spec(GroupAssignment, name="GroupsSpec")):
    """Group-correlated assignment of a privileged and a non-privileged ranking distribution
    (the assignment's fields and defaults are :class:`~simstudy.population.GroupAssignment`'s;
    the features its rules read are the world's roles unless the document names them).

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
        return replace(self.build(), income_feature=self.income_feature or income,
                       gender_feature=self.gender_feature or sensitive)


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
    cost: CostSpec = CostSpec()
    groups: GroupsSpec | None = None
    stylized_attribute: str | None = Field(
        None, description="add a stylized binary attribute (equal gender x attribute cells) "
                          "that affects nothing, for audits")
    hidden_mismatch_probability: float = Field(0.0, ge=0.0, le=1.0)
    labels: dict[str, dict[int, str]] = Field(
        default_factory=dict, description="readable labels of the codes of the group columns "
                                          "this population adds, e.g. {race: {0: white, 1: "
                                          "non-white}} (0 = the majority group)")

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
        named = [("actionability.bias", self.actionability.bias)
                 if self.actionability.kind == "ranking" else ("", "uniform")]
        if self.groups is not None:
            named += [("groups.privileged.bias", self.groups.privileged.bias),
                      ("groups.non_privileged.bias", self.groups.non_privileged.bias)]
        return [(field, f"the world names no ranking distribution {bias!r} (it names: "
                        f"{', '.join(['uniform', *known])})")
                for field, bias in named
                if isinstance(bias, str) and bias != "uniform" and bias not in known]

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
                GroupAssignment("attribute", attribute=self.stylized_attribute,
                                gender_feature=within),
                x, feature_names, ids, seed).items() if k != "privileged"})
        uniforms = entity_uniforms(seed, "actionability", ids, 8)
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
        cost = self.cost.profile()
        profiles = ActionabilityProfiles(actionable, scores, levels, cost.weights(scores, levels),
                                         self.actionability.kind, cost.placement)
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
                         *population.feature_problems(known.names, known.income,
                                                      known.sensitive)]]
    return problems


class NoiseSpec(derive_spec(NoiseModel, name="NoiseSpec")):
    """Scenario entry of :class:`~simstudy.people.noise.NoiseModel` (its fields and defaults).

    Example:
        >>> from simstudy.people import NoiseSpec
        >>> NoiseSpec.model_validate({"kind": "bernoulli", "p": 0.1}).build()
        NoiseModel(kind='bernoulli', p=0.1, scale=2.0, offset=1.0, temperature=0.1)
    """


class UsersSpec(derive_spec(UserSettings, name="UsersSettingsSpec", exclude=("eps", "truth"))):
    """The people's hidden preferences and how they answer questions: ``preference``,
    ``weights``, ``noise`` and ``accept_threshold`` with their defaults are
    :class:`~simstudy.people.settings.UserSettings`'; the document names the ground-truth
    scale and search, which :meth:`settings` resolves into its ``eps`` and ``truth``.

    Attributes:
        scale: ground-truth perturbation norm or a name of
            :data:`~simstudy.people.settings.GROUND_TRUTH_SCALES`.
        ground_truth: how ``r_gt`` is searched for, a name of
            :data:`~simstudy.people.settings.GROUND_TRUTH_SEARCHES`: ``mutable`` (HARE's
            evaluation: CARLA's Growing Spheres over the world's mutable features) or
            ``actionable`` (the earlier variant: each person's actionable features, the
            project's Growing Spheres with its feature-selection step).
        n_samples, eta: replace the ground-truth search's samples per shell and shell width.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.people import UsersSpec
        >>> spec = UsersSpec.model_validate({"scale": "near", "noise": {"kind": "logistic"}})
        >>> spec.scale, spec.settings().noise.kind
        ('near', 'logistic')
    """

    scale: Literal["near", "intermediate", "far"] | Annotated[float, Field(gt=0.0)] = "far"
    ground_truth: Literal["mutable", "actionable"] = "mutable"
    n_samples: int | None = Field(None, gt=0)
    eta: float | None = Field(None, gt=0.0)

    def settings(self) -> UserSettings:
        """The runtime settings, named scale and search resolved."""
        eps = GROUND_TRUTH_SCALES[self.scale] if isinstance(self.scale, str) else self.scale
        truth = GROUND_TRUTH_SEARCHES[self.ground_truth]
        if self.n_samples is not None:
            truth = replace(truth, n_samples=self.n_samples)
        if self.eta is not None:
            truth = replace(truth, shell_width=self.eta)
        return UserSettings(**self.arguments(), eps=float(eps), truth=truth)

    build = settings


def _response_union() -> Any:
    members = tuple(RESPONSE_SPECS.values())
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Field(discriminator="kind")]  # noqa: UP007


#: Any registered response-model spec, told apart by ``kind``.
ResponseSpecs = _response_union()


class PeopleSpec(StrictModel):
    """Everything that describes the simulated people of one condition.

    Example:
        >>> import numpy as np
        >>> from simstudy.policies import RecourseContext
        >>> from simstudy.population import ActionabilityProfiles
        >>> from simstudy.rng import generator
        >>> from simstudy.world import LoanSCM, sample_world_data
        >>> from simstudy.world.decision import DecisionConfig, train_decision_model
        >>> data = sample_world_data(LoanSCM(), 400, generator(0, "example"))
        >>> model = train_decision_model(data, DecisionConfig(epochs=5))
        >>> context = RecourseContext(LoanSCM(), model, data)
        >>> ids = np.flatnonzero(~context.model.approves(data.x_test).numpy())[:3]
        >>> x, actionable = data.x_test.numpy()[ids], LoanSCM.roles.actionable
        >>> profiles = ActionabilityProfiles(actionable, np.ones((3, 4), int), 1, np.ones((3, 4)))
        >>> from simstudy.people import PeopleSpec
        >>> from simstudy.primitives import ScaledSpace
        >>> people = PeopleSpec().build(x, ids, 0, context.feature_names, actionable,
        ...                             ScaledSpace.from_context(context), reported=profiles,
        ...                             immutable=LoanSCM.roles.immutable)
        >>> len(people), type(people.response).__name__
        (3, 'LogisticResponse')
    """

    population: PopulationSpec = Field(default_factory=PopulationSpec)
    users: UsersSpec = Field(default_factory=UsersSpec)
    response: ResponseSpecs = Field(default_factory=LogisticResponseSpec)  # type: ignore[valid-type]

    def build(self, x: np.ndarray, ids: np.ndarray, seed: int, feature_names: Sequence[str],
              actionable: tuple[str, ...], space: ScaledSpace,
              reported: ActionabilityProfiles | None = None,
              preference_seed: int | None = None,
              immutable: Sequence[str] | None = None,
              rankings: Mapping[str, Sequence[str]] | None = None,
              income: str | None = None, sensitive: Sequence[str] = ()) -> People:
        """The people behind rows ``x`` (ids ``ids``), every draw keyed by ``(seed, purpose,
        id)``.

        Args:
            x, ids: their features and person ids.
            seed: the replication's seed.
            feature_names, actionable: the world's features and its globally actionable ones.
            space: the replication's scaled space (a hidden ground truth is an approved point
                of its decision model), e.g. ``ScaledSpace.from_context(context)``.
            reported: use these reported profiles instead of drawing them from the population
                document (no group columns then).
            preference_seed: the stream of hidden preferences and answers (default: ``seed``).
            immutable: the world's immutable features (``world.roles.immutable``); needed by
                the ``mutable`` ground-truth search, which moves every other feature.
            rankings: the world's named ranking distributions (``world.roles.rankings``);
                needed by a population document naming one other than ``uniform``.
            income, sensitive: the world's income-like and sensitive features
                (``world.roles.income``, ``world.roles.sensitive``); read by the group rules.
        """
        from .people import People

        x = np.asarray(x, dtype=np.float64)
        ids = np.asarray(ids, dtype=np.int64)
        if reported is None:
            profiles, groups = self.population.draw(x, feature_names, actionable, ids, seed,
                                                    rankings, income, tuple(sensitive))
        else:
            profiles, groups = reported, {}
        return People.create(ids, x, tuple(feature_names), profiles, groups, seed, space,
                             self.users.settings(), self.response.build(),
                             self.population.hidden_mismatch_probability, preference_seed,
                             None if immutable is None else tuple(immutable))
