"""Fairness audit statistics: null coverage, planted gaps, hidden disparities, corrections."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from simstudy.analysis.audit import audit
from simstudy.analysis.groups import Codebook, comparisons, run_codebook
from simstudy.world.loan_roles import LOAN_ROLES

torch.set_num_threads(1)

#: The Loan world's coding and a stylized race labelled as the case-study documents do.
BOOK = Codebook({**LOAN_ROLES.codebook, "race": {0: "white", 1: "non-white"}},
                LOAN_ROLES.reference_levels)


def synthetic_recourse(seed: int, n: int = 120, reps: int = 2,
                       conditions: dict[str, dict[str, float]] | None = None) -> pd.DataFrame:
    """Recourse rows; ``conditions`` maps a name to planted effects on cost.

    Effects: ``female`` adds to the cost of gender 0, ``nonwhite`` to race 1, ``cell`` to
    non-white females only. The same people (ids, groups) appear in every condition.
    """
    conditions = conditions or {"baseline": {}}
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(reps):
        gender = rng.integers(0, 2, n)
        race = rng.integers(0, 2, n)
        base_cost = rng.exponential(1.0, n)
        valid = rng.random(n) < 0.7
        for name, eff in conditions.items():
            cost = (base_cost + eff.get("female", 0.0) * (gender == 0)
                    + eff.get("nonwhite", 0.0) * (race == 1)
                    + eff.get("cell", 0.0) * ((gender == 0) & (race == 1)))
            rows.append(pd.DataFrame({
                "replication": r, "condition": name, "policy": "oracle",
                "applicant_id": np.arange(n), "gender": gender, "race": race,
                "found": valid, "valid": valid, "plausible": rng.random(n) < 0.5,
                "cost_unweighted": cost, "logp_cf": -cost + rng.normal(0, 0.1, n),
                "hard_action": rng.random(n) < 0.5}))
    return pd.concat(rows, ignore_index=True)


def test_group_labels_come_from_the_codebook():
    assert BOOK.label("gender", 0) == "female" and BOOK.label("gender", 1) == "male"
    assert BOOK.label("race", 1) == "non-white" and BOOK.label("zone", 2) == "zone=2"
    # generic code names no world's groups: unlabelled codes read attribute=level and the
    # smallest level is the reference, except the population rules' own privileged column
    assert Codebook().label("gender", 0) == "gender=0"
    assert [c.name for c in comparisons(["gender"], {"gender": [0, 1]}, [(0,), (1,)])] == [
        "gender: gender=1 - gender=0"]
    privileged = comparisons(["privileged"], {"privileged": [0, 1]}, [(0,), (1,)])
    assert [c.name for c in privileged] == ["privileged: non-privileged - privileged"]
    assert BOOK.legend(["gender", "zone"]) == "gender 0 = female, 1 = male"


def test_a_run_names_its_codebook_and_audit_columns():
    manifest = {"resolved": {
        "scenario": {"world": {"kind": "loan", "n_samples": 400}},
        "populations": {"a": {"stylized_attribute": "race",
                              "labels": {"race": {"0": "white", "1": "non-white"}}},
                        "b": {"groups": {"rule": "attribute", "attribute": "caste"}}}}}
    book, by = run_codebook(manifest)
    assert by == ["gender", "race", "caste"]
    assert book.label("gender", 0) == "female" and book.label("race", 1) == "non-white"
    assert book.reference("gender", [0, 1]) == 1
    # a CSV world declares its own
    csv = {"kind": "causal_flow", "source": "csv", "csv": {
        "path": "d.csv", "features": [{"name": "sex"}, {"name": "b", "parents": ["sex"]}],
        "label": "y", "positive": 1, "actionable": ["b"], "sensitive": ["sex"],
        "codebook": {"sex": {1: "woman", 2: "man"}}, "reference_levels": {"sex": 2}}}
    book, by = run_codebook({"resolved": {"scenario": {"world": csv}}})
    assert by == ["sex"] and book.label("sex", 1) == "woman"
    assert book.reference("sex", [1, 2]) == 2
    assert run_codebook({}) == (Codebook(), [])


def test_null_population_intervals_cover_zero_at_nominal_rate():
    covered, rejected, total = 0, 0, 0
    for s in range(40):
        res = audit(synthetic_recourse(s), codebook=BOOK, by=["gender", "race"],
                    metrics=["cost_unweighted", "validity"],
                    n_bootstrap=200, n_permutations=200, seed=s)
        g = res.gaps
        covered += int(((g["ci_low"] <= 0) & (g["ci_high"] >= 0)).sum())
        rejected += int((g["p_value"] < 0.05).sum())
        total += len(g)
    assert total == 40 * 5 * 2
    # 400 intervals (correlated within a data set): 95% nominal, generous band.
    assert 0.89 <= covered / total <= 0.99
    assert rejected / total <= 0.10


def test_planted_gap_is_found_with_its_size():
    df = synthetic_recourse(1, n=600, conditions={"baseline": {"female": 0.6}})
    res = audit(df, codebook=BOOK, by=["gender", "race"], n_bootstrap=300, n_permutations=300)
    g = res.gaps.set_index(["metric", "comparison"])
    sex = g.loc[("cost_unweighted", "gender: female - male")]
    assert sex["significant"] and sex["ci_low"] < 0.6 < sex["ci_high"]
    assert not g.loc[("cost_unweighted", "race: non-white - white")]["significant"]
    # Per-group estimates are means among those given a recourse.
    grp = res.groups.set_index(["metric", "group"])
    sub = df[df["found"] & (df["gender"] == 0)]
    expect = sub.groupby("replication")["cost_unweighted"].mean().mean()
    assert grp.loc[("cost_unweighted", "female"), "estimate"] == pytest.approx(expect)


def test_hidden_disparity_and_paired_contrast():
    df = synthetic_recourse(2, n=400, conditions={
        "baseline": {"female": 0.5}, "race": {"female": 0.5, "nonwhite": 0.5, "cell": 0.4}})
    res = audit(df, codebook=BOOK, by=["gender", "race"], baseline="baseline",
                metrics=["cost_unweighted"],
                n_bootstrap=300, n_permutations=300)
    hidden = res.hidden
    assert "race: non-white - white" in set(hidden["comparison"])
    assert "gender: female - male" not in set(hidden["comparison"])  # present in both
    c = res.contrasts.set_index(["comparison", "condition", "versus"])
    race = c.loc[("race: non-white - white", "race", "baseline")]
    assert race["ci_low"] > 0.5
    # The paired interval of an unchanged gap is narrow around zero.
    same = c.loc[("gender: female - male", "race", "baseline")]
    assert same["ci_low"] < 0.2 + 0.01 and same["ci_high"] > 0.2 - 0.01  # cell adds 0.2 to F
    ex = res.extremes.set_index("condition")
    assert ex.loc["race", "highest"] == "female non-white" and ex.loc["race", "ci_low"] > 0


def test_event_world_outcomes_are_audited():
    rng = np.random.default_rng(3)
    n = 300
    gender, race = rng.integers(0, 2, n), rng.integers(0, 2, n)
    approved = rng.random(n) < np.where(gender == 0, 0.3, 0.8)
    outcomes = pd.DataFrame({
        "replication": 0, "condition": "baseline", "policy": "oracle", "applicant": np.arange(n),
        "gender": gender, "race": race, "approved": approved,
        "time_to_approval": np.where(approved, rng.exponential(20, n), np.nan),
        "dropped_out": ~approved & (rng.random(n) < 0.5)})
    res = audit(synthetic_recourse(3), codebook=BOOK, by=["gender"], outcomes=outcomes,
                n_bootstrap=100,
                n_permutations=100)
    ev = res.gaps[res.gaps["source"] == "event world"].set_index("metric")
    assert set(ev.index) == {"approval_rate", "time_to_approval", "dropout_rate"}
    assert ev.loc["approval_rate", "significant"] and ev.loc["approval_rate", "estimate"] < 0


def test_unknown_metric_or_column_is_refused():
    df = synthetic_recourse(0)
    with pytest.raises(ValueError, match="unknown metrics"):
        audit(df, codebook=BOOK, by=["gender"], metrics=["fairness"])
    with pytest.raises(ValueError, match="no column"):
        audit(df, codebook=BOOK, by=["income_band"])


def test_replication_missing_a_group_is_skipped_not_counted_as_zero():
    df = synthetic_recourse(4, n=300, reps=2, conditions={"baseline": {"nonwhite": 0.8}})
    df = df[~((df["replication"] == 1) & (df["race"] == 1))]  # nobody non-white in rep 1
    res = audit(df, codebook=BOOK, by=["race"], metrics=["cost_unweighted"], n_bootstrap=200,
                n_permutations=200)
    gap = res.gaps.iloc[0]
    only = df[(df["replication"] == 0) & df["found"]].groupby("race")["cost_unweighted"].mean()
    assert gap["estimate"] == pytest.approx(only[1] - only[0])
    assert gap["p_value"] < 0.01 and gap["ci_low"] > 0.3


def test_condition_without_the_attribute_is_left_out():
    df = synthetic_recourse(5, conditions={"baseline": {}, "groups": {"female": 0.5}})
    df["privileged"] = np.where(df["condition"] == "groups", df["race"], np.nan)
    res = audit(df, codebook=BOOK, by=["privileged"], metrics=["cost_unweighted"], n_bootstrap=50,
                n_permutations=50)
    assert set(res.gaps["condition"]) == {"groups"}
    assert set(res.groups["group"]) == {"all", "privileged", "non-privileged"}


def _shipped(folder: str, name: str):
    """A shipped example document, before or after the move into the package."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for base in (root / "simstudy" / "resources" / folder, root / folder):
        if (base / name).exists():
            return base / name
    raise FileNotFoundError(name)


def _run_and_audit(scenario, out) -> int:
    from simstudy.cli import main

    assert main(["run", str(scenario), "--out", str(out)]) == 0
    return main(["audit", str(out)])


def test_audit_of_a_one_replication_run_with_a_full_group_exits_0(tmp_path):
    # one replication of 10 people, all valid under the oracle: a group share of exactly 1
    # (Wilson's upper bound was 1 - 2^-53, a negative error bar) and a single gender (no gap:
    # empty tables without columns)
    population = _shipped("populations", "hard_k4.yaml")
    scenario = tmp_path / "one.yaml"
    scenario.write_text(
        "name: one-replication\nseed: 0\nreplications: 1\n"
        "world: {kind: loan, n_samples: 1000}\ndecision_model: {epochs: 10}\n"
        "applicants: {max_applicants: 10}\npolicies:\n  - {kind: oracle}\n"
        f"conditions:\n  - {{name: all-4, population: {population}}}\n")
    assert _run_and_audit(scenario, tmp_path / "run") == 0
    groups = pd.read_csv(tmp_path / "run" / "audit_groups.csv")
    validity = groups[(groups["metric"] == "validity") & (groups["grouping"] == "all")]
    assert validity["estimate"].tolist() == [1.0] and validity["ci_high"].tolist() == [1.0]
    assert ((groups["ci_low"] <= groups["estimate"]) | groups["ci_low"].isna()).all()
    assert ((groups["estimate"] <= groups["ci_high"]) | groups["ci_high"].isna()).all()


@pytest.mark.slow
def test_audit_of_the_quickstart_run_exits_0(tmp_path):
    assert _run_and_audit(_shipped("scenarios", "quickstart.yaml"), tmp_path / "quickstart") == 0
    assert (tmp_path / "quickstart" / "audit.html").exists()
