"""A study from a scenario: participants are the run's people; power from the same scenario."""

import numpy as np
import pandas as pd
import pytest
import yaml

from simstudy.cli import main
from simstudy.core.documents import DocumentError
from simstudy.planning.study_power import run_study_power
from simstudy.run.runner import run_scenario
from simstudy.run.scenario import load_scenario
from simstudy.study.from_scenario import power_curve
from simstudy.study.section import StudyPowerSpec
from simstudy.study.simulated import STUDY_COLUMNS
from simstudy.world.decision import ModelCache

SCENARIO = {
    "name": "tiny-study",
    "seed": 3,
    "world": {"kind": "loan", "n_samples": 800},
    "decision_model": {"epochs": 20},
    "applicants": {"max_applicants": 60},
    "policies": [{"kind": "oracle", "name": "universal", "personalized": False, "n_values": 8,
                  "plausibility": False},
                 {"kind": "oracle", "name": "personal", "n_values": 8, "plausibility": False}],
    "conditions": [{"name": "c", "population": {
        "actionability": {"kind": "ranking", "n_actionable": 2},
        "groups": {"rule": "random"}, "hidden_mismatch_probability": 0.25}}],
    "response": {"kind": "rating"},
    "study": {"participants": 20, "baseline": "universal",
              "power": {"participants": [8, 16], "simulations": 3}},
}


def _write(tmp_path, doc, name="scenario.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    path = _write(tmp, SCENARIO)
    cache = ModelCache(tmp / "cache")
    result = run_scenario(path, tmp / "run", progress=False, cache=cache)
    return path, tmp, cache, result


def test_study_table_has_the_export_schema_and_the_runs_people(study_run):
    _, tmp, _, result = study_run
    table = pd.read_csv(tmp / "run" / "study.csv")
    assert list(table.columns[:6]) == STUDY_COLUMNS
    assert {"policy", "blocked", "privileged", "gender"} <= set(table.columns)
    found = result.recourse[result.recourse["found"]].groupby("applicant_id")["policy"].nunique()
    assert table["uid"].nunique() == min(20, int((found == 2).sum())) >= 10
    assert table.groupby("uid")["policy"].nunique().eq(2).all()  # each rates both policies
    assert set(table["policy"]) == {"universal", "personal"}
    assert table["accept"].between(1, 7).all() and table["act"].between(1, 7).all()
    # participants are the run's rejected applicants, rating what each policy gave them
    rec = result.recourse
    for _, row in table.sample(10, random_state=0).iterrows():
        mine = rec[(rec["applicant_id"] == row["uid"]) & (rec["policy"] == row["policy"])]
        assert len(mine) == 1 and bool(mine["found"].iloc[0])
        assert int(mine["sparsity"].iloc[0]) == row["sparsity"]
        assert bool(mine["blocked"].iloc[0]) == bool(row["blocked"])
    assert "study.csv" in result.manifest["outputs"]


def test_the_study_is_reproducible(study_run):
    path, tmp, cache, _ = study_run
    run_scenario(path, tmp / "again", progress=False, cache=cache)
    assert (tmp / "again" / "study.csv").read_bytes() == (tmp / "run" / "study.csv").read_bytes()


def test_power_from_the_same_scenario_resumes_and_reads_the_stated_bound(study_run):
    path, tmp, cache, _ = study_run
    out = tmp / "power"
    res = run_study_power(path, out, workers=1, progress=False)
    table = pd.read_csv(out / "power.csv")
    assert set(table["test"]) == {"policy", "smooth"} and set(table["n"]) == {8, 16}
    assert (table["lower"] <= table["power"]).all() and (table["power"] <= table["upper"]).all()
    assert res["read_from"] == "lower"
    parts = (out / "parts" / "n8.csv").read_bytes()
    again = run_study_power(path, out, workers=1, progress=False)  # resumes: nothing new
    assert (out / "parts" / "n8.csv").read_bytes() == parts
    pd.testing.assert_frame_equal(again["table"], res["table"])


def test_power_curve_reads_the_smallest_n_from_the_chosen_value():
    rows = pd.DataFrame({"n": np.repeat([10, 20], 20), "sim": np.tile(np.arange(20), 2),
                         "significant_policy": [1] * 17 + [0] * 3 + [1] * 20,
                         "significant_smooth": [0] * 40})
    spec = StudyPowerSpec(participants=[10, 20], target_power=0.8)
    table, smallest = power_curve(rows, spec)
    # 17/20 = 0.85 reaches 0.8 as a point estimate, but its lower bound (0.62) does not
    assert smallest == {"policy": 20, "smooth": None}
    _, smallest = power_curve(rows, spec.model_copy(update={"read_from": "estimate"}))
    assert smallest["policy"] == 10


def test_study_sections_naming_unknown_things_are_refused(tmp_path):
    for study, field in (({"policies": ["universal", "nope"]}, "study.policies[1]"),
                         ({"baseline": "nope"}, "study.baseline"),
                         ({"condition": "nope"}, "study.condition"),
                         ({"replication": 4}, "study.replication"),
                         ({"power": {"participants": [10], "contrast": "universal"},
                           "baseline": "universal"}, "study.power.contrast")):
        path = _write(tmp_path, {**SCENARIO, "study": study})
        with pytest.raises(DocumentError) as err:
            load_scenario(path)
        assert field in str(err.value), (field, str(err.value))


def test_random_others_are_rated_besides_the_policies_and_keyed(study_run, tmp_path):
    _, _, cache, _ = study_run
    doc = {**SCENARIO, "study": {**SCENARIO["study"], "random_others": 2}}
    path = _write(tmp_path, doc)
    run_scenario(path, tmp_path / "run", progress=False, cache=cache)
    table = pd.read_csv(tmp_path / "run" / "study.csv")
    assert table.groupby("uid").size().eq(2 + 2).all()  # policies + random others
    random = table[table["policy"] == "random"]
    assert set(random["item"]) == {2, 3} and (random["sparsity"] >= 1).all()
    assert random["accept"].between(1, 7).all() and random["act"].between(1, 7).all()
    first = (tmp_path / "run" / "study.csv").read_bytes()
    run_scenario(path, tmp_path / "again", progress=False, cache=cache)
    assert (tmp_path / "again" / "study.csv").read_bytes() == first
    # keyed by person: fewer participants and fewer random others draw the same first one
    fewer = {**doc, "study": {**doc["study"], "participants": 10, "random_others": 1}}
    run_scenario(_write(tmp_path, fewer, "fewer.yaml"), tmp_path / "fewer", progress=False,
                 cache=cache)
    small = pd.read_csv(tmp_path / "fewer" / "study.csv")
    small = small[small["policy"] == "random"].set_index("uid")
    assert len(small) == 10
    cols = ["sparsity", "proximity", "blocked", "cost", "accept", "act"]
    pd.testing.assert_frame_equal(small[cols], random[random["item"] == 2].set_index("uid")
                                  .loc[small.index, cols])


def test_a_negative_random_others_is_refused_in_one_line(tmp_path, capsys):
    path = _write(tmp_path, {**SCENARIO, "study": {"random_others": -1}})
    assert main(["validate", str(path)]) == 2
    assert f"{path}: study.random_others: " in capsys.readouterr().err
