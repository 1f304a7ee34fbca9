"""The table of kinds: every name a document may give as ``kind``, with what it configures.

A kind is data: a row ``family -> name -> (parameters model, runtime)``. The parameters model is
one torch-free pydantic class (a :class:`~simstudy.core.documents.StrictModel` with a field
``kind: Literal[name]``); it is the document entry, validated with the document. The runtime is
what the entry configures, named ``"package.module:Name"`` and imported only when an entry is
built; it *takes* the validated entry as its first argument (composition): a policy class
``Wachter(params)``, a world builder ``build(params, seed, cache, base_dir)``, a response model
``Logistic(params)``. Documents are validated against the table as it is when they are read, so
a kind registered by user code validates and runs like a built-in one.

Families: ``policy`` (recourse generators), ``world`` (causal worlds and their data),
``response`` (how people accept and act), ``family`` (GAMM likelihoods) and ``executor`` (where
a run's work units are computed).

Optional members of a world's parameters model: ``labels`` (class attribute: the world has a
label rule, so the event world may retrain), ``feature_names()`` (the features a decision model
read from a file must take), ``check_data(base_dir)`` (``(field, reason)`` pairs for problems of
the data it reads, reported by ``simstudy validate``) and ``data_files(base_dir)`` (files whose
hashes enter a run's resume key). A policy's sets ``needs_gradients = True`` when it follows the
decision model's gradient (refused for decision models without one). Any model may give
``check_example()``, the small entry the contract checks (:mod:`simstudy.checks`) build.

Example:
    >>> import simstudy.policies  # registers the built-in policies
    >>> kinds("policy")
    ['growing_spheres', 'hare', 'icarma', 'oracle', 'wachter']
    >>> entry_model("policy", "oracle")(n_values=9).n_values
    9
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Kind", "FAMILIES", "KINDS", "register", "unregister", "kinds", "entry_model",
           "entries", "runtime_of", "build", "load_object"]

#: the families of kinds, in the order they are listed to users
FAMILIES: tuple[str, ...] = ("policy", "world", "response", "family", "executor")


@dataclass(frozen=True)
class Kind:
    """One row of the table: a kind's name, its parameters model and its runtime.

    Attributes:
        family: one of :data:`FAMILIES`.
        name: the ``kind`` a document gives.
        params: the parameters model (the document entry; torch-free for built-in kinds).
        runtime: ``"module:Name"`` (imported on first build) or the callable itself; called as
            ``runtime(params, *args)``.
    """

    family: str
    name: str
    params: type
    runtime: str | Callable[..., Any]


#: ``{family: {name: Kind}}``: every kind a document may name
KINDS: dict[str, dict[str, Kind]] = {family: {} for family in FAMILIES}


def _family(family: str) -> dict[str, Kind]:
    if family not in KINDS:
        raise ValueError(f"no family of kinds named {family!r}; choose from {list(FAMILIES)}")
    return KINDS[family]


def _kinds_of(params: type) -> tuple[str, ...]:
    # every name of the ``kind`` literal: one model may serve several kinds of one runtime
    field = getattr(params, "model_fields", {}).get("kind")
    if field is not None and getattr(field.annotation, "__args__", None):
        return tuple(field.annotation.__args__)
    # an annotation pydantic has not resolved yet (postponed annotations in a local scope):
    # the literal's own default names the kind
    if field is not None and isinstance(field.default, str):
        return (field.default,)
    raise TypeError(f"{params.__name__} needs a field `kind: Literal['...']`")


def register(family: str, params: type, runtime: str | Callable[..., Any]) -> type:
    """Adds a kind to ``family`` under the name its ``kind`` field gives (under each name,
    when the literal gives several); returns ``params``.

    Args:
        family: one of :data:`FAMILIES`.
        params: the parameters model (a pydantic model with ``kind: Literal[name]``).
        runtime: what an entry builds, ``"module:Name"`` or the callable, called with the
            validated entry first.

    Example:
        >>> from typing import Literal
        >>> from simstudy.core.documents import StrictModel
        >>> class ShoutParams(StrictModel):
        ...     kind: Literal["shout"] = "shout"
        ...     word: str = "hey"
        >>> _ = register("response", ShoutParams, lambda params: params.word.upper())
        >>> build("response", entry_model("response", "shout")(word="recourse"))
        'RECOURSE'
        >>> unregister("response", "shout")
    """
    for name in _kinds_of(params):
        _family(family)[name] = Kind(family, name, params, runtime)
    return params


def unregister(family: str, name: str) -> None:
    """Removes a kind (a test's own kinds, once the test is done)."""
    del _family(family)[name]


def kinds(family: str) -> list[str]:
    """The names of ``family``'s kinds, sorted."""
    return sorted(_family(family))


def entries(family: str) -> dict[str, type]:
    """``{name: parameters model}`` of ``family``'s kinds."""
    return {name: kind.params for name, kind in _family(family).items()}


def entry_model(family: str, name: str) -> type:
    """The parameters model of one kind (``KeyError`` naming the choices when unknown)."""
    table = _family(family)
    if name not in table:
        raise KeyError(f"unknown {family} kind {name!r}; choose from {sorted(table)}")
    return table[name].params


def runtime_of(family: str, name: str) -> Callable[..., Any]:
    """The runtime of one kind, its module imported now."""
    runtime = _family(family)[name].runtime
    return load_object(runtime) if isinstance(runtime, str) else runtime


def build(family: str, params: Any, *args: Any, **kwargs: Any) -> Any:
    """``runtime(params, *args, **kwargs)``: the runtime of the entry's kind, configured by it."""
    return runtime_of(family, params.kind)(params, *args, **kwargs)


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
