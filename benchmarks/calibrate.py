"""``simstudy calibrate`` on a 30-participant pilot: wall time and recovered against true values.

A pilot of ``--participants`` participants x ``--items`` recourses (sparsity uniform on 1..5,
each blocked with probability 0.3) is simulated from known rating-model parameters
(:data:`TRUTH`), written to CSV, and calibrated by the command (``simstudy calibrate``, in this
process, goodness-of-fit table included); the JSON gives the seconds, the machine's load average
and, per parameter, the true value, the estimate, its 95% interval and whether it covers the
truth.

    OMP_NUM_THREADS=1 python benchmarks/calibrate.py [--participants 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simstudy.cli import main  # noqa: E402

#: The parameters the pilot is simulated from (the calibrated model's form: linear distance
#: effects, no random slopes).
from simstudy.examples import RECOVERY_TRUE_VALUES as TRUE_VALUES  # noqa: E402
from simstudy.examples import RECOVERY_TRUTH as TRUTH  # noqa: E402
from simstudy.people.response_params import RatingResponseParams  # noqa: E402
from simstudy.study.calibration import simulate_pilot  # noqa: E402


def run(participants: int, items: int, seed: int) -> dict:
    model = RatingResponseParams.model_validate(TRUTH).build()
    table = simulate_pilot(model, participants, np.random.default_rng(seed), items=items)
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "pilot.csv", Path(tmp) / "response.yaml"
        table.to_csv(data, index=False)
        load = os.getloadavg()
        start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):  # the command's print-out; JSON on stdout
            code = main(["calibrate", str(data), "--out", str(out)])
        seconds = time.perf_counter() - start
        intervals = pd.read_csv(Path(tmp) / "response_intervals.csv").set_index("parameter")
    rows = {p: {"true": v, "estimate": float(intervals.loc[p, "estimate"]),
                "lower": float(intervals.loc[p, "lower"]),
                "upper": float(intervals.loc[p, "upper"]),
                "covered": bool(intervals.loc[p, "lower"] <= v <= intervals.loc[p, "upper"])}
            for p, v in TRUE_VALUES.items()}
    return {"participants": participants, "items": items, "seed": seed, "exit_code": code,
            "seconds": round(seconds, 2), "load_average_before": load,
            "load_average_after": os.getloadavg(), "cores": os.cpu_count(),
            "covered": sum(r["covered"] for r in rows.values()), "parameters": rows}


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--participants", type=int, default=30)
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(run(args.participants, args.items, args.seed), indent=1))


if __name__ == "__main__":
    main_()
