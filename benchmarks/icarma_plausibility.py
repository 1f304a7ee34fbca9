"""How plausibility is judged, ablated: the true SCM's density against a learned causal flow's.

The individual-actionability study judges plausibility as ``log p(x_cf) >= log p(x)`` with "the
log densities from the CNF" (its Sec. 5, Metrics); this project's tables judge it with the true
Loan SCM's exact density. This benchmark keeps the recourses fixed (the deployed iCARMA models of
``benchmarks.icarma_personalization``, taken from the model cache, or trained once) and changes
only the judge, for every condition of the published tables (hard constraints and rankings;
``--no-flow``: only the true SCM's judges):

* ``scm``: counterfactual and density from the true SCM (the project's judgement);
* ``flow_density``: the same counterfactual, density from the causal flow fitted to the
  training split (``FlowConfig()`` defaults, data seed's training and validation splits);
* ``flow``: counterfactual and density both from the flow (a study without the true equations);
* ``shortest``: the true SCM's judgement of the same action shortened to the first point of
  ``theta(t) = x + t (theta - x)``, ``t`` in ``1/50, 2/50, ..., 1``, that the decision model
  approves (the action itself where none before ``t = 1`` is): how much plausibility the
  distance iCARMA moves beyond the decision boundary costs.

Plausibility is the share of recourses found whose counterfactual is at least as likely as the
factual; ``median_gain`` is the median of ``log p(x_cf) - log p(x)`` over the same recourses,
``median_logit`` / ``median_logit_cf`` the decision model's median logit at the factual and the
counterfactual, ``median_shortest_t`` the median ``t`` of ``shortest`` (the share of the action
that validity needs).
Prints one JSON object.

With ``--directions`` it compares instead which features the deployed recourses move and how
each move changes the density, against the causal oracle's plausible recourses for the first
``--oracle-limit`` applicants (rank-constant profiles, all four features actionable): per
feature, the share of recourses acting on it and the mean change of that feature's exogenous
log-density (``log p_k(u_k + s_k) - log p_k(u_k)``, which sums over the acted-on features to
``log p(x_cf) - log p(x)`` in an additive-noise world), overall and on the people for whom
iCARMA's recourse is implausible while the oracle's is valid and plausible, beside those
people's standardized factual noise.

With ``--masks`` it separates the mask network's choice from the action network's reach, under
the rank-constant and rank-linear profiles (every person may act on all four features):

* ``logits``: per feature, the mask network's logits over the people (mean, standard deviation,
  the share acted on, ``logit > 0``, and the share within ``|logit| < 1``, a probability of
  acting between 0.27 and 0.73: where the deployed mask is close to a coin's toss);
* for every non-empty subset of the four features, the action network's action for that mask,
  deployed as the policy deploys it (within the person's limits, on levels, shortened when
  configured), judged with the true SCM;
* ``mode``: the mask network's choice (``logit > 0``, ``mask_choice: network`` whatever
  ``--config`` says);
* ``any_subset``: the share of the people for whom some subset's action is valid and plausible
  (what a choice of the mask alone could reach with these action networks);
* ``by_objective``: for each person the valid subset whose action minimizes the training
  objective's per-person terms that depend on the mask, ``cost_weight * cost +
  plausibility_weight * max(0, log p(x) - log p(x_cf))`` (cost: the tables' cost), and its
  plausibility and hap.

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_plausibility --seed-list 1000 [--epochs 450]
    OMP_NUM_THREADS=1 python -m benchmarks.icarma_plausibility --seed-list 6000 --directions
    OMP_NUM_THREADS=1 python -m benchmarks.icarma_plausibility --seed-list 6000 --masks

References:
    The individual-actionability study (2026), Sec. 5 "Metrics: Plausibility".

Example:
    ``python -m benchmarks.icarma_plausibility --seed-list 1000 --epochs 450`` prints
    ``{"per_seed": {"1000": {"rank_constant": {"scm": ..., "flow_density": ..., ...}}}}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from contextlib import contextmanager

import numpy as np
import torch

from benchmarks.icarma_tables import PUBLISHED, conditions
from simstudy.metrics import evaluate_recourse
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, first_approved, noise_scale
from simstudy.policies.oracle import CausalOracle
from simstudy.primitives.recourse import Recourse
from simstudy.world.flow import FlowConfig, cached_causal_flow

__all__ = ["judges", "main", "mask_choice", "shortest"]


def _share(flags: np.ndarray) -> float:
    return float(flags.mean()) if flags.size else 0.0


def shortest(true_world, model, x: np.ndarray, rec: Recourse,
             steps: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """log p(x_cf) >= log p(x) for each action shortened to the first approved point (or
    itself) along ``x + t (theta - x)`` (:func:`~simstudy.policies.icarma.first_approved`), and
    that point's ``t`` (NaN where none is approved)."""
    acted = rec.intervened & rec.found[:, None]
    values, acted, first = first_approved(true_world, model, x, acted,
                                          np.where(acted, rec.values, x), steps)
    xt = torch.as_tensor(x, dtype=torch.float64)
    with torch.no_grad():
        cf = true_world.counterfactual(xt, torch.from_numpy(acted), torch.from_numpy(values))
        return (true_world.log_prob(cf) >= true_world.log_prob(xt)).numpy(), first


def judges(policy, true_world, flow, model, x: np.ndarray, ids: np.ndarray, profiles,
           feature_range) -> dict[str, float]:
    """Plausibility of one policy's recourses under the judges of the module docstring."""
    rec = policy.recommend(x, profiles, ids)
    scm = evaluate_recourse(true_world, model, x, rec, profiles, feature_range)
    found = scm["found"]
    with torch.no_grad():
        logit_cf = model(torch.from_numpy(scm["x_cf"])).numpy().ravel()[found]
        logit = model(torch.as_tensor(x, dtype=torch.float64)).numpy().ravel()[found]
    short, t = shortest(true_world, model, x, rec)
    gain_scm = (scm["logp_cf"] - scm["logp"])[found]
    out = {"found": int(found.sum()),
           "scm": _share(scm["plausible"][found]),
           "shortest": _share(short[found]),
           "median_shortest_t": (float(np.nanmedian(t[found])) if np.isfinite(t[found]).any()
                                 else float("nan")),
           "scm_valid_only": _share(scm["plausible"][scm["valid"]]),
           "median_gain_scm": float(np.median(gain_scm)) if found.any() else float("nan"),
           "median_logit": float(np.median(logit)) if found.any() else float("nan"),
           "median_logit_cf": float(np.median(logit_cf)) if found.any() else float("nan")}
    if flow is None:
        return out
    xt = torch.as_tensor(x, dtype=torch.float64)
    with torch.no_grad():
        f_fact = flow.log_prob(xt).numpy()
        f_cf = flow.log_prob(torch.from_numpy(scm["x_cf"])).numpy()
    on_flow = evaluate_recourse(flow, model, x, rec, profiles, feature_range)
    gain_flow = (f_cf - f_fact)[found]
    return {**out,
            "flow_density": _share(gain_flow >= 0),
            "flow": _share(on_flow["plausible"][on_flow["found"]]),
            "median_gain_flow_density": (float(np.median(gain_flow)) if found.any()
                                         else float("nan")),
            "factual_logp_correlation": float(np.corrcoef(scm["logp"], f_fact)[0, 1]),
            "cf_logp_correlation": (float(np.corrcoef(scm["logp_cf"][found], f_cf[found])[0, 1])
                                    if found.sum() > 1 else float("nan"))}


def _moves(world, model, x: np.ndarray, rec: Recourse, columns: list[int]) -> dict:
    """Per person: which of ``columns`` are acted on, each one's exogenous log-density change,
    approval and plausibility of the counterfactual."""
    xt = torch.as_tensor(x, dtype=torch.float64)
    acted = rec.intervened & rec.found[:, None]
    with torch.no_grad():
        cf = world.counterfactual(xt, torch.from_numpy(acted),
                                  torch.from_numpy(np.where(acted, rec.values, x)))
        u, u_cf = world.abduct(xt), world.abduct(cf)
        base = world.noise_log_prob(u)
        gain = []
        for j in columns:
            moved = u.clone()
            moved[:, j] = u_cf[:, j]
            gain.append((world.noise_log_prob(moved) - base).numpy())
        return {"acted": acted[:, columns], "gain": np.stack(gain, axis=1),
                "valid": model.approves(cf).numpy().ravel() & rec.found,
                "plausible": (world.log_prob(cf) >= world.log_prob(xt)).numpy() & rec.found,
                "found": rec.found}


def _by_feature(moves: dict, rows: np.ndarray, names: list[str]) -> dict:
    acted = moves["acted"][rows]
    return {name: {"acting": float(acted[:, k].mean()) if len(acted) else float("nan"),
                   "mean_gain": (float(moves["gain"][rows][acted[:, k], k].mean())
                                 if acted[:, k].any() else float("nan"))}
            for k, name in enumerate(names)}


def directions(policy, oracle, bench, limit: int) -> dict:
    """``--directions``: iCARMA's moves against the oracle's (module docstring)."""
    world, names = bench.world, list(bench.world.roles.actionable)
    columns = [list(world.roles.names).index(f) for f in names]
    m = min(limit, len(bench.x))
    x, ids = bench.x[:m], bench.ids[:m]
    prof = bench.profiles["rank_constant"].subset(slice(0, m))
    mine = _moves(world, bench.model, x, policy.recommend(x, prof, ids), columns)
    its = _moves(world, bench.model, x, oracle.recommend(x, prof, ids), columns)
    gap = mine["found"] & ~mine["plausible"] & its["valid"] & its["plausible"]
    with torch.no_grad():
        u = world.abduct(torch.as_tensor(x, dtype=torch.float64)).numpy()[:, columns]
    z = u / noise_scale(bench.context).numpy()[columns]
    return {"applicants": m,
            "icarma": {"plausible": float(mine["plausible"][mine["found"]].mean()),
                       "features": _by_feature(mine, mine["found"], names)},
            "oracle": {"plausible": float(its["plausible"][its["found"]].mean()),
                       "found": float(its["found"].mean()),
                       "features": _by_feature(its, its["found"], names)},
            "icarma_implausible_oracle_plausible": {
                "people": int(gap.sum()),
                "icarma": _by_feature(mine, gap, names),
                "oracle": _by_feature(its, gap, names),
                "factual_noise_z": dict(zip(names, z[gap].mean(axis=0).tolist(), strict=True)),
                "factual_noise_z_all": dict(zip(names, z.mean(axis=0).tolist(), strict=True))}}


@contextmanager
def _forced_mask(nets, subset: np.ndarray):
    """The networks with their mask network answering ``subset`` for everyone (the person's
    actionability still applies)."""
    logits = torch.tensor(np.where(subset, 20.0, -20.0), dtype=torch.float32)
    nets.mask_logits = lambda h: logits.expand(len(h), len(subset))
    try:
        yield nets
    finally:
        del nets.mask_logits  # the class's method again


def mask_choice(policy, bench, shapes: tuple[str, ...] = ("constant", "linear")) -> dict:
    """``--masks``: the mask network's choice against every subset's action (module
    docstring)."""
    nets, config = policy.networks_, policy.config_
    k = len(nets.actionable)
    subsets = [np.array(s, dtype=bool) for s in itertools.product((0, 1), repeat=k) if any(s)]
    xt = torch.as_tensor(bench.x, dtype=torch.float64)
    out: dict = {}
    for shape in shapes:
        prof = bench.profiles[f"rank_{shape}"]
        act, w = nets.profile_columns(prof)
        with torch.no_grad():
            logits = nets.mask_logits(nets.encode(xt, act, w)).double().numpy()
        allowed = act.numpy()

        def judged(rec: Recourse, prof=prof) -> dict:
            return evaluate_recourse(bench.world, bench.model, bench.x, rec, prof,
                                     bench.data.feature_range)

        mode = judged(policy.recommend(bench.x, prof, bench.ids))
        each = []
        for subset in subsets:
            with _forced_mask(nets, subset):
                each.append(judged(policy.recommend(bench.x, prof, bench.ids)))
        valid = np.stack([r["valid"] for r in each], axis=1)
        plausible = np.stack([r["plausible"] for r in each], axis=1)
        hap = np.stack([r["hard_action"] for r in each], axis=1)
        gap = np.stack([np.maximum(r["logp"] - r["logp_cf"], 0.0) for r in each], axis=1)
        cost = np.stack([r["cost"] for r in each], axis=1)
        score = np.where(valid, config.cost_weight * cost + config.plausibility_weight * gap,
                         np.inf)
        chosen = score.argmin(axis=1)
        has = np.isfinite(score.min(axis=1))
        rows = np.arange(len(chosen))
        found = mode["found"]
        out[shape] = {
            "logits": {name: {"mean": float(logits[allowed[:, j], j].mean()),
                              "sd": float(logits[allowed[:, j], j].std()),
                              "acted": _share(logits[allowed[:, j], j] > 0),
                              "near_even": _share(np.abs(logits[allowed[:, j], j]) < 1.0)}
                       for j, name in enumerate(nets.actionable)},
            "mode": {"valid": _share(mode["valid"]),
                     "plausible": _share(mode["plausible"][found]),
                     "hap": _share(mode["hard_action"][found])},
            "any_subset": {"valid": _share(valid.any(axis=1)),
                           "valid_and_plausible": _share((valid & plausible).any(axis=1))},
            "by_objective": {"valid": _share(has),
                             "plausible": _share(plausible[rows, chosen][has]),
                             "hap": _share(hap[rows, chosen][has])}}
    return out


def main() -> None:
    from benchmarks.icarma_personalization import Bench, config_from

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed-list", type=int, nargs="+", default=[1000])
    parser.add_argument("--epochs", type=int, default=None, help="default: the paper's 450")
    parser.add_argument("--config", default="{}",
                        help="iCARMA overrides as JSON (training and deployment fields)")
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--no-flow", action="store_true",
                        help="only the true SCM's judges (no causal flow fitted or loaded)")
    parser.add_argument("--directions", action="store_true",
                        help="which features iCARMA and the oracle move, and what each costs")
    parser.add_argument("--masks", action="store_true",
                        help="the mask network's choice against every subset's action")
    parser.add_argument("--oracle-limit", type=int, default=600,
                        help="with --directions: first N rejected applicants")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    config, deploy = config_from(args.config, args.epochs)
    bench = Bench(args.data_seed, oracle_limit=0)
    data = bench.data
    if args.directions:
        oracle = CausalOracle().fit(bench.context)
        print(json.dumps({str(s): directions(
            ICARMA(config, seeds=[s], cache=bench.cache, progress=False,
                   **deploy).fit(bench.context), oracle, bench, args.oracle_limit)
            for s in args.seed_list}, indent=1, default=float))
        return
    if args.masks:
        # the mask network's own choice is what is measured: the exact search would ignore the
        # forced masks
        deploy = {**deploy, "mask_choice": "network"}
        print(json.dumps({str(s): mask_choice(ICARMA(config, seeds=[s], cache=bench.cache,
                                                     progress=False, **deploy).fit(bench.context),
                                              bench)
                          for s in args.seed_list}, indent=1, default=float))
        return
    flow, flow_meta = None, {}
    if not args.no_flow:
        flow, flow_meta = cached_causal_flow(bench.cache, data.roles, data.x_train, data.x_val,
                                             FlowConfig(), seed=0)
    context = RecourseContext(bench.world, bench.model, data, seed=args.data_seed)
    by_condition = conditions(bench.world.roles.actionable, bench.ids, args.data_seed)
    out: dict = {}
    for s in args.seed_list:
        policy = ICARMA(config, seeds=[s], cache=bench.cache, progress=False,
                    **deploy).fit(context)
        out[str(s)] = {name: judges(policy, bench.world, flow, bench.model, bench.x, bench.ids,
                                    prof, data.feature_range)
                       for name, prof in by_condition.items()}
    print(json.dumps({"per_seed": out, "published_plausibility":
                      {k: v[1] for k, v in PUBLISHED.items() if k in by_condition},
                      "applicants": len(bench.x), "config": config.to_json(),
                      "flow": {k: flow_meta.get(k) for k in ("state_dict_sha256", "cached")}},
                     indent=1, default=float))


if __name__ == "__main__":
    main()
