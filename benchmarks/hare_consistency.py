"""Causal consistency of HARE over the causal oracle, measured by value.

Run from the repository root::

    OMP_NUM_THREADS=1 python -m benchmarks.hare_consistency [--people 500] [--seed 0]

The first ``--people`` rejected applicants of a seed's Loan world (``benchmarks/_loan.py``),
every other one placed beyond the training range on a feature they may not act on
(:func:`simstudy.checks.beyond_range`), get HARE (T = 1) and Multi-HARE (T = 5) over the causal
oracle, B = 30, far ground truth. Prints one JSON object per T: people found, people shown a
feature they may not act on at a value that is neither their own nor the world's counterfactual
of the recourse's interventions (``forbidden_off_world``), and people whose recourse the model
rejects once the world's counterfactual of its interventions is applied
(``invalid_under_world``).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from benchmarks._loan import loan_setup, people_for
from simstudy.checks import beyond_range
from simstudy.policies.hare import HAREParams
from simstudy.primitives.space import action_mask


def measure(people: int, seed: int) -> dict:
    """The counts for HARE and Multi-HARE over the oracle (module docstring)."""
    context, x, ids, profiles = loan_setup(people, seed=seed)
    allowed = action_mask(context.feature_names, profiles)
    x = beyond_range(x, allowed, context.lower, context.upper)
    tolerance = 1e-9 * context.feature_range
    out = {}
    for iterations in (1, 5):
        folks = people_for(context, x, ids, profiles, seed=seed, scale="far")
        spec = HAREParams(base={"kind": "oracle"}, budget=30, iterations=iterations)
        rec = spec.build().fit(context).recommend(x, profiles, ids, seed=seed,
                                                  feedback=folks.feedback())
        found = rec.found
        acts = rec.intervened & found[:, None]
        with torch.no_grad():
            caused = context.world.counterfactual(
                torch.from_numpy(x), torch.from_numpy(acts),
                torch.from_numpy(np.where(acts, rec.values, x))).numpy()
            valid = (context.model(torch.from_numpy(caused)) >= 0).numpy()
        shown = np.where(found[:, None], rec.counterfactual, x)
        off = (~acts & ~allowed & (np.abs(shown - x) > tolerance)
               & (np.abs(shown - caused) > tolerance))
        out[f"T{iterations}"] = {
            "found": int(found.sum()),
            "forbidden_off_world": int((found & off.any(axis=1)).sum()),
            "invalid_under_world": int((found & ~valid).sum()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(measure(args.people, args.seed)))


if __name__ == "__main__":
    main()
