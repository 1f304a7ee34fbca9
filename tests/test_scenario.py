from pathlib import Path

import pytest

from simstudy.cli import main
from simstudy.documents import DocumentError
from simstudy.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
name: tiny
seed: 1
replications: 1
world: {kind: loan, n_samples: 400}
decision_model: {epochs: 5}
policies:
  - {kind: oracle, n_values: 4}
conditions:
  - name: two
    population: {actionability: {kind: ranking, n_actionable: 2}}
"""


def _write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_shipped_documents_are_valid(capsys):
    files = sorted(str(p) for p in (ROOT / "scenarios").glob("*.yaml"))
    files += sorted(str(p) for p in (ROOT / "populations").glob("*.yaml"))
    files += sorted(str(p) for p in (ROOT / "analysis").glob("*.yaml"))
    assert files
    assert main(["validate", *files]) == 0, capsys.readouterr().err


def test_population_files_resolve_relative_to_the_scenario(tmp_path):
    (tmp_path / "pops").mkdir()
    _write(tmp_path / "pops", "actionability: {kind: likert, levels: 5}\n", "p.yaml")
    s = _write(tmp_path, GOOD.replace(
        "population: {actionability: {kind: ranking, n_actionable: 2}}",
        "population: pops/p.yaml"))
    _, pops = load_scenario(s)
    assert pops["two"].actionability.levels == 5


@pytest.mark.parametrize("edit,field,reason", [
    (("seed: 1", "sede: 1"), "sede", "unknown key"),
    (("replications: 1", "replications: many"), "replications", "valid integer"),
    (("n_samples: 400", "n_samples: -5"), "world.n_samples", "greater than or equal"),
    (("kind: oracle", "kind: magic"), "policies[0].kind", "unknown policy 'magic'"),
    (("n_actionable: 2", "n_actionable: 2, colour: red"),
     "conditions[0].population.actionability.colour", "unknown key"),
    (("name: tiny", "name: tiny\nname: again"), "name", "duplicate key"),
    (("conditions:", "contrasts: [{policy: oracle, baseline: orakel}]\nconditions:"),
     "contrasts[0].baseline", "unknown policy name 'orakel'"),
    (("world: {kind: loan, n_samples: 400}", "world: {kind: loan, n_samples: [400"), "",
     "invalid YAML"),
])
def test_bad_scenarios_get_one_line_errors_and_exit_2(tmp_path, capsys, edit, field, reason):
    path = _write(tmp_path, GOOD.replace(*edit))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"{path}: ")
    assert f": {field or '<document>'}: " in err[0]
    assert reason in err[0]
    with pytest.raises(DocumentError):
        load_scenario(path)


def test_missing_files_are_reported(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read file" in capsys.readouterr().err
    path = _write(tmp_path, GOOD.replace(
        "population: {actionability: {kind: ranking, n_actionable: 2}}",
        "population: missing.yaml"))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "conditions[0].population: population file not found" in capsys.readouterr().err


def test_duplicate_condition_names_are_refused(tmp_path, capsys):
    text = GOOD + """  - name: two
    population: {actionability: {kind: all}}
"""
    assert main(["validate", str(_write(tmp_path, text))]) == 2
    assert "conditions names must be unique" in capsys.readouterr().err
