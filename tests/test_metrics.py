"""The metric table: one declaration feeds the summaries, the audit and the report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simstudy.analysis.analysis_spec import AuditSpec
from simstudy.analysis.audit import audit
from simstudy.analysis.report import render_html, render_markdown
from simstudy.metrics import METRICS, Metric, metrics_of
from simstudy.run.summary import summarize_recourse


def recourse_rows(seed: int = 0, n: int = 80, reps: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for r in range(reps):
        found = rng.random(n) < 0.8
        valid = found & (rng.random(n) < 0.7)
        cost = np.where(found, rng.exponential(1.0, n), np.nan)
        parts.append(pd.DataFrame({
            "replication": r, "seed": r, "condition": "c", "policy": "p",
            "applicant_id": np.arange(n), "gender": rng.integers(0, 2, n),
            "found": found, "valid": valid, "plausible": found & (rng.random(n) < 0.5),
            "cost": cost, "cost_unweighted": cost / 2, "hard_action": found & (rng.random(n) < .3),
            "sparsity": np.where(found, rng.integers(1, 4, n), 0), "proximity": cost,
            "violation": np.zeros(n, bool), "logp": rng.normal(size=n),
            "logp_cf": np.where(found, rng.normal(size=n), np.nan),
            "queries": rng.integers(0, 5, n).astype(float)}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture
def sparsity_among_valid(monkeypatch):
    metric = Metric(column="sparsity", among="valid", label="sparsity of valid recourses",
                    direction="lower", unit="features", meaning="mean number of acted-on "
                    "features", values="nonnegative", audited=True)
    monkeypatch.setitem(METRICS, "sparsity_valid", metric)
    return metric


def test_denominators_follow_the_declaration():
    df = recourse_rows()
    s = summarize_recourse(df).set_index("group").loc["all"]
    per_rep = []
    for _, block in df.groupby("replication"):
        found, valid = block["found"], block["valid"]
        # cost-type figures among valid recourses (as published), the twins among found
        per_rep.append({"validity": valid.mean(), "cost": block.loc[valid, "cost"].mean(),
                        "cost_found": block.loc[found, "cost"].mean(),
                        "no_recourse": 1 - found.mean(), "queries": block["queries"].mean()})
    expect = pd.DataFrame(per_rep).mean()
    assert expect["cost"] != pytest.approx(expect["cost_found"])  # the denominators differ
    for name in ("validity", "cost", "cost_found", "no_recourse", "queries"):
        assert s[name] == pytest.approx(expect[name])
    assert list(s.index[s.index.isin(list(METRICS))]) == list(metrics_of(summarized=True))


def test_a_registered_metric_reaches_summary_audit_and_report(sparsity_among_valid):
    df = recourse_rows()
    summary = summarize_recourse(df)
    expect = np.mean([b.loc[b["valid"], "sparsity"].mean() for _, b in df.groupby("replication")])
    assert summary.loc[summary["group"] == "all", "sparsity_valid"].item() == pytest.approx(expect)
    assert "sparsity_valid_ci_low" in summary.columns

    result = audit(df, ["gender"], n_bootstrap=20, n_permutations=20)
    assert "sparsity_valid" in set(result.groups["metric"])
    assert "sparsity_valid" in set(result.gaps["metric"])
    assert "cost" not in set(result.groups["metric"])  # weighted cost is not audited
    assert AuditSpec(run="r", metrics=["sparsity_valid"]).metrics == ["sparsity_valid"]

    assert "sparsity_valid" in render_markdown(result, {})
    page = render_html(result, {})
    assert page.index("sparsity_valid") > page.index("cost_unweighted")  # table order


def test_the_audit_reads_a_metric_as_the_summary_does():
    # no_recourse is the complement of found: the audit's figure is the summary's
    df = recourse_rows()
    summary = summarize_recourse(df, ["gender"]).set_index("group")
    groups = audit(df, ["gender"], metrics=["no_recourse", "cost"], n_bootstrap=20,
                   n_permutations=20).groups.set_index(["metric", "group"])["estimate"]
    for name in ("no_recourse", "cost"):
        assert groups[(name, "all")] == pytest.approx(summary.loc["all", name])
        assert groups[(name, "gender=1")] == pytest.approx(summary.loc["1", name])


def test_unknown_metric_names_are_refused():
    with pytest.raises(ValueError, match="unknown metric"):
        AuditSpec(run="r", metrics=["fairness"])
    declared = dict(column="cost", among="valid", label="cost", direction="lower",
                    unit="cost", meaning="mean cost")
    Metric(**declared)
    with pytest.raises(ValueError, match="denominator"):
        Metric(**{**declared, "among": "everyone"})
    with pytest.raises(ValueError, match="direction"):
        Metric(**{**declared, "direction": False})
    with pytest.raises(ValueError, match="meaning and unit"):
        Metric(**{**declared, "meaning": " "})
    with pytest.raises(ValueError, match="does not apply"):
        Metric(**{**declared, "table": "outcomes"})


# -- distances on levels: ordinal codes are ordered, a categorical change is one unit ----------
def _coded_loan(scale: str):
    import dataclasses

    from simstudy.world import LoanSCM
    from simstudy.world.loan_roles import LOAN_ROLES

    roles = dataclasses.replace(LOAN_ROLES, codebook={
        **LOAN_ROLES.codebook, "savings": {k: f"bracket {k}" for k in range(-10, 11)}},
        scales={"savings": scale})

    class CodedLoan(LoanSCM):
        pass

    CodedLoan.roles = roles
    return CodedLoan()


def test_a_categorical_change_counts_one_unit_in_cost_and_distances():
    import torch

    from simstudy.metrics import evaluate_recourse, normalized_change, published_proximity
    from simstudy.primitives.profiles import ActionabilityProfiles
    from simstudy.primitives.recourse import Recourse

    delta = np.array([[3.0, -3.0, 0.0, 0.5]])
    rng = np.array([6.0, 6.0, 6.0, 2.0])
    categorical = np.array([False, True, True, False])
    assert normalized_change(delta, rng, categorical).tolist() == [[0.5, -1.0, 0.0, 0.25]]
    assert published_proximity(delta != 0, delta, np.zeros((1, 4)), rng,
                               categorical).tolist() == [1.75]
    # savings (the last Loan feature, a leaf) moved by 3 codes over a range of 6
    out = {}
    for scale in ("ordinal", "categorical"):
        world = _coded_loan(scale)
        assert world.roles.categorical == (() if scale == "ordinal" else ("savings",))
        x = np.array([[1.0, 0.0, 0.0, 1.0, 0.5, 0.2, 0.0]])
        features = world.roles.actionable
        profiles = ActionabilityProfiles(features, np.ones((1, 4), int), 1, np.ones((1, 4)))
        intervened = np.zeros((1, 7), bool)
        intervened[0, 6] = True
        values = x.copy()
        values[0, 6] = 3.0
        model = torch.nn.Linear(7, 1).double()
        feature_range = np.full(7, 6.0)
        out[scale] = evaluate_recourse(world, model, x, Recourse(intervened, values,
                                                                 np.array([True])),
                                       profiles, feature_range)
    assert out["ordinal"]["cost"][0] == pytest.approx(0.5**2 / 4)
    assert out["categorical"]["cost"][0] == pytest.approx(1.0 / 4)
    assert out["ordinal"]["proximity"][0] == pytest.approx(0.5)
    assert out["categorical"]["proximity"][0] == pytest.approx(1.0)


def test_only_coded_features_have_a_scale():
    import dataclasses

    from simstudy.world.loan_roles import LOAN_ROLES

    with pytest.raises(ValueError, match="no codebook"):
        dataclasses.replace(LOAN_ROLES, scales={"income": "categorical"})
    with pytest.raises(ValueError, match="must be one of"):
        dataclasses.replace(LOAN_ROLES, scales={"gender": "nominal"})
