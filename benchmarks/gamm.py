"""Timing benchmark: one GAMM fit on a 1,810-rating study per family, and a 6-point power curve.

Usage: python benchmarks/gamm.py [--simulations 200] [--workers 2] [--skip-power]
Prints one JSON object: seconds per fit (median of repeated fits) for the Gaussian model, the
binomial model (acceptance dichotomized at 5 or more) and the ordered-categorical model (the
7-point ratings), the CPU seconds of each (wall time is only meaningful on an idle machine),
the machine load while timing, and seconds for the curve.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from simstudy.analysis.gamm import fit_gamm  # noqa: E402
from simstudy.people.rating import published_model  # noqa: E402
from simstudy.study.power import run_power, summarize_power  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulations", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-power", action="store_true")
    a = ap.parse_args()
    data = pd.read_csv(ROOT / "tests/data/gamm/study_a.csv")
    fits, fits_cpu = {}, {}
    for response, distance in (("act", "sparsity"), ("act", "proximity"),
                               ("accept", "sparsity"), ("accept", "proximity")):
        times, cpu = [], []
        for _ in range(a.repeats):
            t, c = time.perf_counter(), time.process_time()
            fit_gamm(data, response, distance)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        fits[f"{response}~{distance}"] = round(float(np.median(times)), 3)
        fits_cpu[f"{response}~{distance}"] = round(float(np.median(cpu)), 3)
    data["accept_yes"] = (data["accept"] >= 5).astype(int)
    families = {}
    for family, response in (("binomial", "accept_yes"), ("ocat", "act")):
        for distance in ("sparsity", "proximity"):
            times, cpu = [], []
            for _ in range(a.repeats):
                t, c = time.perf_counter(), time.process_time()
                model = fit_gamm(data, response, distance, family=family,
                                 n_categories=7 if family == "ocat" else None)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            families[f"{family}:{response}~{distance}"] = {
                "seconds": round(float(np.median(times)), 3),
                "cpu_seconds": round(float(np.median(cpu)), 3),
                "converged": bool(model.fit_result_.converged), "edf": round(model.edf_, 3)}
    out = {"ratings": len(data), "load_average_1min": round(os.getloadavg()[0], 2),
           "seconds_per_fit": fits, "seconds_per_fit_max": max(fits.values()),
           "cpu_seconds_per_fit": fits_cpu,
           "family_fits": families,
           "family_seconds_max": max(f["seconds"] for f in families.values())}
    if not a.skip_power:
        grid = [60, 120, 180, 240, 300, 362]
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            rows = run_power(published_model(), grid, a.simulations, Path(tmp), seed=3,
                             workers=a.workers, progress=False)
            out["power_curve_seconds"] = round(time.perf_counter() - t, 1)
        table, smallest = summarize_power(rows)
        out["power_curve"] = {"points": len(grid), "simulations_per_point": a.simulations,
                              "workers": a.workers,
                              "power": dict(zip(table["n"].astype(str), table["power"],
                                                strict=True)),
                              "smallest_n_for_0.8": smallest}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
