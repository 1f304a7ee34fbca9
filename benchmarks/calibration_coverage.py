"""Coverage of ``simstudy calibrate``'s 95% intervals over simulated pilots.

Usage: nice -n 10 OMP_NUM_THREADS=1 python benchmarks/calibration_coverage.py
       [--pilots 200] [--participants 30] [--items 6] [--workers 2] [--seed 0]
       [--rows ROWS.jsonl]

Each pilot (``generator(seed, "calibration-coverage", i)``) is simulated from the known rating
model :data:`simstudy.examples.RECOVERY_TRUTH` (both ratings, a blocked penalty, correlated
intercepts) with ``--participants`` participants rating ``--items`` recourses each, and
calibrated by :func:`simstudy.study.calibration.calibrate` with its default intervals
(:data:`~simstudy.study.calibration.INTERVAL_METHODS`). Besides the chosen interval, the Wald
interval of every parameter (on its unconstrained scale, mapped back) is scored from the same
fit's covariance, so the two methods are compared on the same pilots. Prints one JSON object:
per parameter the chosen method, its coverage with a 95% Clopper-Pearson interval, the Wald
coverage, and whether the chosen coverage lies in [0.92, 0.98]; the CPU seconds per pilot,
the load average and the share of fits that converged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from simstudy.core.executors import make_executor  # noqa: E402
from simstudy.core.intervals import clopper_pearson, wald_interval  # noqa: E402
from simstudy.core.rng import generator  # noqa: E402
from simstudy.examples import RECOVERY_TRUE_VALUES, RECOVERY_TRUTH  # noqa: E402
from simstudy.people.response_params import RatingResponseParams  # noqa: E402
from simstudy.study.calibration import _natural, calibrate, simulate_pilot  # noqa: E402

BAND = (0.92, 0.98)


def one_pilot(task: tuple[int, int, int, int]) -> dict:
    """Simulates and calibrates pilot ``i``; per parameter, whether each interval covers the
    truth."""
    import warnings

    seed, i, participants, items = task
    model = RatingResponseParams.model_validate(RECOVERY_TRUTH).build()
    table = simulate_pilot(model, participants, generator(seed, "calibration-coverage", i),
                           items=items)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = calibrate(table)
    seconds = time.process_time() - start
    se = np.sqrt(np.clip(np.diag(fit.covariance_), 0, None))
    rows = fit.intervals_.set_index("parameter")
    out = {"pilot": i, "seconds": seconds, "converged": bool(fit.converged_),
           "nodes": fit.quadrature_.get("nodes"), "warnings": len(fit.warnings_)}
    for name, value, s in zip(fit.names_, fit.theta_, se, strict=True):
        natural = _natural(name, value)[0]
        truth = RECOVERY_TRUE_VALUES[natural]
        lo, hi = sorted(_natural(name, b)[1] for b in wald_interval(value, s))
        row = rows.loc[natural]
        out[natural] = {"method": row["method"], "estimate": float(row["estimate"]),
                        "covered": bool(row["lower"] <= truth <= row["upper"]),
                        "wald_covered": bool(lo <= truth <= hi)}
    return out


def summarize(rows: list[dict], args) -> dict:
    params = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    coverage = {}
    for p in params:
        hits = sum(r[p]["covered"] for r in rows)
        wald = sum(r[p]["wald_covered"] for r in rows)
        share = hits / len(rows)
        coverage[p] = {"method": rows[0][p]["method"], "coverage": share,
                       "coverage_interval": list(clopper_pearson(hits, len(rows))),
                       "wald_coverage": wald / len(rows),
                       "mean_estimate": float(np.mean([r[p]["estimate"] for r in rows])),
                       "truth": RECOVERY_TRUE_VALUES[p],
                       "within_band": BAND[0] <= share <= BAND[1]}
    return {"pilots": len(rows), "participants": args.participants, "items": args.items,
            "seed": args.seed, "truth": RECOVERY_TRUTH, "band": list(BAND),
            "all_within_band": all(c["within_band"] for c in coverage.values()),
            "coverage": coverage,
            "converged": float(np.mean([r["converged"] for r in rows])),
            "with_warnings": float(np.mean([r["warnings"] > 0 for r in rows])),
            "nodes": {str(k): int(v) for k, v in zip(*np.unique(
                [r["nodes"] for r in rows], return_counts=True), strict=True)},
            "cpu_seconds_per_pilot": float(np.mean([r["seconds"] for r in rows])),
            "workers": args.workers, "load_average": list(os.getloadavg())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pilots", type=int, default=200)
    ap.add_argument("--participants", type=int, default=30)
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", default=None, help="also write the per-pilot rows (JSON lines)")
    args = ap.parse_args()
    tasks = [(args.seed, i, args.participants, args.items) for i in range(args.pilots)]
    rows: dict[int, dict] = {}
    with make_executor("local", workers=args.workers) as ex:
        for index, row in ex.map_unordered(one_pilot, tasks):
            rows[index] = row
            if args.rows:
                with open(args.rows, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print(json.dumps(summarize([rows[i] for i in sorted(rows)], args), indent=1))


if __name__ == "__main__":
    main()
