"""``simstudy examples``, ``simstudy init`` and ``simstudy --version`` on the command line."""

from __future__ import annotations

import pytest

import simstudy
from simstudy.cli import main
from simstudy.resources import examples


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"simstudy {simstudy.__version__}"


def test_examples_lists_every_shipped_document_once(capsys):
    assert main(["examples"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line for line in lines if line.startswith("example:")]
    assert len(listed) == len(examples())
    quick = next(line for line in listed if line.startswith("example:quickstart "))
    assert quick.split()[1] == "scenario" and "Loan world" in quick
    # an ambiguous name is listed with its folder, and every address resolves
    assert any(line.startswith("example:analysis/study_personalization ") for line in listed)
    assert lines[-1].startswith("data files") and "german_credit.csv" in lines[-1]
    assert main(["examples", "--kind", "study"]) == 0
    studies = [line.split()[:2] for line in capsys.readouterr().out.splitlines()]
    assert ["example:personalization", "study"] in studies
    assert {kind for _, kind in studies} == {"study"}


def test_init_writes_a_project_and_refuses_a_busy_folder(tmp_path, capsys):
    assert main(["init", str(tmp_path / "demo")]) == 0
    assert "README.md" in capsys.readouterr().out
    assert main(["init", str(tmp_path / "demo")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"simstudy init: {tmp_path / 'demo'}: exists and is not an empty")
    assert main(["init", str(tmp_path / "other"), "--template", "hard_k2"]) == 2
    assert "names the population document" in capsys.readouterr().err
