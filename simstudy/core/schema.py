"""Document schemas derived from the runtime declarations they configure.

A policy's (or world's, or model's) parameters, their types, constraints and defaults are
written once, in a constructor signature or in a frozen dataclass; the validated document entry
is derived from it, in the way scikit-learn reads an estimator's parameters from ``__init__``
(``get_params``). Constraints ride on the annotations (``Annotated[int, Gt(0)]``, from
:mod:`annotated_types`, which pydantic understands), so the runtime object and its document
entry cannot drift apart.

The declaration may be the runtime class itself, or a small torch-free parameter dataclass that
the runtime class inherits its constructor from (``class Wachter(WachterParams, ...)``): the
document entry then lives in a module that does not import torch, and names the runtime class
by import path (``runtime="simstudy.policies.wachter:Wachter"``), imported only by ``build()``.

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
import hashlib
import inspect
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, BeforeValidator, Field

from .documents import StrictModel
from .registry import load_object

__all__ = ["constructor_parameters", "derive_spec", "resolve_runtime", "check_constraints"]


def constructor_parameters(runtime: type) -> dict[str, tuple[Any, Any]]:
    """``{name: (annotation, default)}`` of a class's constructor (``...``: required).

    Annotations keep their ``Annotated`` constraints; ``self``, ``*args`` and ``**kwargs`` are
    left out. A dataclass is read from its fields.
    """
    init = runtime.__init__
    hints = _type_hints(init)
    out = {}
    for name, p in inspect.signature(init).parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = hints.get(name, p.annotation if p.annotation is not p.empty else Any)
        out[name] = (annotation, ... if p.default is p.empty else p.default)
    if dataclasses.is_dataclass(runtime):
        for f in dataclasses.fields(runtime):
            if f.default_factory is not dataclasses.MISSING:
                out[f.name] = (out[f.name][0], f.default_factory())
    return out


def _type_hints(function: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except NameError:
        # a name only imported for type checking (a runtime type from a torch module): that
        # parameter keeps its annotation as text, and a document must replace it
        hints = {}
        for name, text in function.__annotations__.items():
            try:
                hints[name] = eval(text, function.__globals__) if isinstance(text, str) else text
            except NameError:
                hints[name] = text
        return hints


def derive_spec(declaration: type, *, runtime: type | str | None = None,
                kind: str | None = None, base: type[BaseModel] = StrictModel,
                exclude: Sequence[str] = (), replace: Mapping[str, tuple[Any, Any]] | None = None,
                optional: bool = False, defaults: Any = None, name: str | None = None,
                doc: str | None = None) -> type[BaseModel]:
    """A document model whose fields are ``declaration``'s constructor parameters.

    Args:
        declaration: the class whose constructor (or dataclass fields) declares the parameters.
        runtime: what ``build()`` calls with them: a class, or ``"module:Name"`` imported on
            first build (default: ``declaration`` itself).
        kind: adds ``kind: Literal[kind]`` (the registries' discriminator).
        base: the model to extend (its own fields, such as a policy's ``name``, stay).
        exclude: constructor parameters that are not document fields (runtime-only switches).
        replace: ``{parameter: (annotation, default)}`` for parameters whose document form
            differs from the runtime one (a nested entry that builds the runtime object).
        optional: every derived field defaults to ``None`` ("keep the runtime's default").
        defaults: an instance of ``declaration`` whose values are the defaults (a nested
            entry whose default is a particular instance, such as a calibrated model).
        name: the model's name (default ``<declaration>Spec``).
        doc: the model's docstring.

    A ``tuple[...]`` parameter also accepts a list (YAML has no tuples) and becomes a tuple. A
    parameter whose type is a dataclass becomes a nested entry derived from that dataclass, its
    defaults being the parameter's default instance (so a partial nested entry keeps the
    default's other values); ``build()`` builds it first.

    Returns:
        A pydantic model class with ``declaration``, ``runtime``, ``defaults``, ``parameters``
        (the derived field names), ``replaced`` (those given by ``replace``), ``optional``,
        ``arguments()`` (the derived fields' values, ``None`` dropped when ``optional``) and a
        ``build()`` that calls ``runtime(**arguments())``; subclass it to add methods.
    """
    replaced = tuple(replace or {})
    annotations, namespace, parameters = _derived_fields(declaration, exclude, replace or {},
                                                         optional, defaults)
    if kind is not None:
        annotations = {"kind": Literal[kind], **annotations}
        namespace["kind"] = kind
    name = name or f"{declaration.__name__}Spec"
    doc = doc or (f"Document entry of :class:`{declaration.__name__}` (fields and defaults are "
                  "its constructor's).")
    namespace.update(_derived_members(declaration, declaration if runtime is None else runtime,
                                      tuple(parameters), replaced, optional))
    namespace["defaults"] = defaults
    annotations.update({"declaration": ClassVar[type], "runtime": ClassVar[Any],
                        "defaults": ClassVar[Any],
                        "parameters": ClassVar[tuple[str, ...]],
                        "replaced": ClassVar[tuple[str, ...]], "optional": ClassVar[bool]})
    namespace.update({"__module__": declaration.__module__, "__qualname__": name,
                      "__doc__": doc, "__annotations__": annotations})
    return _made_once(type(base), name, base, namespace, repr((
        declaration.__qualname__, runtime, base.__module__, base.__qualname__, parameters,
        replaced, optional, doc, sorted((k, repr(v)) for k, v in annotations.items()),
        sorted((k, repr(v)) for k, v in namespace.items() if k in annotations))),
        sys.modules.get(declaration.__module__))


def _made_once(meta: type, name: str, base: type, namespace: dict, made_of: str,
               module: types.ModuleType | None) -> type:
    # pickle finds a class by module and qualified name, and a derived model may be bound to no
    # name (a nested entry) or derived twice with other defaults: each is bound in its
    # declaration's module under its name and a digest of everything it is made from, the same
    # in every process; deriving the same model again returns the one already made
    qualname = f"{name}_{hashlib.sha256(made_of.encode()).hexdigest()[:12]}"
    if module is not None and isinstance(getattr(module, qualname, None), type):
        return getattr(module, qualname)
    derived = meta(name, (base,), {**namespace, "__qualname__": qualname})
    if module is not None:
        setattr(module, qualname, derived)
    return derived


def _derived_fields(declaration: type, exclude: Sequence[str],
                    replace: Mapping[str, tuple[Any, Any]], optional: bool, defaults: Any
                    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    # the document fields (annotations and defaults) of a declaration's parameters
    replace = dict(replace)
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {}
    parameters: list[str] = []
    for param, (annotation, default) in constructor_parameters(declaration).items():
        if param in exclude:
            continue
        if defaults is not None:
            default = getattr(defaults, param)
        if param in replace:
            annotation, default = replace.pop(param)
        elif isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
            nested = derive_spec(annotation, defaults=default if isinstance(default, annotation)
                                 else None)
            annotation, default = nested, Field(default_factory=nested)
        else:
            if isinstance(annotation, str):
                raise TypeError(f"{declaration.__name__}.{param}: annotation {annotation!r} "
                                "cannot be resolved; replace the parameter")
            annotation = _document_annotation(annotation)
            if optional:
                annotation, default = annotation | None, None
        annotations[param] = annotation
        parameters.append(param)
        if default is not ...:
            namespace[param] = default
    if replace:
        raise TypeError(f"{declaration.__name__} has no parameter {sorted(replace)}")
    return annotations, namespace, parameters


_BOUNDS = ((Gt, "gt", "greater than", lambda v, b: v > b),
           (Ge, "ge", "at least", lambda v, b: v >= b),
           (Lt, "lt", "less than", lambda v, b: v < b),
           (Le, "le", "at most", lambda v, b: v <= b))


def check_constraints(instance: Any) -> None:
    """Raises ``ValueError`` where a dataclass field breaks a bound on its annotation.

    The bounds a document entry derived from the dataclass enforces (``Annotated[float,
    Ge(0)]``), enforced again when the runtime object is made directly (call it from
    ``__post_init__``), so the constraint is written once.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Noise:
        ...     p: Annotated[float, Ge(0.0), Le(0.5)] = 0.0
        ...     def __post_init__(self):
        ...         check_constraints(self)
        >>> Noise(0.75)
        Traceback (most recent call last):
        ...
        ValueError: p must be at most 0.5, got 0.75
    """
    hints = _type_hints(type(instance).__init__)
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if value is None or typing.get_origin(hints.get(f.name)) is not Annotated:
            continue
        for bound in typing.get_args(hints[f.name])[1:]:
            for kind, attribute, words, holds in _BOUNDS:
                if isinstance(bound, kind) and not holds(value, getattr(bound, attribute)):
                    raise ValueError(f"{f.name} must be {words} {getattr(bound, attribute)}, "
                                     f"got {value}")


def resolve_runtime(runtime: type | str) -> type:
    """The class named by ``"module:Name"`` (imported now), or ``runtime`` itself."""
    return load_object(runtime) if isinstance(runtime, str) else runtime


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _document_annotation(annotation: Any) -> Any:
    # YAML gives lists where a declaration keeps tuples (hashable, frozen)
    if _holds_tuple(annotation):
        return Annotated[annotation, BeforeValidator(_as_tuple)]
    return annotation


def _holds_tuple(annotation: Any) -> bool:
    if typing.get_origin(annotation) is Annotated:
        return _holds_tuple(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_holds_tuple(a) for a in typing.get_args(annotation))
    return typing.get_origin(annotation) is tuple


def _is_derived(value: Any) -> bool:
    # a nested entry derived by :func:`derive_spec`
    return isinstance(value, BaseModel) and hasattr(type(value), "declaration")


def _derived_members(declaration: type, runtime: type | str, parameters: tuple[str, ...],
                     replaced: tuple[str, ...], optional: bool) -> dict[str, Any]:
    # class attributes and methods shared by every derived entry

    def arguments(self) -> dict[str, Any]:
        values = {p: getattr(self, p) for p in self.parameters}
        values = {p: v.build() if p not in replaced and _is_derived(v) else v
                  for p, v in values.items()}
        return {p: v for p, v in values.items() if v is not None} if optional else values

    def build(self):
        return resolve_runtime(self.runtime)(**self.arguments())

    return {"declaration": declaration, "runtime": runtime, "parameters": parameters,
            "replaced": replaced,
            "optional": optional, "arguments": arguments, "build": build}
