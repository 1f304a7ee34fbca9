"""The validity / personalization frontier of iCARMA: the figures against the multiplier's bound.

For each bound ``B`` in ``--bounds`` iCARMA is trained with ``validity: bounded`` (CARMA's
multiplier capped at ``B``; every other setting the default) and, for ``--steps``, with the
multiplier's step size under ``--step-rule`` (``per_person`` by default); the unbounded CARMA
multiplier (``validity: multiplier``) closes the table. Each row: validity under the constant
and linear profiles, plausibility under the constant profile, hap under constant and linear,
their ratio, the cost ratio to the oracle and the multiplier at the end, for the seed best on
validation (and the mean over seeds). Same world, applicants and oracle as
:mod:`benchmarks.icarma_personalization`; the published point is the last row.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_frontier [--seeds 1] [--epochs 100]
        [--bounds 1 3 10 30 100] [--steps 0.1 1 10] [--step-rule per_person] [--cache]
        [--variants '[["label", {"infeasible": "reachable"}], ...]'] [--seed-list 1000]
"""

from __future__ import annotations

import argparse
import json
import os

import torch

from benchmarks.icarma_personalization import Bench, paper_seeds, split_overrides
from simstudy.policies.icarma import ICARMAConfig

#: the published iCARMA figures (uniform rankings of all four features)
PUBLISHED_ROW = {"validity_constant": 0.999, "validity_linear": 0.996,
                 "plausibility_constant": 0.886, "hap_constant": 0.852, "hap_linear": 0.029}
COLUMNS = ("validity_constant", "validity_linear", "plausibility_constant", "hap_constant",
           "hap_linear", "hap_ratio_linear", "cost_ratio_to_oracle")


def variants(bounds: list[float], steps: list[float], step_rule: str):
    for b in bounds:
        yield f"bounded, bound {b:g}", {"validity": "bounded", "multiplier_bound": b}
    for s in steps:
        yield f"{step_rule}, step {s:g}", {"validity": step_rule, "multiplier_step": s}
    yield "multiplier (unbounded)", {"validity": "multiplier"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--bounds", type=float, nargs="*", default=[1, 3, 10, 30, 100])
    parser.add_argument("--steps", type=float, nargs="*", default=[])
    parser.add_argument("--step-rule", default="per_person")
    parser.add_argument("--variants", default=None,
                        help='JSON list of [label, overrides] measured instead of the bounds '
                             'and steps, e.g. \'[["screened", {"infeasible": "reachable"}]]\'')
    parser.add_argument("--seed-list", type=int, nargs="+", default=None)
    parser.add_argument("--oracle-limit", type=int, default=600)
    parser.add_argument("--cache", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    bench = Bench(0, args.oracle_limit)
    seeds = args.seed_list or paper_seeds(args.seeds)
    rows = []
    chosen = (json.loads(args.variants) if args.variants is not None
              else variants(args.bounds, args.steps, args.step_rule))
    for label, overrides in chosen:
        training, deploy = split_overrides(overrides)
        config = ICARMAConfig(epochs=args.epochs, **training)
        r = bench.measure(config, seeds, args.cache, deploy)
        mult = r["per_seed"][r["deployed_seed"]]["final_multipliers"]
        row = {"variant": label, **{c: r[c] for c in COLUMNS},
               "mean": {c: r["mean_of_seeds"][c] for c in COLUMNS},
               "final_multiplier": mult["multiplier"],
               "multiplier_max": mult.get("multiplier_max", mult["multiplier"]),
               "excluded_share": r["per_seed"][r["deployed_seed"]].get("excluded_share"),
               "clamped_share": r["per_seed"][r["deployed_seed"]]["clamped_share_constant"],
               "config": overrides, "train_cpu_seconds":
               r["train_cpu_seconds"], "deployed_seed": r["deployed_seed"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{len(seeds)} seed(s) x {args.epochs} epochs; best on validation (mean of seeds)\n")
    print("| variant | " + " | ".join(COLUMNS) + " | final multiplier |")
    print("|---|" + "---|" * (len(COLUMNS) + 1))
    for row in rows:
        cells = [f"{row[c]:.3f} ({row['mean'][c]:.3f})" if len(seeds) > 1 else f"{row[c]:.3f}"
                 for c in COLUMNS]
        print(f"| {row['variant']} | " + " | ".join(cells) + f" | {row['final_multiplier']:.1f} |")
    pub = PUBLISHED_ROW
    cells = [f"{pub[c]:.3f}" if c in pub else
             (f"{pub['hap_linear'] / pub['hap_constant']:.3f}" if c == "hap_ratio_linear"
              else "\"closely matches\"") for c in COLUMNS]
    print("| **published** | " + " | ".join(cells) + " | - |")


if __name__ == "__main__":
    main()
