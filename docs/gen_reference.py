"""The generated reference: every command from its parser, every document field from its model.

The documentation site renders these pages at build time (``docs/hooks.py``), and
``tests/test_docs.py`` checks that every command, option and field the code declares appears in
them, so the reference cannot fall behind the code.

Field descriptions come from the ``Attributes:`` section of each model's docstring, the one
place the project documents a document field; a field without one is listed with its type and
default only.

Example:
    >>> pages = reference_pages()
    >>> sorted(pages)
    ['reference/cli.md', 'reference/documents.md']
"""

from __future__ import annotations

import argparse
import inspect
import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["reference_pages", "cli_page", "documents_page", "document_models",
           "command_parsers", "model_fields"]


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every ``simstudy`` subcommand's parser, by command name."""
    from simstudy.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _command_help(name: str) -> str:
    from simstudy.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next((a.help or "" for a in sub._choices_actions if a.dest == name), "")


def cli_page() -> str:
    """``reference/cli.md``: each command's usage and its arguments, from the parsers."""
    lines = ["# Command line", "",
             "Generated from the command parsers (`simstudy COMMAND --help` prints the same).",
             "Every command exits 0 on success, 2 on bad input (one line naming the file, field "
             "or argument and the reason), 130 on Ctrl-C and 143 on SIGTERM.", ""]
    for name, parser in command_parsers().items():
        lines += [f"## `simstudy {name}`", "", _command_help(name).rstrip(".") + ".", "",
                  "```text", parser.format_usage().strip(), "```", "",
                  "| argument | meaning | default |", "|---|---|---|"]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = ", ".join(action.option_strings) or action.dest
            meaning = (action.help or "").replace("|", "\\|").replace("\n", " ")
            if action.help == argparse.SUPPRESS:
                meaning = ""
            if action.choices:
                meaning += f" (one of: {', '.join(map(str, action.choices))})"
            default = action.default
            shown = "" if default in (None, argparse.SUPPRESS, False) else f"`{default}`"
            lines.append(f"| `{flag}` | {meaning} | {shown} |")
        lines.append("")
    return "\n".join(lines)


def document_models() -> dict[str, type[BaseModel]]:
    """The top-level model of every document kind ``simstudy validate`` reads."""
    from simstudy.analysis.analysis_spec import AuditSpec, PowerPlan, StudySpec
    from simstudy.people.population_spec import PopulationSpec
    from simstudy.run.scenario import scenario_model
    from simstudy.run.sweep import SweepSpec
    from simstudy.study.hypotheses import StudyAnalysisSpec

    return {"scenario": scenario_model(), "population": PopulationSpec, "sweep": SweepSpec,
            "analysis": StudyAnalysisSpec, "power plan": PowerPlan, "study": StudySpec,
            "audit": AuditSpec}


_ATTRIBUTE = re.compile(r"^(\s+)(\w+)(?: \([^)]*\))?: (.*)$")


def _attribute_docs(model: type) -> dict[str, str]:
    """``field -> description`` from the ``Attributes:`` sections of a model and its bases."""
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        doc = inspect.getdoc(cls) if cls.__doc__ else None
        if not doc or "Attributes:" not in doc:
            continue
        section = doc.split("Attributes:", 1)[1].splitlines()
        name, indent = None, None
        for line in section:
            if not line.strip():
                continue
            match = _ATTRIBUTE.match(line)
            if match and (indent is None or len(match.group(1)) == indent):
                indent = len(match.group(1))
                name = match.group(2)
                out[name] = match.group(3).strip()
            elif name is not None and (indent is not None and
                                       len(line) - len(line.lstrip()) > indent):
                out[name] += " " + line.strip()
            else:
                break
    return out


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (union members, list items, dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out += _models_in(arg)
    return out


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return str(annotation).replace("typing.", "")


def _kind_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None or typing.get_origin(field.annotation) is not typing.Literal:
        return None
    return typing.get_args(field.annotation)[0]


def model_fields(model: type[BaseModel], prefix: str = "",
                 seen: frozenset[type] = frozenset()) -> list[tuple[str, str, str, str]]:
    """``(field path, type, default, description)`` of a model and every model inside it.

    A union of kinds lists each kind's fields under ``path[kind=NAME]``.
    """
    docs = _attribute_docs(model)
    rows = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        if field.default is not PydanticUndefined:
            default = "" if field.default is None else f"`{field.default!r}`"
        elif field.default_factory is not None:
            default = "(built)"
        else:
            default = "required"
        doc = docs.get(name) or (field.description or "")
        rows.append((path, _type_name(field.annotation), default, doc))
        inner = _models_in(field.annotation)
        many = len(inner) > 1
        for sub in inner:
            if sub in seen:
                continue
            kind = _kind_of(sub) if many else None
            sub_prefix = f"{path}[kind={kind}]." if kind else f"{path}."
            rows += model_fields(sub, sub_prefix, seen | {model})
    return rows


def documents_page() -> str:
    """``reference/documents.md``: every document kind's fields, from the pydantic models."""
    lines = ["# Document fields", "",
             "Generated from the document models: every field a document may state, its type, "
             "default and meaning. `path[kind=NAME].field` is a field of the entry whose "
             "`kind` is `NAME`. `simstudy validate FILE` checks a document against these "
             "models (one line per problem: `FILE: field: reason`).", ""]
    for kind, model in document_models().items():
        lines += [f"## {kind}", "", f"Model: `{model.__module__}.{model.__qualname__}`.", "",
                  "| field | type | default | meaning |", "|---|---|---|---|"]
        for path, type_name, default, doc in model_fields(model):
            doc = doc.replace("|", "\\|")
            lines.append(f"| `{path}` | {type_name} | {default} | {doc} |")
        lines.append("")
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """``site path -> markdown`` of every generated page."""
    return {"reference/cli.md": cli_page(), "reference/documents.md": documents_page()}
