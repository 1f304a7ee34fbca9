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
        population: ../populations/hard_k4.yaml   # relative to this file, or inline

An optional ``contrasts:`` list of ``{policy, baseline}`` pairs (policy names) asks for paired
differences of every metric, written to ``contrasts.csv``; a pair may also name two conditions
(``condition``, ``baseline_condition``) to compare the same policy (or two) across conditions.

The simulated people of a condition are built from its population document (see
:mod:`simstudy.people.spec`) plus the ``users:`` section (hidden preferences and answering) and
the ``response:`` section (a registered response model, default ``{kind: logistic}``), given
once for the scenario and optionally replaced per condition::

    users: {scale: far, noise: {kind: bernoulli, p: 0.1}}
    response: {kind: rating}

Policy, world and response kinds come from :mod:`simstudy.core.registry`: the installed ones
(the package's and its plugins', entry-point group ``simstudy.kinds``) and those registered by
the modules the document's ``imports:`` names, imported (from the document's folder or the
working directory) before the rest is validated::

    imports: [my_kinds]          # my_kinds.py beside the scenario registers `raise_income`
    policies:
      - {kind: raise_income}
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, model_serializer, model_validator

from ..core.bounds import MAX_APPLICANTS
from ..core.documents import (
    DocumentError,
    DocumentProblem,
    SafeName,
    StrictModel,
    load_yaml,
    safe_name_problem,
    validate_data,
)
from ..core.registry import entries, import_modules, kinds, module_folders
from ..people.response_params import LogisticResponseParams
from ..people.spec import (
    ActionabilitySpec,
    GroupsSpec,
    PeopleSpec,
    PopulationSpec,
    ResponseSpecs,
    UserSettings,
    population_problems,
)
from ..sim.spec import SimulationSpec
from ..study.section import StudySectionSpec, response_scope_problems, study_problems
from ..world.config import DecisionConfig
from ..world.specs import DecisionModelEntry, ExternalModelSpec

__all__ = [
    "ActionabilitySpec",
    "GroupsSpec",
    "PopulationSpec",
    "ConditionSpec",
    "ApplicantsSpec",
    "ContrastSpec",
    "Scenario",  # noqa: F822 - built on first use (module __getattr__)
    "load_scenario",
    "load_population",
    "people_specs",
]

def _population_form(value: Any) -> str:
    return "file" if isinstance(value, str) else "inline"


class ConditionSpec(StrictModel):
    """One condition to compare: a name and a population (file path or inline document), and
    optionally its own ``users:`` and ``response:`` sections (replacing the scenario's)."""

    name: SafeName
    # A tagged union so that a bad inline document is reported once, not also as "not a path".
    population: Annotated[
        Union[Annotated[PopulationSpec, Tag("inline")], Annotated[str, Tag("file")]],  # noqa: UP007
        Discriminator(_population_form),
    ]
    users: UserSettings | None = None
    response: ResponseSpecs | None = None  # type: ignore[valid-type]


class ContrastSpec(StrictModel):
    """A paired comparison written to ``contrasts.csv``: ``policy`` minus ``baseline``.

    Without conditions, the two policies are compared within every condition. With
    ``condition`` and ``baseline_condition``, ``policy`` in ``condition`` is compared with
    ``baseline`` in ``baseline_condition`` (the same people in both: draws are keyed by person).
    """

    policy: str = Field(min_length=1)
    baseline: str = Field(min_length=1)
    condition: str | None = None
    baseline_condition: str | None = None

    @model_validator(mode="after")
    def _both_conditions(self) -> ContrastSpec:
        if (self.condition is None) != (self.baseline_condition is None):
            raise ValueError("give both condition and baseline_condition, or neither")
        return self


class ApplicantsSpec(StrictModel):
    """Who asks for recourse: rejected applicants of a split, optionally capped."""

    split: Literal["test", "val", "train"] = "test"
    only_rejected: bool = True
    max_applicants: int | None = Field(None, gt=0, le=MAX_APPLICANTS)


def _union(registry: dict[str, type], what: str) -> Any:
    if not registry:
        raise RuntimeError(f"no {what} kinds are registered")
    members = tuple(dict.fromkeys(registry.values()))  # a model may serve several kinds
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Field(discriminator="kind")]  # noqa: UP007


def _scenario_model() -> type[StrictModel]:
    policy_union = _union(entries("policy"), "policy")
    world_union = _union(entries("world"), "world")

    class Scenario(StrictModel):
        """A scenario document (see the module docstring)."""

        name: SafeName
        description: str = ""
        imports: list[str] = Field(
            default_factory=list,
            description="modules (beside the document, or in the working directory) imported "
                        "before it is validated: the kinds they register may be named")
        seed: int = Field(0, ge=0)
        replications: int = Field(1, ge=1, le=1000)
        world: world_union  # type: ignore[valid-type]
        decision_model: DecisionModelEntry = DecisionConfig()
        applicants: ApplicantsSpec = ApplicantsSpec()
        policies: list[policy_union] = Field(min_length=1)  # type: ignore[valid-type]
        conditions: list[ConditionSpec] = Field(min_length=1)
        users: UserSettings = UserSettings()
        response: ResponseSpecs = Field(  # type: ignore[valid-type]
            default_factory=LogisticResponseParams)
        simulation: SimulationSpec | None = None
        contrasts: list[ContrastSpec] = Field(default_factory=list)
        study: StudySectionSpec | None = None

        def __reduce_ex__(self, protocol):
            # a scenario naming modules imports them in the process that unpickles it (a
            # worker started before the document was read), before its entries are read
            if not self.imports:
                return super().__reduce_ex__(protocol)
            payload = pickle.dumps((type(self), self.__getstate__()), protocol)
            return (_with_imports, (module_folders(self.imports), list(self.imports), payload))

        @model_serializer(mode="wrap")
        def _without_empty_imports(self, handler):
            # a document without imports is written as before the field existed
            data = handler(self)
            if isinstance(data, dict) and not self.imports:
                data.pop("imports", None)
            return data

        @model_validator(mode="after")
        def _unique_names(self):
            policies = [policy_name(p) for p in self.policies]
            for name in policies:
                if safe_name_problem(name):
                    raise ValueError(f"policy name: {safe_name_problem(name)}")
            for what, names in (("policies", policies),
                                ("conditions", [c.name for c in self.conditions])):
                dupes = sorted({n for n in names if names.count(n) > 1})
                if dupes:
                    raise ValueError(f"{what} names must be unique; repeated: {dupes}")
            unknown = _unknown_contrast_names(
                policies, [c.model_dump() for c in self.contrasts],
                [c.name for c in self.conditions])
            if self.study is not None:
                unknown += study_problems(self.study, policies,
                                          [c.name for c in self.conditions], self.replications)
                unknown += response_scope_problems(self)
            if unknown:
                raise ValueError("; ".join(f"{field}: {reason}" for field, reason in unknown))
            if (self.simulation is not None and self.simulation.retraining is not None
                    and not getattr(type(self.world), "labels", False)):
                raise ValueError(
                    f"simulation.retraining: the {self.world.kind} world has no label rule, so "
                    "the lender cannot be retrained on it; remove retraining or use a world "
                    "with labels")
            return self

    return Scenario


def _with_imports(folders: list[str], imports: list[str], payload: bytes) -> Any:
    # unpickles a scenario after importing the modules it names (see ``__reduce_ex__``)
    for folder in folders:
        if folder not in sys.path:
            sys.path.insert(0, folder)
    problems = import_modules(imports, folders[0] if folders else ".", "scenario")
    if problems:
        raise ImportError(str(problems[0]))
    cls, state = pickle.loads(payload)  # noqa: S301 - the run's own units
    scenario = cls.__new__(cls)
    scenario.__setstate__(state)
    return scenario


def _needs_gradients(spec: Any) -> bool:
    return bool(getattr(spec, "needs_gradients", False))


def policy_name(spec: Any) -> str:
    """The name a policy has in results: its ``name`` or its ``kind``."""
    return spec.name or spec.kind


_MODELS: dict[tuple[tuple[str, ...], ...], type[StrictModel]] = {}


def scenario_model() -> type[StrictModel]:
    """The scenario document model over the policy and world kinds registered now (the model
    of :data:`Scenario`, whose instances runs carry and pickle, as work units sent to other
    processes do)."""
    key = tuple(tuple(sorted(entries(family).items(), key=lambda item: item[0]))
                for family in ("policy", "world"))
    if key not in _MODELS:
        model = _scenario_model()
        model.__qualname__ = "Scenario"  # pickle finds it as simstudy.run.scenario.Scenario
        _MODELS[key] = model
    return _MODELS[key]


def __getattr__(name: str) -> Any:
    # ``Scenario`` is built on first use: it needs every policy kind, and some import torch
    if name == "Scenario":
        return scenario_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _unknown_contrast_names(policies: list, contrasts: list,
                            conditions: list | None = None) -> list[tuple[str, str]]:
    """``(field, reason)`` for every contrast entry naming a policy (or condition) the scenario
    lacks."""
    out = []
    for i, entry in enumerate(contrasts):
        for role in ("policy", "baseline"):
            name = entry.get(role) if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in policies:
                out.append((f"contrasts[{i}].{role}",
                            f"unknown policy name {name!r}; the scenario's policies are "
                            f"{policies}"))
        for role in ("condition", "baseline_condition"):
            name = entry.get(role) if isinstance(entry, dict) else None
            if conditions is not None and isinstance(name, str) and name not in conditions:
                out.append((f"contrasts[{i}].{role}",
                            f"unknown condition name {name!r}; the scenario's conditions are "
                            f"{conditions}"))
    return out


def _unknown_kind_problems(data: Any, source: str) -> list[DocumentProblem]:
    # pydantic's message for a bad discriminator is terse; name the choices instead.
    problems = []
    if not isinstance(data, dict):
        return problems
    policies = data.get("policies")
    for i, entry in enumerate(policies if isinstance(policies, list) else []):
        if not isinstance(entry, dict):
            continue
        kind = entry.get("kind")
        if not isinstance(kind, str) or kind not in kinds("policy"):
            problems.append(DocumentProblem(
                source, f"policies[{i}].kind",
                f"unknown policy {kind!r}; choose from {kinds('policy')}"))
        elif "name" in entry and safe_name_problem(entry["name"]):
            problems.append(DocumentProblem(source, f"policies[{i}].name",
                                            safe_name_problem(entry["name"])))
    # the model-level check names no field; checked here first, the entry is named
    entries = [e for e in policies if isinstance(e, dict)] if isinstance(policies, list) else []
    contrasts = data.get("contrasts")
    conditions = [c.get("name") for c in data.get("conditions") or [] if isinstance(c, dict)]
    problems += [DocumentProblem(source, field, reason) for field, reason in
                 _unknown_contrast_names([e.get("name") or e.get("kind") for e in entries],
                                         contrasts if isinstance(contrasts, list) else [],
                                         conditions)]
    world = data.get("world")
    kind = world.get("kind") if isinstance(world, dict) else None
    if isinstance(world, dict) and (not isinstance(kind, str) or kind not in kinds("world")):
        problems.append(DocumentProblem(
            source, "world.kind", f"unknown world {kind!r}; choose from {kinds('world')}"))
    return problems


def load_population(path: str | Path) -> PopulationSpec:
    """Reads a population document."""
    return validate_data(load_yaml(path), PopulationSpec, str(path))


def load_scenario(path: str | Path, data: Any = None, source: str | None = None,
                  ) -> tuple[Any, dict[str, PopulationSpec]]:
    """Reads a scenario and every population file it names.

    Args:
        path: the scenario file; relative paths in it resolve against its folder.
        data: the document already read (and perhaps changed, as a sweep cell's overrides do);
            ``None`` reads ``path``.
        source: how problems name the document (default: ``path``).

    Returns:
        ``(scenario, populations)`` with ``populations`` mapping condition name to its resolved
        :class:`PopulationSpec`. Raises :class:`DocumentError` listing every problem found.

    Example:
        >>> document = {"name": "try", "world": {"kind": "loan", "n_samples": 500},
        ...             "policies": [{"kind": "oracle"}],
        ...             "conditions": [{"name": "all", "population": {"actionability": {
        ...                 "kind": "ranking", "n_actionable": 2}}}]}
        >>> scenario, populations = load_scenario("try.yaml", data=document)
        >>> scenario.world.kind, [policy_name(p) for p in scenario.policies], list(populations)
        ('loan', ['oracle'], ['all'])
        >>> load_scenario("try.yaml", data={**document, "replications": 0})
        Traceback (most recent call last):
        ...
        simstudy.core.documents.DocumentError: try.yaml: replications: ...
    """
    path = Path(path)
    if data is None:
        data = load_yaml(path)
    source = str(path) if source is None else source
    imports = data.get("imports") if isinstance(data, dict) else None
    if isinstance(imports, list) and all(isinstance(name, str) for name in imports):
        import_problems = import_modules(imports, path.parent, source)
        if import_problems:
            raise DocumentError(import_problems)
    kind_problems = _unknown_kind_problems(data, source)
    if kind_problems:
        raise DocumentError(kind_problems)
    model = scenario_model()
    scenario = validate_data(data, model, source)
    populations: dict[str, PopulationSpec] = {}
    # data-dependent checks (a data file's columns, values, labels) are part of validation
    check_data = getattr(scenario.world, "check_data", None)
    problems: list[DocumentProblem] = [
        DocumentProblem(str(path), f"world.{field}", reason)
        for field, reason in (check_data(path.parent) if check_data else [])]
    if not getattr(scenario.decision_model, "differentiable", True):
        problems += [DocumentProblem(str(path), f"policies[{i}].kind", (
            f"{spec.kind} follows the decision model's gradient; a "
            f"{scenario.decision_model.kind} model has none (use a torchscript model, or "
            "policies that only query the model: oracle, growing_spheres)"))
            for i, spec in enumerate(scenario.policies) if _needs_gradients(spec)]
    if isinstance(scenario.decision_model, ExternalModelSpec) and not problems:
        names = scenario.world.feature_names()
        problems += [DocumentProblem(str(path), field, reason)
                     for field, reason in scenario.decision_model.check(path.parent, names)]
    for i, cond in enumerate(scenario.conditions):
        if isinstance(cond.population, PopulationSpec):
            populations[cond.name] = cond.population
            continue
        pop_path = (path.parent / cond.population).resolve()
        if not pop_path.exists():
            problems.append(DocumentProblem(source, f"conditions[{i}].population",
                                            f"population file not found: {cond.population}"))
            continue
        try:
            populations[cond.name] = load_population(pop_path)
        except DocumentError as exc:
            problems.extend(exc.problems)
    problems += population_problems(scenario.conditions, populations, scenario.world, source)
    problems += _group_column_problems(scenario, populations, str(path))
    if problems:
        raise DocumentError(problems)
    return scenario, populations


def _group_column_problems(scenario: Any, populations: dict[str, PopulationSpec],
                           source: str) -> list[DocumentProblem]:
    """The event world's ``group_column`` (and per-group request probabilities) must name a
    group column every condition's people carry (none without an event world)."""
    sim = scenario.simulation
    if sim is None:
        return []
    problems = []
    for cond in scenario.conditions:
        have = populations[cond.name].group_columns()
        if sim.group_column not in have:
            problems.append(DocumentProblem(
                source, "simulation.group_column",
                f"{sim.group_column!r} is not a group of condition {cond.name!r} (its groups: "
                f"{have or 'none'}); add `groups:` or `stylized_attribute:` to its population, "
                "or choose another group_column"))
    for label in sim.request_probability_by_group:
        column = label.split("=", 1)[0]
        if "=" not in label or column != sim.group_column:
            problems.append(DocumentProblem(
                source, f"simulation.request_probability_by_group.{label}",
                f"labels are '{sim.group_column}=<value>'"))
    return problems


def people_specs(scenario: Any, populations: dict[str, PopulationSpec]) -> dict[str, PeopleSpec]:
    """The :class:`~simstudy.people.PeopleSpec` of every condition: its population with the
    condition's (or else the scenario's) ``users:`` and ``response:`` sections."""
    return {c.name: PeopleSpec(population=populations[c.name],
                               users=c.users or scenario.users,
                               response=c.response or scenario.response)
            for c in scenario.conditions}
