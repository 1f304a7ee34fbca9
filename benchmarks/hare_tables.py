"""HARE's published ablations on the Loan world, measured with the library directly.

Run from the repository root::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m benchmarks.hare_tables [--people 500]

Every configuration serves the same rejected applicants, who hold the same hidden ground truth
and answer with the same keyed luck (common random numbers), so rows compare. Tables:

* ``scales``: GTP / GTD of the base generator, HARE (T = 1), Multi-HARE (T = 5, keeping the
  incumbent) and the reference Multi-HARE (``*_ref``), B = 30, at near / intermediate / far
  ground truth, over Wachter and Growing Spheres (``--bases`` adds the causal oracle), with the
  paired difference in GTD, Multi-HARE minus HARE, and its 95% interval over people;
* ``budget``: Multi-HARE (T = 5) and HARE over Wachter, far, B = 10, 30, 70, 100;
* ``iterations``: over Wachter, far, B = 30, T = 1, 3, 5, 10;
* ``noise``: Multi-HARE over Wachter, far, B = 30, under Bernoulli flips p = 0 .. 0.5, the
  logistic model and Bradley-Terry temperatures.

Multi-HARE keeps the incumbent (``keep_best``) everywhere except the ``*_ref`` columns.

Prints JSON (``--json``) or markdown tables, and writes both with ``--out DIR``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks._loan import loan_setup, people_for, truth
from simstudy.metrics import evaluate_recourse
from simstudy.policies.hare import HARESpec
from simstudy.summary import mean_ci

COLUMNS = ("gtp_base", "gtp", "gtd_base", "gtd", "valid", "queries", "accepted", "redundancy",
           "violations", "sparsity", "proximity")


def run(context, x, ids, profiles, spec: HARESpec, users: dict) -> tuple[dict, np.ndarray]:
    """The table row of one configuration (people answering as ``users`` says), and every
    person's GTD."""
    people = people_for(context, x, ids, profiles, **users)
    start = time.perf_counter()
    rec = spec.build().fit(context).recommend(x, profiles, ids, seed=0,
                                              feedback=people.feedback())
    seconds = time.perf_counter() - start
    ev = evaluate_recourse(context.world, context.model, x, rec, profiles, context.feature_range)
    mine, base = truth(context, people, rec), truth(context, people, rec.base)
    cols = {**rec.extras, **{k: ev[k] for k in ("valid", "sparsity", "proximity")},
            "gtp": mine["gtp"], "gtd": mine["gtd"], "gtp_base": base["gtp"],
            "gtd_base": base["gtd"]}
    row = {k: float(np.nanmean(np.asarray(cols[k], dtype=np.float64))) for k in COLUMNS}
    gtd, gtd_base = cols["gtd"], cols["gtd_base"]
    both = np.isfinite(gtd) & np.isfinite(gtd_base)
    row["gtd_ratio"] = float(np.mean(gtd[both]) / np.mean(gtd_base[both]))
    row["seconds"] = seconds
    return row, gtd


def hare(base: str, scale: str = "far", budget: int = 30, iterations: int = 1,
         noise: dict | None = None, keep_best: bool = True) -> tuple[HARESpec, dict]:
    """A HARE configuration and the people's ``users:`` section it runs against."""
    return (HARESpec(base={"kind": base}, budget=budget, iterations=iterations,
                     keep_best=keep_best and iterations > 1),
            {"scale": scale, "noise": noise or {"kind": "none"}})


TABLES = ("scales", "budget", "iterations", "noise")


def tables(context, x, ids, profiles, progress, which=TABLES,
           bases=("wachter", "growing_spheres")) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {name: [] for name in TABLES}
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
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tables", default=",".join(TABLES),
                        help="comma-separated subset of " + ", ".join(TABLES))
    parser.add_argument("--bases", default="wachter,growing_spheres",
                        help="base generators of the scales table (wachter, growing_spheres, "
                             "oracle)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    context, x, ids, profiles = loan_setup(args.people)

    def progress(row):
        print(json.dumps(row), flush=True, file=__import__("sys").stderr)

    out = tables(context, x, ids, profiles, progress, args.tables.split(","),
                 args.bases.split(","))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hare_tables.json").write_text(json.dumps(out, indent=2))
        (args.out / "hare_tables.md").write_text(markdown(out))
    print(json.dumps(out, indent=2) if args.json else markdown(out))


if __name__ == "__main__":
    main()
