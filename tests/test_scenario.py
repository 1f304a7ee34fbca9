
import pytest

from simstudy.cli import main
from simstudy.core.documents import DocumentError
from simstudy.resources import resource_path, resource_root
from simstudy.run.scenario import load_scenario

RESOURCES = resource_root()

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
    files = sorted(str(p) for p in (RESOURCES / "scenarios").glob("*.yaml"))
    files += sorted(str(p) for p in (RESOURCES / "populations").glob("*.yaml"))
    files += sorted(str(p) for p in (RESOURCES / "analysis").glob("*.yaml"))
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


SIM = """simulation:
  horizon_days: 10
  arrivals: {kind: cohort, size: 20}
"""


def _one_problem(tmp_path, capsys, text):
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return path, err[0]


def test_an_event_world_needs_the_group_column_in_every_condition(tmp_path, capsys):
    path, line = _one_problem(tmp_path, capsys, GOOD + SIM)
    assert line.startswith(f"{path}: simulation.group_column: 'privileged' is not a group of "
                           "condition 'two'")
    grouped = GOOD.replace("n_actionable: 2}}", "n_actionable: 2}, groups: {rule: random}}")
    assert main(["validate", str(_write(tmp_path, grouped + SIM))]) == 0
    by_race = GOOD.replace("n_actionable: 2}}", "n_actionable: 2}, stylized_attribute: race}")
    path, line = _one_problem(tmp_path, capsys, by_race + SIM + "  group_column: race\n"
                              "  request_probability_by_group: {'gender=1': 0.5}\n")
    assert "simulation.request_probability_by_group.gender=1: labels are 'race=<value>'" in line


def test_retraining_needs_a_world_with_labels(tmp_path, capsys):
    flow = GOOD.replace("world: {kind: loan, n_samples: 400}",
                        "world: {kind: causal_flow, source: loan, n_samples: 400}")
    grouped = flow.replace("n_actionable: 2}}", "n_actionable: 2}, groups: {rule: random}}")
    retrain = SIM + "  retraining: {every_days: 5, window_days: 5}\n"
    path, line = _one_problem(tmp_path, capsys, grouped + retrain)
    assert "simulation.retraining: the causal_flow world has no label rule" in line
    assert main(["validate", str(_write(tmp_path, grouped + SIM))]) == 0


def test_moved_settings_name_their_new_home(tmp_path, capsys):
    grouped = GOOD.replace("n_actionable: 2}}", "n_actionable: 2}, groups: {rule: random}}")
    _, line = _one_problem(tmp_path, capsys, grouped + SIM + "  response: {kind: logistic}\n")
    assert "top-level `response:`" in line
    _, line = _one_problem(tmp_path, capsys, GOOD.replace(
        "{kind: oracle, n_values: 4}", "{kind: hare, users: {scale: near}}"))
    assert "`users:` section" in line


def test_people_sections_per_scenario_and_condition(tmp_path):
    from simstudy.run.scenario import people_specs

    text = GOOD.replace("conditions:", "users: {scale: near}\nresponse: {kind: rating}\n"
                        "conditions:") + """  - name: far
    population: {actionability: {kind: all}}
    users: {scale: far}
    response: {kind: logistic, act_cost_slope: 1.0}
"""
    scenario, populations = load_scenario(_write(tmp_path, text))
    specs = people_specs(scenario, populations)
    assert specs["two"].users.scale == "near" and specs["two"].response.kind == "rating"
    assert specs["far"].users.scale == "far" and specs["far"].response.act_cost_slope == 1.0


def test_every_shipped_scenario_survives_pickling():
    # process pools and Ray ship the validated documents to workers
    import pickle

    root = resource_path("scenarios")
    for path in sorted(root.glob("*.yaml")):
        scenario, populations = load_scenario(path)
        again = pickle.loads(pickle.dumps((scenario, populations)))
        assert again[0] == scenario and again[1] == populations, path.name
