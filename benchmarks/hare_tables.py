"""HARE's published ablations on the Loan world, measured with the library directly.

Run from the repository root::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m benchmarks.hare_tables [--people 500] \
        [--seeds 0 1 2 3 4] [--tables published,scales,budget,iterations,noise]

Every configuration serves the same rejected applicants, who hold the same hidden ground truth
and answer with the same keyed luck (common random numbers), so rows compare. Tables:

* ``published``: the published behaviour checked on every seed of ``--seeds`` (each seed is
  a world, decision model, set of people and their hidden truth): GTD and success rate of the
  base, HARE (T = 1) and Multi-HARE (T = 5, as published: ``keep_best`` off), B = 30, far,
  over Wachter and Growing Spheres, for each variant of :data:`VARIANTS` (``published``: the
  defaults, the ground truth drawn from each person's actionable features;
  ``all_mutable_truth``: the published policy against a truth over every mutable feature;
  ``earlier_truth``: the published policy against the earlier ground truth; ``earlier``: the
  earlier policy and ground truth).
  ``gtd_floor`` is the smallest GTD a recourse moving only the person's actionable features
  can reach (:func:`gtd_floor`). Summarised over seeds as the mean and 95%
  Student-t interval of the per-seed ratio GTD / GTD of the base and of the per-seed success
  rate difference, with the number of seeds on which ratio <= 0.5 and success rates are equal;

* ``scales``: GTP / GTD of the base generator, HARE (T = 1), Multi-HARE (T = 5, keeping the
  incumbent) and the reference Multi-HARE (``*_ref``), B = 30, at near / intermediate / far
  ground truth, over Wachter and Growing Spheres (``--bases`` adds the causal oracle), with the
  paired difference in GTD, Multi-HARE minus HARE, and its 95% interval over people;
* ``budget``: Multi-HARE (T = 5) and HARE over Wachter, far, B = 10, 30, 70, 100;
* ``iterations``: over Wachter, far, B = 30, T = 1, 3, 5, 10;
* ``noise``: Multi-HARE over Wachter, far, B = 30, under Bernoulli flips p = 0 .. 0.5, the
  logistic model and Bradley-Terry temperatures.

The ablation tables (``scales``, ``budget``, ``iterations``, ``noise``) use the first seed and
the ``published`` variant; in them Multi-HARE keeps the incumbent (``keep_best``) everywhere
except the ``*_ref`` columns (the published Multi-HARE).

Prints JSON (``--json``) or markdown tables, and writes both with ``--out DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks._loan import loan_setup, people_for, truth
from simstudy.metrics import evaluate_recourse
from simstudy.policies.hare import HAREParams
from simstudy.primitives.space import action_mask
from simstudy.run.summary import mean_ci

COLUMNS = ("gtp_base", "gtp", "gtd_base", "gtd", "gtd_floor", "success_base", "success", "valid",
           "queries", "accepted", "redundancy", "violations", "sparsity", "proximity")

#: Policy settings, people settings and whether everyone may act on every actionable feature,
#: of each variant: the published behaviour (the defaults), a diagnostic of it, and the earlier
#: behaviours, run beside it.
VARIANTS: dict[str, tuple[dict, dict, bool]] = {
    "published": ({}, {}, False),
    "all_mutable_truth": ({}, {"ground_truth": "all_mutable"}, False),
    "earlier_truth": ({}, {"ground_truth": "actionable_sparse", "accept_threshold": 0.1}, False),
    "earlier": ({"search_without_base": True, "same_box": False},
                {"ground_truth": "actionable_sparse", "accept_threshold": 0.1}, False),
}


def gtd_floor(people, profiles) -> np.ndarray:
    """The smallest GTD any recourse moving only the person's actionable features can reach:
    ``1 - ||v_A|| / ||v||`` with ``v = r_gt - x`` and ``v_A`` its part on those features (NaN
    without a ground truth)."""
    gt, has = people.ground_truth
    v = (gt - people.space.scale(people.x)).numpy()
    inside = v * action_mask(people.feature_names, profiles)
    norm = np.linalg.norm(v, axis=1)
    ok = has.numpy() & (norm > 0)
    return np.where(ok, 1 - np.linalg.norm(inside, axis=1) / np.where(ok, norm, 1), np.nan)


def run(context, x, ids, profiles, spec: HAREParams, users: dict, seed: int = 0,
        everyone_acts: bool = False) -> tuple[dict, np.ndarray]:
    """The table row of one configuration (people answering as ``users`` says), and every
    person's GTD."""
    if everyone_acts:
        profiles = profiles.universal()
    people = people_for(context, x, ids, profiles, seed=seed, **users)
    start = time.perf_counter()
    rec = spec.build().fit(context).recommend(x, profiles, ids, seed=seed,
                                              feedback=people.feedback())
    seconds = time.perf_counter() - start
    ev = evaluate_recourse(context.world, context.model, x, rec, profiles, context.feature_range)
    mine, base = truth(context, people, rec), truth(context, people, rec.base)
    cols = {**rec.extras, **{k: ev[k] for k in ("valid", "sparsity", "proximity")},
            "gtp": mine["gtp"], "gtd": mine["gtd"], "gtp_base": base["gtp"],
            "gtd_base": base["gtd"], "success": rec.found, "success_base": rec.base.found,
            "gtd_floor": np.where(np.isfinite(mine["gtd"]), gtd_floor(people, profiles),
                                  np.nan)}
    row = {k: float(np.nanmean(np.asarray(cols[k], dtype=np.float64))) for k in COLUMNS}
    gtd, gtd_base = cols["gtd"], cols["gtd_base"]
    both = np.isfinite(gtd) & np.isfinite(gtd_base)
    row["gtd_ratio"] = float(np.mean(gtd[both]) / np.mean(gtd_base[both]))
    row["seconds"] = seconds
    return row, gtd


def hare(base: str, scale: str = "far", budget: int = 30, iterations: int = 1,
         noise: dict | None = None, keep_best: bool = True,
         variant: str = "published") -> tuple[HAREParams, dict]:
    """A HARE configuration and the people's ``users:`` section it runs against."""
    policy, users, _ = VARIANTS[variant]
    return (HAREParams(base={"kind": base}, budget=budget, iterations=iterations,
                     keep_best=keep_best and iterations > 1, **policy),
            {"scale": scale, "noise": noise or {"kind": "none"}, **users})


TABLES = ("published", "scales", "budget", "iterations", "noise")


def published_rows(context, x, ids, profiles, seed: int, progress,
                   bases=("wachter", "growing_spheres")) -> list[dict]:
    """One seed's rows of the ``published`` table: every variant x base x (HARE, Multi-HARE)."""
    rows = []
    for variant in VARIANTS:
        for base in bases:
            for iterations in (1, 5):
                row, _ = run(context, x, ids, profiles,
                             *hare(base, "far", 30, iterations, keep_best=False,
                                   variant=variant), seed=seed,
                             everyone_acts=VARIANTS[variant][2])
                rows.append({"seed": seed, "variant": variant, "base": base,
                             "iterations": iterations, **row})
                progress(rows[-1])
    return rows


def published_summary(rows: list[dict]) -> list[dict]:
    """The ``published`` rows over seeds: mean and 95% interval of the per-seed GTD ratio and
    success-rate difference, and on how many seeds each published claim holds."""
    out = []
    keys = sorted({(r["variant"], r["base"], r["iterations"]) for r in rows},
                  key=lambda k: (list(VARIANTS).index(k[0]), k[1], k[2]))
    for variant, base, iterations in keys:
        cell = [r for r in rows if (r["variant"], r["base"], r["iterations"])
                == (variant, base, iterations)]
        ratio = [r["gtd_ratio"] for r in cell]
        gap = [r["success"] - r["success_base"] for r in cell]
        m, lo, hi = mean_ci(ratio) if len(cell) > 1 else (ratio[0], np.nan, np.nan)
        g, glo, ghi = mean_ci(gap) if len(cell) > 1 else (gap[0], np.nan, np.nan)
        out.append({"variant": variant, "base": base, "iterations": iterations,
                    "seeds": len(cell),
                    "gtd_base": float(np.mean([r["gtd_base"] for r in cell])),
                    "gtd": float(np.mean([r["gtd"] for r in cell])),
                    "gtd_floor": float(np.mean([r["gtd_floor"] for r in cell])),
                    "gtd_ratio": m, "ratio_ci_low": lo, "ratio_ci_high": hi,
                    "seeds_ratio_at_most_half": sum(v <= 0.5 for v in ratio),
                    "success_base": float(np.mean([r["success_base"] for r in cell])),
                    "success": float(np.mean([r["success"] for r in cell])),
                    "success_gap": g, "gap_ci_low": glo, "gap_ci_high": ghi,
                    "seeds_success_equal": sum(v == 0 for v in gap),
                    "gtp_base": float(np.mean([r["gtp_base"] for r in cell])),
                    "gtp": float(np.mean([r["gtp"] for r in cell])),
                    "queries": float(np.mean([r["queries"] for r in cell])),
                    "accepted": float(np.mean([r["accepted"] for r in cell]))})
    return out


def tables(context, x, ids, profiles, progress, which=TABLES,
           bases=("wachter", "growing_spheres")) -> dict[str, list[dict]]:
    """The ablation tables on one seed (the published variant)."""
    out: dict[str, list[dict]] = {name: [] for name in TABLES if name != "published"}
    for scale in ("near", "intermediate", "far") if "scales" in which else ():
        for base in bases:
            one, gtd_one = run(context, x, ids, profiles, *hare(base, scale, 30, 1))
            multi, gtd_multi = run(context, x, ids, profiles, *hare(base, scale, 30, 5))
            ref, gtd_ref = run(context, x, ids, profiles,
                               *hare(base, scale, 30, 5, keep_best=False))
            # paired over people: a person without a ground truth drops out (NaN)
            diff, low, high = mean_ci(gtd_multi - gtd_one)
            diff_ref, low_ref, high_ref = mean_ci(gtd_ref - gtd_one)
            out["scales"].append({"scale": scale, "base": base,
                                  "gtp_base": one["gtp_base"], "gtp_hare": one["gtp"],
                                  "gtp_multi": multi["gtp"], "gtp_multi_ref": ref["gtp"],
                                  "gtd_base": one["gtd_base"], "gtd_hare": one["gtd"],
                                  "gtd_multi": multi["gtd"], "gtd_multi_ref": ref["gtd"],
                                  "multi_minus_hare": diff, "ci_low": low, "ci_high": high,
                                  "ref_minus_hare": diff_ref, "ref_ci_low": low_ref,
                                  "ref_ci_high": high_ref,
                                  "queries_hare": one["queries"],
                                  "queries_multi": multi["queries"],
                                  "success_base": one["success_base"],
                                  "success_hare": one["success"],
                                  "success_multi": multi["success"],
                                  "valid_hare": one["valid"], "valid_multi": multi["valid"],
                                  "violations": (one["violations"] + multi["violations"]
                                                 + ref["violations"])})
            progress(out["scales"][-1])
    for budget in (10, 30, 70, 100) if "budget" in which else ():
        for iterations in (1, 5):
            row, _ = run(context, x, ids, profiles, *hare("wachter", "far", budget, iterations))
            out["budget"].append({"budget": budget, "iterations": iterations, **row})
            progress(out["budget"][-1])
    for iterations in (1, 3, 5, 10) if "iterations" in which else ():
        row, _ = run(context, x, ids, profiles, *hare("wachter", "far", 30, iterations))
        out["iterations"].append({"iterations": iterations, **row})
        progress(out["iterations"][-1])
    noises = [{"kind": "bernoulli", "p": p} for p in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)]
    noises += [{"kind": "logistic"}]
    noises += [{"kind": "bradley_terry", "temperature": t} for t in (0.01, 0.1, 1.0)]
    noises = noises if "noise" in which else []
    for noise in noises:
        row, _ = run(context, x, ids, profiles, *hare("wachter", "far", 30, 5, noise))
        out["noise"].append({"noise": noise["kind"],
                             "level": noise.get("p", noise.get("temperature")), **row})
        progress(out["noise"][-1])
    return out


def markdown(out: dict[str, list[dict]]) -> str:
    parts = []
    for name, rows in out.items():
        if not rows:
            continue
        keys = [k for k in rows[0] if k != "seconds"]
        lines = [f"### {name}", "", "| " + " | ".join(keys) + " |",
                 "|" + "---|" * len(keys)]
        for r in rows:
            cells = [f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k]) for k in keys]
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="world / model / people seeds of the published table; the "
                             "ablations use the first")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tables", default=",".join(TABLES),
                        help="comma-separated subset of " + ", ".join(TABLES))
    parser.add_argument("--bases", default="wachter,growing_spheres",
                        help="base generators of the scales table (wachter, growing_spheres, "
                             "oracle)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    which = args.tables.split(",")
    bases = args.bases.split(",")

    def progress(row):
        print(json.dumps(row), flush=True, file=sys.stderr)

    out: dict[str, list[dict]] = {}
    per_seed: list[dict] = []
    for seed in args.seeds if "published" in which else ():
        per_seed += published_rows(*loan_setup(args.people, seed), seed, progress,
                                   tuple(b for b in bases if b != "oracle"))
    if set(which) - {"published"}:
        out.update(tables(*loan_setup(args.people, args.seeds[0]), progress, which, bases))
    if per_seed:
        out = {"published": published_summary(per_seed), "published_per_seed": per_seed,
               **out}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hare_tables.json").write_text(json.dumps(out, indent=2))
        (args.out / "hare_tables.md").write_text(markdown(out))
    print(json.dumps(out, indent=2) if args.json else markdown(out))


if __name__ == "__main__":
    main()
