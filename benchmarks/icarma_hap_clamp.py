"""How CARMA's clamp keeps the least-preferred feature in iCARMA's actions: measured on the
trained models, under the linear profile.

For each training seed two models are judged, the default (CARMA's clamp) and the same
training without it (``action_clamp: false``), on every rejected deployment applicant of
:mod:`benchmarks.icarma_personalization` with a uniform ranking of the four features and the
linear cost profile. Everything is judged on the networks' own (unshortened) actions: shortening
keeps the features acted on, so it changes neither hap nor whether a feature is needed.

* ``hap``: share of the people whose action includes their least-preferred feature.
* Among them (``keepers``): ``others_at_bound``, the share of the *other* acted-on features
  whose latent step sits on the clamp's bound (no gradient passes the clamp there);
  ``valid_without_lp_steps_kept``, the share still approved when the least-preferred feature
  is dropped and the other steps are kept; ``valid_without_lp_regiven``, the same with the
  action network asked again with the smaller mask (the step clamped as deployed) and
  ``valid_without_lp_unclamped`` without the clamp on that step. If the clamped model needs the
  feature because the clamp binds, ``regiven`` is low and ``unclamped`` high.
* Among the people whose action leaves the least-preferred feature out (``droppers``):
  ``others_beyond_clamp``, the share of their acted-on steps outside the clamp's interval
  (for the model trained without it), and ``valid_if_clamped``, the share still approved with
  every step clamped to that interval: how much leaving the feature out relies on going past the
  clamp.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_hap_clamp --epochs 450 \\
        --seed-list 1000 2000 3000 4000 5000 6000 7000 8000 9000 10000

Prints one JSON line per seed and model, then a Markdown table (the mean over seeds and the
seed best on validation). Trained models are kept in (and read from) the model cache.

Example:
    ``python -m benchmarks.icarma_hap_clamp --epochs 2 --seed-list 1`` prints
    ``{"seed": 1, "model": "clamp", "hap": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from benchmarks.icarma_personalization import Bench
from simstudy.policies.icarma import ICARMA, ICARMAConfig, best_check, latent_step_bounds

__all__ = ["clamp_roles", "main"]

MODELS = {"clamp": {}, "no clamp": {"action_clamp": False}}
FIGURES = ("hap", "others_at_bound", "valid_without_lp_steps_kept", "valid_without_lp_regiven",
           "valid_without_lp_unclamped", "others_beyond_clamp", "valid_if_clamped")


def _share(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def clamp_roles(policy: ICARMA, bench: Bench, bounds: tuple[float, float]) -> dict:
    """The figures of the module docstring for one trained policy; ``bounds`` is CARMA's clamp
    (judged also for a model trained without it)."""
    nets, world, model = policy.networks_, bench.world, bench.model
    prof = bench.profiles["rank_linear"]
    xt = torch.as_tensor(bench.x, dtype=torch.float64)
    act, w = policy._profile_columns(len(xt), prof)
    order = [list(prof.features).index(f) for f in nets.actionable]
    least = torch.from_numpy(prof.least_preferred[:, order])
    lo, hi = bounds
    sigma = policy.noise_std_[nets.act_index]

    def step_of(h, mask):
        return nets.action_net(torch.cat([h, mask.to(torch.float32)], dim=1)).double()

    def approved(u, mask, step):
        shift = torch.zeros_like(u)
        shift[:, nets.act_index] = mask.double() * step * sigma
        return model.approves(world.predict(u + shift)).numpy().ravel()

    with torch.no_grad():
        u = world.abduct(xt)
        h = nets.encode(xt, act, w)
        mask = (nets.mask_logits(h) > 0) & act
        raw = step_of(h, mask)
        deployed = raw.clamp(*nets.step_bounds.tolist())
        keep = (mask & least).any(dim=1).numpy()
        drop = (mask.any(dim=1) & ~(mask & least).any(dim=1)).numpy()
        others = mask & ~least
        at_bound = (deployed <= lo) | (deployed >= hi)
        beyond = (raw < lo) | (raw > hi)
        smaller = mask & ~least
        regiven = step_of(h, smaller)
        return {
            "people": len(xt), "hap": _share(keep[mask.any(dim=1).numpy()]),
            "keepers": int(keep.sum()), "droppers": int(drop.sum()),
            "others_at_bound": _share(at_bound[others & torch.from_numpy(keep)[:, None]].numpy()),
            "valid_without_lp_steps_kept": _share(approved(u, smaller, deployed)[keep]),
            "valid_without_lp_regiven": _share(approved(
                u, smaller, regiven.clamp(*nets.step_bounds.tolist()))[keep]),
            "valid_without_lp_unclamped": _share(approved(u, smaller, regiven)[keep]),
            "others_beyond_clamp": _share(beyond[mask & torch.from_numpy(drop)[:, None]].numpy()),
            "valid_if_clamped": _share(approved(u, mask, raw.clamp(lo, hi))[drop]),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=450)
    parser.add_argument("--seed-list", type=int, nargs="+", default=[1000])
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    bench = Bench(0, oracle_limit=0)
    bounds = latent_step_bounds(bench.context)
    table = {}
    for label, overrides in MODELS.items():
        config = ICARMAConfig(epochs=args.epochs, **overrides)
        rows, checks = [], []
        for seed in args.seed_list:
            policy = ICARMA(config, seeds=[seed], cache=bench.cache,
                            progress=False).fit(bench.context)
            row = {"seed": seed, "model": label, **clamp_roles(policy, bench, bounds)}
            checks.append(policy.meta_["deployed_check"])
            rows.append(row)
            print(json.dumps(row), flush=True)
        best = rows[best_check(checks)]
        table[label] = (best, {f: float(np.nanmean([r[f] for r in rows])) for f in FIGURES})
    print(f"\nclamp {bounds}; linear profile\n")
    print("| model | " + " | ".join(FIGURES) + " |")
    print("|---|" + "---|" * len(FIGURES))
    for label, (best, mean) in table.items():
        for name, row in ((f"{label}, best on validation ({best['seed']})", best),
                          (f"{label}, mean of {len(args.seed_list)} seeds", mean)):
            print(f"| {name} | " + " | ".join(f"{row[f]:.3f}" for f in FIGURES) + " |")


if __name__ == "__main__":
    main()
