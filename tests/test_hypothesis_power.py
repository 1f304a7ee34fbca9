"""Power per hypothesis from a scenario: the scenario's response drives it, the pool bounds N."""

import copy
import hashlib

import numpy as np
import pandas as pd
import pytest
import yaml
from test_scenario_study import SCENARIO

from simstudy.cli import main
from simstudy.core.documents import DocumentError
from simstudy.planning.study_power import run_study_power
from simstudy.run.scenario import load_scenario

HYPOTHESES = [{"contrast": ["personal", "universal"], "response": "act", "direction": "greater"},
              {"distance": "sparsity", "response": "act", "direction": "decreasing",
               "adjust": ["blocked"]}]


def _doc(response=None, **study):
    doc = copy.deepcopy(SCENARIO)
    if response is not None:
        doc["response"] = response
    doc["study"].update(study)
    return doc


def _write(tmp_path, doc, name):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_scenarios_response_drives_the_power(tmp_path):
    power = {"participants": [16], "simulations": 4}
    estimates = {}
    for penalty in (0.0, 6.0):
        doc = _doc({"kind": "rating", "act": {"blocked_penalty": penalty}},
                   hypotheses=HYPOTHESES[:1], power=power)
        res = run_study_power(_write(tmp_path, doc, f"s{penalty}.yaml"), tmp_path / f"p{penalty}",
                              workers=1, progress=False)
        parts = pd.read_csv(tmp_path / f"p{penalty}" / "parts" / "n16.csv")
        estimates[penalty] = parts["estimate:H1"].mean()
        effects = {e["parameter"]: e for e in res["effects"]}
        assert effects["act.blocked_penalty"]["value"] == penalty
        assert effects["act.blocked_penalty"]["source"] == "scenario"
        assert effects["act.sd_noise"]["source"] == "default (assumed)"
    # personalized recourses are blocked less often: the penalty is what separates them
    assert estimates[6.0] > estimates[0.0] + 0.3


def test_a_response_stated_twice_is_refused(tmp_path):
    doc = _doc({"kind": "rating"})
    doc["study"]["response"] = {"kind": "rating", "threshold": 4}
    with pytest.raises(DocumentError, match="study.response"):
        load_scenario(_write(tmp_path, doc, "twice.yaml"))


def test_an_n_above_the_pool_is_refused_in_one_line(tmp_path, capsys):
    doc = _doc(hypotheses=HYPOTHESES, power={"participants": [8, 1000], "simulations": 2})
    path = _write(tmp_path, doc, "big.yaml")
    assert main(["--quiet", "power", str(path), "--out", str(tmp_path / "p"),
                 "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study.power.participants" in err[0] and "1000" in err[0]
    assert "with_replacement" in err[0] and str(path) in err[0]


def test_power_per_hypothesis_jointly_with_failed_fits_and_the_pool(tmp_path, capsys):
    doc = _doc(hypotheses=[*HYPOTHESES, {"gap": ["privileged", "non_privileged"],
                                         "response": "act"}],
               power={"participants": [8, 16], "simulations": 3})
    path = _write(tmp_path, doc, "hyp.yaml")
    assert main(["--quiet", "power", str(path), "--out", str(tmp_path / "p"),
                 "--workers", "1"]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "p" / "power.csv")
    assert {"H1", "H2", "H3", "all"} <= set(table["hypothesis"])
    assert {"failed", "fitted"} <= set(table.columns)
    assert (table["failed"] + table["skipped"] + table["fitted"] == table["simulations"]).all()
    # joint power never exceeds the power of any one hypothesis in the same simulations
    parts = pd.read_csv(tmp_path / "p" / "parts" / "n16.csv")
    assert (parts["significant:all"] <= parts[["significant:H1", "significant:H2",
                                               "significant:H3"]].min(axis=1)).all()
    assert "act.blocked_penalty = 2.0  [default (assumed)]" in out
    assert "eligible of" in out and "privileged" in out
    # the preregistration page of the same study, with N read from this power analysis
    page = tmp_path / "prereg.md"
    assert main(["preregister", str(path), "--power", str(tmp_path / "p"), "--out",
                 str(page)]) == 0
    text = page.read_text()


    assert hashlib.sha256(path.read_bytes()).hexdigest() in text
    for needed in ("act: personal > universal", "one-sided, greater", "Holm",
                   "alpha = 0.05", "act.blocked_penalty | 2.0 | default (assumed)",
                   "failed fits", "Eligible pool", "exclude_blocked"):
        assert needed in text, needed
    # analyze tests exactly the scenario's hypotheses on the run's study table
    assert main(["analyze", str(tmp_path / "p" / "run" / "study.csv"), str(path), "--out",
                 str(tmp_path / "a")]) == 0
    tested = pd.read_csv(tmp_path / "a" / "hypotheses.csv")
    assert tested["hypothesis"].tolist() == ["H1", "H2", "H3"]
    assert tested["direction"].tolist() == ["greater", "decreasing", "two-sided"]


def test_a_hypothesis_naming_an_unknown_policy_is_refused(tmp_path, capsys):
    doc = _doc(hypotheses=[{"contrast": ["icarma", "universal"], "response": "act"}])
    path = _write(tmp_path, doc, "unknown.yaml")
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr()
    text = err.out + err.err
    assert "study.hypotheses[0]" in text and "icarma" in text


def test_a_hypothesis_reading_a_missing_column_is_refused_before_simulating(tmp_path, capsys):
    doc = _doc(hypotheses=[{"gap": ["a", "b"], "by": "income_band", "response": "act"}],
               power={"participants": [8], "simulations": 2})
    path = _write(tmp_path, doc, "missing.yaml")
    assert main(["--quiet", "power", str(path), "--out", str(tmp_path / "p"),
                 "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study.hypotheses[0].by" in err[0] and "income_band" in err[0]
    assert not (tmp_path / "p" / "parts").exists()


def test_a_calibrated_response_and_its_uncertainty(tmp_path, capsys):
    doc = _doc(hypotheses=HYPOTHESES[:1], power={"participants": [16], "simulations": 3})
    path = _write(tmp_path, doc, "cal.yaml")
    assert main(["--quiet", "study", str(path), "--out", str(tmp_path / "run")]) == 0
    pilot = tmp_path / "run" / "study.csv"
    assert main(["calibrate", str(pilot), "--out", str(tmp_path / "r.yaml"), "--ratings",
                 "act", "--replicates", "10"]) == 0
    capsys.readouterr()
    assert main(["--quiet", "power", str(path), "--out", str(tmp_path / "p"), "--workers", "1",
                 "--response", str(tmp_path / "r.yaml"), "--uncertainty", "on"]) == 0
    out = capsys.readouterr().out
    sha = hashlib.sha256(pilot.read_bytes()).hexdigest()[:12]
    assert "act.blocked_penalty = " in out and f"sha256:{sha}" in out
    assert "expected power over the calibration's uncertainty" in out
    expected = pd.read_csv(tmp_path / "p" / "assurance.csv")
    point = pd.read_csv(tmp_path / "p" / "power.csv")
    assert set(expected["hypothesis"]) == set(point["hypothesis"])
    # each simulated study drew its own parameters: the draws differ from the estimate's runs
    drawn = pd.read_csv(tmp_path / "p" / "assurance" / "parts" / "n16.csv")
    fixed = pd.read_csv(tmp_path / "p" / "parts" / "n16.csv")
    assert not np.allclose(drawn["estimate:H1"], fixed["estimate:H1"])
    # a calibration without a covariance (no positive-definite Hessian): refused in one line
    doc = yaml.safe_load((tmp_path / "r.yaml").read_text())
    k = len(doc["calibration"]["parameters"])
    doc["calibration"]["covariance"] = [[float("nan")] * k for _ in range(k)]
    (tmp_path / "nan.yaml").write_text(yaml.safe_dump(doc))
    assert main(["--quiet", "power", str(path), "--out", str(tmp_path / "q"), "--workers", "1",
                 "--response", str(tmp_path / "nan.yaml"), "--uncertainty", "on"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nan.yaml: calibration.covariance: not finite" in err[0]
    assert not (tmp_path / "q" / "parts").exists()


def test_with_replacement_stated_an_n_above_the_pool_runs(tmp_path):
    doc = _doc(hypotheses=HYPOTHESES[:1], power={"participants": [100], "simulations": 1,
                                                 "sample": "with_replacement"})
    res = run_study_power(_write(tmp_path, doc, "repl.yaml"), tmp_path / "p", workers=1,
                          progress=False)
    assert res["pool"]["eligible"] < 100
    assert res["summary"]["sample"] == "with_replacement"
    assert set(res["table"]["n"]) == {100}
