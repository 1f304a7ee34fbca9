"""Registries that let each subsystem add document kinds without editing the scenario schema.

A policy spec is a :class:`~simstudy.policies.PolicySpec` (``name`` and ``personalized``)
with a ``kind: Literal[...]`` field and a ``build()`` method returning an unfitted
:class:`~simstudy.policies.RecoursePolicy`; callers use its ``policy()``. A world spec
likewise has ``kind`` and a ``build(seed, cache, base_dir)`` method returning
``(world, data, info)``; ``base_dir`` is the scenario file's folder, against which relative data
paths resolve; its class attribute ``labels`` says whether the world has a label rule (needed to
retrain the lender in the event world). A response spec has ``kind`` and a ``build()`` method
returning a :class:`~simstudy.people.response.ResponseModel`. Modules register their specs on
import with the decorators below; :mod:`simstudy.run.scenario` turns each registry into a pydantic
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
from typing import Any

__all__ = ["POLICY_SPECS", "WORLD_SPECS", "RESPONSE_SPECS", "POLICY_MODULES", "REGISTRIES",
           "register", "register_policy_spec", "register_world_spec", "register_response_spec",
           "register_policy_module", "policy_kinds", "load_policy_kinds", "policy_spec",
           "load_object"]

POLICY_SPECS: dict[str, type] = {}
#: ``{kind: module}`` of policy kinds registered by module, imported on first use
POLICY_MODULES: dict[str, str] = {}
WORLD_SPECS: dict[str, type] = {}
RESPONSE_SPECS: dict[str, type] = {}


def _kind_of(spec_cls: type) -> str:
    field = spec_cls.model_fields.get("kind")
    if field is not None and getattr(field.annotation, "__args__", None):
        return field.annotation.__args__[0]
    # an annotation pydantic has not resolved yet (postponed annotations in a local scope):
    # the literal's own default names the kind
    if field is not None and isinstance(field.default, str):
        return field.default
    raise TypeError(f"{spec_cls.__name__} needs a field `kind: Literal['...']`")


#: the registry of each family of kinds a document may name
REGISTRIES: dict[str, dict[str, type]] = {
    "policy": POLICY_SPECS, "world": WORLD_SPECS, "response": RESPONSE_SPECS}


def register(family: str, spec_cls: type) -> type:
    """Makes a kind of ``family`` (``policy``, ``world`` or ``response``) available to
    scenario documents under the name its ``kind`` field gives; returns the entry class.

    Example:
        >>> from typing import Literal
        >>> from simstudy.policies.specs import PolicySpec
        >>> class QuickSpheresSpec(PolicySpec):
        ...     kind: Literal["quick_spheres"] = "quick_spheres"
        ...     def build(self):
        ...         from simstudy.policies import GrowingSpheres
        ...         return GrowingSpheres(n_samples=20)
        >>> register("policy", QuickSpheresSpec) is QuickSpheresSpec
        True
        >>> spec = policy_spec("quick_spheres").model_validate({"kind": "quick_spheres"})
        >>> type(spec.policy()).__name__, spec.policy().n_samples
        ('GrowingSpheres', 20)
        >>> del POLICY_SPECS["quick_spheres"]  # leave the registry as it was
        >>> register("family", QuickSpheresSpec)
        Traceback (most recent call last):
        ...
        ValueError: no family of kinds named 'family'; choose from ['policy', 'world', 'response']
    """
    if family not in REGISTRIES:
        raise ValueError(f"no family of kinds named {family!r}; choose from {list(REGISTRIES)}")
    REGISTRIES[family][_kind_of(spec_cls)] = spec_cls
    return spec_cls


def register_policy_spec(spec_cls: type) -> type:
    """Class decorator: :func:`register` as a ``policy``."""
    return register("policy", spec_cls)


def register_world_spec(spec_cls: type) -> type:
    """Class decorator: :func:`register` as a ``world``."""
    return register("world", spec_cls)


def register_response_spec(spec_cls: type) -> type:
    """Class decorator: :func:`register` as a ``response`` model."""
    return register("response", spec_cls)


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


def load_object(path: str) -> Any:
    """The object named ``"package.module:name"``, its module imported now.

    A document entry names the runtime it builds this way, so the torch-free entry never
    imports the torch module it configures (and no import arrow runs from entry to runtime).

    Example:
        >>> load_object("json:dumps")([1, 2])
        '[1, 2]'
    """
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
