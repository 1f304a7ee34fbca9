"""Policy contrasts: rating ~ policy with participant random intercepts."""

import numpy as np
import pandas as pd
import pytest

from simstudy.study.contrast import CONTRAST_COLUMNS, fit_policy_contrast, policy_contrasts


def _study(n=80, effects=(0.0, 0.6, -0.4), seed=0):
    rng = np.random.default_rng(seed)
    names = ["universal", "oracle", "icarma"][: len(effects)]
    uid = np.repeat(np.arange(n), len(effects))
    policy = np.tile(names, n)
    shift = np.tile(effects, n)
    act = 4 + rng.normal(0, 1.0, n)[uid] + shift + rng.normal(0, 1.0, len(uid))
    return pd.DataFrame({"uid": uid, "policy": policy, "act": act, "accept": act + 0.1})


def test_balanced_complete_design_estimates_the_mean_differences():
    data = _study()
    res = fit_policy_contrast(data, "act", baseline="universal")
    means = data.groupby("policy")["act"].mean()
    for _, row in res.table.iterrows():
        # with every participant rating every policy once, GLS equals the difference in means
        assert row["estimate"] == pytest.approx(means[row["policy"]] - means["universal"],
                                                abs=1e-6)
        assert row["lower"] < row["estimate"] < row["upper"]
    assert list(res.table.columns) == CONTRAST_COLUMNS
    assert res.omnibus_df == 2 and res.omnibus_p < 1e-3
    assert 0.6 < res.table["sd_intercept"].iloc[0] < 1.4


def test_intervals_cover_the_truth_about_as_often_as_stated():
    covered = 0
    for seed in range(20):
        table = fit_policy_contrast(_study(n=30, effects=(0.0, 0.5), seed=seed), "act",
                                    baseline="universal").table
        covered += int(table.loc[0, "lower"] <= 0.5 <= table.loc[0, "upper"])
    assert covered >= 16  # 95% nominal: fewer than 16 of 20 has probability 0.016


def test_no_difference_gives_a_large_omnibus_p_and_several_responses_stack():
    table = policy_contrasts(_study(effects=(0.0, 0.0, 0.0), seed=3), ["accept", "act"],
                             baseline="universal")
    assert set(table["response"]) == {"accept", "act"} and len(table) == 4
    assert (table["omnibus_p"] > 0.01).all()


def test_bad_baseline_and_single_policy_are_refused():
    data = _study()
    with pytest.raises(ValueError, match="baseline"):
        fit_policy_contrast(data, "act", baseline="nope")
    with pytest.raises(ValueError, match="one policy"):
        fit_policy_contrast(data[data["policy"] == "oracle"], "act")


def test_analyze_writes_the_contrast_for_a_table_with_a_policy_column(tmp_path, capsys):
    from simstudy.cli import main

    data = _study(n=40)
    data["sparsity"] = np.tile([1, 2, 3], 40)
    csv = tmp_path / "study.csv"
    data.to_csv(csv, index=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text("models:\n  - {response: act, distance: sparsity, k: 3}\nordinal: false\n"
                    "plot: false\nscale: null\ncontrast: {baseline: universal}\n")
    assert main(["analyze", str(csv), str(spec), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "contrast.csv")
    assert set(table["policy"]) == {"oracle", "icarma"} and set(table["baseline"]) == {"universal"}
    assert "omnibus_p" in capsys.readouterr().out
    spec.write_text("models:\n  - {response: act, distance: sparsity, k: 3}\nordinal: false\n"
                    "plot: false\nscale: null\ncontrast: {baseline: nope}\n")
    assert main(["analyze", str(csv), str(spec), "--out", str(tmp_path / "out2")]) == 2
    assert "baseline policy 'nope'" in capsys.readouterr().err
