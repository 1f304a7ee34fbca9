"""Document entries derive their fields and defaults from the runtime declarations."""

from __future__ import annotations

from typing import Annotated

import pytest
from annotated_types import Gt

from simstudy.documents import StrictModel
from simstudy.registry import POLICY_SPECS, RESPONSE_SPECS
from simstudy.schema import constructor_parameters, derive_spec, resolve_runtime

#: Fields every policy entry has whatever the policy (not constructor parameters).
_POLICY_ENTRY_FIELDS = {"kind", "name", "personalized"}


def _derived_specs():
    import simstudy.people  # noqa: F401 - registers the response kinds
    import simstudy.policies  # noqa: F401 - registers the policy kinds

    return {**{("policy", k): s for k, s in POLICY_SPECS.items() if hasattr(s, "runtime")},
            **{("response", k): s for k, s in RESPONSE_SPECS.items() if hasattr(s, "runtime")}}


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


@pytest.mark.parametrize("kind", [("policy", "wachter"), ("policy", "growing_spheres"),
                                  ("policy", "oracle"), ("policy", "hare"),
                                  ("response", "logistic")])
def test_entries_are_derived(kind):
    assert kind in _derived_specs()


def test_every_derived_entry_matches_its_runtime_signature():
    for kind, spec in _derived_specs().items():
        params = constructor_parameters(spec.declaration)
        assert constructor_parameters(resolve_runtime(spec.runtime)).keys() == params.keys(), kind
        own = set(spec.model_fields) - _POLICY_ENTRY_FIELDS
        assert own == set(spec.parameters) <= set(params), kind
        for name in set(spec.parameters) - set(spec.replaced):
            default = spec.model_fields[name].get_default(call_default_factory=True)
            expect = None if spec.optional else params[name][1]
            assert default == expect or (default is None and expect is ...), (kind, name)
