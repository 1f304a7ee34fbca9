"""Benchmark of the event world: a Poisson stream of Loan applicants over a simulated year.

Prints one JSON object: applicants, events, wall seconds of the simulation (set-up of the world
and decision model excluded, reported apart), events per second.

    OMP_NUM_THREADS=1 python -m benchmarks.world --applicants 100000 --days 365
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from simstudy.people import PeopleSpec
from simstudy.policies.oracle import CausalOracle
from simstudy.rng import generator
from simstudy.sim.spec import SimulationSpec
from simstudy.sim.world import fitted, simulate
from simstudy.world.data import sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.loan import LoanSCM


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--applicants", type=int, default=100_000,
                        help="expected applicants over the horizon")
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--retrain-every", type=float, default=None,
                        help="retraining period in days (default: no retraining)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    world = LoanSCM()
    data = sample_world_data(world, 4000, generator(args.seed, "data"))
    model = train_decision_model(data, DecisionConfig(epochs=30), args.seed)
    setup_s = time.perf_counter() - t0
    doc = {"horizon_days": args.days,
           "arrivals": {"kind": "poisson", "rate_per_day": args.applicants / args.days}}
    if args.retrain_every:
        doc["retraining"] = {"every_days": args.retrain_every, "window_days": args.retrain_every,
                             "epochs": 5}
    spec = SimulationSpec.model_validate(doc)
    # rankings with a random threshold; 30% privileged (income / savings ranked first)
    population = PeopleSpec.model_validate({"population": {
        "actionability": {"kind": "ranking"},
        "groups": {"rule": "random", "privileged_share": 0.3},
        "hidden_mismatch_probability": 0.2}})
    t1 = time.perf_counter()
    result = simulate(spec, world, data, model, fitted(CausalOracle), population, args.seed)
    wall = time.perf_counter() - t1
    out = {"applicants": int(len(result.applicants)), "events": int(len(result.events)),
           "simulated_days": args.days, "policy": "oracle", "model_versions": len(result.models),
           "wall_seconds": round(wall, 3), "events_per_second": round(len(result.events) / wall),
           "setup_seconds": round(setup_s, 3), "threads": args.threads,
           "breakdown_seconds": result.timings}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
