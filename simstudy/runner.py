"""Running a scenario: worlds, decision models, populations and policies, per replication.

For replication ``r`` of a scenario with base seed ``s``, the replication seed is
``derive_seed(s, "replication", r)``; the world sample, the decision model and every applicant's
profile are keyed from it by purpose (see :mod:`simstudy.rng`). Every policy of a replication
sees the same world, model and people, and gets the same seed, ``derive_seed(seed, "policies")``:
the people's hidden preferences and answers, and every draw a policy keys by purpose, are common
random numbers, so policies compare person by person.

Each (replication, condition, policy) unit is written to ``parts/`` as soon as it finishes;
a rerun of the same scenario into the same directory skips finished units, so an interrupted run
loses nothing that finished.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from .documents import UsageError
from .metrics import evaluate_recourse
from .policies.base import RecourseContext, RecoursePolicy
from .population import Population
from .progress import progress as show_progress
from .rng import derive_seed
from .scenario import build_population, load_scenario, policy_name
from .sim.experiment import SIM_FILES, run_event_world
from .store import package_versions, read_manifest, write_csv, write_manifest, write_parquet
from .summary import summarize_contrasts, summarize_recourse
from .world.decision import ModelCache

__all__ = ["run_scenario", "recourse_table", "RunResult", "Replication", "prepare_replication"]


@dataclass
class RunResult:
    run_dir: Path
    recourse: pd.DataFrame
    summary: pd.DataFrame
    manifest: dict[str, Any]


@dataclass
class Replication:
    """Everything one replication shares across conditions and policies."""

    index: int
    seed: int
    context: RecourseContext
    x: np.ndarray
    ids: np.ndarray
    info: dict[str, Any]


def _scenario_hash(resolved: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()


def recourse_table(
    population: Population, recourse_metrics: dict[str, np.ndarray], intervened: np.ndarray,
    values: np.ndarray, extras: dict[str, np.ndarray], meta: dict[str, Any],
) -> pd.DataFrame:
    """One row per applicant: ids, groups, profile, action, factual and counterfactual, metrics."""
    names = population.feature_names
    prof = population.profiles
    cols: dict[str, Any] = {k: np.full(len(population), v) for k, v in meta.items()}
    cols["applicant_id"] = population.ids
    for sensitive in ("gender",):
        if sensitive in names:
            cols[sensitive] = population.x[:, names.index(sensitive)].astype(np.int64)
    for key, val in population.groups.items():
        cols[key] = val
    cols["n_actionable"] = prof.n_actionable
    for k, f in enumerate(prof.features):
        j = names.index(f)
        cols[f"score_{f}"] = prof.scores[:, k]
        cols[f"weight_{f}"] = prof.weights[:, k]
        cols[f"act_{f}"] = intervened[:, j]
        cols[f"theta_{f}"] = values[:, j]
    for j, f in enumerate(names):
        cols[f"x_{f}"] = population.x[:, j]
        cols[f"xcf_{f}"] = recourse_metrics["x_cf"][:, j]
    for key, val in recourse_metrics.items():
        if key != "x_cf":
            cols[key] = val
    for key, val in extras.items():
        cols[key] = val
    return pd.DataFrame(cols)


def prepare_replication(scenario: Any, index: int, base_seed: int, cache: ModelCache,
                        progress: bool = False, base_dir: str | Path = ".") -> Replication:
    """World sample, decision model and recourse-seeking applicants of one replication.

    ``base_dir`` is the scenario file's folder: relative data paths resolve against it.
    """
    seed = derive_seed(base_seed, "replication", index)
    world, data, world_info = scenario.world.build(seed, cache, base_dir=base_dir)
    model, meta = cache.decision_model(data, scenario.decision_model.config(),
                                       derive_seed(seed, "decision-model"), progress=progress)
    split = scenario.applicants.split
    x_split = {"test": data.x_test, "val": data.x_val, "train": data.x_train}[split]
    with torch.no_grad():
        approved = model.approves(x_split).numpy()
    ids = np.arange(len(x_split))
    if scenario.applicants.only_rejected:
        ids = ids[~approved]
    if scenario.applicants.max_applicants is not None:
        ids = ids[: scenario.applicants.max_applicants]
    info = {
        "index": index,
        "seed": seed,
        "world": world_info,
        "decision_model": {
            "state_dict_sha256": meta["state_dict_sha256"],
            "cache_key": meta["cache_key"],
            "test_accuracy": meta["test_accuracy"],
            "test_approval_rate": meta["test_approval_rate"],
            "seed": meta["seed"],
        },
        "applicants": {"split": split, "n": int(len(ids)),
                       "approval_rate_split": float(approved.mean())},
    }
    context = RecourseContext(world, model, data, seed)
    return Replication(index, seed, context, x_split.numpy()[ids], ids, info)


def run_scenario(
    path: str | Path, out_dir: str | Path, seed: int | None = None, progress: bool = True,
    cache: ModelCache | None = None,
) -> RunResult:
    """Runs a scenario file and writes ``manifest.json``, ``recourse.parquet``, ``summary.csv``.

    Args:
        path: the scenario YAML.
        out_dir: the run directory (created; finished parts found there are reused).
        seed: overrides the scenario's base seed.
        progress: show progress bars.
        cache: where trained models are cached (default: ``$SIMSTUDY_CACHE`` or
            ``./.simstudy_cache``).
    """
    scenario, populations = load_scenario(path)
    base_seed = scenario.seed if seed is None else int(seed)
    out = Path(out_dir)
    parts_dir = out / "parts"
    cache = cache or ModelCache()
    resolved = {
        "scenario": scenario.model_dump(mode="json"),
        "populations": {k: v.model_dump(mode="json") for k, v in populations.items()},
    }
    resolved_hash = _scenario_hash(resolved)
    if (out / "manifest.json").exists():
        previous = read_manifest(out)
        if (previous.get("resolved_sha256") != resolved_hash
                or previous.get("base_seed") != base_seed):
            raise UsageError(f"{out} holds a run of a different scenario or seed; "
                             "choose another --out directory")
    manifest: dict[str, Any] = {
        "status": "running",
        "scenario_file": str(path),
        "scenario_name": scenario.name,
        "base_seed": base_seed,
        "resolved_sha256": resolved_hash,
        "resolved": resolved,
        "versions": package_versions(),
        "torch_threads": torch.get_num_threads(),
        "replications": [],
    }
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, manifest)

    units = [(r, c.name, policy_name(p)) for r in range(scenario.replications)
             for c in scenario.conditions for p in scenario.policies]
    bar = show_progress(len(units), desc=scenario.name, unit="unit", enabled=progress)
    started = time.time()
    for r in range(scenario.replications):
        rep = prepare_replication(scenario, r, base_seed, cache, progress=progress,
                                  base_dir=Path(path).parent)
        fitted: dict[str, RecoursePolicy] = {}
        rep.info["policies"] = {}
        for cond in scenario.conditions:
            population = build_population(
                populations[cond.name], rep.x, rep.context.feature_names,
                rep.context.world.roles.actionable, rep.ids, rep.seed)
            for spec in scenario.policies:
                name = policy_name(spec)
                part = parts_dir / f"rep{r:03d}__{cond.name}__{name}.parquet"
                if name not in fitted and not part.exists():
                    fitted[name] = spec.policy().fit(rep.context)
                if name in fitted:
                    rep.info["policies"][name] = fitted[name].model_hashes()
                if part.exists():
                    bar.update(1)
                    continue
                policy = fitted[name]
                t0 = time.time()
                rec = policy.recommend(rep.x, population.profiles, rep.ids,
                                       derive_seed(rep.seed, "policies"))
                seconds = time.time() - t0
                ev = evaluate_recourse(rep.context.world, rep.context.model, rep.x, rec,
                                       population.profiles, rep.context.feature_range)
                table = recourse_table(
                    population, ev, rec.intervened & rec.found[:, None], rec.values, rec.extras,
                    {"replication": r, "seed": rep.seed, "condition": cond.name,
                     "policy": name})
                write_parquet(table, part)
                rep.info.setdefault("seconds", {})[f"{cond.name}/{name}"] = round(seconds, 3)
                bar.update(1)
        manifest["replications"].append(rep.info)
        write_manifest(out, manifest)
    bar.close()

    tables = [pd.read_parquet(parts_dir / f"rep{r:03d}__{c}__{p}.parquet") for r, c, p in units]
    recourse = pd.concat(tables, ignore_index=True)
    group_columns = [c for c in ("gender", "race", "privileged") if c in recourse.columns]
    summary = summarize_recourse(recourse, group_columns)
    write_parquet(recourse, out / "recourse.parquet")
    write_csv(summary, out / "summary.csv")
    outputs = ["recourse.parquet", "summary.csv"]
    if scenario.contrasts:
        pairs = [(c.policy, c.baseline) for c in scenario.contrasts]
        write_csv(summarize_contrasts(recourse, pairs, group_columns), out / "contrasts.csv")
        outputs.append("contrasts.csv")
    if scenario.simulation is not None:
        _run_event_world(scenario, populations, base_seed, cache, out, progress,
                         Path(path).parent)
        outputs += SIM_FILES
    manifest["status"] = "complete"
    manifest["wall_seconds"] = round(time.time() - started, 2)
    manifest["outputs"] = outputs
    write_manifest(out, manifest)
    return RunResult(out, recourse, summary, manifest)


def _run_event_world(scenario: Any, populations: dict, base_seed: int, cache: ModelCache,
                     out: Path, progress: bool, base_dir: Path) -> None:
    """The scenario's event world: every replication x policy, per condition.

    Each replication uses its own world sample and decision model (the same ones as the
    recourse tables); with one condition the files go beside the other run files, with several
    into ``sim/<condition>/``.
    """
    reps = [prepare_replication(scenario, r, base_seed, cache, base_dir=base_dir)
            for r in range(scenario.replications)]
    setups = [(rep.context.world, rep.context.data, rep.context.model) for rep in reps]
    names = reps[0].context.feature_names
    actionable = reps[0].context.world.roles.actionable
    for cond in scenario.conditions:
        spec = populations[cond.name]

        def population(x, ids, seed, spec=spec):
            pop = build_population(spec, x, names, actionable, ids, seed)
            return pop.profiles, pop.groups

        policies = {policy_name(p): (lambda context, p=p: p.policy().fit(context))
                    for p in scenario.policies}
        target = out if len(scenario.conditions) == 1 else out / "sim" / cond.name
        run_event_world(scenario.simulation, setups[0][0], setups[0][1], setups[0][2], policies,
                        population, [rep.seed for rep in reps], target, progress=progress,
                        per_replication=setups)
