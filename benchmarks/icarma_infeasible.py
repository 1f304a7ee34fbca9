"""How many of iCARMA's training person-profiles no action inside the clamp can make valid, and
how much of a trained model's validation hinge they carry.

Same Loan world, data seed and decision model as :mod:`benchmarks.icarma_personalization`. For
the rejected training applicants and every non-empty subset of the four actionable features,
the best approval probability reachable inside a box of latent steps
(:func:`simstudy.policies.icarma.feasibility.reachable_probability`) is found for CARMA's clamp
(every feature's standardized noise range), the clamp from the actionable features' range and a
+/-10 box; ``infeasible_share`` is the share of person-profiles below 1/2 under the training
draw of profiles (how many features uniform, which ones uniform given the count). Then, for an
iCARMA model (trained with ``--config`` for ``--seed`` and ``--epochs``, from the model cache
when there), the validation hinge ``mean max(0, eps - (2p - 1))`` under the validation profiles
of its training and the share of it carried by the infeasible validation rows.

Prints one JSON object.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_infeasible [--seed 1000] [--epochs 150]
        [--config '{}']
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import torch

from benchmarks.icarma_personalization import Bench, config_from
from simstudy.core.trainer import torch_generator
from simstudy.policies.icarma import (
    ICARMA,
    Objective,
    latent_step_bounds,
    noise_scale,
    sample_training_profiles,
)
from simstudy.policies.icarma.feasibility import reachable_probability, subset_code
from simstudy.policies.icarma.training import _rejected


def draw_share(best: torch.Tensor, k: int) -> float:
    """Share of person-profiles below 1/2 when the actionable subset is drawn as in training."""
    share = 0.0
    for code in range(1, 2**k):
        size = bin(code).count("1")
        share += float((best[:, code] < 0.5).double().mean()) / k / math.comb(k, size)
    return share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--config", default="{}")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    bench = Bench(0, 0)
    context = bench.context
    s = _rejected(context)
    idx = torch.tensor(context.world.roles.actionable_index)
    k, scale = len(idx), noise_scale(context)
    boxes = {"clamp (all features)": latent_step_bounds(context, "all"),
             "clamp (actionable features)": latent_step_bounds(context, "actionable"),
             "box +/-10": (-10.0, 10.0)}
    out: dict = {"train_rejected": len(s["x_tr"]), "boxes": {}}
    for label, box in boxes.items():
        c0 = time.process_time()
        best = reachable_probability(context.world, context.model, s["u_tr"], idx, scale, box)
        out["boxes"][label] = {"bounds": box, "infeasible_share": round(draw_share(best, k), 4),
                               "infeasible_share_all_four": round(float(
                                   (best[:, -1] < 0.5).double().mean()), 4),
                               "feasible_share_by_subset": {
                                   "+".join(f for j, f in enumerate(context.world.roles
                                                                    .actionable)
                                            if code >> j & 1):
                                   round(float((best[:, code] >= 0.5).double().mean()), 4)
                                   for code in range(1, 2**k)},
                               "cpu_seconds": round(time.process_time() - c0, 1)}
    config, deploy = config_from(args.config, args.epochs)
    policy = ICARMA(config, seeds=[args.seed], cache=bench.cache, progress=False,
                    **deploy).fit(context)
    trained = config.with_cost(context.cost.alpha, context.cost.placement)
    act, w = sample_training_profiles(len(s["x_va"]), k, trained,
                                      torch_generator(args.seed, "icarma", "val-profiles"))
    with torch.no_grad():
        val = Objective(policy.networks_, context, trained)(
            s["x_va"], s["logp_va"], act, w, None, None, s["u_va"])
    hinge = torch.relu(val["g"])
    lo, hi = policy.networks_.step_bounds.tolist()
    best_va = reachable_probability(context.world, context.model, s["u_va"], idx, scale,
                                    (lo, hi))
    infeasible = best_va[torch.arange(len(act)), subset_code(act)] < 0.5
    out["model"] = {"seed": args.seed, "epochs": args.epochs, "config": config.to_json(),
                    "final_multiplier": policy.meta_["final_multiplier"],
                    "validation_rows": len(act),
                    "validation_infeasible_share": round(float(infeasible.double().mean()), 4),
                    "validation_hinge": round(float(hinge.mean()), 5),
                    "hinge_share_of_infeasible_rows": round(float(
                        hinge[infeasible].sum() / hinge.sum().clamp_min(1e-12)), 4),
                    "validation_validity": round(float(val["valid"]), 4),
                    "history_multiplier": [round(h["multiplier"], 1)
                                           for h in policy.meta_["history"]]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
