"""A live study's design simulated as the server runs it, and analysed as analyze does."""

import numpy as np
import pandas as pd
import pytest
import yaml

from simstudy.core.registry import build
from simstudy.people import ResponseInputs
from simstudy.people.response_params import RatingResponseParams
from simstudy.study.live_design import (
    LIVE_POOL_COLUMNS,
    LivePowerTask,
    assign_condition,
    pool_no_plan_rates,
    simulate_live_table,
)
from simstudy.study.live_section import EXCLUSION_REASONS
from simstudy.study.power import clopper_pearson
from simstudy.study.section import StudyPowerSpec

CONDITIONS = ("universal-oracle", "oracle")


def _pool(persons=80, no_plan=0.0, seed=0):
    """Each person's plan per condition: the universal plan is blocked for 60% of them, the
    personalized one never; ``no_plan`` of them find no personalized plan; two random others."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(persons):
        gender = int(rng.integers(0, 2))
        base = {"person": p, "applicant_id": 1000 + p, "gender": gender}
        rows.append({**base, "condition": "universal-oracle", "policy": "universal-oracle",
                     "item": 0, "found": True, "sparsity": 2, "proximity": 0.4, "cost": 0.5,
                     "cost_unweighted": 0.5, "blocked": bool(rng.random() < 0.6)})
        found = bool(rng.random() >= no_plan)
        rows.append({**base, "condition": "oracle", "policy": "oracle", "item": 1,
                     "found": found, "sparsity": 2 if found else 0,
                     "proximity": 0.4 if found else 0.0, "cost": 0.5 if found else np.nan,
                     "cost_unweighted": 0.5 if found else np.nan, "blocked": False})
        for j in range(2):
            rows.append({**base, "condition": "", "policy": "random", "item": 2 + j,
                         "found": True, "sparsity": int(rng.integers(1, 5)),
                         "proximity": 0.9, "cost": 1.0,
                         "cost_unweighted": 1.0, "blocked": bool(rng.random() < 0.3)})
    return pd.DataFrame(rows)


def _task(n, sim, pool, **kw):
    spec = StudyPowerSpec(participants=[n])
    response = build("response", RatingResponseParams(kind="rating"))
    from simstudy.study.hypotheses import HypothesisSpec

    h = HypothesisSpec.model_validate({"name": "personalized", "contrast": list(CONDITIONS)[::-1],
                                       "direction": "greater"})
    defaults = dict(conditions=CONDITIONS, live_seed=7, exclusions=tuple(EXCLUSION_REASONS),
                    groups_of=("gender",), hypotheses=(h,))
    return LivePowerTask(3, n, sim, pool, CONDITIONS, CONDITIONS[0], response, spec, False,
                         **{**defaults, **kw})


def test_assignment_fills_the_least_served_open_condition_and_closes_at_the_target():
    taken, served = {"a": 2, "b": 1, "c": 1}, {"a": 2, "b": 3, "c": 1}
    assert assign_condition(taken, served, ["a", "b", "c"], 0.9, target=2) == "c"
    assert assign_condition({"a": 2, "b": 2}, {"a": 2, "b": 2}, ["a", "b"], 0.1, 2) is None
    # ties broken by the draw over the tied conditions in study order
    even = dict.fromkeys("abc", 0)
    assert [assign_condition(even, even, list("abc"), d, 1) for d in (0.0, 0.4, 0.99)] == [
        "a", "b", "c"]


def test_every_condition_reaches_its_target_after_the_exclusions():
    pool = _pool(no_plan=0.3)
    task = _task(40, 0, pool, failed_attention=0.2, dropout=0.1)
    table = simulate_live_table(task)
    per = table.drop_duplicates("uid")
    assert {"status", "condition", "assigned_condition", "no_plan", "pilot",
            "study_version"} <= set(table.columns)
    kept, extras = task.analysed_table()
    counted = kept.drop_duplicates("uid")["condition"].value_counts()
    assert counted.to_dict() == {"universal-oracle": 20, "oracle": 20}
    assert extras["arrivals"] == table.attrs["arrivals"] > 40
    assert extras["excluded:failed_attention"] == (per["status"] == "failed_attention").sum()
    # the first reason that applies is recorded (attention and timeout come before no-plan)
    assert extras["excluded:no_plan"] == ((per["no_plan"] == 1)
                                          & (per["status"] == "completed")).sum() > 0
    # a no-plan participant of rule exclude rates the random plans only
    lacking = table[table["no_plan"] == 1]
    assert (lacking["policy"] == "random").all()
    # the same stream gives the same table
    assert simulate_live_table(task).equals(table)


def test_rule_replace_serves_the_replacement_and_analyses_them_in_it():
    pool = _pool(no_plan=0.4)
    task = _task(30, 1, pool, no_plan_rule="replace", replacement="universal-oracle")
    table = simulate_live_table(task)
    moved = table[table["no_plan"] == 1].drop_duplicates("uid")
    assert len(moved) and (moved["condition"] == "universal-oracle").all()
    assert (moved["assigned_condition"] == "oracle").all()
    kept, _ = task.analysed_table()
    assert set(moved["uid"]) <= set(kept["uid"])
    assert pool_no_plan_rates(pool)["universal-oracle"] == 0.0


def test_a_replacement_without_a_plan_leaves_them_assigned_and_uncounted():
    pool = _pool(no_plan=0.4)
    lacking = pool[(pool["condition"] == "oracle") & ~pool["found"]]["person"]
    # the replacement finds no plan for half of the people the assigned condition fails
    gone = set(lacking.iloc[::2])
    rows = (pool["condition"] == "universal-oracle") & pool["person"].isin(gone)
    pool.loc[rows, "found"] = False
    task = _task(30, 1, pool, no_plan_rule="replace", replacement="universal-oracle")
    table = simulate_live_table(task)
    per = table.drop_duplicates("uid")
    stuck = per[(per["no_plan"] == 1) & (per["condition"] == "oracle")]
    assert len(stuck) and (stuck["assigned_condition"] == "oracle").all()
    assert (table[table["uid"].isin(stuck["uid"])]["policy"] == "random").all()
    kept, extras = task.analysed_table()
    assert not set(stuck["uid"]) & set(kept["uid"])
    counted = kept.drop_duplicates("uid")["condition"].value_counts()
    assert counted.to_dict() == {"universal-oracle": 15, "oracle": 15}


def _independent_power(pool, n, sims, seed=11):
    """Between participants, written apart from the pipeline: n/2 people per condition drawn
    from the pool, their plan rated by the rating model, a pooled-variance t test."""
    from scipy import stats

    response = build("response", RatingResponseParams(kind="rating"))
    rng = np.random.default_rng(seed)
    plans = pool[pool["condition"] != ""].set_index(["person", "condition"])
    persons = pool["person"].unique()
    hits = 0
    for _ in range(sims):
        acts = {}
        for condition in CONDITIONS:
            who = rng.choice(persons, n // 2, replace=False)
            rows = plans.loc[[(p, condition) for p in who]]
            z = rng.standard_normal((n // 2, 4))
            inputs = ResponseInputs(
                cost=rows["cost"].to_numpy(float), cost_unweighted=rows["cost"].to_numpy(float),
                sparsity=rows["sparsity"].to_numpy(float),
                proximity_l1=rows["proximity"].to_numpy(float), accept_effect=z[:, 0],
                act_effect=z[:, 1], accept_slope_effect=z[:, 2], act_slope_effect=z[:, 3],
                blocked=rows["blocked"].to_numpy(bool))
            acts[condition] = response.ratings(inputs, rng.random((n // 2, 2)))[1]
        t = stats.ttest_ind(acts["oracle"], acts["universal-oracle"], alternative="greater")
        hits += int(t.pvalue <= 0.05)
    return hits


def test_power_agrees_with_an_independent_between_participant_simulation():
    from simstudy.study.hypothesis_power import simulate_hypotheses_study

    pool, n, sims = _pool(persons=120), 24, 100
    pipeline = sum(simulate_hypotheses_study(_task(n, r, pool))["significant:personalized"]
                   for r in range(sims))
    independent = _independent_power(pool, n, sims)
    lo1, hi1 = clopper_pearson(pipeline, sims)
    lo2, hi2 = clopper_pearson(independent, sims)
    assert 0.15 < pipeline / sims < 0.95  # a power where the two can disagree
    assert lo1 <= independent / sims <= hi1 and lo2 <= pipeline / sims <= hi2, (
        pipeline, independent)


@pytest.fixture
def study_file(tmp_path):
    from _live_support import STUDY

    doc = yaml.safe_load(STUDY.read_text())
    doc["study"]["live"]["conditions"] = list(CONDITIONS)
    doc["study"]["hypotheses"] = [{"name": "personalized", "contrast": ["oracle",
                                                                         "universal-oracle"],
                                   "response": "act", "direction": "greater"}]
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_analyze_excludes_the_failed_attention_participants_as_the_prereg_states(
        tmp_path, capsys, study_file):
    from simstudy.cli import main

    table = simulate_live_table(_task(20, 2, _pool(), failed_attention=0.25))
    failed = set(table.loc[table["status"] == "failed_attention", "uid"])
    assert failed
    export = tmp_path / "study.csv"
    table.to_csv(export, index=False)
    assert main(["preregister", str(study_file), "--out", str(tmp_path / "prereg.md")]) == 0
    prereg = (tmp_path / "prereg.md").read_text()
    assert "- failed_attention: status `failed_attention`" in prereg
    capsys.readouterr()
    assert main(["analyze", str(export), str(study_file), "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    excluded = pd.read_csv(tmp_path / "a" / "exclusions.csv")
    assert set(excluded.loc[excluded["reason"] == "failed_attention", "uid"]) == failed
    assert f"{len(failed)} failed_attention" in out
    tested = pd.read_csv(tmp_path / "a" / "hypotheses.csv")
    assert tested.loc[0, "n_participants"] == 20 and tested.loc[0, "model"] == "ols"
    assert not set(pd.read_csv(export)["uid"]) - failed - set(excluded["uid"]) & failed
    assert LIVE_POOL_COLUMNS[0] == "person"


def test_simstudy_power_of_a_live_study_runs_the_live_design(tmp_path):
    from _live_support import small_study_file

    from simstudy.planning.live_pool import compute_live_pool
    from simstudy.planning.study_power import run_study_power

    path = small_study_file(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["study"]["power"] = {"participants": [9], "simulations": 2, "workers": 1,
                             "rates": {"failed_attention": {"rate": 0.2, "source": "assumed"}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = run_study_power(path, tmp_path / "p", progress=False, live_persons=12)
    summary = res["summary"]
    assert summary["design"].startswith("live, between-participant")
    assert summary["live_pool_persons"] == 12
    assert summary["rates"]["failed_attention"] == {"rate": 0.2, "source": "assumed"}
    assert set(summary["no_plan_engine"]) == {"universal-oracle", "oracle", "hare"}
    assert {"personalized", "hare-vs-oracle", "all"} <= set(res["table"]["hypothesis"])
    assert summary["recruitment"][0]["arrivals_mean"] >= 9
    pool = pd.read_parquet(tmp_path / "p" / "live_pool.parquet")
    # kept as every stored part: its bytes and key checked, and read again, not recomputed
    from simstudy.core.store import checked
    from simstudy.planning.live_pool import live_pool, pool_key

    kept, prepared = live_pool(path, tmp_path / "p", persons=12, progress=False)
    assert checked(tmp_path / "p" / "live_pool.parquet", pool_key(prepared, 12))
    pd.testing.assert_frame_equal(kept, pool)
    # each person: one plan row per condition and the random others; plans by the engine
    assert (pool[pool["condition"] != ""].groupby("person").size() == 3).all()
    from simstudy.live.engine import LiveEngine

    again = compute_live_pool(LiveEngine(path).prepare(), persons=2, progress=False)
    first = pool[pool["person"] < 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(again[first.columns], first, check_dtype=False)
    # N must be a multiple of the conditions
    from simstudy.core.documents import UsageError

    doc["study"]["power"]["participants"] = [10]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(UsageError, match="not a multiple of the 3 live conditions"):
        run_study_power(path, tmp_path / "q", progress=False, live_persons=12)


def test_rates_state_their_source_and_an_export_gives_its_own(tmp_path):
    from pydantic import ValidationError

    from simstudy.study.live_design import export_rates
    from simstudy.study.section import RateSpec

    table = simulate_live_table(_task(20, 4, _pool(no_plan=0.3), failed_attention=0.3))
    table.to_csv(tmp_path / "pilot.csv", index=False)
    rates = export_rates(tmp_path / "pilot.csv")
    per = table.drop_duplicates("uid")
    assert rates["failed_attention"] == pytest.approx((per["status"] == "failed_attention").mean())
    assert rates["no_plan"] == pytest.approx(per["no_plan"].mean())
    assert RateSpec.model_validate({"source": "pilot.csv"}).rate is None
    for bad in ({"source": "assumed"}, {"rate": 0.1, "source": "engine"},
                {"rate": 0.1, "source": "pilot.csv"}):
        with pytest.raises(ValidationError):
            RateSpec.model_validate(bad)
    # the engine decides no-plan only: a dropout or attention rate it cannot compute
    from simstudy.study.section import PowerRates

    assert PowerRates.model_validate({"no_plan": {"source": "engine"}}).no_plan.rate is None
    for name in ("failed_attention", "dropout"):
        with pytest.raises(ValidationError, match=f"{name}: source 'engine' is for no_plan"):
            PowerRates.model_validate({name: {"source": "engine"}})
