"""Timing benchmark: one GAMM fit on a 1,810-rating study, and a 6-point power curve.

Usage: python benchmarks/gamm.py [--simulations 200] [--workers 2] [--skip-power]
Prints one JSON object: seconds per fit (median of repeated fits) and seconds for the curve.
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
from simstudy.analysis.power import run_power, summarize_power  # noqa: E402
from simstudy.people.rating import published_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulations", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-power", action="store_true")
    a = ap.parse_args()
    data = pd.read_csv(ROOT / "tests/data/gamm/study_a.csv")
    fits = {}
    for response, distance in (("act", "sparsity"), ("act", "proximity"),
                               ("accept", "sparsity"), ("accept", "proximity")):
        times = []
        for _ in range(a.repeats):
            t = time.perf_counter()
            fit_gamm(data, response, distance)
            times.append(time.perf_counter() - t)
        fits[f"{response}~{distance}"] = round(float(np.median(times)), 3)
    out = {"ratings": len(data), "seconds_per_fit": fits,
           "seconds_per_fit_max": max(fits.values())}
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
