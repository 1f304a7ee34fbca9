"""Throughput of batched Multi-HARE (B = 30, T = 5) against a person-by-person loop.

Run from the repository root::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m benchmarks.hare [--people 1000] [--loop 20]

Prints one JSON object: people per second of the batched run over ``--people`` people (base
generator, hidden ground truth, feedback and HARE all included) and of the same policy called
once per person for ``--loop`` of them, measured in the same process.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from benchmarks._loan import loan_setup, people_for, truth
from simstudy.policies.hare import HAREParams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=20)
    parser.add_argument("--base", default="wachter", choices=["wachter", "growing_spheres"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reference", action="store_true",
                        help="the reference Multi-HARE (without keeping the incumbent)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    context, x, ids, profiles = loan_setup(args.people)
    spec = HAREParams(base={"kind": args.base}, budget=30, iterations=5,
                    keep_best=not args.reference)
    policy = spec.build().fit(context)
    people = people_for(context, x, ids, profiles)

    start = time.perf_counter()
    rec = policy.recommend(x, profiles, ids, seed=0, feedback=people.feedback())
    batched_s = time.perf_counter() - start

    n_loop = min(args.loop, len(ids))
    start = time.perf_counter()
    for i in range(n_loop):
        policy.recommend(x[i:i + 1], profiles.subset(slice(i, i + 1)), ids[i:i + 1], seed=0,
                         feedback=people.feedback())
    loop_s = time.perf_counter() - start

    print(json.dumps({
        "policy": "multi_hare", "base": args.base, "budget": 30, "iterations": 5,
        "keep_best": spec.keep_best,
        "people": len(ids), "threads": args.threads,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "batched_seconds": round(batched_s, 3),
        "batched_people_per_second": round(len(ids) / batched_s, 2),
        "loop_people": n_loop,
        "loop_seconds": round(loop_s, 3),
        "loop_people_per_second": round(n_loop / loop_s, 3),
        "speedup": round((len(ids) / batched_s) / (n_loop / loop_s), 1),
        "goal_1000_people_under_60s": bool(len(ids) / batched_s * 60 >= 1000),
        "gtd_mean": float(np.nanmean(truth(context, people, rec)["gtd"])),
        "gtd_base_mean": float(np.nanmean(truth(context, people, rec.base)["gtd"])),
        "queries_mean": float(rec.extras["queries"].mean()),
    }, indent=2))


if __name__ == "__main__":
    main()
