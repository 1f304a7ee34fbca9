"""Loading and validating the declarative documents users edit (scenarios, populations, analyses).

Documents are YAML mappings validated by pydantic models that refuse unknown keys. Every problem
is reported as one :class:`DocumentProblem` naming the file, the dotted field path and the
reason, so the command line can print ``FILE: field.path: reason`` lines and exit 2 without a
traceback.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .file_kinds import kind_problem

__all__ = [
    "StrictModel",
    "DocumentProblem",
    "DocumentError",
    "load_yaml",
    "load_document",
    "validate_data",
    "UsageError",
    "Notice",
    "FieldProblem",
    "SAFE_NAME_PATTERN",
    "SafeName",
    "safe_name_problem",
    "with_overrides",
]

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base for document models: unknown keys are refused, values are not silently coerced.

    Strict: ``'1'`` is not an integer and ``true`` is not a number; infinities and NaN are
    refused wherever a number is expected.
    """

    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=True, strict=True,
                              allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _lists_as_tuples(cls, data: Any) -> Any:
        # YAML has lists, not tuples: a list is accepted wherever a field declares a tuple
        # (``scale: [1, 7]``); the items are still validated strictly.
        if not isinstance(data, dict):
            return data
        fields = _tuple_fields(cls)
        if not fields.intersection(data):
            return data
        return {k: tuple(v) if k in fields and isinstance(v, list) else v
                for k, v in data.items()}


def _holds_tuple(annotation: Any) -> bool:
    # ``tuple[...]`` itself or inside ``X | None`` / ``Annotated[...]``
    origin = typing.get_origin(annotation)
    if annotation is tuple or origin is tuple:
        return True
    if origin in (typing.Union, types.UnionType, Annotated):
        return any(_holds_tuple(a) for a in typing.get_args(annotation))
    return False


@functools.cache
def _tuple_fields(cls: type[BaseModel]) -> frozenset[str]:
    # the keys (names and aliases) of a model's tuple-typed fields
    names = set()
    for name, info in cls.model_fields.items():
        if _holds_tuple(info.annotation):
            names.update(n for n in (name, info.alias) if n)
    return frozenset(names)


# Names become file names under a run directory: letters, digits, ``_ . -``, not starting with a
# dot (no hidden files, no ``..``), and short enough for every file system.
SAFE_NAME_PATTERN = r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,63}$"
SafeName = Annotated[str, Field(min_length=1, max_length=64, pattern=SAFE_NAME_PATTERN)]


def safe_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a result file (``None`` when it can)."""
    if not isinstance(name, str) or not re.fullmatch(SAFE_NAME_PATTERN, name):
        return (f"{name!r} is not a safe name: use 1-64 letters, digits, '_', '.' or '-', "
                "not starting with '.'")
    return None


@dataclass(frozen=True)
class DocumentProblem:
    """One problem in one document: ``file: field: reason``."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field or '<document>'}: {self.reason}"


class DocumentError(Exception):
    """A document could not be read or did not validate; carries every problem found."""

    def __init__(self, problems: list[DocumentProblem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class FieldProblem(ValueError):
    """A value of a document that proves unusable only once work has begun (a data file's
    content, a trained model that approves everyone); the caller names the file."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason

    def in_file(self, source: str) -> DocumentError:
        return DocumentError([DocumentProblem(source, self.field, self.reason)])


class UsageError(Exception):
    """A user error that is not about a document's content (for example a clashing run dir)."""


class Notice(UserWarning):
    """Something the user should know that does not stop the work (a run older than a metric):
    the command line prints it as one line, ``simstudy COMMAND: message``."""


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A safe YAML loader that refuses duplicate mapping keys (plain PyYAML keeps the last).

    It parses with libyaml when PyYAML has it (several times faster than the pure-Python
    parser; ``validate`` reads every population file a scenario names), else in Python; values
    are resolved by PyYAML's safe rules either way.
    """


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep=False):
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def load_yaml(path: str | Path) -> Any:
    """Reads a YAML file, refusing duplicate keys; raises :class:`DocumentError` on failure."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = f"cannot read file ({exc.strerror})"
        raise DocumentError([DocumentProblem(str(path), "", reason)]) from None
    except UnicodeDecodeError:
        reason = "file is not UTF-8 text"
        if (problem := kind_problem(path, "yaml")) is not None:  # a database, a workbook
            reason = problem.split(": ", 1)[1]
        raise DocumentError([DocumentProblem(str(path), "", reason)]) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - safe loader subclass
        if not isinstance(data, dict) and (problem := kind_problem(path, "yaml")) is not None:
            # a CSV table reads as one string: say what it is rather than "not a mapping"
            raise DocumentError([DocumentProblem(str(path), "", problem.split(": ", 1)[1])])
        return data
    except yaml.MarkedYAMLError as exc:
        if (kind := kind_problem(path, "yaml")) is not None:  # a CSV table, not YAML at all
            raise DocumentError([DocumentProblem(str(path), "", kind.split(": ", 1)[1])]
                                ) from None
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        problem = exc.problem or str(exc)
        field = ""
        if "duplicate key" in problem:
            field = problem.split("'")[1] if "'" in problem else ""
        raise DocumentError([DocumentProblem(str(path), field, f"invalid YAML at {where}: "
                                                               f"{problem}")]) from None
    except yaml.YAMLError as exc:
        raise DocumentError([DocumentProblem(str(path), "", f"invalid YAML: {exc}")]) from None


# Tags of documents' tagged unions (a path or an inline document); not user fields.
_UNION_TAGS = {"inline", "file", "trained"}


def _field_path(loc: tuple[Any, ...], data: Any = None) -> str:
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and -len(node) <= item < len(node) \
                else None
            continue
        # pydantic adds the tag of a discriminated union member (the member's ``kind``, or a
        # function name); it is not a user field.
        is_kind_tag = (isinstance(node, dict) and item not in node
                       and node.get("kind") == item)
        # ... or the type of a plain union member (``literal[...]``, ``constrained-float``)
        # below a value that has no keys
        is_type_tag = node is not None and not isinstance(node, (dict, list))
        if parts and isinstance(item, str) and (item.startswith("function-")
                                                or item in _UNION_TAGS or is_kind_tag
                                                or is_type_tag):
            continue
        parts.append(("." if parts else "") + str(item))
        node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts)


def _merge_union_members(problems: list[DocumentProblem]) -> list[DocumentProblem]:
    # A value refused by every member of a union (``scale: -1`` is neither a name nor a
    # positive number) gives one error per member on the same field: one line, "... or ...".
    merged: dict[str, DocumentProblem] = {}
    for p in problems:
        first = merged.get(p.field)
        merged[p.field] = p if first is None else DocumentProblem(
            p.file, p.field, f"{first.reason}, or {p.reason[:1].lower()}{p.reason[1:]}")
    return list(merged.values())


def _reason(err: dict) -> str:
    # pydantic's message, in the document's words where pydantic's would be cryptic
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if (err["type"] == "string_pattern_mismatch"
            and err.get("ctx", {}).get("pattern") == SAFE_NAME_PATTERN):
        return safe_name_problem(err.get("input")) or err["msg"]
    if err["type"] == "value_error" and "error" in err.get("ctx", {}):
        return str(err["ctx"]["error"])  # the validator's own words, without "Value error, "
    return err["msg"]


def validate_data(data: Any, model: type[M], source: str) -> M:
    """Validates already-loaded data against ``model``; raises :class:`DocumentError`."""
    if data is None:
        raise DocumentError([DocumentProblem(source, "", "document is empty")])
    if not isinstance(data, dict):
        raise DocumentError([DocumentProblem(
            source, "", f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            problems.append(DocumentProblem(source, _field_path(err["loc"], data), _reason(err)))
        raise DocumentError(_merge_union_members(problems)) from None


def load_document(path: str | Path, model: type[M]) -> M:
    """Reads and validates a YAML document; raises :class:`DocumentError` listing problems."""
    return validate_data(load_yaml(path), model, str(path))


def with_overrides(spec: M, overrides: dict[str, tuple[str, Any]], source: str) -> M:
    """``spec`` with command-line values, validated by the same model as the document.

    Args:
        spec: a validated document.
        overrides: field name -> ``(flag, value)``; ``None`` values are not given.
        source: the document's file (or the command) named in problems.

    Raises:
        DocumentError: ``FILE: field (--flag): reason`` for every refused value.
    """
    values = {field: value for field, (_, value) in overrides.items() if value is not None}
    if not values:
        return spec
    try:
        return type(spec).model_validate({**spec.model_dump(), **values})
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = _field_path(err["loc"], values)
            head = str(err["loc"][0]) if err["loc"] else ""
            if head in overrides:
                field = f"{field} ({overrides[head][0]} {values.get(head)!r})"
            problems.append(DocumentProblem(source, field, _reason(err)))
        raise DocumentError(problems) from None
