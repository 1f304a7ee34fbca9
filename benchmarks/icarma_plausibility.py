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

    OMP_NUM_THREADS=1 python -m benchmarks.icarma_plausibility --seed-list 1000 [--epochs 450]

References:
    The individual-actionability study (2026), Sec. 5 "Metrics: Plausibility".

Example:
    ``python -m benchmarks.icarma_plausibility --seed-list 1000 --epochs 450`` prints
    ``{"per_seed": {"1000": {"rank_constant": {"scm": ..., "flow_density": ..., ...}}}}``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from benchmarks.icarma_tables import PUBLISHED, conditions
from simstudy.metrics import evaluate_recourse
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, first_approved
from simstudy.primitives.recourse import Recourse
from simstudy.world.flow import FlowConfig, cached_causal_flow

__all__ = ["judges", "main", "shortest"]


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
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    config, deploy = config_from(args.config, args.epochs)
    bench = Bench(args.data_seed, oracle_limit=0)
    data = bench.data
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
