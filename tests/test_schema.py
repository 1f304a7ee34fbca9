"""Document entries derive their fields and defaults from the runtime declarations.

The acceptance check: every registered policy, world and response-model entry, and every entry
of a model or setting they nest (decision model, flow, cost, noise, groups, ratings), takes its
parameters, their constraints and defaults from one runtime declaration; a field the entry
declares itself (document-only: a policy's ``name``, a world's sample size) is never one of
the declaration's parameters, so nothing is written twice.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated

import pytest
from annotated_types import Gt
from pydantic import BaseModel

from simstudy.core.documents import StrictModel
from simstudy.core.registry import entries
from simstudy.core.schema import (
    check_constraints,
    constructor_parameters,
    derive_spec,
    resolve_runtime,
)

#: Entries that are not derived, each with its reason; the check below also fails when one of
#: them becomes derived (so the list cannot go stale).
NOT_DERIVED = {
    ("world", "causal_flow"): "document-only fields (data source, sample size, CSV file); its "
                              "flow is FlowSettings, derived from FlowConfig",
    **{("world", kind): "document-only fields (sample size, split); the world is its table of "
                        "structural equations (simstudy.world.known)"
       for kind in ("chain_linear", "chain_non_linear", "collider_linear", "collider_non_linear",
                    "triangle_linear", "triangle_non_linear")},
}


def _registered() -> dict[tuple[str, str], type[BaseModel]]:
    import simstudy.people  # noqa: F401 - registers the response kinds
    import simstudy.policies  # noqa: F401 - registers the policy kinds
    import simstudy.world  # noqa: F401 - registers the world kinds

    return {(family, k): s for family in ("policy", "world", "response")
            for k, s in entries(family).items()}


def _model_entries() -> dict[tuple[str, str], type[BaseModel]]:
    from simstudy.world.specs import DecisionModelSpec, FlowSettings

    return {("model", s.__name__): s for s in (DecisionModelSpec, FlowSettings)}


def _is_derived(spec: type) -> bool:
    return hasattr(spec, "declaration")


def _hand_written(spec: type[BaseModel]) -> set[str]:
    """Fields the entry's own classes declare (not derived), up to the derived model."""
    own: set[str] = set()
    for klass in spec.__mro__:
        if klass in (BaseModel, StrictModel) or not issubclass(klass, BaseModel):
            continue
        if "declaration" in vars(klass):  # the model derive_spec made
            continue
        own |= {n for n, t in vars(klass).get("__annotations__", {}).items()
                if "ClassVar" not in str(t)}
    return own & set(spec.model_fields)


def _problems(spec: type[BaseModel]) -> list[str]:
    """Why ``spec`` does not take its fields and defaults from its declarations (none: it
    does). An entry may combine several derived models (each a base of the next)."""
    if not _is_derived(spec):
        return ["not derived from a declaration"]
    return [p for derived in spec.__mro__ if "declaration" in vars(derived)
            for p in _problems_of(spec, derived)]


def _problems_of(spec: type[BaseModel], derived: type) -> list[str]:
    # the fields ``derived`` (a model made by derive_spec) contributes to ``spec``
    out = []
    params = constructor_parameters(derived.declaration)
    twice = _hand_written(spec) & set(params)
    if twice:
        out.append(f"declared again by hand: {sorted(twice)}")
    missing = set(derived.parameters) - set(spec.model_fields)
    if missing or not set(derived.parameters) <= set(params):
        out.append(f"parameters {sorted(derived.parameters)} vs fields / declaration")
    for name in set(derived.parameters) - set(derived.replaced):
        field = spec.model_fields[name]
        default = field.get_default(call_default_factory=True)
        if derived.optional:
            if default is not None:
                out.append(f"{name}: optional entry with default {default!r}")
            continue
        expect = params[name][1] if derived.defaults is None else getattr(derived.defaults,
                                                                            name)
        if _is_derived(type(default)):
            out += [f"{name}.{p}" for p in _problems(type(default))]
            default = default.build()
        if expect is not ... and default != expect:
            out.append(f"{name}: default {default!r} != declaration's {expect!r}")
        annotation = params[name][0]
        bounds = typing.get_args(annotation)[1:] if typing.get_origin(annotation) is \
            Annotated else ()
        if any(b not in field.metadata for b in bounds):
            out.append(f"{name}: constraints {bounds} not enforced ({field.metadata})")
    runtime = resolve_runtime(derived.runtime)
    if runtime is not derived.declaration and constructor_parameters(runtime).keys() != \
            params.keys():
        out.append(f"{runtime.__name__}'s constructor is not its declaration's")
    return out


@pytest.mark.parametrize("entry", sorted({**_registered(), **_model_entries()}))
def test_every_entry_derives_its_fields_and_defaults_from_the_runtime_declaration(entry):
    spec = {**_registered(), **_model_entries()}[entry]
    if entry in NOT_DERIVED:
        assert not _is_derived(spec), f"{entry} is derived now: remove it from NOT_DERIVED"
        nested = [f for f in spec.model_fields.values()
                  if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)]
        assert all(_problems(f.annotation) == [] for f in nested
                   if f.annotation.__module__.startswith("simstudy") and
                   _is_derived(f.annotation)), entry
        return
    assert _problems(spec) == [], entry


def test_every_kind_is_checked():
    assert {("policy", k) for k in ("wachter", "growing_spheres", "oracle", "hare",
                                    "icarma")} <= set(_registered())
    assert {("world", "loan"), ("world", "causal_flow"), ("response", "logistic"),
            ("response", "rating")} <= set(_registered())


def test_the_check_finds_a_field_written_twice_and_a_drifted_default():
    @dataclasses.dataclass
    class Probe:
        steps: Annotated[int, Gt(0)] = 10
        lr: float = 0.1

    class Twice(derive_spec(Probe)):
        steps: int = 10  # the parameter again, by hand

    assert any("by hand" in p for p in _problems(Twice))

    class Drifted(StrictModel):
        steps: int = 20

    Drifted.declaration, Drifted.runtime, Drifted.parameters = Probe, Probe, ("steps",)
    Drifted.replaced, Drifted.optional, Drifted.defaults = (), False, None
    found = _problems(Drifted)
    assert any("default 20" in p for p in found) and any("constraints" in p for p in found)
    assert _problems(derive_spec(Probe)) == []


def test_derived_spec_follows_the_constructor():
    class Probe:
        def __init__(self, steps: Annotated[int, Gt(0)] = 10, tag: str = "a"):
            self.steps, self.tag = steps, tag

    spec = derive_spec(Probe, kind="probe")
    assert spec(steps=3).build().steps == 3 and spec().build().tag == "a"
    with pytest.raises(ValueError):
        spec(steps=0)  # the constraint on the constructor's annotation
    with pytest.raises(ValueError):
        spec(unknown=1)
    optional = derive_spec(Probe, optional=True, base=StrictModel)
    assert optional().arguments() == {} and optional(tag="b").build().tag == "b"


def test_a_nested_entry_keeps_the_default_instance_for_what_it_leaves_out():
    from simstudy.people.rating import RatingResponseSpec, published_model

    spec = RatingResponseSpec.model_validate({"kind": "rating", "act": {"intercept": 3.0}})
    built, published = spec.build(), published_model()
    assert built.act.intercept == 3.0
    assert dataclasses.replace(built.act, intercept=published.act.intercept) == published.act
    assert built.accept == published.accept


def test_the_runtime_refuses_what_the_document_refuses():
    from simstudy.people.noise import NoiseModel
    from simstudy.people.spec import NoiseSpec

    with pytest.raises(ValueError, match="p must be at most 1"):
        NoiseModel("bernoulli", p=1.5)
    with pytest.raises(ValueError):
        NoiseSpec(kind="bernoulli", p=1.5)

    @dataclasses.dataclass
    class Bounded:
        x: Annotated[float, Gt(0)] = 1.0

        def __post_init__(self):
            check_constraints(self)

    with pytest.raises(ValueError, match="x must be greater than 0"):
        Bounded(0.0)


def test_every_shipped_scenario_survives_pickling():
    # process pools and Ray ship the validated documents to workers
    import pickle
    from pathlib import Path

    from simstudy.run.scenario import load_scenario

    root = Path(__file__).resolve().parents[1] / "scenarios"
    for path in sorted(root.glob("*.yaml")):
        scenario, populations = load_scenario(path)
        again = pickle.loads(pickle.dumps((scenario, populations)))
        assert again[0] == scenario and again[1] == populations, path.name
