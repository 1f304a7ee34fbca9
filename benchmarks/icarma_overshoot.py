"""Which training force leaves iCARMA's overshoot past the decision boundary: one change each.

iCARMA's deployed actions go about 1.7 times as far as validity needs (``icarma_plausibility``:
the median share ``t`` of an action that the decision model needs is 0.59-0.62), which costs
plausibility and cost. This benchmark trains one model per variant (every setting the default
but the variant's overrides; the same seed, data and applicants as
:mod:`benchmarks.icarma_personalization`) and reports, beside the frontier's columns
(validity, plausibility, hap, their ratio, the cost ratio to the oracle), the overshoot of the
rank-constant recourses: the median ``t`` of the first approved point of
``x + t (theta - x)`` (1: no overshoot), the decision model's median logit at the
counterfactuals, and plausibility of the same actions shortened to that point; and, by band
of the decision model's logit at the factual, how far the action goes (``bands``: the median
``t`` and the median size ``|Δx / r|`` of the action, with ``r`` the features' ranges).

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_overshoot --epochs 150 --seed-list 1000 \\
        --variants '[["default", {}], ["no mask noise", {"mask_noise": "none"}]]'

Prints one JSON line per variant, then a Markdown table. Trained models are kept in the model
cache.

Example:
    ``python -m benchmarks.icarma_overshoot --epochs 2 --oracle-limit 20 --variants
    '[["default", {}]]'`` prints ``{"variant": "default", "median_shortest_t": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from benchmarks.icarma_frontier import COLUMNS
from benchmarks.icarma_personalization import Bench, split_overrides
from benchmarks.icarma_plausibility import judges, shortest
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, ICARMAConfig

__all__ = ["main"]

OVERSHOOT = ("median_shortest_t", "median_logit_cf", "scm", "shortest")
#: bands of the decision model's logit at the factual
BANDS = ((-np.inf, -100.0), (-100.0, -60.0), (-60.0, -30.0), (-30.0, -10.0), (-10.0, 0.0))


def bands(policy, bench: Bench) -> dict:
    """Median ``t`` (the share of the action validity needs) and median action size by band
    of the factual's logit, rank-constant profiles; ``size_cv`` / ``needed_cv``: the spread
    (coefficient of variation) of the action's size and of the size validity needs."""
    prof = bench.profiles["rank_constant"]
    rec = policy.recommend(bench.x, prof, bench.ids)
    _, t = shortest(bench.world, bench.model, bench.x, rec)
    with torch.no_grad():
        logit = bench.model(torch.as_tensor(bench.x, dtype=torch.float64)).numpy().ravel()
    acted = rec.intervened & rec.found[:, None]
    step = np.where(acted, rec.values - bench.x, 0.0) / bench.data.feature_range.numpy()
    size = np.sqrt((step ** 2).sum(axis=1))
    ok = rec.found & np.isfinite(t)
    need = t * size
    out = {"size_cv": float(size[ok].std() / size[ok].mean()),
           "needed_cv": float(need[ok].std() / need[ok].mean())}
    for lo, hi in BANDS:
        rows = ok & (logit >= lo) & (logit < hi)
        out[f"logit {lo:g}..{hi:g}"] = {"people": int(rows.sum()),
                                        "median_t": float(np.median(t[rows])),
                                        "median_size": float(np.median(size[rows]))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--seed-list", type=int, nargs="+", default=[1000])
    parser.add_argument("--variants", required=True,
                        help='JSON list of [label, overrides], e.g. \'[["default", {}]]\'')
    parser.add_argument("--oracle-limit", type=int, default=600)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    bench = Bench(0, args.oracle_limit)
    context = RecourseContext(bench.world, bench.model, bench.data, seed=0)
    rows = []
    for label, overrides in json.loads(args.variants):
        training, deploy = split_overrides(overrides)
        config = ICARMAConfig(epochs=args.epochs, **training)
        # the model cache keeps each trained model, so the deployed one is judged again
        # without a second training
        r = bench.measure(config, args.seed_list, cache=True, deploy=deploy)
        seed = r["deployed_seed"]
        policy = ICARMA(config, seeds=[seed], cache=bench.cache, progress=False,
                        **deploy).fit(context)
        over = judges(policy, bench.world, None, bench.model, bench.x, bench.ids,
                      bench.profiles["rank_constant"], bench.data.feature_range)
        mult = r["per_seed"][seed]["final_multipliers"]
        row = {"variant": label, **{c: r[c] for c in COLUMNS},
               **{c: over[c] for c in OVERSHOOT},
               "final_multiplier": mult["multiplier"], "deployed_seed": seed,
               "config": overrides, "train_cpu_seconds": r["train_cpu_seconds"],
               "bands": bands(policy, bench)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    cols = COLUMNS + OVERSHOOT + ("final_multiplier",)
    print("\n| variant | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for row in rows:
        print(f"| {row['variant']} | "
              + " | ".join(f"{row[c]:.3f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
