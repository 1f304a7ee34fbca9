"""Replication and calibration checks of the default response model and the GAMM test.

Replication: the published design (362 participants x 5 recourses) simulated with the default
response model; act vs sparsity should be significant (p < 0.001) in >= 95% of runs with median
EDF in [3, 6] and median F in [10, 35]; acceptance vs sparsity non-significant (p > 0.05) in
>= 90%. Calibration: with no distance effect on either rating, the smooth test's rejection rate
at alpha 0.05 over simulated studies of the published size should lie in [0.02, 0.08].

Usage: python benchmarks/replication.py [--replications 100] [--null 200] [--workers 2]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from simstudy.analysis.gamm import fit_gamm  # noqa: E402
from simstudy.core.rng import generator  # noqa: E402
from simstudy.people.rating import published_model  # noqa: E402
from simstudy.people.response_params import DistanceEffect  # noqa: E402
from simstudy.study.simulated import simulate_study  # noqa: E402


def one(args: tuple[str, int, int]) -> dict:
    kind, seed, r = args
    model = published_model()
    if kind == "null":
        model = model.with_effect("act", DistanceEffect(kind="none"))
    data = simulate_study(362, model, generator(seed, "study", kind, r))
    act = fit_gamm(data, "act", "sparsity")
    acc = fit_gamm(data, "accept", "sparsity")
    return {"kind": kind, "act_p": act.test_.p, "act_edf": act.edf_, "act_F": act.test_.F,
            "accept_p": acc.test_.p}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replications", type=int, default=100)
    ap.add_argument("--null", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    tasks = [("published", a.seed, r) for r in range(a.replications)]
    tasks += [("null", a.seed, r) for r in range(a.null)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(a.workers) as pool:
        rows = list(pool.map(one, tasks, chunksize=4))
    rep = [r for r in rows if r["kind"] == "published"]
    null = [r for r in rows if r["kind"] == "null"]
    out = {"seconds": round(time.perf_counter() - t0, 1)}
    if rep:
        out["replication"] = {
            "runs": len(rep),
            "act_sparsity_share_p_below_0.001": float(np.mean([r["act_p"] < 1e-3 for r in rep])),
            "act_sparsity_median_edf": float(np.median([r["act_edf"] for r in rep])),
            "act_sparsity_median_F": float(np.median([r["act_F"] for r in rep])),
            "accept_sparsity_share_p_above_0.05": float(np.mean([r["accept_p"] > 0.05
                                                                 for r in rep])),
        }
    if null:
        # Both ratings have no effect in the null runs: 2 tests per simulated study.
        ps = [r["act_p"] for r in null] + [r["accept_p"] for r in null]
        out["calibration"] = {"studies": len(null), "tests": len(ps),
                              "false_positive_rate_0.05": float(np.mean(np.array(ps) < 0.05)),
                              "act_only_rate_0.05": float(np.mean([r["act_p"] < 0.05
                                                                   for r in null]))}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
