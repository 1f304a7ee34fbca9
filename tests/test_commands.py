"""validate: a document's kind comes from --as, then its folder, then its distinctive key."""

from __future__ import annotations

from simstudy.cli import main
from simstudy.cli.run_commands import document_kind

SCENARIO_WITH_TYPO = """name: typo
seed: 0
replications: 1
world: {kind: loan, n_samples: 1000}
polices:
  - {kind: oracle}
conditions:
  - {name: all, population: {actionability: {kind: all}}}
"""


def test_a_scenario_with_a_misspelt_key_is_still_read_as_a_scenario(tmp_path, capsys):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    path = folder / "typo.yaml"
    path.write_text(SCENARIO_WITH_TYPO)
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert any("polices: unknown key" in line for line in lines), lines
    assert any(": policies:" in line for line in lines), lines
    assert not any("actionability" in line.split(": ")[1] for line in lines[:1]), lines

    other = tmp_path / "elsewhere.yaml"
    other.write_text(SCENARIO_WITH_TYPO)
    assert main(["validate", "--as", "scenario", str(other)]) == 2
    assert "polices: unknown key" in capsys.readouterr().err


def test_kinds_by_folder_and_by_key(tmp_path):
    assert document_kind(tmp_path / "populations" / "p.yaml", {"policies": []}) == "population"
    assert document_kind(tmp_path / "x.yaml", {"policies": []}) == "scenario"
    assert document_kind(tmp_path / "x.yaml", {"participants": [10, 20]}) == "power"
    assert document_kind(tmp_path / "x.yaml", {"participants": 10}) == "study"
    assert document_kind(tmp_path / "x.yaml", {}, declared="audit") == "audit"
