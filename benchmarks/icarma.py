"""Times iCARMA: training, inference for 10,000 applicants, and the causal oracle on the same.

A fast training of a model that does not work is not a result, so the JSON reports the trained
model's validity and plausibility (on the same applicants, judged by the world) next to its
training seconds (wall and CPU, per epoch too), with the machine's load before training and at
the end: wall seconds measured while other jobs load the machine are not speed figures. Prints
one JSON document. Goals on 2 CPU cores: training under 10 minutes, inference for 10,000
applicants under 2 seconds. The oracle (a grid search per person) is timed on ``--oracle-n`` of
the same applicants and, when that is fewer than all, extrapolated linearly.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma [--oracle-n N] [--epochs N] [--lr LR]
        [--margin M] [--plausibility-weight W]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch

from simstudy.core.registry import entries
from simstudy.core.rng import entity_uniforms, generator
from simstudy.metrics import evaluate_recourse
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, ICARMAConfig
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="applicants for inference")
    parser.add_argument("--epochs", type=int, default=None, help="override training epochs")
    parser.add_argument("--oracle-n", type=int, default=200,
                        help="applicants the oracle is timed on (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--margin", type=float, default=None)
    parser.add_argument("--plausibility-weight", type=float, default=None)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    world = LoanSCM()
    data = sample_world_data(world, 20000, generator(args.seed, "world-sample"))
    model, _ = ModelCache().decision_model(data, DecisionConfig(), seed=args.seed)
    context = RecourseContext(world, model, data, seed=args.seed)
    overrides = {"epochs": args.epochs, "lr": args.lr, "margin": args.margin,
                 "plausibility_weight": args.plausibility_weight}
    config = ICARMAConfig(**{k: v for k, v in overrides.items() if v is not None})

    load_before = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    policy = ICARMA(config, seeds=[args.seed], cache=False, progress=True).fit(context)
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0

    # deployment applicants: fresh draws from the world that the model rejects
    pool = world.sample(4 * args.n, generator(args.seed, "benchmark-applicants"))
    x = pool[~model.approves(pool)][: args.n].numpy()
    ids = np.arange(len(x))
    features = world.roles.actionable
    scores, levels = RankingSampler().sample(features, entity_uniforms(args.seed, "bench", ids, 2))
    profiles = ActionabilityProfiles(features, scores, levels,
                                     CostProfile(shape="linear").weights(scores, levels))
    policy.recommend(x[:10], profiles.subset(slice(0, 10)), ids[:10])  # warm-up
    t0 = time.perf_counter()
    rec = policy.recommend(x, profiles, ids)
    infer_s = time.perf_counter() - t0
    ev = evaluate_recourse(world, model, x, rec, profiles, data.feature_range)
    found = ev["found"]

    oracle: dict = {"available": "oracle" in entries("policy")}
    if oracle["available"] and args.oracle_n > 0:
        m = min(args.oracle_n, len(x))
        solver = entries("policy")["oracle"].model_validate({"kind": "oracle"}).build().fit(context)
        t0 = time.perf_counter()
        solver.recommend(x[:m], profiles.subset(slice(0, m)), ids[:m])
        secs = time.perf_counter() - t0
        oracle.update({"applicants_timed": m, "seconds": secs,
                       "seconds_for_all": secs * len(x) / m, "extrapolated": m < len(x)})
    print(json.dumps({
        "applicants": len(x),
        "config": config.to_json(),
        "training_seconds": train_s,
        "training_cpu_seconds": train_cpu,
        "seconds_per_epoch": train_s / policy.meta_["epochs_run"],
        "cpu_seconds_per_epoch": train_cpu / policy.meta_["epochs_run"],
        "training_epochs_run": policy.meta_["epochs_run"],
        "final_multiplier": policy.meta_["final_multiplier"],
        "best_epoch": policy.meta_["best_epoch"],
        "inference_seconds": infer_s,
        "inference_found_share": float(rec.found.mean()),
        "validity": float(ev["valid"].mean()),
        "plausibility_among_found": float(ev["plausible"][found].mean()) if found.any() else None,
        "hap_among_found": float(ev["hard_action"][found].mean()) if found.any() else None,
        "violations": int(ev["violation"].sum()),
        "validation_check": policy.meta_["deployed_check"],
        "load_average_before_training": load_before,
        "load_average": os.getloadavg(),
        "oracle": oracle,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "goals": {"training_seconds": 600, "inference_seconds": 2.0},
    }, indent=2))


if __name__ == "__main__":
    main()
