"""Scenario and population documents (YAML), validated before anything runs.

A scenario names the world, the decision model, the policies and the conditions to compare::

    name: oracle-hard-constraints
    seed: 0
    replications: 5              # world sample + decision model per replication
    world: {kind: loan, n_samples: 20000}
    decision_model: {hidden: [32, 32], epochs: 500}
    policies:
      - {kind: oracle}
    conditions:
      - name: all-4
        population: ../populations/hard_all4.yaml   # relative to this file, or inline

An optional ``contrasts:`` list of ``{policy, baseline}`` pairs (policy names) asks for paired
differences of every metric, written to ``contrasts.csv``.

A population document states how individual actionability is assigned::

    actionability: {kind: ranking, bias: uniform, n_actionable: 2}
    cost: {shape: linear, alpha: 3.0}
    groups: {rule: income, privileged: {bias: privileged}, non_privileged: {bias: non_privileged}}

Policy and world kinds come from :mod:`simstudy.registry`, so each subsystem adds its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import Discriminator, Field, Tag, model_validator

from . import policies as _policies  # noqa: F401 - registers the built-in policy kinds
from . import world as _world  # noqa: F401 - registers the built-in world kinds
from .documents import DocumentError, DocumentProblem, StrictModel, load_yaml, validate_data
from .population import (
    ActionabilityProfiles,
    AllActionableSampler,
    CostProfile,
    GroupAssignment,
    LikertSampler,
    Population,
    RankingSampler,
    assign_groups,
)
from .registry import POLICY_SPECS, WORLD_SPECS
from .rng import entity_uniforms
from .sim.spec import SimulationSpec
from .world.decision import DecisionConfig

__all__ = [
    "ActionabilitySpec",
    "CostSpec",
    "GroupsSpec",
    "PopulationSpec",
    "ConditionSpec",
    "DecisionModelSpec",
    "ApplicantsSpec",
    "ContrastSpec",
    "Scenario",
    "load_scenario",
    "load_population",
    "build_population",
]

BiasName = Literal["uniform", "causal_order", "reverse_causal_order", "privileged",
                   "non_privileged"]


class ActionabilitySpec(StrictModel):
    """How each person's individual actionability scores are drawn.

    ``ranking``: a permutation from ``bias`` and a threshold leaving ``n_actionable`` features
    (``null``: uniform over 1..K). ``likert``: scores uniform in 1..``levels`` (0 included when
    ``allow_not_actionable``). ``all``: no personalization.
    """

    kind: Literal["ranking", "likert", "all"] = "ranking"
    bias: BiasName | list[float] = "uniform"
    n_actionable: int | None = Field(None, ge=0, le=16)
    levels: int = Field(4, ge=2, le=10)
    allow_not_actionable: bool = False

    def sampler(self, bias: Any = None):
        if self.kind == "ranking":
            chosen = self.bias if bias is None else bias
            chosen = tuple(chosen) if isinstance(chosen, list) else chosen
            return RankingSampler(chosen, self.n_actionable)
        if self.kind == "likert":
            return LikertSampler(self.levels, self.allow_not_actionable)
        return AllActionableSampler()


class CostSpec(StrictModel):
    """Cost profile mapping scores to weights: ``w(s) = 1 + alpha ((s-1)/(S-1))^p``; the
    weights enter the cost outside the square (the paper's weighted L2) unless ``placement:
    inside`` (see :func:`simstudy.metrics.weighted_cost`)."""

    shape: Literal["constant", "concave", "linear", "convex"] = "constant"
    alpha: float = Field(3.0, ge=0)
    power: float | None = Field(None, gt=0)
    placement: Literal["outside", "inside"] = "outside"

    def profile(self) -> CostProfile:
        return CostProfile(self.shape, self.alpha, self.power, self.placement)


class GroupProfileSpec(StrictModel):
    bias: BiasName | list[float]


class GroupsSpec(StrictModel):
    """Group-correlated assignment of a privileged and a non-privileged ranking distribution."""

    rule: Literal["random", "income", "attribute"]
    privileged_share: float = Field(0.25, gt=0, lt=1)
    attribute: str = "race"
    privileged_if_majority: float = Field(0.9, ge=0, le=1)
    privileged_if_minority: float = Field(0.05, ge=0, le=1)
    privileged: GroupProfileSpec = GroupProfileSpec(bias="privileged")
    non_privileged: GroupProfileSpec = GroupProfileSpec(bias="non_privileged")

    def assignment(self) -> GroupAssignment:
        return GroupAssignment(self.rule, self.privileged_share, self.attribute,
                               self.privileged_if_majority, self.privileged_if_minority)


class PopulationSpec(StrictModel):
    """A population document: actionability sampler, cost profile, optional groups."""

    description: str = ""
    actionability: ActionabilitySpec = ActionabilitySpec()
    cost: CostSpec = CostSpec()
    groups: GroupsSpec | None = None
    stylized_attribute: str | None = Field(
        None, description="add a stylized binary attribute (equal gender x attribute cells) "
                          "that affects nothing, for audits")

    @model_validator(mode="after")
    def _groups_need_rankings(self) -> PopulationSpec:
        if self.groups is not None and self.actionability.kind != "ranking":
            raise ValueError("groups assign ranking distributions; actionability.kind must be "
                             "'ranking'")
        return self


def build_population(
    spec: PopulationSpec, x: np.ndarray, feature_names: tuple[str, ...],
    actionable: tuple[str, ...], ids: np.ndarray, seed: int,
) -> Population:
    """Draws every applicant's actionability profile and group attributes.

    Draws are keyed by ``(seed, purpose, applicant id)``: two conditions differing only in the
    cost profile give the same people the same rankings.
    """
    ids = np.asarray(ids)
    groups: dict[str, np.ndarray] = {}
    if spec.stylized_attribute is not None:
        groups.update({k: v for k, v in assign_groups(
            GroupAssignment("attribute", attribute=spec.stylized_attribute),
            x, feature_names, ids, seed).items() if k != "privileged"})
    uniforms = entity_uniforms(seed, "actionability", ids, 8)
    if spec.groups is None:
        scores, levels = spec.actionability.sampler().sample(actionable, uniforms)
    else:
        assigned = assign_groups(spec.groups.assignment(), x, feature_names, ids, seed)
        groups.update(assigned)
        privileged = assigned["privileged"]
        s_priv, levels = spec.actionability.sampler(spec.groups.privileged.bias).sample(
            actionable, uniforms)
        s_non, _ = spec.actionability.sampler(spec.groups.non_privileged.bias).sample(
            actionable, uniforms)
        scores = np.where(privileged[:, None], s_priv, s_non)
    cost = spec.cost.profile()
    profiles = ActionabilityProfiles(actionable, scores, levels, cost.weights(scores, levels),
                                     spec.actionability.kind, cost.placement)
    return Population(ids, x, feature_names, profiles, groups)


def _population_form(value: Any) -> str:
    return "file" if isinstance(value, str) else "inline"


class ConditionSpec(StrictModel):
    """One condition to compare: a name and a population (file path or inline document)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    # A tagged union so that a bad inline document is reported once, not also as "not a path".
    population: Annotated[
        Union[Annotated[PopulationSpec, Tag("inline")], Annotated[str, Tag("file")]],  # noqa: UP007
        Discriminator(_population_form),
    ]


class ContrastSpec(StrictModel):
    """A paired comparison written to ``contrasts.csv``: ``policy`` minus ``baseline``."""

    policy: str = Field(min_length=1)
    baseline: str = Field(min_length=1)


class DecisionModelSpec(StrictModel):
    """The decision model's architecture and training (defaults: the published set-up)."""

    hidden: list[Annotated[int, Field(gt=0)]] = [32, 32]
    epochs: int = Field(500, gt=0)
    batch_size: int = Field(256, gt=0)
    lr: float = Field(1e-3, gt=0)

    def config(self) -> DecisionConfig:
        return DecisionConfig(tuple(self.hidden), self.epochs, self.batch_size, self.lr)


class ApplicantsSpec(StrictModel):
    """Who asks for recourse: rejected applicants of a split, optionally capped."""

    split: Literal["test", "val", "train"] = "test"
    only_rejected: bool = True
    max_applicants: int | None = Field(None, gt=0)


def _union(registry: dict[str, type], what: str) -> Any:
    if not registry:
        raise RuntimeError(f"no {what} kinds are registered")
    members = tuple(registry.values())
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Field(discriminator="kind")]  # noqa: UP007


def _scenario_model() -> type[StrictModel]:
    policy_union = _union(POLICY_SPECS, "policy")
    world_union = _union(WORLD_SPECS, "world")

    class Scenario(StrictModel):
        """A scenario document (see the module docstring)."""

        name: str = Field(min_length=1)
        description: str = ""
        seed: int = Field(0, ge=0)
        replications: int = Field(1, ge=1, le=1000)
        world: world_union  # type: ignore[valid-type]
        decision_model: DecisionModelSpec = DecisionModelSpec()
        applicants: ApplicantsSpec = ApplicantsSpec()
        policies: list[policy_union] = Field(min_length=1)  # type: ignore[valid-type]
        conditions: list[ConditionSpec] = Field(min_length=1)
        simulation: SimulationSpec | None = None
        contrasts: list[ContrastSpec] = Field(default_factory=list)

        @model_validator(mode="after")
        def _unique_names(self):
            policies = [policy_name(p) for p in self.policies]
            for what, names in (("policies", policies),
                                ("conditions", [c.name for c in self.conditions])):
                dupes = sorted({n for n in names if names.count(n) > 1})
                if dupes:
                    raise ValueError(f"{what} names must be unique; repeated: {dupes}")
            unknown = _unknown_contrast_names(
                policies, [{"policy": c.policy, "baseline": c.baseline} for c in self.contrasts])
            if unknown:
                raise ValueError("; ".join(f"{field}: {reason}" for field, reason in unknown))
            return self

    return Scenario


def policy_name(spec: Any) -> str:
    """The name a policy has in results: its ``name`` or its ``kind``."""
    return spec.name or spec.kind


Scenario = _scenario_model()


def _unknown_contrast_names(policies: list, contrasts: list) -> list[tuple[str, str]]:
    """``(field, reason)`` for every contrast entry naming a policy the scenario lacks."""
    out = []
    for i, entry in enumerate(contrasts):
        for role in ("policy", "baseline"):
            name = entry.get(role) if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in policies:
                out.append((f"contrasts[{i}].{role}",
                            f"unknown policy name {name!r}; the scenario's policies are "
                            f"{policies}"))
    return out


def _unknown_kind_problems(data: Any, source: str) -> list[DocumentProblem]:
    # pydantic's message for a bad discriminator is terse; name the choices instead.
    problems = []
    if not isinstance(data, dict):
        return problems
    for i, entry in enumerate(data.get("policies") or []):
        if isinstance(entry, dict) and entry.get("kind") not in POLICY_SPECS:
            problems.append(DocumentProblem(
                source, f"policies[{i}].kind",
                f"unknown policy {entry.get('kind')!r}; choose from {sorted(POLICY_SPECS)}"))
    # the model-level check names no field; checked here first, the entry is named
    entries = [e for e in data.get("policies") or [] if isinstance(e, dict)]
    contrasts = data.get("contrasts")
    problems += [DocumentProblem(source, field, reason) for field, reason in
                 _unknown_contrast_names([e.get("name") or e.get("kind") for e in entries],
                                         contrasts if isinstance(contrasts, list) else [])]
    world = data.get("world")
    if isinstance(world, dict) and world.get("kind") not in WORLD_SPECS:
        problems.append(DocumentProblem(
            source, "world.kind",
            f"unknown world {world.get('kind')!r}; choose from {sorted(WORLD_SPECS)}"))
    return problems


def load_population(path: str | Path) -> PopulationSpec:
    """Reads a population document."""
    return validate_data(load_yaml(path), PopulationSpec, str(path))


def load_scenario(path: str | Path) -> tuple[Any, dict[str, PopulationSpec]]:
    """Reads a scenario and every population file it names.

    Returns:
        ``(scenario, populations)`` with ``populations`` mapping condition name to its resolved
        :class:`PopulationSpec`. Raises :class:`DocumentError` listing every problem found.
    """
    path = Path(path)
    data = load_yaml(path)
    kind_problems = _unknown_kind_problems(data, str(path))
    if kind_problems:
        raise DocumentError(kind_problems)
    scenario = validate_data(data, Scenario, str(path))
    populations: dict[str, PopulationSpec] = {}
    problems: list[DocumentProblem] = []
    for i, cond in enumerate(scenario.conditions):
        if isinstance(cond.population, PopulationSpec):
            populations[cond.name] = cond.population
            continue
        pop_path = (path.parent / cond.population).resolve()
        if not pop_path.exists():
            problems.append(DocumentProblem(str(path), f"conditions[{i}].population",
                                            f"population file not found: {cond.population}"))
            continue
        try:
            populations[cond.name] = load_population(pop_path)
        except DocumentError as exc:
            problems.extend(exc.problems)
    if problems:
        raise DocumentError(problems)
    return scenario, populations
