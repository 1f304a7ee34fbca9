"""``simstudy power SCENARIO``: how many participants a study of the scenario needs, for the
design the study file runs.

**The design.** A study with ``study.live`` is simulated as the server runs it
(:func:`_live_design`): one condition per participant by the server's assignment rule, the
plan the live engine computes from the stated profile (:mod:`simstudy.planning.live_pool`),
attention failures and dropouts at ``study.power.rates``, the no-plan rule, and the file's
exclusions (:mod:`simstudy.study.live_design`); N is the number analysed, a multiple of the
conditions. Without ``live:``, the within-participant design of the scenario's study below
(:func:`_within_design`). A power plan of the published design (``simstudy power PLAN.yaml``)
runs from here too (:func:`run_plan_power`).

The scenario is run (or its finished run resumed) into ``OUT/run``; its study pool (every
rejected applicant of the study's replication x condition with each policy's recourse, see
:mod:`simstudy.study.from_scenario`) is the population the simulated studies draw participants
from. The participants rate with the study's response (one ``response:`` per scope,
:func:`~simstudy.study.section.study_response`), or with a ``simstudy calibrate`` output given
by ``--response``.

**The pool, honestly.** Only applicants every study policy found a recourse for can rate every
policy; an N above their number is refused unless ``study.power.sample: with_replacement`` is
stated, and ``power.json`` reports the pool's size and composition (each group column's shares)
against the rejected population it was selected from.

**What is tested.** With ``study.hypotheses``, each simulated study is tested exactly as
``simstudy analyze`` tests real data (:mod:`simstudy.study.hypothesis_power`): power per
hypothesis, jointly (all rejected in the same study) and per group where asked, failed fits per
N in their own column. Without hypotheses, two exploratory tests are run
(:func:`~simstudy.study.from_scenario.simulate_power_study`): the policy contrast (omnibus, or
the named policy against the baseline) and the GAMM smooth of the outcome in the distance.

**Effects in plain sight.** ``power.json``, the print-out and the plot list every parameter of
the response model behind the tested ratings with its value and source
(:mod:`simstudy.study.effects`). With ``study.power.sensitivity`` (multipliers), power at the
planned N is also simulated with the first hypothesis's main effect scaled, giving a
sensitivity curve and the minimum detectable effect (``sensitivity.csv``).

**Uncertainty.** ``--uncertainty on`` (with a calibrated ``--response``) draws each simulated
study's parameters from the calibration's sampling distribution
(:func:`~simstudy.study.calibration.draw_response`): the share rejected is then the expected
power (assurance), reported beside the power at the point estimate (``assurance.csv``).

Simulations are checkpointed in ``OUT/parts/n{N}.csv`` (``OUT/sensitivity/...``,
``OUT/assurance/...``) and run in a process pool (:func:`~simstudy.study.power.run_simulations`),
so an interrupted analysis resumes and the result does not depend on the number of workers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.documents import UsageError, with_overrides
from ..core.plotting import plt, save_figure
from ..core.registry import build
from ..core.rng import derive_seed, generator
from ..core.store import atomic_write, atomic_write_text, check_output_dir, file_sha256
from ..run.dictionary import write_dictionary
from ..run.runner import run_scenario
from ..run.scenario import load_scenario, policy_name
from ..study.calibration import draw_response, load_calibration
from ..study.effects import main_effect, minimum_detectable, parameter_table, scaled, value_at
from ..study.from_scenario import (
    POWER_COLUMNS,
    StudyPowerTask,
    eligible,
    power_curve,
    simulate_power_study,
)
from ..study.hypotheses import hypothesis_names
from ..study.hypothesis_power import (
    HypothesisPowerTask,
    group_values,
    hypothesis_columns,
    hypothesis_power_table,
    simulate_hypotheses_study,
)
from ..study.live_design import (
    LIVE_EXTRAS,
    LIVE_POOL_COLUMNS,
    LivePowerTask,
    export_rates,
    pool_no_plan_rates,
    recruitment,
)
from ..study.power import plan_key, run_power, run_simulations, smallest_n, summarize_power
from ..study.section import study_response
from .live_pool import live_pool

__all__ = ["run_study_power", "run_plan_power", "pool_report", "study_setup"]


def _hash_frame(frame: pd.DataFrame) -> str:
    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()
                          ).hexdigest()


def pool_report(pool: pd.DataFrame, rejected: pd.DataFrame, policies: tuple[str, ...]) -> dict:
    """The eligible pool's size and composition against the rejected population.

    Args:
        pool: the study pool (one row per found recourse).
        rejected: one row per rejected applicant of the study's replication x condition, with
            the group columns.
        policies: the study policies (eligible: every one found a recourse).
    """
    chosen = eligible(pool, policies).drop_duplicates("applicant_id")
    out = {"eligible": int(len(chosen)), "rejected": int(len(rejected)),
           "rule": f"every study policy ({', '.join(policies)}) found a recourse",
           "composition": []}
    for col in [c for c in rejected.columns if c != "applicant_id" and c in chosen.columns]:
        for value in sorted(rejected[col].astype(str).unique()):
            out["composition"].append({
                "column": col, "value": value,
                "share_eligible": float((chosen[col].astype(str) == value).mean()),
                "share_rejected": float((rejected[col].astype(str) == value).mean())})
    return out


def study_setup(path: str | Path, response_file: str | Path | None = None) -> dict[str, Any]:
    """The scenario, its study, the response spec the participants rate with, where it comes
    from, and the calibration behind it (``None`` unless ``response_file``)."""
    scenario, _ = load_scenario(path)
    study = scenario.study
    if study is None:
        raise UsageError(f"{path}: study: the scenario has no study section")
    spec, where = study_response(scenario)
    calibration, source = None, f"{path}: {where}"
    if response_file is not None:
        spec, calibration = load_calibration(response_file)
        source = f"{response_file} (calibrated)"
    return {"scenario": scenario, "study": study, "response": spec, "where": source,
            "calibration": calibration, "response_file": response_file}


def run_study_power(path: str | Path, out: str | Path, simulations: int | None = None,
                    workers: int | None = None, progress: bool = True,
                    response_file: str | Path | None = None,
                    uncertainty: bool = False, live_persons: int | None = None
                    ) -> dict[str, Any]:
    """Runs (or resumes) the power analysis of a scenario's ``study.power`` section
    (``live_persons``: a live study's pool limited to the first people of the bots' order, for
    a quick look; default all).

    Returns:
        ``{"table", "smallest_n", "read_from", "tests", "effects", "pool", "summary"}``.
    """
    setup = study_setup(path, response_file)
    study = setup["study"]
    if study.power is None:
        raise UsageError(f"{path}: study.power: the scenario has no study power section")
    if uncertainty and setup["calibration"] is None:
        raise UsageError(f"{path}: --uncertainty on needs a calibrated response "
                         "(--response FILE written by simstudy calibrate)")
    if uncertainty and not np.isfinite(np.asarray(setup["calibration"]["covariance"],
                                                  float)).all():
        raise UsageError(f"{response_file}: calibration.covariance: not finite (the pilot's "
                         "fit had no positive-definite Hessian), so --uncertainty on cannot "
                         "draw the parameters; see the calibration's warnings, or leave "
                         "--uncertainty off")
    spec = with_overrides(study.power, {"simulations": ("--simulations", simulations),
                                        "workers": ("--workers", workers)}, str(path))
    out = check_output_dir(out)
    if study.live is not None:
        design = _live_design(path, setup, spec, out, progress, live_persons)
    else:
        design = _within_design(path, setup, spec, out, progress)
    pool, policies, baseline, report = (design["pool"], design["policies"], design["baseline"],
                                        design["report"])
    response_spec = setup["response"]
    response = build("response", response_spec)
    seed = design["seed"]
    grid = sorted(set(spec.participants))
    sims = spec.simulations
    responses = [h.response for h in study.hypotheses] or [spec.outcome]

    effects = parameter_table(response_spec, sorted(set(responses)), setup["calibration"],
                              _calibration_label(setup))
    common = dict(seed=seed, pool=_hash_frame(pool), policies=policies, baseline=baseline,
                  exclude_blocked=study.exclude_blocked, design=design["key"],
                  test=spec.model_dump(include={"outcome", "distance", "contrast", "alpha",
                                                "sample"}))
    summary: dict[str, Any] = {
        "design": design["design"],
        "target_power": spec.target_power, "read_from": spec.read_from,
        "confidence": spec.confidence, "alpha": spec.alpha, "simulations": sims,
        "sample": spec.sample, "scenario": str(path),
        "scenario_sha256": file_sha256(path),
        "response_from": setup["where"], "effects": effects,
        "effect_source": spec.effect_source,
        "pool": report, "eligible_applicants": report["eligible"], **design["summary"]}
    setup["uncertainty"] = uncertainty
    if uncertainty and not study.hypotheses:
        raise UsageError(f"{path}: study.hypotheses: --uncertainty on reports expected power "
                         "per hypothesis; state the study's hypotheses")
    if study.hypotheses:
        table, smallest, tests = _hypotheses_power(
            study, spec, design, response, grid, sims, out, progress, common, summary,
            response_spec, setup)
    else:
        tasks = [StudyPowerTask(seed, n, r, pool, policies, baseline, response, spec,
                                study.exclude_blocked) for n in grid for r in range(sims)]
        key = plan_key(response=response, **common)
        rows = run_simulations(tasks, simulate_power_study, grid, sims, out, POWER_COLUMNS,
                               spec.workers, progress, key)
        table, smallest = power_curve(rows, spec)
        what = (f"{spec.outcome}: {spec.contrast} vs {baseline}" if spec.contrast
                else f"{spec.outcome}: any of {list(policies)} vs {baseline}")
        tests = {"policy": what + " (two-sided, exploratory)",
                 "smooth": f"{spec.outcome} ~ s({spec.distance}) (two-sided, exploratory)"}
    table.to_csv(out / "power.csv", index=False)
    summary.update({"tests": tests, "smallest_n": smallest,
                    "table": table.to_dict(orient="records")})
    (out / "power.json").write_text(json.dumps(summary, indent=2, default=_jsonable))

    write_dictionary(out)
    _plot(table, spec, tests, effects, summary.get("sensitivity"), out / "power.png")
    return {"table": table, "smallest_n": smallest, "read_from": spec.read_from,
            "tests": tests, "effects": effects, "pool": report, "summary": summary}


def _within_design(path, setup, spec, out: Path, progress: bool) -> dict[str, Any]:
    """The simulated study's design: every participant rates every study policy's recourse
    (the run's study pool, :mod:`simstudy.study.from_scenario`)."""
    scenario, study = setup["scenario"], setup["study"]
    result = run_scenario(path, out / "run", progress=progress)
    pool = pd.read_parquet(out / "run" / "study_pool.parquet")
    names = [policy_name(p) for p in scenario.policies]
    policies = tuple(study.study_policies(names))
    baseline = study.baseline_policy(names)
    report = pool_report(pool, _rejected(result, out / "run", study, scenario, pool),
                         policies)
    too_many = [n for n in spec.participants if n > report["eligible"]]
    if too_many and spec.sample != "with_replacement":
        raise UsageError(
            f"{path}: study.power.participants: N = {max(too_many)} exceeds the "
            f"{report['eligible']} eligible applicants ({report['rule']}); lower N or state "
            "study.power.sample: with_replacement")
    _check_hypothesis_columns(path, study.hypotheses, pool)
    seed = derive_seed(result.manifest["base_seed"], "study-power")

    def task(n: int, r: int, response: Any, base: dict) -> HypothesisPowerTask:
        return HypothesisPowerTask(seed, n, r, pool, policies, baseline, response, spec,
                                   study.exclude_blocked, **base)

    return {"design": "within-participant: every participant rates every study policy's "
                      "recourse", "key": "within", "pool": pool, "policies": policies,
            "baseline": baseline, "report": report, "seed": seed, "task": task, "extras": (),
            "summary": {}}


def _live_design(path, setup, spec, out: Path, progress: bool,
                 persons: int | None = None) -> dict[str, Any]:
    """The live study's design: one condition per participant by the server's assignment
    rule, plans from the live pool (:mod:`simstudy.planning.live_pool`), the stated rates, the
    study file's exclusions (:mod:`simstudy.study.live_design`)."""
    scenario, study = setup["scenario"], setup["study"]
    live = study.live
    if not study.hypotheses:
        raise UsageError(f"{path}: study.hypotheses: the power of a live study is the power of "
                         "its confirmatory hypotheses; state them")
    names = [policy_name(p) for p in scenario.policies]
    conditions = tuple(live.live_conditions(study.study_policies(names)))
    k = len(conditions)
    odd = [n for n in spec.participants if n % k]
    if odd:
        raise UsageError(f"{path}: study.power.participants: N = {odd[0]} is not a multiple of "
                         f"the {k} live conditions (N analysed = {k} x target per condition)")
    pool, engine = live_pool(path, out, persons=persons, progress=progress)
    _check_hypothesis_columns(path, study.hypotheses, pool)
    rates = _rates(path, spec.rates)
    seed = derive_seed(scenario.seed, "study-power")
    groups_of = tuple(c for c in pool.columns if c not in LIVE_POOL_COLUMNS
                      and c not in ("applicant_id",))
    baseline = study.baseline_policy(names)
    persons = int(pool["person"].nunique())
    engine_no_plan = pool_no_plan_rates(pool)
    report = {"eligible": persons, "rejected": persons,
              "rule": "the people bots are (rejected applicants whose profile the entry page "
                      "accepts and who can change something)",
              "composition": [
                  {"column": c, "value": str(v),
                   "share_eligible": float((pool.drop_duplicates("person")[c].astype(str)
                                            == str(v)).mean()),
                   "share_rejected": float((pool.drop_duplicates("person")[c].astype(str)
                                            == str(v)).mean())}
                  for c in groups_of for v in sorted(pool[c].astype(str).unique())]}

    def task(n: int, r: int, response: Any, base: dict) -> LivePowerTask:
        return LivePowerTask(seed, n, r, pool, conditions, baseline, response, spec, False,
                             **base, conditions=conditions, live_seed=engine.live_seed_,
                             no_plan_rule=live.no_plan.rule, replacement=live.no_plan.replacement,
                             exclusions=tuple(live.exclusions),
                             failed_attention=rates["failed_attention"]["rate"],
                             dropout=rates["dropout"]["rate"], groups_of=groups_of)

    stated = rates.get("no_plan", {})
    return {"design": f"live, between-participant: one of the {k} conditions {list(conditions)} "
                      "per participant (least-filled assignment, seeded ties), the plan "
                      "computed by the server's engine from the stated profile, "
                      f"{study.random_others} random plan(s) also rated; no-plan rule "
                      f"{live.no_plan.rule}; exclusions {list(live.exclusions)}",
            "key": {"live": live.model_dump(mode="json", exclude={"target_per_condition"}),
                    "rates": rates},
            "pool": pool, "policies": conditions, "baseline": baseline, "report": report,
            "seed": seed, "task": task, "extras": LIVE_EXTRAS,
            "summary": {"sample": "arrivals in a random order of the pool's people, cycled "
                                  "when a study needs more arrivals than the pool has",
                        "rates": rates, "no_plan_engine": engine_no_plan,
                        "no_plan_stated": stated, "live_pool_persons": persons}}


def _rates(path, rates) -> dict[str, dict]:
    """Each rate with its source; a rate whose source is a live export is read from it."""
    out = {}
    base = Path(path).parent
    for name in ("failed_attention", "dropout", "no_plan"):
        r = getattr(rates, name)
        if r.source in ("assumed", "pilot", "engine"):
            out[name] = {"rate": r.rate, "source": r.source}
            continue
        export = Path(r.source) if Path(r.source).is_absolute() else base / r.source
        try:
            measured = export_rates(export)
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            raise UsageError(f"{path}: study.power.rates.{name}.source: cannot read the live "
                             f"export {r.source!r}: {exc}") from exc
        if name not in measured:
            raise UsageError(f"{path}: study.power.rates.{name}.source: the export "
                             f"{r.source!r} has no {name} column")
        out[name] = {"rate": measured[name], "source": f"live export {r.source} sha256:"
                                                       f"{file_sha256(export)[:12]}"}
    if out["no_plan"]["source"] == "engine":
        out.pop("no_plan")
    return out


def run_plan_power(plan_path: str | Path, plan: Any, out: str | Path,
                   executor: Any = None) -> dict[str, Any]:
    """``simstudy power PLAN.yaml``: the published design's power plan
    (:class:`~simstudy.analysis.analysis_spec.PowerPlan`, within participants, the smooth
    tested; :func:`~simstudy.study.power.run_power`): ``power.csv``, ``power.json`` (the
    smallest N by the point estimate and by the interval's lower bound) and ``power.png``.

    Returns:
        ``{"table", "smallest_n", "smallest_n_lower"}``.
    """
    out = check_output_dir(out)
    rows = run_power(build("response", plan.response), plan.participants, plan.simulations, out,
                     seed=plan.seed, items=plan.items, outcome=plan.outcome,
                     distance=plan.distance, alpha=plan.alpha, executor=executor)
    table, smallest = summarize_power(rows, plan.target_power, plan.confidence)
    # the point estimate reaching the target is a coin flip at that N; the interval's lower
    # bound reaching it is the conservative reading: both are stated
    smallest_lower = smallest_n(table, plan.target_power, "lower")
    atomic_write(out / "power.csv", lambda tmp: table.to_csv(tmp, index=False))
    write_dictionary(out)
    atomic_write_text(out / "power.json", json.dumps(
        {"target_power": plan.target_power, "smallest_n": smallest,
         "smallest_n_basis": "point estimate of power (simulated share significant)",
         "smallest_n_lower_bound": smallest_lower,
         "smallest_n_lower_bound_basis": f"lower bound of the {plan.confidence:.0%} "
                                         "Clopper-Pearson interval",
         "plan_file": str(plan_path), "plan": plan.model_dump(mode="json"),
         "table": table.to_dict(orient="records")}, indent=2))
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.errorbar(table["n"], table["power"], yerr=[table["power"] - table["lower"],
                                                  table["upper"] - table["power"]],
                marker="o", capsize=3)
    ax.axhline(plan.target_power, ls="--", color="grey")
    ax.set_xlabel("participants")
    ax.set_ylabel(f"power ({plan.outcome} ~ s({plan.distance}), alpha {plan.alpha})")
    ax.set_ylim(0, 1.02)
    fig.tight_layout()
    save_figure(fig, out / "power.png")
    return {"table": table, "smallest_n": smallest, "smallest_n_lower": smallest_lower}


def _check_hypothesis_columns(path: Any, hypotheses: list, pool: pd.DataFrame) -> None:
    """Every column a hypothesis reads (``by``, ``groups``, ``adjust``) is one the simulated
    tables have: the rating table's own and the pool's group columns."""
    have = {"uid", "item", "sparsity", "proximity", "accept", "act", "policy", "blocked",
            "cost", "applicant_id", *pool.columns}
    for i, h in enumerate(hypotheses):
        wanted = [("adjust", c) for c in h.adjust] + ([("groups", h.groups)] if h.groups else [])
        if h.kind == "gap":
            wanted.append(("by", h.by))
        for field, column in wanted:
            if column not in (have if field != "groups" else pool.columns):
                raise UsageError(f"{path}: study.hypotheses[{i}].{field}: the study table has "
                                 f"no column {column!r} (its columns: {sorted(have)})")


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def _calibration_label(setup: dict) -> str | None:
    cal = setup["calibration"]
    return None if cal is None else str(cal.get("data", setup["response_file"]))


def _rejected(result: Any, run_dir: Path, study: Any, scenario: Any,
              pool: pd.DataFrame) -> pd.DataFrame:
    """The rejected applicants of the study's replication x condition with the pool's group
    columns."""
    recourse = pd.read_parquet(run_dir / "recourse.parquet")
    condition = study.condition or scenario.conditions[0].name
    rows = recourse[(recourse["replication"] == study.replication)
                    & (recourse["condition"] == condition)]
    groups = [c for c in pool.columns if c not in
              ("applicant_id", "policy", "sparsity", "proximity", "cost", "cost_unweighted",
               "blocked") and c in rows.columns]
    return rows.drop_duplicates("applicant_id")[["applicant_id", *groups]]


def _family(study, pool) -> tuple[tuple, tuple]:
    """The hypotheses and the ``(name, column, values)`` of each one's ``groups``."""
    hyps = tuple(study.hypotheses)
    names = hypothesis_names(list(hyps))
    groups = tuple((name, h.groups, group_values(pool, h.groups))
                   for name, h in zip(names, hyps, strict=True) if h.groups is not None)
    return hyps, groups


def _hypotheses_power(study, spec, design, response, grid, sims, out, progress, common,
                      summary, response_spec, setup):
    seed, pool = design["seed"], design["pool"]
    hyps, groups = _family(study, pool)
    names = hypothesis_names(list(hyps))
    columns = hypothesis_columns(list(hyps), groups, design["extras"])
    base = dict(hypotheses=hyps, multiplicity=study.multiplicity, groups=groups)
    key_extra = dict(hypotheses=[h.model_dump() for h in hyps], multiplicity=study.multiplicity)

    def simulate(where: Path, n_grid: list[int], responses: Any) -> pd.DataFrame:
        tasks = [design["task"](n, r, responses(r), base)
                 for n in n_grid for r in range(sims)]
        key = plan_key(response=[responses(r) for r in range(min(sims, 3))], **common,
                       **key_extra)
        return run_simulations(tasks, simulate_hypotheses_study, n_grid, sims, where, columns,
                               spec.workers, progress, key)

    rows = simulate(out, grid, lambda r: response)
    if design["extras"]:
        summary["recruitment"] = recruitment(rows)
    table = hypothesis_power_table(rows, list(hyps), study.multiplicity, groups,
                                   spec.confidence, spec.alpha)
    column = "lower" if spec.read_from == "lower" else "power"
    smallest = smallest_n(table, spec.target_power, column, by="hypothesis")
    tests = {name: h.label() for name, h in zip(names, hyps, strict=True)}
    tests.update({f"{name}:smooth": f"{h.response} ~ s({h.distance}) (reported beside {name})"
                  for name, h in zip(names, hyps, strict=True)
                  if h.kind == "distance" and h.smooth})
    tests["all"] = f"all of {', '.join(names)} rejected in the same study ({study.multiplicity})"
    summary["hypotheses"] = [{"name": n, **h.model_dump(exclude_none=True)}
                             for n, h in zip(names, hyps, strict=True)]
    summary["multiplicity"] = study.multiplicity
    summary["failed_fits"] = table[["hypothesis", "n", "simulations", "failed"]].to_dict(
        orient="records")
    planned = spec.planned or max(grid)
    if setup.get("uncertainty"):
        summary["assurance"] = _assurance(study, spec, hyps, response_spec, setup["calibration"],
                                          seed, grid, sims, simulate, table, out, groups)
    if spec.sensitivity:
        summary["sensitivity"] = _sensitivity(study, spec, hyps, names, response_spec, planned,
                                              simulate, out, spec.confidence)
    return table, smallest, tests


def _assurance(study, spec, hyps, response_spec, calibration, seed, grid, sims, simulate,
               table, out, groups) -> dict:
    """Expected power: every simulated study draws its parameters from the calibration's
    sampling distribution (draw ``r`` shared by every N, stream ``(seed, "uncertainty", r)``)."""

    drawn = [draw_response(response_spec, calibration,
                           generator(seed, "uncertainty", r)).build() for r in range(sims)]
    rows = simulate(out / "assurance", grid, lambda r: drawn[r])
    expected = hypothesis_power_table(rows, list(hyps), study.multiplicity, groups,
                                      spec.confidence, spec.alpha)
    expected.to_csv(out / "assurance.csv", index=False)
    merged = table.merge(expected, on=["hypothesis", "n"], suffixes=("", "_expected"))
    compare = []
    for _, r in merged.iterrows():
        if r["hypothesis"].endswith(":smooth") or "[" in r["hypothesis"]:
            continue
        below = r["power_expected"] < r["power"]
        compare.append({"hypothesis": r["hypothesis"], "n": int(r["n"]),
                        "power": float(r["power"]), "expected_power": float(r["power_expected"]),
                        "expected_lower": float(r["lower_expected"]),
                        "expected_upper": float(r["upper_expected"]),
                        "reading": ("expected power below the point-estimate power: the "
                                    "calibration's uncertainty costs power" if below else
                                    "expected power not below the point-estimate power")})
    return {"draws": sims, "compare": compare}


def _sensitivity(study, spec, hyps, names, response_spec, planned, simulate, out, level):
    path = main_effect(hyps[0])
    try:
        size = float(value_at(response_spec, path))
    except KeyError as exc:
        raise UsageError(f"study.power.sensitivity: the response has no parameter {path} "
                         f"(the main effect of {names[0]})") from exc
    rows = []
    for factor in sorted(set(spec.sensitivity) | {1.0}):
        model = build("response", scaled(response_spec, path, factor))
        part = simulate(out / "sensitivity" / f"x{factor:g}", [planned], lambda r, m=model: m)
        t = hypothesis_power_table(part, list(hyps), study.multiplicity, (), level, spec.alpha)
        for _, row in t[t["hypothesis"].isin([names[0], "all"])].iterrows():
            rows.append({"parameter": path, "factor": factor, "value": size * factor,
                         "n": planned, **{k: row[k] for k in ("hypothesis", "failed", "fitted",
                                                               "power", "lower", "upper")}})
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "sensitivity.csv", index=False)
    main = frame[frame["hypothesis"] == names[0]]
    mde = minimum_detectable(main["value"].tolist(), main["power"].tolist(), spec.target_power)
    return {"parameter": path, "assumed": size, "n": planned, "hypothesis": names[0],
            "minimum_detectable": mde, "table": frame.to_dict(orient="records")}


def _plot(table: pd.DataFrame, spec: Any, tests: dict[str, str], effects: list[dict],
          sensitivity: dict | None, path: Path) -> None:
    panels = 2 if sensitivity else 1
    fig, axes = plt.subplots(1, panels + 1, figsize=(5.5 * panels + 4.5, 4.2),
                             gridspec_kw={"width_ratios": [5.5] * panels + [4.5]})
    ax = axes[0]
    key = "hypothesis" if "hypothesis" in table else "test"
    for test, grp in table.groupby(key, sort=False):
        ax.errorbar(grp["n"], grp["power"], yerr=[grp["power"] - grp["lower"],
                                                  grp["upper"] - grp["power"]],
                    marker="o", capsize=3, label=f"{test}: {tests.get(test, '')}"[:60])
    ax.axhline(spec.target_power, ls="--", color="grey")
    ax.set_xlabel("participants")
    ax.set_ylabel(f"power (alpha {spec.alpha})")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=6)
    if sensitivity:
        sx = axes[1]
        frame = pd.DataFrame(sensitivity["table"])
        for test, grp in frame.groupby("hypothesis", sort=False):
            sx.plot(grp["value"], grp["power"], marker="o", label=test)
        sx.axvline(sensitivity["assumed"], ls=":", color="grey", label="assumed")
        sx.axhline(spec.target_power, ls="--", color="grey")
        sx.set_xlabel(f"{sensitivity['parameter']} (N = {sensitivity['n']})")
        sx.set_ylabel("power")
        sx.set_ylim(0, 1.02)
        mde = sensitivity["minimum_detectable"]
        sx.set_title(f"minimum detectable: {mde:.3g}" if mde is not None else
                     "target not reached", fontsize=8)
        sx.legend(fontsize=6)
    tx = axes[-1]
    tx.axis("off")
    lines = [f"{e['parameter']} = {e['value']}  [{e['source']}]" for e in effects]
    tx.text(0, 1, "assumed effects\n" + "\n".join(lines), va="top", fontsize=5.5,
            family="monospace")
    fig.tight_layout()
    save_figure(fig, path)
