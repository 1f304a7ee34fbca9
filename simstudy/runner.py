"""Running a scenario: worlds, decision models, populations and policies, per replication.

For replication ``r`` of a scenario with base seed ``s``, the replication seed is
``derive_seed(s, "replication", r)``; the world sample, the decision model and the people (one
:class:`~simstudy.people.People` per condition: profiles, hidden truth, answers, dispositions)
are keyed from it by purpose (see :mod:`simstudy.rng`). Every policy of a replication sees the
same world, model and people, and gets the same seed, ``derive_seed(seed, "policies")``, so
policies compare person by person. Every policy's recourse is measured against the people's
hidden truth (:meth:`People.truth_columns`; ``*_base`` for the base of a refining policy) and
their response model (``p_accept``, ``p_act``: accepting, and acting once accepted).

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

from .dictionary import write_dictionary
from .documents import FieldProblem, UsageError, with_overrides
from .metrics import Recourse, evaluate_recourse
from .people import People
from .policies.base import RecourseContext, RecoursePolicy
from .primitives.space import ScaledSpace
from .progress import progress as show_progress
from .rng import derive_seed
from .scenario import load_scenario, people_specs, policy_name
from .scenario_study import write_study_files
from .sim.experiment import SIM_FILES, run_event_world
from .store import (
    RunLock,
    check_output_dir,
    checked,
    code_version,
    file_sha256,
    package_versions,
    read_manifest,
    write_checked,
    write_csv,
    write_manifest,
    write_parquet,
)
from .summary import summarize_contrasts, summarize_recourse
from .world.decision import ModelCache

#: Significant digits of the floats in summary.csv and contrasts.csv (recourse.parquet keeps
#: full precision).
SUMMARY_DIGITS = 6

__all__ = ["run_scenario", "recourse_table", "people_columns", "RunResult", "Replication",
           "prepare_replication"]


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


def _stable(info: Any) -> Any:
    """``info`` without the entries that change between identical runs (cache hits)."""
    if isinstance(info, dict):
        return {k: _stable(v) for k, v in info.items() if k != "cached"}
    return info


def _scenario_hash(resolved: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()


def recourse_table(
    people: People, recourse_metrics: dict[str, np.ndarray], intervened: np.ndarray,
    values: np.ndarray, extras: dict[str, np.ndarray], meta: dict[str, Any],
) -> pd.DataFrame:
    """One row per applicant: ids, groups, profile, action, factual and counterfactual, metrics."""
    names = people.feature_names
    prof = people.reported
    cols: dict[str, Any] = {k: np.full(len(people), v) for k, v in meta.items()}
    cols["applicant_id"] = people.ids
    for sensitive in ("gender",):
        if sensitive in names:
            cols[sensitive] = people.x[:, names.index(sensitive)].astype(np.int64)
    for key, val in people.groups.items():
        cols[key] = val
    cols["n_actionable"] = prof.n_actionable
    for k, f in enumerate(prof.features):
        j = names.index(f)
        cols[f"score_{f}"] = prof.scores[:, k]
        cols[f"weight_{f}"] = prof.weights[:, k]
        cols[f"can_{f}"] = people.true_actionable[:, k]
        cols[f"act_{f}"] = intervened[:, j]
        cols[f"theta_{f}"] = values[:, j]
    for j, f in enumerate(names):
        cols[f"x_{f}"] = people.x[:, j]
        cols[f"xcf_{f}"] = recourse_metrics["x_cf"][:, j]
    for key, val in recourse_metrics.items():
        if key != "x_cf":
            cols[key] = val
    for key, val in extras.items():
        cols[key] = val
    return pd.DataFrame(cols)


def people_columns(people: People, rec: Recourse, ev: dict[str, np.ndarray],
                   feature_range: np.ndarray) -> dict[str, np.ndarray]:
    """A recourse measured against the people: hidden truth and response probabilities.

    Args:
        people: who received the recourses (row ``i`` of ``rec`` is ``people.ids[i]``).
        rec: the policy's recourse.
        ev: its metrics (:func:`~simstudy.metrics.evaluate_recourse`).
        feature_range: the training range of every feature.

    Returns:
        :meth:`People.truth_columns` plus ``p_accept`` and ``p_act`` (NaN where no recourse).
    """
    found = ev["found"]
    intervened = rec.intervened & rec.found[:, None]
    out = people.truth_columns(ev["x_cf"], found, intervened)
    delta = np.where(intervened, np.abs(np.nan_to_num(rec.values - people.x)), 0.0)
    inputs = people.response_inputs(np.arange(len(people)), ev["cost"], ev["cost_unweighted"],
                                    intervened.sum(axis=1), (delta / feature_range).sum(axis=1),
                                    out["blocked"])
    p_accept, p_act = people.response.probabilities(inputs)
    out["p_accept"] = np.where(found, p_accept, np.nan)
    out["p_act"] = np.where(found, p_act, np.nan)
    return out


def _policy_table(people: People, rec: Recourse, context: RecourseContext,
                  meta: dict[str, Any]) -> pd.DataFrame:
    """The run-table rows of one policy's recourse for one condition's people."""
    world, model, fr = context.world, context.model, context.feature_range
    ev = evaluate_recourse(world, model, people.x, rec, people.reported, fr)
    extras = {**rec.extras, **people_columns(people, rec, ev, fr)}
    if rec.base is not None:
        ev_base = evaluate_recourse(world, model, people.x, rec.base, people.reported, fr)
        base = people.truth_columns(ev_base["x_cf"], ev_base["found"],
                                    rec.base.intervened & rec.base.found[:, None])
        extras.update({f"{k}_base": v for k, v in base.items()
                       if k in ("user_loss", "gtp", "gtd", "blocked")})
    return recourse_table(people, ev, rec.intervened & rec.found[:, None], rec.values, extras,
                          meta)


def prepare_replication(scenario: Any, index: int, base_seed: int, cache: ModelCache,
                        progress: bool = False, base_dir: str | Path = ".") -> Replication:
    """World sample, decision model and recourse-seeking applicants of one replication.

    ``base_dir`` is the scenario file's folder: relative data paths resolve against it.
    """
    seed = derive_seed(base_seed, "replication", index)
    world, data, world_info = scenario.world.build(seed, cache, base_dir=base_dir)
    model, meta = scenario.decision_model.obtain(data, cache, derive_seed(seed, "decision-model"),
                                                 base_dir=base_dir, progress=progress)
    split = scenario.applicants.split
    x_split = {"test": data.x_test, "val": data.x_val, "train": data.x_train}[split]
    with torch.no_grad():
        approved = model.approves(x_split).numpy()
    if approved.all() or not approved.any():
        share = "every" if approved.all() else "no"
        raise FieldProblem("decision_model", (
            f"the trained model approves {share} applicant of the {split} split (replication "
            f"{index}); recourse needs both outcomes: check the data's label balance, epochs and "
            "lr"))
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
    scenario = with_overrides(scenario, {"seed": ("--seed", seed)}, str(path))
    out = check_output_dir(out_dir)
    with RunLock(out):
        return _run_locked(path, scenario, populations, out, progress, cache or ModelCache())


def _run_locked(path: str | Path, scenario: Any, populations: dict, out: Path, progress: bool,
                cache: ModelCache) -> RunResult:
    base_seed = scenario.seed
    parts_dir = out / "parts"
    resolved = {
        "scenario": scenario.model_dump(mode="json"),
        "populations": {k: v.model_dump(mode="json") for k, v in populations.items()},
    }
    resolved_hash = _scenario_hash(resolved)
    specs = people_specs(scenario, populations)
    data_files = getattr(scenario.world, "data_files", lambda base_dir: [])(Path(path).parent)
    data_sha256 = {str(f): file_sha256(f) for f in data_files}
    # everything a part depends on besides its own unit: reused parts must share it
    run_key = _scenario_hash({"resolved": resolved_hash, "seed": base_seed,
                              "data": data_sha256, "code": code_version()})
    if (out / "manifest.json").exists():
        previous = read_manifest(out)
        if previous.get("run_key", previous.get("resolved_sha256")) != run_key:
            raise UsageError(f"{out} holds a run of a different scenario, seed, data file or "
                             "simstudy code; choose another --out directory")
    manifest: dict[str, Any] = {
        "status": "running",
        "scenario_file": str(path),
        "scenario_name": scenario.name,
        "base_seed": base_seed,
        "resolved_sha256": resolved_hash,
        "run_key": run_key,
        "code_version": code_version(),
        "data_files": data_sha256,
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
    study = scenario.study
    study_condition = None if study is None else (study.condition or scenario.conditions[0].name)
    study_people = None
    for r in range(scenario.replications):
        try:
            rep = prepare_replication(scenario, r, base_seed, cache, progress=progress,
                                      base_dir=Path(path).parent)
        except FieldProblem as exc:
            raise exc.in_file(str(path)) from None
        fitted: dict[str, RecoursePolicy] = {}
        rep.info["policies"] = {}
        space = ScaledSpace.from_context(rep.context)
        for cond in scenario.conditions:
            # hidden preferences and answers are keyed on the policies' stream
            people = specs[cond.name].build(
                rep.x, rep.ids, rep.seed, rep.context.feature_names,
                rep.context.world.roles.actionable, space,
                preference_seed=derive_seed(rep.seed, "policies"))
            if study is not None and (r, cond.name) == (study.replication, study_condition):
                study_people = (people, rep.context)
            for spec in scenario.policies:
                name = policy_name(spec)
                part = parts_dir / f"rep{r:03d}__{cond.name}__{name}.parquet"
                key = _scenario_hash({"run": run_key, "unit": [r, cond.name, name],
                                      "world": _stable(rep.info["world"]),
                                      "decision_model": _stable(rep.info["decision_model"])})
                done = checked(part, key)
                if name not in fitted and not done:
                    fitted[name] = spec.policy().fit(rep.context)
                if name in fitted:
                    rep.info["policies"][name] = fitted[name].model_hashes()
                if done:
                    bar.update(1)
                    continue
                policy = fitted[name]
                t0 = time.time()
                asks = {"feedback": people.feedback()} if policy.asks_questions else {}
                rec = policy.recommend(rep.x, people.reported, rep.ids,
                                       derive_seed(rep.seed, "policies"), **asks)
                seconds = time.time() - t0
                table = _policy_table(people, rec, rep.context,
                                      {"replication": r, "seed": rep.seed,
                                       "condition": cond.name, "policy": name})
                write_checked(part, lambda tmp, table=table: table.to_parquet(tmp, index=False),
                              key)
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
    write_csv(summary, out / "summary.csv", digits=SUMMARY_DIGITS)
    outputs = ["recourse.parquet", "summary.csv"]
    if scenario.contrasts:
        pairs = [(c.policy, c.baseline, c.condition, c.baseline_condition)
                 for c in scenario.contrasts]
        write_csv(summarize_contrasts(recourse, pairs, group_columns), out / "contrasts.csv",
                  digits=SUMMARY_DIGITS)
        outputs.append("contrasts.csv")
    if study_people is not None:
        outputs += write_study_files(scenario, recourse, *study_people,
                                     [policy_name(p) for p in scenario.policies], out)
    if scenario.simulation is not None:
        _run_event_world(scenario, specs, base_seed, cache, out, progress, Path(path).parent)
        outputs += SIM_FILES
    write_dictionary(out)
    outputs.append("data_dictionary.csv")
    manifest["status"] = "complete"
    manifest["wall_seconds"] = round(time.time() - started, 2)
    manifest["outputs"] = outputs
    write_manifest(out, manifest)
    return RunResult(out, recourse, summary, manifest)


def _run_event_world(scenario: Any, specs: dict, base_seed: int, cache: ModelCache,
                     out: Path, progress: bool, base_dir: Path) -> None:
    """The scenario's event world: every replication x policy, per condition.

    Each replication uses its own world sample and decision model (the same ones as the
    recourse tables) and the condition's people description; with one condition the files go
    beside the other run files, with several into ``sim/<condition>/``.
    """
    reps = [prepare_replication(scenario, r, base_seed, cache, base_dir=base_dir)
            for r in range(scenario.replications)]
    setups = [(rep.context.world, rep.context.data, rep.context.model) for rep in reps]
    for cond in scenario.conditions:
        policies = {policy_name(p): (lambda context, p=p: p.policy().fit(context))
                    for p in scenario.policies}
        target = out if len(scenario.conditions) == 1 else out / "sim" / cond.name
        run_event_world(scenario.simulation, setups[0][0], setups[0][1], setups[0][2], policies,
                        specs[cond.name], [rep.seed for rep in reps], target,
                        progress=progress, per_replication=setups)
