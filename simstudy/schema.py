"""Document schemas derived from the runtime declarations they configure.

A policy's (or world's, or model's) parameters, their types, constraints and defaults are
written once, in the runtime class's constructor (or in a frozen dataclass); the validated
document entry is derived from that signature, in the way scikit-learn reads an estimator's
parameters from ``__init__`` (``get_params``). Constraints ride on the annotations
(``Annotated[int, Gt(0)]``, from :mod:`annotated_types`, which pydantic understands), so the
runtime object and its document entry cannot drift apart.

Example:
    >>> from typing import Annotated
    >>> from annotated_types import Gt
    >>> class Greedy:
    ...     def __init__(self, steps: Annotated[int, Gt(0)] = 10, lr: float = 0.1):
    ...         self.steps, self.lr = steps, lr
    >>> GreedySpec = derive_spec(Greedy, kind="greedy")
    >>> GreedySpec(kind="greedy", steps=3).build().steps
    3
    >>> sorted(GreedySpec.model_fields)
    ['kind', 'lr', 'steps']
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from .documents import StrictModel

__all__ = ["constructor_parameters", "derive_spec"]


def constructor_parameters(runtime: type) -> dict[str, tuple[Any, Any]]:
    """``{name: (annotation, default)}`` of a class's constructor (``...``: required).

    Annotations keep their ``Annotated`` constraints; ``self``, ``*args`` and ``**kwargs`` are
    left out. A dataclass is read from its fields.
    """
    init = runtime.__init__
    hints = typing.get_type_hints(init, include_extras=True)
    out = {}
    for name, p in inspect.signature(init).parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[name] = (hints.get(name, Any), ... if p.default is p.empty else p.default)
    if dataclasses.is_dataclass(runtime):
        for f in dataclasses.fields(runtime):
            if f.default_factory is not dataclasses.MISSING:
                out[f.name] = (out[f.name][0], f.default_factory())
    return out


def derive_spec(runtime: type, *, kind: str | None = None, base: type[BaseModel] = StrictModel,
                exclude: Sequence[str] = (), replace: Mapping[str, tuple[Any, Any]] | None = None,
                optional: bool = False, name: str | None = None,
                doc: str | None = None) -> type[BaseModel]:
    """A document model whose fields are ``runtime``'s constructor parameters.

    Args:
        runtime: the class the document configures.
        kind: adds ``kind: Literal[kind]`` (the registries' discriminator).
        base: the model to extend (its own fields, such as a policy's ``name``, stay).
        exclude: constructor parameters that are not document fields (runtime-only switches).
        replace: ``{parameter: (annotation, default)}`` for parameters whose document form
            differs from the runtime one (a nested entry that builds the runtime object).
        optional: every derived field defaults to ``None`` ("keep the runtime's default").
        name: the model's name (default ``<runtime>Spec``).
        doc: the model's docstring.

    Returns:
        A pydantic model class with ``runtime``, ``parameters`` (the derived field names),
        ``replaced`` (those given by ``replace``), ``optional``,
        ``arguments()`` (the derived fields' values, ``None`` dropped when ``optional``) and a
        ``build()`` that calls ``runtime(**arguments())``; subclass it to add methods.
    """
    replace = dict(replace or {})
    replaced = tuple(replace)
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {}
    parameters: list[str] = []
    if kind is not None:
        annotations["kind"] = Literal[kind]
        namespace["kind"] = kind
    for param, (annotation, default) in constructor_parameters(runtime).items():
        if param in exclude:
            continue
        if param in replace:
            annotation, default = replace.pop(param)
        elif optional:
            annotation, default = annotation | None, None
        annotations[param] = annotation
        parameters.append(param)
        if default is not ...:
            namespace[param] = default
    if replace:
        raise TypeError(f"{runtime.__name__} has no parameter {sorted(replace)}")
    name = name or f"{runtime.__name__}Spec"
    doc = doc or (f"Document entry of :class:`{runtime.__name__}` (fields and defaults are its "
                  "constructor's).")
    namespace.update(_derived_members(runtime, tuple(parameters), replaced, optional))
    annotations.update({"runtime": ClassVar[type], "parameters": ClassVar[tuple[str, ...]],
                        "replaced": ClassVar[tuple[str, ...]], "optional": ClassVar[bool]})
    namespace.update({"__module__": runtime.__module__, "__qualname__": name, "__doc__": doc,
                      "__annotations__": annotations})
    return type(base)(name, (base,), namespace)


def _derived_members(runtime: type, parameters: tuple[str, ...], replaced: tuple[str, ...],
                     optional: bool) -> dict[str, Any]:
    # class attributes and methods shared by every derived entry

    def arguments(self) -> dict[str, Any]:
        values = {p: getattr(self, p) for p in self.parameters}
        return {p: v for p, v in values.items() if v is not None} if optional else values

    def build(self):
        return self.runtime(**self.arguments())

    return {"runtime": runtime, "parameters": parameters, "replaced": replaced,
            "optional": optional, "arguments": arguments, "build": build}
