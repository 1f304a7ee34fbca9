"""Causal oracle and iCARMA on every known world: validity, cost, plausibility and seconds.

For each known world (CARMA's six synthetic worlds and Loan): 20,000 samples split 50/25/25, a
decision model of CARMA's architecture for that world (logistic regression on the linear
worlds, one hidden layer of 16 ReLU units on the non-linear ones, two of 32 on Loan; 500
epochs). For the German-credit world (``german_credit``): its 1,000 real applicants split as
CARMA splits them (80/10/10), the causal flow with the project's default settings, and the
project's default decision model (two hidden layers of 32, 500 epochs; CARMA's public code
states no German-credit classifier or recourse settings). Then recourse for every rejected
deployment applicant who may act on every globally actionable feature (constant cost). The
oracle is the exact grid search (25 values per feature, every code of a coded feature,
plausibility enforced); iCARMA is trained with the published rank-based settings
(``--icarma-epochs`` shortens its training; the JSON records the epochs used). Validity is the
share of rejected applicants whose recourse the model approves; cost and plausibility are over
those with recourse; ``seconds`` is the wall time of the oracle and of iCARMA answering everyone
(iCARMA's training is ``icarma_training_seconds``, as recorded when trained for a model from
the cache, ``icarma_from_cache``). Prints one JSON object with a ``worlds``
list.

    OMP_NUM_THREADS=1 python -m benchmarks.worlds [--worlds chain_linear,loan] [--seed 0]
        [--limit N] [--icarma-epochs N] [--no-icarma] [--config '{"mask_noise": "none"}']

``--config`` overrides iCARMA's settings (training and deployment fields, as in
:mod:`benchmarks.icarma_personalization`); the JSON records them.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from benchmarks.icarma_personalization import split_overrides
from simstudy.core.rng import derive_seed, generator
from simstudy.metrics import evaluate_recourse
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import ICARMA, ICARMAConfig
from simstudy.policies.oracle import CausalOracle
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.csv_source import read_csv_source
from simstudy.world.data import WorldData
from simstudy.world.decision import DecisionConfig, ModelCache, train_decision_model
from simstudy.world.german_credit import DECISION_MODEL, GermanCreditWorldSpec, german_credit_source
from simstudy.world.known import KNOWN_TABLES, known_world

#: the decision model of each world in CARMA's classifier settings (``_params/_clf``)
CARMA_CLASSIFIER = {name: (() if name.endswith("_linear") and "non" not in name else (16,))
                    for name in KNOWN_TABLES} | {"loan": (32, 32), "german_credit": (32, 32)}
WORLDS = (*sorted(KNOWN_TABLES), "loan", "german_credit")


def decision_config(name: str) -> DecisionConfig:
    """The decision model of a world: CARMA's classifier, German credit's own."""
    if name == "german_credit":
        return DecisionConfig(**DECISION_MODEL)
    return DecisionConfig(hidden=CARMA_CLASSIFIER[name], epochs=500)


def cross_validate(x: np.ndarray, y: np.ndarray, roles, config: DecisionConfig,
                   folds: int = 5, seed: int = 0) -> dict:
    """Stratified ``folds``-fold cross-validation of a decision model on every row: balanced
    accuracy, AUC and accuracy per fold and their mean, and the majority answer's accuracy."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    split = StratifiedKFold(folds, shuffle=True, random_state=seed)
    rows = []
    for k, (train, test) in enumerate(split.split(x, y)):
        xt, yt = torch.as_tensor(x[train]), torch.as_tensor(y[train]).long()
        data = WorldData(roles, xt, yt, xt[:1], yt[:1], xt[:1], yt[:1])
        model = train_decision_model(data, config, derive_seed(seed, "cv", k))
        with torch.no_grad():
            score = torch.sigmoid(model(torch.as_tensor(x[test]))).numpy()
        rows.append({"balanced_accuracy": balanced_accuracy_score(y[test], score >= 0.5),
                     "auc": roc_auc_score(y[test], score),
                     "accuracy": float(((score >= 0.5) == y[test]).mean())})
    out = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}
    return {**out, "folds": [{k: round(float(v), 4) for k, v in r.items()} for r in rows],
            "majority_rate": round(float(max(y.mean(), 1 - y.mean())), 4),
            "majority_balanced_accuracy": 0.5, "config": config.to_json()}


def german_decision_cv(seed: int) -> dict:
    """The German-credit decision model and the published architecture, cross-validated on
    all 1,000 applicants."""
    source = german_credit_source()
    x, y = read_csv_source(source)
    published = DecisionConfig(hidden=CARMA_CLASSIFIER["german_credit"], epochs=500)
    return {"applicants": int(len(y)), "folds": 5, **cross_validate(
        x, y.astype(int), source.roles(), decision_config("german_credit"), seed=seed),
        "published_architecture": cross_validate(x, y.astype(int), source.roles(), published,
                                                 seed=seed)}


def _world(name: str, seed: int, cache: ModelCache):
    """The world and its split data."""
    if name == "german_credit":
        spec = GermanCreditWorldSpec(kind="german_credit")
        world, data, _ = spec.build(seed, cache)
        return world, data
    world = LoanSCM() if name == "loan" else known_world(name)
    return world, sample_world_data(world, 20000, generator(seed, "world-sample"))


def _summary(ev: dict, seconds: float) -> dict:
    found = ev["valid"]
    return {"validity": round(float(ev["valid"].mean()), 4),
            "cost": round(float(np.nanmean(ev["cost"][found])), 5) if found.any() else None,
            "plausibility": round(float(ev["plausible"][found].mean()), 4) if found.any()
            else None,
            "seconds": round(seconds, 2)}


def run_world(name: str, seed: int, limit: int | None, icarma_epochs: int | None,
              cache: ModelCache, overrides: dict | None = None) -> dict:
    world, data = _world(name, seed, cache)
    config = decision_config(name)
    model, meta = cache.decision_model(data, config, derive_seed(seed, "decision-model"))
    with torch.no_grad():
        rejected = np.flatnonzero(~model.approves(data.x_test).numpy())
    if limit:
        rejected = rejected[:limit]
    x = data.x_test.numpy()[rejected]
    features = world.roles.actionable
    ones = np.ones((len(x), len(features)))
    profiles = ActionabilityProfiles(features, ones.astype(int), 1, ones)
    context = RecourseContext(world, model, data, seed, cache)
    t0 = time.perf_counter()
    rec = CausalOracle(n_values=25).fit(context).recommend(x, profiles, rejected)
    oracle = _summary(evaluate_recourse(world, model, x, rec, profiles, data.feature_range),
                      time.perf_counter() - t0)
    out = {"name": name, "rejected": int(len(x)), "test_applicants": int(len(data.x_test)),
           "decision_model": {"hidden": list(config.hidden), "epochs": config.epochs,
                              "test_accuracy": round(float(
                                  (model.approves(data.x_test).numpy()
                                   == data.y_test.numpy().astype(bool)).mean()), 4),
                              "config": config.to_json(),
                              "sha256": meta["state_dict_sha256"]},
           "oracle_validity": oracle["validity"], "oracle_cost": oracle["cost"],
           "oracle_plausibility": oracle["plausibility"], "oracle_seconds": oracle["seconds"]}
    if name == "german_credit":
        out["decision_cv"] = german_decision_cv(seed)
    if icarma_epochs != 0:
        training, deploy = split_overrides(overrides or {})
        if icarma_epochs is not None:
            training["epochs"] = icarma_epochs
        icfg = ICARMAConfig(**training)
        t0 = time.perf_counter()
        policy = ICARMA(icfg, seeds=[seed], cache=cache, **deploy).fit(context)
        # a model from the cache reports the training time recorded when it was trained
        train_s = (policy.meta_["train_seconds"] if policy.meta_.get("cached")
                   else time.perf_counter() - t0)
        t0 = time.perf_counter()
        rec = policy.recommend(x, profiles, rejected)
        icarma = _summary(evaluate_recourse(world, model, x, rec, profiles, data.feature_range),
                          time.perf_counter() - t0)
        out.update({"icarma_validity": icarma["validity"], "icarma_cost": icarma["cost"],
                    "icarma_plausibility": icarma["plausibility"],
                    "icarma_seconds": icarma["seconds"], "icarma_training_seconds":
                    round(train_s, 1), "icarma_from_cache": bool(policy.meta_.get("cached")),
                    "icarma_epochs": icfg.epochs, "icarma_overrides": overrides or {},
                    "icarma_epochs_run": policy.meta_["epochs_run"]})
    else:
        out.update({"icarma_validity": None, "icarma_cost": None, "icarma_plausibility": None,
                    "icarma_seconds": None})
    out["seconds"] = round(out["oracle_seconds"] + (out["icarma_seconds"] or 0.0), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default=",".join(WORLDS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="first N rejected applicants")
    parser.add_argument("--icarma-epochs", type=int, default=None,
                        help="iCARMA training epochs (default: the published 450)")
    parser.add_argument("--no-icarma", action="store_true")
    parser.add_argument("--cache", default=None, help="model cache folder")
    parser.add_argument("--config", default="{}",
                        help="iCARMA overrides as JSON (training and deployment fields)")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    cache = ModelCache(args.cache) if args.cache else ModelCache()
    names = [w for w in args.worlds.split(",") if w]
    unknown = sorted(set(names) - set(WORLDS))
    if unknown:
        parser.error(f"--worlds: unknown worlds {unknown}; known: {', '.join(WORLDS)}")
    load = os.getloadavg()
    worlds = [run_world(n, args.seed, args.limit, 0 if args.no_icarma else args.icarma_epochs,
                        cache, json.loads(args.config)) for n in names]
    print(json.dumps({"worlds": worlds, "seed": args.seed, "grid_values": 25,
                      "plausibility_enforced": True, "cost": "constant",
                      "load_average_before": load, "load_average": os.getloadavg(),
                      "threads": torch.get_num_threads()}, indent=2))


if __name__ == "__main__":
    main()
