"""``simstudy init``'s starter project: copies of shipped documents that validate where they
land, with the paths between them rewritten to the project's layout."""

from __future__ import annotations

import re

import pytest
import yaml

from simstudy.cli import main
from simstudy.resources import example_path
from simstudy.resources.project import (
    PROJECT_FILES,
    TemplateError,
    init_project,
    template_documents,
)


def _bash_commands(readme: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip()]


def test_the_default_project_validates_where_it_lands(tmp_path, monkeypatch, capsys):
    written = init_project(tmp_path / "demo")
    project = tmp_path / "demo"
    assert {p.name for p in written} >= {*PROJECT_FILES.values(), "README.md", "hard_k2.yaml"}
    assert all(p.is_file() and p.is_relative_to(project) for p in written)
    monkeypatch.chdir(project)
    assert main(["validate", *PROJECT_FILES.values(), *sorted(
        str(p.relative_to(project)) for p in (project / "populations").glob("*.yaml"))]) == 0
    capsys.readouterr()
    # the copies read the project's populations, not the package's
    scenario = yaml.safe_load((project / "scenario.yaml").read_text())
    assert [c["population"] for c in scenario["conditions"]] == ["populations/hard_k4.yaml",
                                                                 "populations/hard_k2.yaml"]
    # comments name the project's files
    study = (project / "study.yaml").read_text()
    assert "simstudy run study.yaml" in study and "example:" not in study


def test_the_readme_commands_name_the_project_files(tmp_path):
    init_project(tmp_path / "demo")
    commands = _bash_commands((tmp_path / "demo" / "README.md").read_text())
    assert commands[0] == "simstudy validate scenario.yaml study.yaml analysis.yaml"
    verbs = [c.split()[1] for c in commands]
    assert {"run", "power", "preregister", "serve", "bots", "export", "analyze"} <= set(verbs)
    for command in commands:
        for word in command.split():
            if word.endswith(".yaml") and word != "response.yaml":
                assert (tmp_path / "demo" / word).is_file(), command


def test_a_template_replaces_the_document_of_its_kind(tmp_path, monkeypatch, capsys):
    init_project(tmp_path / "german", template="example:german_icarma")
    project = tmp_path / "german"
    scenario = (project / "scenario.yaml").read_text()
    assert scenario.startswith(example_path("german_icarma").read_text()[:40])
    assert "path: data/german_credit.csv" in scenario
    assert (project / "data" / "german_credit.csv").read_bytes() == \
        example_path("german_icarma").parent.joinpath("../data/german_credit.csv").read_bytes()
    monkeypatch.chdir(project)
    assert main(["validate", "scenario.yaml"]) == 0
    assert template_documents("personalization")["study"].name == "personalization"


@pytest.mark.parametrize("template,reason", [
    ("power_plan", "names the analysis document analysis/power_plan"),
    ("example:nope", "no shipped document"),
])
def test_a_template_that_is_no_scenario_or_study_is_refused(tmp_path, template, reason):
    with pytest.raises(TemplateError, match=reason):
        init_project(tmp_path / "x", template=template)
    assert not (tmp_path / "x").exists()


def test_a_folder_that_is_not_empty_is_refused(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(TemplateError, match="not an empty folder"):
        init_project(tmp_path / "busy")
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]
    init_project(tmp_path / "empty")  # an empty one is fine
    assert (tmp_path / "empty" / "README.md").is_file()
