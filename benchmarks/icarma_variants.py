"""Short iCARMA trainings of named variants side by side, with the cheapest valid actions.

Loan world (20,000 samples, data seed 0, the published MLP), every rejected deployment
applicant. For each variant (``--variants`` as JSON: a list of :class:`ICARMAConfig` overrides)
one model (training seed 0) is trained for ``--epochs`` epochs and judged by the true SCM under
the hard-constraint conditions (all 4, 2 and 1 actionable features) and the soft linear ranking:
validity, plausibility, hap, features acted on and the median log-density change. With
``--oracle`` the causal oracle *without* its plausibility constraint (the cheapest valid action
on the grid) gives the plausibility that minimal-cost recourse has in this world, the reference
a plausibility regulariser should lift iCARMA above. Prints one JSON line per variant.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_variants --epochs 40 \\
        --variants '[{}, {"action_space": "value"}, {"validity": "penalty"}]' [--oracle]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from benchmarks.icarma_tables import conditions
from simstudy.core.rng import generator
from simstudy.metrics import evaluate_recourse
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, ICARMAConfig
from simstudy.policies.oracle import CausalOracle
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache

KEEP = ("hard_all4", "hard_2", "hard_1", "rank_linear")


def judge(world, model, x, ids, profiles, policy, range_) -> dict:
    out = {}
    for name in KEEP:
        rec = policy.recommend(x.numpy(), profiles[name], ids)
        r = evaluate_recourse(world, model, x, rec, profiles[name], range_)
        f = r["found"]
        out[name] = {"validity": round(float(r["valid"].mean()), 3),
                     "plausibility": round(float(r["plausible"][f].mean()), 3),
                     "hap": round(float(r["hard_action"][f].mean()), 3),
                     "acted": round(float(r["sparsity"][f].mean()), 2),
                     "median_logp_change": round(float(np.median((r["logp_cf"] - r["logp"])[f])),
                                                 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--variants", default="[{}]")
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--oracle-limit", type=int, default=600)
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = LoanSCM()
    data = sample_world_data(world, 20000, generator(0, "world-sample"))
    model, _ = ModelCache().decision_model(data, DecisionConfig(), seed=0)
    context = RecourseContext(world, model, data, seed=0)
    x = data.x_test[~model.approves(data.x_test)]
    ids = np.arange(len(x))
    profiles = conditions(world.roles.actionable, ids, 0)
    for overrides in json.loads(args.variants):
        config = ICARMAConfig(epochs=args.epochs, **overrides)
        t0, c0 = time.perf_counter(), time.process_time()
        policy = ICARMA(config, seeds=[0], cache=False, progress=False).fit(context)
        print(json.dumps({"variant": overrides, "epochs": args.epochs,
                          "train_seconds": round(time.perf_counter() - t0, 1),
                          "train_cpu_seconds": round(time.process_time() - c0, 1),
                          "load": os.getloadavg()[0],
                          "final_multiplier": round(policy.meta_["final_multiplier"], 1),
                          **judge(world, model, x, ids, profiles, policy,
                                  data.feature_range)}), flush=True)
    if args.oracle:
        m = min(args.oracle_limit, len(x))
        sub = {k: v.subset(slice(0, m)) for k, v in profiles.items()}
        oracle = CausalOracle(plausibility=False).fit(context)
        print(json.dumps({"variant": "oracle without plausibility constraint", "applicants": m,
                          **judge(world, model, x[:m], ids[:m], sub, oracle,
                                  data.feature_range)}), flush=True)


if __name__ == "__main__":
    main()
