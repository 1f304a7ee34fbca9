"""Speed of the causal oracle on the published Loan set-up.

All rejected deployment applicants of a 20,000-sample Loan world, all 4 features individually
actionable, 25 grid values each, plausibility enforced. The one-by-one enumeration (every action
of a person evaluated separately) is timed in the same run on a sample of candidate actions and
extrapolated to whole applicants, because enumerating even one applicant's 26^4 actions one at a
time takes minutes.

    python benchmarks/oracle.py [--seed 0] [--sample-candidates 3000] [--limit N]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np
import torch

from simstudy.core.rng import derive_seed, entity_uniforms, generator
from simstudy.metrics import evaluate_recourse
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.policies.oracle import CausalOracle, oracle_grid
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample-candidates", type=int, default=3000)
    parser.add_argument("--limit", type=int, default=None, help="first N rejected applicants")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    world = LoanSCM()
    data = sample_world_data(world, 20000, generator(args.seed, "world-sample"))
    model, meta = ModelCache().decision_model(data, DecisionConfig(),
                                              derive_seed(args.seed, "decision-model"))
    with torch.no_grad():
        rejected = np.flatnonzero(~model.approves(data.x_test).numpy())
    if args.limit:
        rejected = rejected[: args.limit]
    x = data.x_test.numpy()[rejected]
    features = world.roles.actionable
    scores, levels = RankingSampler("uniform", 4).sample(
        features, entity_uniforms(args.seed, "actionability", rejected, 2))
    profiles = ActionabilityProfiles(features, scores, levels,
                                     CostProfile(shape="constant").weights(scores, levels))
    oracle = CausalOracle(n_values=25).fit(RecourseContext(world, model, data, args.seed))

    t0 = time.perf_counter()
    rec = oracle.recommend(x, profiles, rejected)
    seconds = time.perf_counter() - t0
    ev = evaluate_recourse(world, model, x, rec, profiles, data.feature_range)

    # One-by-one: the same feasibility check, one candidate action per call.
    names = world.roles.names
    idx = [names.index(f) for f in features]
    grid, usable = oracle_grid(x[:, idx], data.lower.numpy()[idx], data.upper.numpy()[idx], 25)
    rng = np.random.default_rng(0)
    per_person = []
    for i in range(len(x)):
        options = [[None] + list(grid[i, k][usable[i, k]]) for k in range(4)]
        per_person.append(int(np.prod([len(o) for o in options])) - 1)
    sample_people = rng.choice(len(x), size=min(20, len(x)), replace=False)
    calls, t1 = 0, time.perf_counter()
    budget = args.sample_candidates
    for i in sample_people:
        options = [[None] + list(grid[i, k][usable[i, k]]) for k in range(4)]
        with torch.no_grad():
            u = world.abduct(torch.from_numpy(x[i:i + 1]))
            lp = world.log_prob(torch.from_numpy(x[i:i + 1])).numpy()
        for combo in itertools.islice(itertools.product(*options), 1,
                                      1 + budget // len(sample_people)):
            inter = np.zeros((1, len(names)), bool)
            vals = x[i:i + 1].copy()
            for k, v in zip(idx, combo, strict=True):
                if v is not None:
                    inter[0, k], vals[0, k] = True, v
            oracle._feasible(u, lp, torch.from_numpy(inter), torch.from_numpy(vals))
            calls += 1
    one_by_one_seconds_per_candidate = (time.perf_counter() - t1) / calls
    one_by_one_seconds_per_applicant = one_by_one_seconds_per_candidate * float(
        np.mean(per_person))

    print(json.dumps({
        "rejected_applicants": int(len(x)),
        "features": 4,
        "grid_values": 25,
        "seconds": round(seconds, 2),
        "applicants_per_second": round(len(x) / seconds, 2),
        "validity": round(float(ev["valid"].mean()), 4),
        "mean_candidates_per_applicant": float(np.mean(per_person)),
        "mean_candidates_evaluated": float(rec.extras["candidates_evaluated"].mean()),
        "one_by_one_candidates_timed": calls,
        "one_by_one_seconds_per_candidate": one_by_one_seconds_per_candidate,
        "one_by_one_applicants_per_second": 1.0 / one_by_one_seconds_per_applicant,
        "speedup": round(seconds and (len(x) / seconds) * one_by_one_seconds_per_applicant, 1),
        "torch_threads": args.threads,
        "decision_model_sha256": meta["state_dict_sha256"],
    }, indent=2))


if __name__ == "__main__":
    main()
