"""Benchmark of the event world: a Poisson stream of Loan applicants over a simulated year.

Prints one JSON object: applicants, events, wall seconds of the simulation (set-up of the world
and decision model excluded, reported apart), the CPU seconds of this process over the same span
(on a loaded machine the one figure that still means something), events per second, the wall
seconds of every phase (``breakdown_seconds``; ``other_s`` is event scheduling and
bookkeeping), the number of policy calls, the peak resident memory of the process, and the
machine's load average before and after (wall times on a loaded machine are not speed figures).

    OMP_NUM_THREADS=1 python -m benchmarks.world --applicants 100000 --days 365
    OMP_NUM_THREADS=1 python -m benchmarks.world --applicants 1000000 --days 365
    OMP_NUM_THREADS=1 python -m benchmarks.world --applicants 3000 --policy hare
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import torch

from simstudy.core.rng import generator
from simstudy.people import PeopleSpec
from simstudy.policies.hare import HARE
from simstudy.policies.icarma import ICARMA, ICARMAConfig
from simstudy.policies.oracle import CausalOracle
from simstudy.policies.wachter import Wachter
from simstudy.sim.spec import SimulationSpec
from simstudy.sim.world import simulate
from simstudy.world.data import sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.loan import LoanSCM


def _policies() -> dict:
    return {
        "oracle": CausalOracle,
        "wachter": Wachter,
        # Multi-HARE over Wachter as in scenarios/world_year.yaml
        "hare": lambda: HARE(Wachter(), budget=30, iterations=5),
        # a briefly trained iCARMA (training time is not part of the simulation)
        "icarma": lambda: ICARMA(ICARMAConfig(epochs=20), seeds=[0], progress=False),
    }


POLICIES = _policies()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--applicants", type=int, default=100_000,
                        help="expected applicants over the horizon")
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--retrain-every", type=float, default=None,
                        help="retraining period in days (default: no retraining)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--policy", choices=sorted(POLICIES), default="oracle")
    parser.add_argument("--no-lookahead", action="store_true",
                        help="one policy call per window (default here: the lookahead)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = [round(v, 2) for v in os.getloadavg()]

    t0 = time.perf_counter()
    world = LoanSCM()
    data = sample_world_data(world, 4000, generator(args.seed, "data"))
    model = train_decision_model(data, DecisionConfig(epochs=30), args.seed)
    setup_s = time.perf_counter() - t0
    doc = {"horizon_days": args.days,
           "arrivals": {"kind": "poisson", "rate_per_day": args.applicants / args.days},
           "lookahead": not args.no_lookahead}
    if args.retrain_every:
        doc["retraining"] = {"every_days": args.retrain_every, "window_days": args.retrain_every,
                             "epochs": 5}
    spec = SimulationSpec.model_validate(doc)
    # rankings with a random threshold; 30% privileged (income / savings ranked first)
    population = PeopleSpec.model_validate({"population": {
        "actionability": {"kind": "ranking"},
        "groups": {"rule": "random", "privileged_share": 0.3},
        "hidden_mismatch_probability": 0.2}})
    t1, cpu1 = time.perf_counter(), time.process_time()
    policy = POLICIES[args.policy]
    result = simulate(spec, world, data, model, lambda ctx: policy().fit(ctx), population,
                      args.seed)
    wall, cpu = time.perf_counter() - t1, time.process_time() - cpu1
    breakdown = dict(result.timings)
    calls = breakdown.pop("policy_calls")
    breakdown["other_s"] = round(breakdown["total_s"] - sum(
        v for k, v in breakdown.items() if k != "total_s"), 3)
    out = {"applicants": int(len(result.applicants)), "events": int(len(result.events)),
           "simulated_days": args.days, "policy": args.policy,
           "lookahead": not args.no_lookahead, "model_versions": len(result.models),
           "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
           "events_per_second": round(len(result.events) / wall),
           "setup_seconds": round(setup_s, 3), "threads": args.threads,
           "breakdown_seconds": breakdown, "policy_calls": int(calls),
           # ru_maxrss is in KiB on Linux
           "peak_memory_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
           "load_before": load_before, "load_after": [round(v, 2) for v in os.getloadavg()]}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
