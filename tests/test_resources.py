"""The shipped documents and data: found inside the package, addressed as ``example:NAME``."""

from __future__ import annotations

from pathlib import Path

import pytest

import simstudy
from simstudy.cli import main
from simstudy.resources import (
    FOLDERS,
    UnknownExample,
    example_path,
    examples,
    is_shipped,
    resource_path,
    resource_root,
)


def test_the_resources_live_inside_the_package():
    root = resource_root()
    assert root.is_relative_to(Path(simstudy.__file__).parent)
    for folder in (*FOLDERS, "data"):
        assert (root / folder).is_dir(), folder
    assert resource_path("data", "german_credit.csv").stat().st_size > 10_000


def test_every_shipped_document_is_listed_once_with_a_description():
    shipped = examples()
    on_disk = sorted(p for folder in FOLDERS for p in (resource_root() / folder).glob("*.yaml"))
    assert sorted(e.path for e in shipped) == on_disk
    assert all(e.description and "\n" not in e.description for e in shipped)
    assert {e.kind for e in shipped} == set(FOLDERS.values())


def test_example_names_resolve_and_ambiguous_ones_are_refused():
    assert example_path("example:quickstart") == resource_path("scenarios", "quickstart.yaml")
    assert example_path("example:personalization").parent.name == "studies"
    assert example_path("example:analysis/study_personalization").parent.name == "analysis"
    with pytest.raises(UnknownExample, match="say which"):
        example_path("example:study_personalization")
    with pytest.raises(UnknownExample, match="no shipped document"):
        example_path("example:nothing_of_that_name")


def test_is_shipped_tells_the_package_from_elsewhere(tmp_path):
    assert is_shipped(example_path("example:quickstart"))
    assert not is_shipped(tmp_path / "quickstart.yaml")


def test_commands_read_example_names(capsys):
    assert main(["validate", "example:quickstart", "example:hard_k2",
                 "example:analysis/study_personalization"]) == 0
    assert "3 document(s) valid" in capsys.readouterr().out


def test_an_unknown_example_is_one_line_and_exit_2(capsys):
    assert main(["validate", "example:nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("simstudy validate: example:nope: no shipped document")


def test_a_shipped_audit_reads_its_run_from_the_working_directory(tmp_path, monkeypatch, capsys):
    # the shipped audit names runs/fairness: the working directory's, not the package's
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "example:audit_case_study"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "runs" / "fairness") in err and str(resource_root()) not in err


def test_the_wheel_is_told_to_carry_every_shipped_file():
    # pyproject's package data must name every file under simstudy/resources (a new folder or
    # kind of file would otherwise be left out of the wheel; .ci/wheel_check.sh installs it)
    import tomllib

    config = tomllib.loads((Path(simstudy.__file__).parents[1] / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["simstudy.resources"]
    root = resource_root()
    shipped = [p.relative_to(root) for p in root.rglob("*") if p.is_file()
               and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert shipped
    left_out = [str(p) for p in shipped if not any(p.match(g) for g in patterns)]
    assert left_out == []
