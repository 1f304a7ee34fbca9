"""Coverage of ``simstudy calibrate``'s 95% intervals over simulated pilots.

Usage: nice -n 10 OMP_NUM_THREADS=1 python benchmarks/calibration_coverage.py
       [--pilots 200] [--participants 30] [--items 6] [--workers 2] [--seed 0]
       [--reference t|normal] [--locations wald|profile] [--rows ROWS.jsonl]

Each pilot (``generator(seed, "calibration-coverage", i)``) is simulated from the known rating
model :data:`simstudy.examples.RECOVERY_TRUTH` (both ratings, a blocked penalty, correlated
intercepts) with ``--participants`` participants rating ``--items`` recourses each, and
calibrated by :func:`simstudy.study.calibration.calibrate` with its default intervals
(:data:`~simstudy.study.calibration.INTERVAL_METHODS`, quantile of ``--reference``). Besides
the chosen interval, the Wald interval of every parameter (on its unconstrained scale, mapped
back) with the normal and with the t quantile (participants - 1 degrees of freedom) is scored
from the same fit's covariance, so the methods are compared on the same pilots. Prints one JSON
object: per parameter the chosen method, its coverage with a 95% Clopper-Pearson interval, the
misses below and above the truth, the Wald coverages, and whether the chosen coverage lies in
[0.92, 0.98]; on the unconstrained scale (log SD, atanh correlation) the estimates' bias with
its standard error and the ratio of their SD over the pilots to the Wald standard error (root
mean square): a ratio above 1 is a standard error smaller than the estimates' spread. Then the
CPU seconds per pilot, the load average and the share of fits that converged.
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
from simstudy.study.calibration import (  # noqa: E402
    COVERAGE_PARTICIPANTS,
    INTERVAL_METHODS,
    INTERVAL_REFERENCE,
    _natural,
    calibrate,
    simulate_pilot,
)

BAND = (0.92, 0.98)


def one_pilot(task: tuple[int, int, int, int, str, str]) -> dict:
    """Simulates and calibrates pilot ``i``; per parameter, whether each interval covers the
    truth."""
    import warnings

    seed, i, participants, items, reference, locations = task
    model = RatingResponseParams.model_validate(RECOVERY_TRUTH).build()
    table = simulate_pilot(model, participants, generator(seed, "calibration-coverage", i),
                           items=items)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = calibrate(table, reference=reference, intervals={"identity": locations})
    seconds = time.process_time() - start
    se = np.sqrt(np.clip(np.diag(fit.covariance_), 0, None))
    rows = fit.intervals_.set_index("parameter")
    out = {"pilot": i, "seed": seed, "size": [participants, items], "reference": reference,
           "locations": locations,
           "seconds": seconds, "converged": bool(fit.converged_),
           "nodes": fit.quadrature_.get("nodes"), "warnings": len(fit.warnings_)}
    df = participants - 1
    for name, value, s in zip(fit.names_, fit.theta_, se, strict=True):
        natural = _natural(name, value)[0]
        truth = RECOVERY_TRUE_VALUES[natural]
        lo, hi = sorted(_natural(name, b)[1] for b in wald_interval(value, s))
        lo_t, hi_t = sorted(_natural(name, b)[1] for b in wald_interval(value, s, df=df))
        row = rows.loc[natural]
        out[natural] = {"method": row["method"], "estimate": float(row["estimate"]),
                        "covered": bool(row["lower"] <= truth <= row["upper"]),
                        "wald_covered": bool(lo <= truth <= hi),
                        "wald_t_covered": bool(lo_t <= truth <= hi_t),
                        "scale": name.split(" ")[0] if " " in name else "identity",
                        "unconstrained": float(value), "se": float(s),
                        "low_miss": bool(truth < row["lower"])}
    return out


def _unconstrained(scale: str, value: float) -> float:
    return {"log": np.log, "atanh": np.arctanh}.get(scale, float)(value)


def summarize(rows: list[dict], args) -> dict:
    params = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    coverage = {}
    for p in params:
        hits = sum(r[p]["covered"] for r in rows)
        wald = sum(r[p]["wald_covered"] for r in rows)
        wald_t = sum(r[p]["wald_t_covered"] for r in rows)
        share = hits / len(rows)
        # on the unconstrained scale (log SD, atanh correlation): the estimates' mean and SD
        # over the pilots against the truth and the Wald standard error's root mean square
        u = np.array([r[p]["unconstrained"] for r in rows])
        se = np.array([r[p]["se"] for r in rows])
        truth_u = _unconstrained(rows[0][p]["scale"], RECOVERY_TRUE_VALUES[p])
        coverage[p] = {"method": rows[0][p]["method"], "coverage": share,
                       "coverage_interval": list(clopper_pearson(hits, len(rows))),
                       "misses_below": sum(r[p]["low_miss"] for r in rows),
                       "misses_above": sum(not r[p]["covered"] and not r[p]["low_miss"]
                                           for r in rows),
                       "wald_normal_coverage": wald / len(rows),
                       "wald_t_coverage": wald_t / len(rows),
                       "mean_estimate": float(np.mean([r[p]["estimate"] for r in rows])),
                       "truth": RECOVERY_TRUE_VALUES[p],
                       "scale": rows[0][p]["scale"],
                       "bias_unconstrained": float(u.mean() - truth_u),
                       "bias_se": float(u.std(ddof=1) / np.sqrt(len(u))),
                       "sd_over_se": float(u.std(ddof=1) / np.sqrt(np.mean(se ** 2))),
                       "within_band": BAND[0] <= share <= BAND[1]}
    return {"pilots": len(rows), "participants": args.participants, "items": args.items,
            "seed": args.seed, "reference": args.reference, "locations": args.locations,
            "truth": RECOVERY_TRUTH,
            "band": list(BAND),
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
    ap.add_argument("--participants", type=int, default=COVERAGE_PARTICIPANTS)
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", default=INTERVAL_REFERENCE, choices=["t", "normal"],
                    help="the intervals' quantile (calibrate's reference=)")
    ap.add_argument("--locations", default=INTERVAL_METHODS["identity"],
                    choices=["wald", "profile"], help="interval method of the intercepts, "
                    "slopes and the penalty (calibrate's intervals={'identity': ...})")
    ap.add_argument("--rows", default=None, help="also write the per-pilot rows (JSON lines); "
                    "pilots already in the file are read, not run again (same seed and size)")
    args = ap.parse_args()
    rows: dict[int, dict] = {}
    if args.rows and Path(args.rows).exists():  # resume: the pilots already written
        done = [json.loads(line) for line in Path(args.rows).read_text().splitlines() if line]
        rows = {r["pilot"]: r for r in done if r["pilot"] < args.pilots
                and r.get("seed") == args.seed and r.get("reference") == args.reference
                and r.get("locations", "wald") == args.locations
                and r.get("size") == [args.participants, args.items]}
    tasks = [(args.seed, i, args.participants, args.items, args.reference, args.locations)
             for i in range(args.pilots) if i not in rows]
    with make_executor("local", workers=args.workers) as ex:
        for index, row in ex.map_unordered(one_pilot, tasks):
            rows[tasks[index][1]] = row
            if args.rows:
                with open(args.rows, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print(json.dumps(summarize([rows[i] for i in sorted(rows)], args), indent=1))


if __name__ == "__main__":
    main()
