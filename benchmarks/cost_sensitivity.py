"""The causal oracle's soft-ranking results over the cost profiles' alpha and weight placement.

Loan world (20,000 samples, the published MLP decision model), the first ``--limit`` rejected
deployment applicants, uniform rankings over all four globally actionable features. For alpha in
``--alphas`` and each weight placement (``outside`` the square: the paper's weighted L2, the
default; ``inside``: ``sqrt(sum (w δ)^2)``), the oracle is solved under the constant, concave,
linear and convex profiles; it prints validity, plausibility and hap (share of recourses acting
on the least-preferred feature) with the published oracle values beside them, as JSON and as a
Markdown table. The constant profile does not depend on alpha or placement (all weights are 1
and both placements order actions alike), so it is solved once.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.cost_sensitivity [--limit 600] [--alphas 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from simstudy.core.rng import entity_uniforms, generator
from simstudy.metrics import evaluate_recourse
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.policies.oracle import CausalOracle
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache

#: Published oracle hap under soft rankings (validity 0.959, plausibility 1.0 throughout).
PUBLISHED_HAP = {"constant": 0.614, "concave": 0.492, "linear": 0.443, "convex": 0.387}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=600, help="first N rejected applicants")
    parser.add_argument("--alphas", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    args = parser.parse_args()
    torch.set_num_threads(1)

    world = LoanSCM()
    data = sample_world_data(world, 20000, generator(args.seed, "world-sample"))
    # the world and decision model of benchmarks/icarma_tables.py, so the tables compare
    model, _ = ModelCache().decision_model(data, DecisionConfig(), seed=args.seed)
    with torch.no_grad():
        rejected = np.flatnonzero(~model.approves(data.x_test).numpy())[: args.limit]
    x = data.x_test.numpy()[rejected]
    features = world.roles.actionable
    scores, levels = RankingSampler("uniform", 4).sample(
        features, entity_uniforms(args.seed, "actionability", rejected, 2))
    oracle = CausalOracle(n_values=25).fit(RecourseContext(world, model, data, args.seed))

    def solve(shape: str, alpha: float, placement: str) -> dict:
        cost = CostProfile(shape=shape, alpha=alpha, placement=placement)
        profiles = ActionabilityProfiles(features, scores, levels, cost.weights(scores, levels),
                                         "ranking", placement)
        t0 = time.perf_counter()
        rec = oracle.recommend(x, profiles, rejected)
        ev = evaluate_recourse(world, model, x, rec, profiles, data.feature_range)
        found = ev["found"]
        return {"validity": float(ev["valid"].mean()),
                "plausibility": float(ev["plausible"][found].mean()),
                "hap": float(ev["hard_action"][found].mean()),
                "seconds": time.perf_counter() - t0}

    rows = [{"alpha": None, "placement": "any", "shape": "constant",
             **solve("constant", 1.0, "outside")}]
    for alpha in args.alphas:
        for placement in ("outside", "inside"):
            for shape in ("concave", "linear", "convex"):
                rows.append({"alpha": alpha, "placement": placement, "shape": shape,
                             **solve(shape, alpha, placement)})
    print(json.dumps({"applicants": len(x), "seed": args.seed, "rows": rows}, indent=1))
    print(f"\n{len(x)} rejected applicants; hap (validity) per cost profile; "
          "published hap in the last row")
    print("\n| alpha | placement | constant | concave | linear | convex |")
    print("|---|---|---|---|---|---|")
    const = rows[0]
    for alpha in args.alphas:
        for placement in ("outside", "inside"):
            cells = [f"{const['hap']:.3f} ({const['validity']:.3f})"]
            for shape in ("concave", "linear", "convex"):
                r = next(r for r in rows if r["alpha"] == alpha and r["placement"] == placement
                         and r["shape"] == shape)
                cells.append(f"{r['hap']:.3f} ({r['validity']:.3f})")
            print(f"| {alpha:g} | {placement} | " + " | ".join(cells) + " |")
    print("| published | | " + " | ".join(f"{PUBLISHED_HAP[s]:.3f} (0.959)" for s in
                                          ("constant", "concave", "linear", "convex")) + " |")


if __name__ == "__main__":
    main()
