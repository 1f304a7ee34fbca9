"""Registries that let each subsystem add document kinds without editing the scenario schema.

A policy spec is a :class:`~simstudy.policies.PolicySpec` (``name`` and ``personalized``)
with a ``kind: Literal[...]`` field and a ``build()`` method returning an unfitted
:class:`~simstudy.policies.RecoursePolicy`; callers use its ``policy()``. A world spec
likewise has ``kind`` and a ``build(seed, cache, base_dir)`` method returning
``(world, data, info)``; ``base_dir`` is the scenario file's folder, against which relative data
paths resolve; its class attribute ``labels`` says whether the world has a label rule (needed to
retrain the lender in the event world). A response spec has ``kind`` and a ``build()`` method
returning a :class:`~simstudy.people.response.ResponseModel`. Modules register their specs on
import with the decorators below; :mod:`simstudy.scenario` turns each registry into a pydantic
discriminated union on ``kind``.

Optional hooks of a world spec: ``feature_names()`` (the features a decision model read from a
file must take), ``check_data(base_dir)`` (``(field, reason)`` pairs for problems of the data it
reads, reported by ``simstudy validate``) and ``data_files(base_dir)`` (files whose hashes enter
a run's resume key). A policy spec sets ``needs_gradients = True`` when it follows the decision
model's gradient (refused for decision models without one).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

__all__ = ["POLICY_SPECS", "WORLD_SPECS", "RESPONSE_SPECS", "POLICY_MODULES",
           "register_policy_spec", "register_world_spec", "register_response_spec",
           "register_policy_module", "policy_kinds", "load_policy_kinds", "policy_spec"]

POLICY_SPECS: dict[str, type] = {}
#: ``{kind: module}`` of policy kinds registered by module, imported on first use
POLICY_MODULES: dict[str, str] = {}
WORLD_SPECS: dict[str, type] = {}
RESPONSE_SPECS: dict[str, type] = {}


def _kind_of(spec_cls: type) -> str:
    field = spec_cls.model_fields.get("kind")
    if field is None or not getattr(field.annotation, "__args__", None):
        raise TypeError(f"{spec_cls.__name__} needs a field `kind: Literal['...']`")
    return field.annotation.__args__[0]


def register_policy_spec(spec_cls: type) -> type:
    """Class decorator: makes a policy kind available to scenario documents."""
    POLICY_SPECS[_kind_of(spec_cls)] = spec_cls
    return spec_cls


def register_world_spec(spec_cls: type) -> type:
    """Class decorator: makes a world kind available to scenario documents."""
    WORLD_SPECS[_kind_of(spec_cls)] = spec_cls
    return spec_cls


def register_response_spec(spec_cls: type) -> type:
    """Class decorator: makes a response-model kind available to scenario documents."""
    RESPONSE_SPECS[_kind_of(spec_cls)] = spec_cls
    return spec_cls


def register_policy_module(kind: str, module: str) -> None:
    """Makes a policy kind known whose spec ``module`` registers when imported."""
    POLICY_MODULES[kind] = module


def policy_kinds() -> list[str]:
    """Every policy kind a document may name (registered or registered by module)."""
    return sorted(set(POLICY_SPECS) | set(POLICY_MODULES))


def load_policy_kinds(kinds: Iterable[str] | None = None) -> None:
    """Imports the modules of the given kinds registered by module (``None``: all of them)."""
    wanted = POLICY_MODULES if kinds is None else [k for k in kinds if k in POLICY_MODULES]
    for kind in list(wanted):
        if kind not in POLICY_SPECS:
            importlib.import_module(POLICY_MODULES[kind])


def policy_spec(kind: str) -> type:
    """The spec class of a policy kind, importing its module if it is registered by module."""
    load_policy_kinds([kind])
    return POLICY_SPECS[kind]
