"""Does iCARMA follow the person's preferences? Validity, plausibility, hap, cost by profile.

Loan world (20,000 samples, data seed 0, the published MLP decision model), every rejected
deployment applicant with a uniform ranking of all four globally actionable features, under the
constant, concave, linear and convex cost profiles (alpha 3, the weight outside the square).
iCARMA is trained with the rank-based set and the default validity rule (``--config`` overrides
any hyperparameter) for each training seed (the paper's 1000, 2000, ..., ``1000 * N``); the
seed best on validation is deployed, as the paper does, and the mean over all seeds is reported
beside it. The causal oracle (25-value grid, the plausibility constraint) solves the first
``--oracle-limit`` of the same applicants; ``cost_ratio_*`` is iCARMA's mean cost over the
oracle's, both over the people for whom both recourses are valid (the paper: "closely matches
the Oracle in cost"), ``cost_ratio_to_oracle`` the largest over the four profiles.

Prints one JSON object: the deployed model's ``validity_<profile>``, ``plausibility_<profile>``,
``hap_<profile>``, ``cost_<profile>``, ``hap_ratio_<profile>`` (hap over the constant profile's),
``cost_ratio_<profile>`` and ``cost_ratio_to_oracle``; ``mean_of_seeds`` with the same keys;
``per_seed``; ``seeds``, ``epochs``, ``train_cpu_seconds`` (all trainings, as measured when
trained, also for models taken from the cache), ``wall_seconds``, the configuration and the
load of the machine.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_personalization [--seeds 10] [--epochs 450]
        [--config '{"validity": "per_person"}'] [--oracle-limit 600] [--cache]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

from benchmarks.icarma_tables import conditions
from simstudy.core.rng import generator
from simstudy.metrics import evaluate_recourse
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, ICARMAConfig, ICARMAParams, best_check
from simstudy.policies.oracle import CausalOracle
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache

PROFILES = ("constant", "concave", "linear", "convex")
#: published iCARMA (validity, plausibility, hap) under uniform rankings of all four features
PUBLISHED = {"constant": (0.999, 0.886, 0.852), "concave": (0.998, 0.631, 0.044),
             "linear": (0.996, 0.532, 0.029), "convex": (0.998, 0.541, 0.044)}


def judge(policy, world, model, x, ids, profiles, feature_range) -> dict[str, dict]:
    """validity / plausibility / hap (over recourses found) / cost (over valid ones) by
    profile."""
    out = {}
    for shape in PROFILES:
        prof = profiles[f"rank_{shape}"]
        r = evaluate_recourse(world, model, x, policy.recommend(x, prof, ids), prof,
                              feature_range)
        found, valid = r["found"], r["valid"]
        out[shape] = {"validity": float(valid.mean()),
                      "plausibility": float(r["plausible"][found].mean()) if found.any() else 0.0,
                      "hap": float(r["hard_action"][found].mean()) if found.any() else 0.0,
                      "cost": float(np.mean(r["cost"][valid])) if valid.any() else float("nan"),
                      "valid_costs": np.where(valid, r["cost"], np.nan)}
    return out


def clamp_share(policy, x: np.ndarray, profiles) -> float:
    """Share of the acted-on features whose latent step sits on the clamp's bound (a step
    there gets no gradient through the clamp), under the given profiles."""
    nets = policy.networks_
    xt = torch.as_tensor(x, dtype=torch.float64)
    act, w = nets.profile_columns(profiles)
    with torch.no_grad():
        h = nets.encode(xt, act, w)
        mask = (nets.mask_logits(h) > 0) & act
        step = nets.action_net(torch.cat([h, mask.to(torch.float32)], dim=1)).double()
    lo, hi = nets.step_bounds.tolist()
    at_bound = (step <= lo) | (step >= hi)
    return float(at_bound[mask].double().mean()) if mask.any() else 0.0


def flat(rows: dict[str, dict], with_oracle: bool) -> dict:
    """The figures of one model (or a mean) under the JSON's flat names."""
    out = {}
    for shape, r in rows.items():
        for m in ("validity", "plausibility", "hap", "cost"):
            out[f"{m}_{shape}"] = r[m]
    for shape in PROFILES:
        out[f"hap_ratio_{shape}"] = (out[f"hap_{shape}"] / out["hap_constant"]
                                     if out["hap_constant"] > 0 else float("nan"))
    if with_oracle:
        for shape in PROFILES:
            out[f"cost_ratio_{shape}"] = rows[shape]["cost_both"] / rows[shape]["oracle_cost_both"]
        out["cost_ratio_to_oracle"] = max(out[f"cost_ratio_{s}"] for s in PROFILES)
    return out


class Bench:
    """The Loan world, decision model, rejected deployment applicants, their rank profiles and
    the oracle's answers, shared by every configuration measured."""

    def __init__(self, data_seed: int = 0, oracle_limit: int = 600) -> None:
        self.world = LoanSCM()
        self.data = sample_world_data(self.world, 20000, generator(data_seed, "world-sample"))
        self.cache = ModelCache()
        self.model, _ = self.cache.decision_model(self.data, DecisionConfig(), seed=data_seed)
        self.context = RecourseContext(self.world, self.model, self.data, seed=data_seed)
        with torch.no_grad():
            self.x = self.data.x_test[~self.model.approves(self.data.x_test)].numpy()
        self.ids = np.arange(len(self.x))
        self.profiles = conditions(self.world.roles.actionable, self.ids, data_seed)
        self.m = m = min(oracle_limit, len(self.x))
        self.oracle_rows = None
        if m > 0:
            oracle = CausalOracle().fit(self.context)
            sub = {k: v.subset(slice(0, m)) for k, v in self.profiles.items()}
            self.oracle_rows = self.judge(oracle, slice(0, m), sub)

    def judge(self, policy, rows: slice = slice(None), profiles=None) -> dict[str, dict]:
        return judge(policy, self.world, self.model, self.x[rows], self.ids[rows],
                     profiles or self.profiles, self.data.feature_range)

    def measure(self, config: ICARMAConfig, seeds: list[int], cache: bool = False,
                deploy: dict | None = None) -> dict:
        """Trains one model per seed, judges each; the best on validation and the mean.
        ``deploy``: how the action is deployed (:data:`DEPLOYMENT` fields of the policy)."""
        load_before = os.getloadavg()
        per_seed, checks, cpu, m = {}, [], 0.0, self.m
        for s in seeds:
            c0 = time.process_time()
            policy = ICARMA(config, seeds=[s], cache=self.cache if cache else False,
                            progress=False, **(deploy or {})).fit(self.context)
            meta = policy.meta_
            cpu += meta.get("train_cpu_seconds", time.process_time() - c0)
            rows = self.judge(policy)
            for shape in PROFILES:  # the people valid under both (the oracle's first m)
                if self.oracle_rows is not None:
                    mine = rows[shape]["valid_costs"][:m]
                    its = self.oracle_rows[shape]["valid_costs"]
                    both = ~np.isnan(mine) & ~np.isnan(its)
                    rows[shape]["cost_both"] = float(np.mean(mine[both]))
                    rows[shape]["oracle_cost_both"] = float(np.mean(its[both]))
            checks.append(meta["deployed_check"])
            per_seed[s] = {"figures": flat(rows, self.oracle_rows is not None),
                           "validation": meta["deployed_check"],
                           "final_multipliers": meta.get("final_multipliers"),
                           "excluded_share": meta.get("excluded_share"),
                           "clamped_share_constant": clamp_share(
                               policy, self.x, self.profiles["rank_constant"]),
                           "train_cpu_seconds": meta.get("train_cpu_seconds"),
                           "cached": meta.get("cached", False)}
            print(json.dumps({"seed": s, **per_seed[s]}), flush=True, file=sys.stderr)
        best = seeds[best_check(checks)]
        mean = {k: float(np.mean([per_seed[s]["figures"][k] for s in seeds]))
                for k in per_seed[best]["figures"]}
        oracle = ({s: {k: v for k, v in r.items() if k != "valid_costs"}
                   for s, r in self.oracle_rows.items()} if self.oracle_rows else None)
        return {**per_seed[best]["figures"], "deployed_seed": best,
                "mean_of_seeds": mean, "per_seed": per_seed, "oracle": oracle,
                "oracle_applicants": m, "applicants": len(self.x), "published": PUBLISHED,
                "seeds": seeds, "epochs": config.epochs, "train_cpu_seconds": cpu,
                "config": config.to_json(),
                "deploy": {k: getattr(policy.params, k) for k in DEPLOYMENT},
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(), "threads": torch.get_num_threads()}


def paper_seeds(n: int) -> list[int]:
    """The paper's training seeds: 1000, 2000, ..., ``1000 n``."""
    return [1000 * (i + 1) for i in range(n)]


#: the policy's fields that change how the trained action is deployed, not the training
DEPLOYMENT = ICARMAParams.DEPLOYMENT


def split_overrides(overrides: dict) -> tuple[dict, dict]:
    """``(training, deployment)`` overrides: :data:`DEPLOYMENT` fields apart."""
    return ({k: v for k, v in overrides.items() if k not in DEPLOYMENT},
            {k: v for k, v in overrides.items() if k in DEPLOYMENT})


def config_from(overrides_json: str, epochs: int | None) -> tuple[ICARMAConfig, dict]:
    """The ``--config`` JSON overrides: the :class:`ICARMAConfig` (``--epochs`` on top) and
    the deployment fields (:data:`DEPLOYMENT`)."""
    training, deploy = split_overrides(json.loads(overrides_json))
    if epochs is not None:
        training["epochs"] = epochs
    return ICARMAConfig(**training), deploy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="training seeds (1000, 2000, ...)")
    parser.add_argument("--seed-list", type=int, nargs="+", default=None,
                        help="these training seeds instead")
    parser.add_argument("--epochs", type=int, default=None, help="default: the paper's 450")
    parser.add_argument("--config", default="{}",
                        help="iCARMA overrides as JSON (training and deployment fields)")
    parser.add_argument("--oracle-limit", type=int, default=600,
                        help="first N rejected applicants the oracle solves (0: no oracle)")
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--cache", action="store_true",
                        help="keep trained models in the model cache (and reuse them)")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    config, deploy = config_from(args.config, args.epochs)
    t0 = time.perf_counter()
    bench = Bench(args.data_seed, args.oracle_limit)
    seeds = args.seed_list or paper_seeds(args.seeds)
    result = bench.measure(config, seeds, args.cache, deploy)
    result["wall_seconds"] = time.perf_counter() - t0  # the whole benchmark, oracle included
    print(json.dumps(result, indent=1, default=float))


if __name__ == "__main__":
    main()
