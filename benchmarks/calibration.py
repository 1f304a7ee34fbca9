"""Calibration of the smooth test: false-positive rates under the null and power, per family.

Usage: python benchmarks/calibration.py [--participants 100] [--simulations 300]
       [--power-simulations 100] [--permutations 39] [--permutation-simulations 100]
       [--families gaussian ocat binomial] [--permutation-models gaussian:sparsity]
       [--workers 2] [--seed 0] [--rows ROWS.jsonl]
       python benchmarks/calibration.py --summarize ROWS.jsonl [...]

Simulates rating studies of the published design (``simstudy.study.simulated.simulate_study``):
under the null (action does not depend on the distance: the published model with the action
effect removed) and under the published plateau effect of sparsity on action. Each study's
action rating is fitted as ``act ~ s(distance) + s(uid, re) + s(uid, distance, re)`` with
the Gaussian family (ratings as interval data), the ordered-categorical family (the 7 levels)
and the binomial family (act >= 5), for distance = sparsity and proximity. Reported per model:
the rejection rates at alpha 0.05 and 0.01 with 95% Clopper-Pearson intervals, power under the
effect, the share of fits whose REML did not converge, and CPU seconds per fit.

For every model whose null rate at 0.05 exceeds 0.06, the within-participant permutation test
(``simstudy.analysis.permutation``) is run on fresh null studies and its rate and cost (seconds
per test, refits per test) reported beside it. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from simstudy.core.rng import generator  # noqa: E402
from simstudy.people.rating import published_model  # noqa: E402
from simstudy.people.response_params import DistanceEffect  # noqa: E402
from simstudy.study.power import clopper_pearson  # noqa: E402
from simstudy.study.simulated import simulate_study  # noqa: E402

FAMILIES = ("gaussian", "ocat", "binomial")
DISTANCES = ("sparsity", "proximity")


def _response(scenario: str):
    model = published_model()
    if scenario.startswith("null"):
        model = model.with_effect("act", DistanceEffect(kind="none"))
    return model


def _study(seed: int, scenario: str, sim: int, participants: int) -> pd.DataFrame:
    data = simulate_study(participants, _response(scenario),
                          generator(seed, "calibration", scenario, sim))
    data["act_yes"] = (data["act"] >= 5).astype(int)
    return data


def _fit_all(task) -> list[dict]:
    import warnings

    from simstudy.analysis.gamm import fit_gamm

    seed, scenario, sim, participants, families = task
    data = _study(seed, scenario, sim, participants)
    rows = []
    for family, distance in ((f, d) for f in families for d in DISTANCES):
        response = "act_yes" if family == "binomial" else "act"
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit_gamm(data, response, distance, family=family,
                             n_categories=7 if family == "ocat" else None)
        rows.append({"scenario": scenario, "sim": sim, "family": family, "distance": distance,
                     "p": model.test_.p, "edf": model.edf_,
                     "converged": bool(model.fit_result_.converged),
                     "cpu_seconds": time.process_time() - start})
    return rows


def _permutation(task) -> dict:
    from simstudy.analysis.permutation import permutation_smooth_test

    seed, sim, participants, family, distance, n_perm = task
    data = _study(seed, "null-permutation", sim, participants)
    response = "act_yes" if family == "binomial" else "act"
    sub = data[["uid", distance, response]].dropna()
    start = time.process_time()
    out = permutation_smooth_test(sub[distance].to_numpy(float), sub[response].to_numpy(float),
                                  sub["uid"].to_numpy(), n_perm,
                                  generator(seed, "permutation", family, distance, sim),
                                  family=family, n_categories=7 if family == "ocat" else None)
    return {"family": family, "distance": distance, "sim": sim, "p": out["p"],
            "asymptotic_p": out["asymptotic_p"], "permutations": n_perm,
            "cpu_seconds": time.process_time() - start}


def _rate(p: pd.Series, alpha: float) -> dict:
    hits = int((p < alpha).sum())
    lo, hi = clopper_pearson(hits, len(p))
    return {"rate": round(hits / len(p), 4), "ci95": [round(lo, 4), round(hi, 4)]}


def _summarize(fits: pd.DataFrame, prow: pd.DataFrame) -> tuple[list, list]:
    table = []
    for (family, distance), grp in fits.groupby(["family", "distance"], sort=False):
        null = grp[grp["scenario"] == "null"]
        effect = grp[grp["scenario"] == "effect"]
        table.append({
            "family": family, "model": f"act ~ s({distance})",
            "null_studies": len(null), "effect_studies": len(effect),
            "null_alpha_0.05": _rate(null["p"], 0.05), "null_alpha_0.01": _rate(null["p"], 0.01),
            "power_alpha_0.05": _rate(effect["p"], 0.05),
            "power_alpha_0.01": _rate(effect["p"], 0.01),
            "not_converged": round(float(1 - grp["converged"].mean()), 4),
            "cpu_seconds_per_fit": round(float(grp["cpu_seconds"].mean()), 3)})
    permutation = []
    for (family, distance), grp in (prow.groupby(["family", "distance"], sort=False)
                                    if len(prow) else []):
        # p is a multiple of 1 / (B + 1): "p <= alpha" is the level-alpha permutation test.
        hits05 = int((grp["p"] <= 0.05).sum())
        lo, hi = clopper_pearson(hits05, len(grp))
        permutation.append({
            "family": family, "model": f"act ~ s({distance})",
            "permutations_per_test": int(grp["permutations"].iloc[0]), "null_studies": len(grp),
            "null_alpha_0.05": {"rate": round(hits05 / len(grp), 4),
                                "ci95": [round(lo, 4), round(hi, 4)]},
            "asymptotic_null_alpha_0.05_same_studies": round(
                float((grp["asymptotic_p"] < 0.05).mean()), 4),
            "cpu_seconds_per_test": round(float(grp["cpu_seconds"].mean()), 2)})
    return table, permutation


def _collect(pool, fn, tasks, rows_path):
    out = []
    for result in pool.map(fn, tasks):
        chunk = result if isinstance(result, list) else [result]
        out.extend(chunk)
        if rows_path:
            with open(rows_path, "a") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in chunk)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--simulations", type=int, default=300, help="null studies")
    ap.add_argument("--power-simulations", type=int, default=100, help="studies with effect")
    ap.add_argument("--permutations", type=int, default=39, help="B per permutation test")
    ap.add_argument("--permutation-simulations", type=int, default=100)
    ap.add_argument("--permutation-models", nargs="*", default=None, metavar="FAMILY:DISTANCE",
                    help="run the permutation test on these (default: those over 0.06)")
    ap.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", default=None, help="append every finished fit here (JSON lines)")
    ap.add_argument("--summarize", nargs="+", default=None, metavar="ROWS",
                    help="only summarize rows files written by --rows")
    a = ap.parse_args()
    started = time.perf_counter()
    if a.summarize:
        rows = [json.loads(line) for path in a.summarize for line in open(path)]
        fits = pd.DataFrame([r for r in rows if "scenario" in r])
        prow = pd.DataFrame([r for r in rows if "permutations" in r])
    else:
        fams = tuple(a.families)
        null = [(a.seed, "null", s, a.participants, fams) for s in range(a.simulations)]
        effect = [(a.seed, "effect", s, a.participants, fams)
                  for s in range(a.power_simulations)]
        # Interleaved, so rows written so far always hold both scenarios.
        tasks = sorted(null + effect, key=lambda t: (t[2], t[1] != "null"))
        with ProcessPoolExecutor(a.workers) as pool:
            fits = pd.DataFrame(_collect(pool, _fit_all, tasks, a.rows)) if tasks else (
                pd.DataFrame(columns=["family", "distance", "scenario"]))
            if a.permutation_models is None:
                table, _ = _summarize(fits, pd.DataFrame())
                chosen = [(r["family"], r["model"][8:-1]) for r in table
                          if r["null_alpha_0.05"]["rate"] > 0.06]
            else:
                chosen = [tuple(m.split(":")) for m in a.permutation_models]
            ptasks = [(a.seed, s, a.participants, fam, dist, a.permutations)
                      for fam, dist in chosen for s in range(a.permutation_simulations)]
            prow = pd.DataFrame(_collect(pool, _permutation, ptasks, a.rows))
    table, permutation = _summarize(fits, prow)
    print(json.dumps({
        "design": {"participants": a.participants, "items": 5,
                   "null": "published model, action effect removed",
                   "effect": "published model (action: plateau effect of sparsity)",
                   "binomial_response": "act >= 5"},
        "seed": a.seed, "table": table, "permutation": permutation,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "load_average_1min": round(os.getloadavg()[0], 2)}, indent=2))


if __name__ == "__main__":
    main()
