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

With ``--trajectory`` the models are trained again (not from the cache) and followed through
training instead: at every validation check, the share of the acted-on latent steps of the
epoch's training steps (the Gumbel-sampled masks) that sit on the clamp's bound (for a model
without the clamp: beyond it), and, on the same applicants with the deployed mask, hap under the
constant and the linear profile and validity under the linear one; for CARMA's clamp, its
straight-through variant (``clamp_gradient: straight_through``) and no clamp.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_hap_clamp --epochs 450 \\
        --seed-list 1000 2000 3000 4000 5000 6000 7000 8000 9000 10000
    OMP_NUM_THREADS=1 python -m benchmarks.icarma_hap_clamp --epochs 150 --trajectory

Prints one JSON line per seed and model (per check with ``--trajectory``), then a Markdown
table (the mean over seeds and the seed best on validation). Trained models are kept in (and
read from) the model cache, except with ``--trajectory``.

Example:
    ``python -m benchmarks.icarma_hap_clamp --epochs 2 --seed-list 1`` prints
    ``{"seed": 1, "model": "clamp", "hap": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
from contextlib import contextmanager

import numpy as np
import torch

from benchmarks.icarma_personalization import Bench
from simstudy.policies.icarma import (
    ICARMA,
    ICARMAConfig,
    ICARMANetworks,
    best_check,
    latent_step_bounds,
    noise_scale,
)
from simstudy.policies.icarma import training as icarma_training

__all__ = ["clamp_roles", "main"]

MODELS = {"clamp": {}, "no clamp": {"action_clamp": False}}
TRAJECTORY_MODELS = {**MODELS, "straight-through clamp": {"clamp_gradient": "straight_through"}}
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
    act, w = nets.profile_columns(prof)
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
        smaller = mask & ~least  # the mask without the least-preferred feature
        at_bound = (deployed <= lo) | (deployed >= hi)
        beyond = (raw < lo) | (raw > hi)
        regiven = step_of(h, smaller)
        return {
            "people": len(xt), "hap": _share(keep[mask.any(dim=1).numpy()]),
            "keepers": int(keep.sum()), "droppers": int(drop.sum()),
            "others_at_bound": _share(at_bound[smaller & torch.from_numpy(keep)[:, None]].numpy()),
            "valid_without_lp_steps_kept": _share(approved(u, smaller, deployed)[keep]),
            "valid_without_lp_regiven": _share(approved(
                u, smaller, regiven.clamp(*nets.step_bounds.tolist()))[keep]),
            "valid_without_lp_unclamped": _share(approved(u, smaller, regiven)[keep]),
            "others_beyond_clamp": _share(beyond[mask & torch.from_numpy(drop)[:, None]].numpy()),
            "valid_if_clamped": _share(approved(u, mask, raw.clamp(lo, hi))[drop]),
        }


def _deployed(nets, bench: Bench, noise_std, shape: str) -> tuple[float, float]:
    """(hap, validity) of the networks' own action, deployed mask, one rank profile."""
    prof = bench.profiles[f"rank_{shape}"]
    xt = torch.as_tensor(bench.x, dtype=torch.float64)
    act, w = nets.profile_columns(prof)
    order = [list(prof.features).index(f) for f in nets.actionable]
    least = torch.from_numpy(prof.least_preferred[:, order])
    with torch.no_grad():
        h = nets.encode(xt, act, w)
        mask = (nets.mask_logits(h) > 0) & act
        x_cf = nets.latent_actions(h, xt, mask, bench.world, noise_std)
        found = mask.any(dim=1)
        hap = (mask & least).any(dim=1)[found].double().mean()
        valid = bench.model.approves(x_cf).ravel() & found
    return float(hap), float(valid.double().mean())


@contextmanager
def followed(bench: Bench, bounds: tuple[float, float], rows: list[dict]):
    """Records, while a training runs, the figures of ``--trajectory`` at every check."""
    shift, check = ICARMANetworks.latent_shift, icarma_training._Run.check
    tally = [0, 0]
    lo, hi = bounds

    def counting_shift(self, h, x, mask, noise_std):
        if self.training:
            with torch.no_grad():
                step = self.action_net(torch.cat([h, mask.to(torch.float32)], dim=1)).double()
                acted = mask > 0
                tally[0] += int(((step <= lo) | (step >= hi))[acted].sum())
                tally[1] += int(acted.sum())
        return shift(self, h, x, mask, noise_std)

    def following_check(self, epoch):
        stop = check(self, epoch)
        noise_std = noise_scale(self.objective.context)
        hap_c, _ = _deployed(self.nets, bench, noise_std, "constant")
        hap_l, valid_l = _deployed(self.nets, bench, noise_std, "linear")
        rows.append({"epoch": epoch, "train_steps_at_bound": tally[0] / max(tally[1], 1),
                     "hap_constant": hap_c, "hap_linear": hap_l,
                     "hap_ratio_linear": hap_l / hap_c if hap_c else float("nan"),
                     "validity_linear": valid_l, "multiplier": self.rule.summary()["multiplier"]})
        tally[:] = [0, 0]
        return stop

    ICARMANetworks.latent_shift, icarma_training._Run.check = counting_shift, following_check
    try:
        yield rows
    finally:
        ICARMANetworks.latent_shift, icarma_training._Run.check = shift, check


def trajectory(bench: Bench, bounds: tuple[float, float], epochs: int, seeds: list[int]):
    """``--trajectory``: each model trained again, followed check by check."""
    marks = {5, 10, 25, 50, 100, epochs} | {e for e in (150, 300, 450) if e <= epochs}
    table = []
    for label, overrides in TRAJECTORY_MODELS.items():
        for seed in seeds:
            rows: list[dict] = []
            with followed(bench, bounds, rows):
                ICARMA(ICARMAConfig(epochs=epochs, **overrides), seeds=[seed], cache=False,
                       progress=False).fit(bench.context)
            for row in rows:
                print(json.dumps({"model": label, "seed": seed, **row}), flush=True)
            table += [(label, seed, r) for r in rows if r["epoch"] in marks]
    cols = ("train_steps_at_bound", "hap_constant", "hap_linear", "hap_ratio_linear",
            "validity_linear", "multiplier")
    print(f"\nclamp {bounds}\n")
    print("| model | seed | epoch | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for label, seed, r in table:
        print(f"| {label} | {seed} | {r['epoch']} | "
              + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=450)
    parser.add_argument("--seed-list", type=int, nargs="+", default=[1000])
    parser.add_argument("--trajectory", action="store_true",
                        help="train again and follow the figures through training")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    bench = Bench(0, oracle_limit=0)
    bounds = latent_step_bounds(bench.context)
    if args.trajectory:
        trajectory(bench, bounds, args.epochs, args.seed_list)
        return
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
