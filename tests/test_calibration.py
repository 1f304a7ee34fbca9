"""Calibrating the rating model to pilot ratings: the command's output, and parameter recovery."""

import hashlib

import numpy as np
import pandas as pd
import pytest
import yaml

from simstudy.cli import main
from simstudy.examples import RECOVERY_TRUE_VALUES, RECOVERY_TRUTH
from simstudy.people.response_params import RatingResponseParams
from simstudy.study.calibration import (
    calibrate,
    draw_response,
    load_calibration,
    simulate_pilot,
)

TRUTH, TRUE_VALUES = RECOVERY_TRUTH, RECOVERY_TRUE_VALUES


def _pilot(participants, seed, items=5):
    return simulate_pilot(RatingResponseParams.model_validate(TRUTH).build(), participants,
                          np.random.default_rng(seed), items=items)


def test_calibrate_writes_a_response_with_the_datas_sha256_and_covariance(tmp_path, capsys):
    data = tmp_path / "pilot.csv"
    _pilot(25, 3).to_csv(data, index=False)
    out = tmp_path / "response.yaml"
    assert main(["calibrate", str(data), "--out", str(out), "--replicates", "20"]) == 0
    doc = yaml.safe_load(out.read_text())
    cal = doc["calibration"]
    assert cal["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    k = len(cal["parameters"])
    assert k == 10 and np.shape(cal["covariance"]) == (k, k)
    cov = np.asarray(cal["covariance"])
    assert np.allclose(cov, cov.T) and (np.linalg.eigvalsh(cov) > 0).all()
    spec, loaded = load_calibration(out)
    assert spec.act.blocked_penalty == pytest.approx(doc["response"]["act"]["blocked_penalty"])
    fit = pd.read_csv(tmp_path / "response_fit.csv")
    assert {"response", "sparsity", "rating", "observed", "simulated"} <= set(fit.columns)
    assert np.allclose(fit.groupby(["response", "sparsity"])["observed"].sum(), 1.0)
    # a draw from the sampling distribution moves the calibrated parameters, nothing else
    drawn = draw_response(spec, loaded, np.random.default_rng(0))
    assert drawn.act.blocked_penalty != spec.act.blocked_penalty
    assert drawn.act.effect.threshold == spec.act.effect.threshold
    assert drawn.threshold == spec.threshold and drawn.distance == spec.distance
    assert "goodness of fit" in capsys.readouterr().out


def test_ratings_off_the_scale_are_refused_in_one_line(tmp_path, capsys):
    data = tmp_path / "pilot.csv"
    table = _pilot(5, 1)
    table.loc[0, "act"] = 9
    table.to_csv(data, index=False)
    assert main(["calibrate", str(data), "--out", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "act" in err[0] and "1..7" in err[0] and str(data) in err[0]


@pytest.mark.slow
def test_calibrated_intervals_cover_the_truth():
    """50 pilots of 30 participants x 6 ratings each: every parameter's 95% interval covers
    its true value in at least 90% of them."""
    covered = {p: 0 for p in TRUE_VALUES}
    for rep in range(50):
        fit = calibrate(_pilot(30, 1000 + rep, items=6))
        rows = fit.intervals_.set_index("parameter")
        for p, v in TRUE_VALUES.items():
            covered[p] += int(rows.loc[p, "lower"] <= v <= rows.loc[p, "upper"])
    share = {p: c / 50 for p, c in covered.items()}
    assert min(share.values()) >= 0.9, share
