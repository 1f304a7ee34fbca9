"""The documentation: a README a newcomer reads, and a reference that cannot fall behind the code.

The generated reference is compared with the command parsers and the document models read
another way (argparse's actions, pydantic's JSON schema), so a command, option or field the
generator skipped fails here.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference",
                                                  ROOT / "docs" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages():
    return _generator().reference_pages()


def test_readme_is_a_guide_not_a_notebook():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the reference belongs in docs/"


def test_every_command_and_option_is_in_the_cli_reference(pages):
    from simstudy.cli.main import build_parser

    text = pages["reference/cli.md"]
    sections = dict(re.findall(r"(?ms)^## `simstudy (\S+)`\n(.*?)(?=^## |\Z)", text))
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sections) == set(sub.choices)
    for name, command in sub.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings or [action.dest]:
                assert flag in sections[name], f"simstudy {name}: {flag} is not documented"


def _schema_properties(schema: dict) -> set[str]:
    names: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                names.add(key)
                walk(value)
            for key, value in node.items():
                if key != "properties":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    return names


def test_every_document_field_is_in_the_documents_reference(pages):
    text = pages["reference/documents.md"]
    documented = set(re.findall(r"\| `(?:[^`|]*\.)?([A-Za-z_][A-Za-z0-9_]*)` \|", text))
    for kind, model in _generator().document_models().items():
        missing = _schema_properties(model.model_json_schema()) - documented
        assert not missing, f"{kind}: fields missing from the reference: {sorted(missing)}"


def test_the_site_lists_every_page_it_has():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def files(nav):
        for entry in nav:
            value = next(iter(entry.values()))
            yield from (files(value) if isinstance(value, list) else [value])

    listed = set(files(config["nav"]))
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    generated = set(_generator().reference_pages()) | {
        f"results/{p.name}" for p in (ROOT / "benchmarks").glob("*_RESULTS.md")}
    assert (written | generated) - listed == set(), "pages outside the navigation"
    assert listed - written - generated == set(), "navigation entries without a page"
