"""A starter project written from the shipped documents: ``simstudy init DIR [--template NAME]``.

A project is a folder a researcher adapts: ``scenario.yaml`` (a simulation), ``study.yaml`` (a
study run with people, simulated first), ``analysis.yaml`` (the analysis of a study table),
``populations/`` (every shipped population, so another one is one edit away), the data files the
documents read (``data/``), and a ``README.md`` of the commands to try, which run as written
from the project folder.

The documents are copies of shipped ones (:mod:`simstudy.resources`), not separate templates:
``--template NAME`` picks the shipped scenario (default ``quickstart``) or live study (default
``personalization``) it starts from. Paths between documents are rewritten to the project's
layout (``../populations/hard_k2.yaml`` becomes ``populations/hard_k2.yaml``), and
``example:NAME`` in their comments names the project's own file.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from simstudy.resources.project import init_project
    >>> folder = Path(tempfile.mkdtemp()) / "demo"
    >>> written = init_project(folder)
    >>> sorted(p.name for p in written if p.parent == folder)
    ['README.md', 'analysis.yaml', 'scenario.yaml', 'study.yaml']
    >>> "populations/hard_k2.yaml" in (folder / "scenario.yaml").read_text()
    True
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from . import Example, UnknownExample, example_path, examples, resource_root

__all__ = ["DEFAULT_SCENARIO", "DEFAULT_STUDY", "DEFAULT_ANALYSIS", "PROJECT_FILES",
           "README", "TemplateError", "init_project", "template_documents"]

#: the shipped documents a project starts from, unless ``--template`` names another
DEFAULT_SCENARIO = "quickstart"
DEFAULT_STUDY = "personalization"
DEFAULT_ANALYSIS = "analysis/study_personalization"
#: the project's file for each role
PROJECT_FILES = {"scenario": "scenario.yaml", "study": "study.yaml", "analysis": "analysis.yaml"}

#: The project's README: the commands run as written from the project folder (``{...}`` are
#: filled in). The first ``bash`` block needs only ``simstudy``; the second the ``live`` extra.
README = """\
# {name}

A simstudy project started from the shipped `{scenario}` scenario and `{study}` study
(`simstudy init --template NAME` starts from another; `simstudy examples` lists them).

- `scenario.yaml`: {scenario_description}
- `study.yaml`: {study_description}
- `analysis.yaml`: {analysis_description}
- `populations/`: how individual actionability is assigned; a condition's `population:` names
  one of these files.

## Simulate, plan and preregister

```bash
simstudy validate scenario.yaml study.yaml analysis.yaml
simstudy run scenario.yaml --out runs/first
simstudy audit runs/first --out runs/first/audit.html
simstudy run study.yaml --out runs/study
simstudy power study.yaml --simulations 2 --out runs/power
simstudy preregister study.yaml --power runs/power --out prereg.md
```

`run` prints the summary (validity, plausibility, hap, cost per condition and policy) and writes
`runs/first/` (`manifest.json`, `recourse.parquet`, `summary.csv`, `data_dictionary.csv`).
`power --simulations 2` is a quick look; drop the flag for the study file's own number of
simulated studies per participant count, which the preregistration then reports.

## Run the study with people

With the `live` extra (`pip install "simstudy[live]"`):

```bash
simstudy serve study.yaml --db live.sqlite --prereg prereg.md --port 8000
simstudy bots study.yaml --url http://127.0.0.1:8000 --participants 6   # a dry run
simstudy export live.sqlite --out export/study.csv
simstudy analyze export/study.csv analysis.yaml --out export/analysis
```
"""


class TemplateError(ValueError):
    """A template name that is no shipped scenario or study, or a folder that is not empty."""


def template_documents(template: str | None = None) -> dict[str, Example]:
    """The shipped documents a project copies, by role (``scenario``, ``study``, ``analysis``).

    ``template`` (a shipped scenario or live study, as ``simstudy examples`` names it, with or
    without ``example:``) replaces the default of its role.
    """
    by_path = {e.path: e for e in examples()}
    chosen = {"scenario": DEFAULT_SCENARIO, "study": DEFAULT_STUDY, "analysis": DEFAULT_ANALYSIS}
    picked = {role: by_path[example_path(name)] for role, name in chosen.items()}
    if template is not None:
        try:
            found = by_path[example_path(template)]
        except UnknownExample as exc:
            raise TemplateError(str(exc)) from None
        if found.kind not in ("scenario", "study"):
            raise TemplateError(f"--template {template}: names the {found.kind} document "
                                f"{found.folder}/{found.name}; a project starts from a "
                                "scenario or a study")
        picked[found.kind] = found
    return picked


def _references(node: object, folder: Path) -> set[str]:
    # the relative paths a document gives to other shipped files (populations, data, scenarios)
    found: set[str] = set()
    if isinstance(node, dict):
        for value in node.values():
            found |= _references(value, folder)
    elif isinstance(node, list):
        for value in node:
            found |= _references(value, folder)
    elif (isinstance(node, str) and node.startswith("../") and "\n" not in node
          and (folder / node).is_file()):
        found.add(node)
    return found


def _copy_document(source: Example, target: Path, names: dict[str, str], root: Path) -> list[Path]:
    """Copies one shipped document to ``target`` with its paths in the project's layout; also
    copies the files it refers to. Returns the files written."""
    text = source.path.read_text(encoding="utf-8")
    written = []
    for reference in sorted(_references(yaml.safe_load(text), source.path.parent)):
        inside = (source.path.parent / reference).resolve().relative_to(resource_root().resolve())
        destination = target.parent / inside
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source.path.parent / reference, destination)
            written.append(destination)
        text = re.sub(rf"(?<![\w./]){re.escape(reference)}", inside.as_posix(), text)
    # commands in the comments name the project's files
    for address, project_file in names.items():
        text = re.sub(rf"{re.escape(address)}(?![\w/])", project_file, text)
    target.write_text(text, encoding="utf-8")
    return [target, *written]


def init_project(folder: str | Path, template: str | None = None) -> list[Path]:
    """Writes a starter project into ``folder`` (created; refused unless empty).

    Returns the files written. Raises :class:`TemplateError` for an unknown template or a
    folder that exists and is not empty.
    """
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise TemplateError(f"{folder}: exists and is not an empty folder; give a new one")
    documents = template_documents(template)
    names = {}
    for role, example in documents.items():
        for address in (f"example:{example.name}", f"example:{example.folder}/{example.name}"):
            names[address] = PROJECT_FILES[role]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for role, example in documents.items():
        written += _copy_document(example, folder / PROJECT_FILES[role], names, folder)
    populations = resource_root() / "populations"
    for path in sorted(populations.glob("*.yaml")):
        destination = folder / "populations" / path.name
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
            written.append(destination)
    readme = folder / "README.md"
    readme.write_text(README.format(
        name=folder.resolve().name, scenario=documents["scenario"].name,
        study=documents["study"].name,
        scenario_description=documents["scenario"].description,
        study_description=documents["study"].description,
        analysis_description=documents["analysis"].description), encoding="utf-8")
    return [*written, readme]
