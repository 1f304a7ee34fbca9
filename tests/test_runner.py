import json

import numpy as np
import pandas as pd
import pytest

from simstudy.cli import main
from simstudy.run.runner import SUMMARY_DIGITS, run_scenario
from simstudy.world.decision import ModelCache

SCENARIO = """
name: runner-test
seed: 3
replications: 2
world: {kind: loan, n_samples: 1200}
decision_model: {epochs: 15}
applicants: {max_applicants: 40}
policies:
  - {kind: oracle, n_values: 6}
  - {kind: oracle, name: oracle-no-plausibility, n_values: 6, plausibility: false}
conditions:
  - name: random-k
    population:
      actionability: {kind: ranking, n_actionable: null}
      cost: {shape: linear}
      stylized_attribute: race
  - name: income
    population:
      actionability: {kind: ranking, n_actionable: 2}
      groups: {rule: income}
"""


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("sc") / "s.yaml"
    p.write_text(SCENARIO)
    return p


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ModelCache(tmp_path_factory.mktemp("cache"))


def test_run_writes_manifest_tables_and_summary(scenario_file, tmp_path, cache):
    res = run_scenario(scenario_file, tmp_path / "run", progress=False, cache=cache)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["base_seed"] == 3
    assert len(manifest["replications"]) == 2
    rep = manifest["replications"][0]
    assert len(rep["decision_model"]["state_dict_sha256"]) == 64
    assert 0.5 < rep["decision_model"]["test_accuracy"] <= 1
    assert manifest["versions"]["torch"]
    assert manifest["resolved"]["scenario"]["policies"][0]["kind"] == "oracle"
    df = pd.read_parquet(tmp_path / "run" / "recourse.parquet")
    assert len(df) == 2 * 2 * 2 * 40
    for col in ("applicant_id", "gender", "race", "privileged", "score_income", "act_savings",
                "theta_income", "x_income", "xcf_savings", "cost", "valid", "plausible",
                "logp", "logp_cf"):
        assert col in df.columns, col
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    overall = summary[summary.group_by == "all"]
    assert set(overall.policy) == {"oracle", "oracle-no-plausibility"}
    no_plaus = overall[overall.policy == "oracle-no-plausibility"].validity.to_numpy()
    with_plaus = overall[overall.policy == "oracle"].validity.to_numpy()
    assert (no_plaus >= with_plaus).all()
    assert {"gender", "race", "privileged"} <= set(summary.group_by)
    assert (res.summary["replications"] == 2).all()


def test_same_seed_same_summary_and_resume(scenario_file, tmp_path, cache):
    run_scenario(scenario_file, tmp_path / "a", progress=False, cache=cache)
    run_scenario(scenario_file, tmp_path / "b", progress=False, cache=cache)
    a = (tmp_path / "a" / "summary.csv").read_bytes()
    assert a == (tmp_path / "b" / "summary.csv").read_bytes()
    # an interrupted run resumes from its finished parts and ends with the same numbers
    parts = sorted((tmp_path / "b" / "parts").glob("*.parquet"))
    parts[-1].unlink()
    (tmp_path / "b" / "summary.csv").unlink()
    run_scenario(scenario_file, tmp_path / "b", progress=False, cache=cache)
    assert a == (tmp_path / "b" / "summary.csv").read_bytes()


def test_another_seed_changes_the_numbers_and_needs_its_own_directory(
        scenario_file, tmp_path, cache, capsys, monkeypatch):
    run_scenario(scenario_file, tmp_path / "a", progress=False, cache=cache)
    run_scenario(scenario_file, tmp_path / "c", seed=4, progress=False, cache=cache)
    assert ((tmp_path / "a" / "summary.csv").read_bytes()
            != (tmp_path / "c" / "summary.csv").read_bytes())
    monkeypatch.setenv("SIMSTUDY_CACHE", str(cache.root))
    code = main(["run", str(scenario_file), "--out", str(tmp_path / "a"), "--seed", "9",
                 "--quiet"])
    assert code == 2
    assert "different scenario, seed" in capsys.readouterr().err


SIM_SCENARIO = """
name: sim-test
seed: 0
replications: 2
world: {kind: loan, n_samples: 1200}
decision_model: {epochs: 15}
applicants: {max_applicants: 20}
policies:
  - {kind: oracle, n_values: 6}
conditions:
  - name: groups
    population:
      actionability: {kind: ranking, bias: uniform}
      groups: {rule: random, privileged_share: 0.3}
      hidden_mismatch_probability: 0.25
simulation:
  horizon_days: 30
  arrivals: {kind: poisson, rate_per_day: 2}
  group_column: privileged
"""


def test_scenario_with_simulation_writes_the_event_world(tmp_path, cache):
    path = tmp_path / "sim.yaml"
    path.write_text(SIM_SCENARIO)
    res = run_scenario(path, tmp_path / "run", progress=False, cache=cache)
    for name in ("events.parquet", "outcomes.parquet", "sim_summary.csv", "approvals.png"):
        assert (tmp_path / "run" / name).exists(), name
    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    assert set(events["replication"]) == {0, 1}
    assert "events.parquet" in res.manifest["outputs"]


HARE_SCENARIO = """
name: hare-contrast-test
seed: 5
replications: 2
world: {kind: loan, n_samples: 1200}
decision_model: {epochs: 15}
applicants: {max_applicants: 30}
policies:
  - {kind: hare, name: one, base: {kind: growing_spheres, n_samples: 50}, budget: 12, steps: 20}
  - {kind: hare, name: multi, base: {kind: growing_spheres, n_samples: 50}, budget: 12,
     iterations: 3, keep_best: true, steps: 20}
  - {kind: growing_spheres, name: gs, n_samples: 50}
users: {scale: far, n_samples: 50}
contrasts:
  - {policy: multi, baseline: one}
conditions:
  - name: random-k
    population: {actionability: {kind: ranking, n_actionable: null}}
"""


def test_policies_share_people_and_contrasts_are_paired(tmp_path, cache):
    path = tmp_path / "hare.yaml"
    path.write_text(HARE_SCENARIO)
    res = run_scenario(path, tmp_path / "run", progress=False, cache=cache)
    df = res.recourse.sort_values(["replication", "applicant_id"])
    one, multi = df[df.policy == "one"], df[df.policy == "multi"]
    # common random numbers: the same hidden truth and base recourse for both policies
    gs = df[df.policy == "gs"]
    for col in ("gtd_base", "gtp_base", "user_loss_base"):
        pd.testing.assert_series_equal(one[col].reset_index(drop=True),
                                       multi[col].reset_index(drop=True))
    # every policy is measured against the same hidden truth: HARE's base is Growing Spheres
    for col in ("gtd", "gtp", "user_loss"):
        pd.testing.assert_series_equal(gs[col].reset_index(drop=True),
                                       one[f"{col}_base"].reset_index(drop=True),
                                       check_names=False)
    for col in ("has_ground_truth", "p_accept", "p_act", "blocked", "can_income"):
        assert col in df.columns, col
    contrasts = pd.read_csv(tmp_path / "run" / "contrasts.csv")
    row = contrasts[contrasts.group_by == "all"].iloc[0]
    assert (row.policy, row.baseline, row.replications) == ("multi", "one", 2)
    overall = res.summary[res.summary.group_by == "all"].set_index("policy")
    difference = overall.loc["multi", "gtd"] - overall.loc["one", "gtd"]
    # contrasts.csv keeps SUMMARY_DIGITS significant digits: within half a unit of the last
    last_digit = 10.0 ** (np.floor(np.log10(abs(difference))) - SUMMARY_DIGITS + 1)
    assert row.gtd == pytest.approx(difference, rel=0, abs=0.5 * last_digit * (1 + 1e-9))
    assert row.gtd_ci_low <= row.gtd <= row.gtd_ci_high
    assert row.gtd_base == 0.0
    assert "contrasts.csv" in res.manifest["outputs"]


def test_event_world_on_the_published_rating_curves(tmp_path, cache):
    text = SIM_SCENARIO.replace("simulation:", "response: {kind: rating}\nsimulation:")
    path = tmp_path / "rating.yaml"
    path.write_text(text)
    res = run_scenario(path, tmp_path / "run", progress=False, cache=cache)
    assert res.manifest["resolved"]["scenario"]["response"]["kind"] == "rating"
    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    assert (events["event"] == "recourse_given").any()
    # the run table carries the same people's response probabilities, on the rating curves
    got = res.recourse[res.recourse["found"]]
    assert got["p_accept"].between(0, 1).all() and got["p_act"].between(0, 1).all()
    logistic = run_scenario(tmp_path / "sim.yaml" if (tmp_path / "sim.yaml").exists()
                            else _write_sim(tmp_path), tmp_path / "run-logistic",
                            progress=False, cache=cache).recourse
    assert not np.allclose(logistic.loc[logistic["found"], "p_accept"], got["p_accept"])


def _write_sim(tmp_path):
    path = tmp_path / "sim.yaml"
    path.write_text(SIM_SCENARIO)
    return path
