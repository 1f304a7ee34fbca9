"""``simstudy power SCENARIO``: how many participants a study of the scenario needs.

The scenario is run (or its finished run resumed) into ``OUT/run``; its study pool (every
rejected applicant of the study's replication x condition with each policy's recourse, see
:mod:`simstudy.study.from_scenario`) is the population the simulated studies draw participants from.
For each participant count of ``study.power`` and each simulation, a study is simulated and
two tests are run (:func:`~simstudy.study.from_scenario.simulate_power_study`):

* **policy**: the policy contrast on the outcome (``rating ~ policy + (1 | participant)``; the
  omnibus Wald test, or the named policy against the baseline);
* **smooth**: the GAMM smooth of the outcome in the distance (the published analysis).

Simulations are checkpointed in ``OUT/parts/n{N}.csv`` and run in a process pool
(:func:`~simstudy.study.power.run_simulations`), so an interrupted analysis resumes and the
result does not depend on the number of workers. Written: ``power.csv`` (power with its
Clopper-Pearson interval per test and N), ``power.json`` (with the smallest N per test and
which value it is read from) and ``power.png``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.documents import UsageError, with_overrides
from ..core.plotting import plt, save_figure
from ..core.rng import derive_seed
from ..core.store import check_output_dir
from ..study.from_scenario import (
    POWER_COLUMNS,
    StudyPowerTask,
    eligible,
    power_curve,
    simulate_power_study,
)
from ..study.power import plan_key, run_simulations
from .runner import run_scenario
from .scenario import load_scenario, policy_name

__all__ = ["run_study_power"]


def run_study_power(path: str | Path, out: str | Path, simulations: int | None = None,
                    workers: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Runs (or resumes) the power analysis of a scenario's ``study.power`` section.

    Returns:
        ``{"table": DataFrame, "smallest_n": {test: N or None}, "read_from": ...}``.
    """
    scenario, _ = load_scenario(path)
    study = scenario.study
    if study is None or study.power is None:
        raise UsageError(f"{path}: study.power: the scenario has no study power section")
    spec = with_overrides(study.power, {"simulations": ("--simulations", simulations),
                                        "workers": ("--workers", workers)}, str(path))
    out = check_output_dir(out)
    result = run_scenario(path, out / "run", progress=progress)
    pool = pd.read_parquet(out / "run" / "study_pool.parquet")
    names = [policy_name(p) for p in scenario.policies]
    policies = tuple(study.study_policies(names))
    baseline = study.baseline_policy(names)
    response = study.response.build()
    seed = derive_seed(result.manifest["base_seed"], "study-power")
    grid = sorted(set(spec.participants))
    sims = spec.simulations
    tasks = [StudyPowerTask(seed, n, r, pool, policies, baseline, response, spec,
                            study.exclude_blocked) for n in grid for r in range(sims)]
    # rows made for another pool, design or test are run again
    key = plan_key(seed=seed, pool=hashlib.sha256(
        pd.util.hash_pandas_object(pool, index=False).to_numpy().tobytes()).hexdigest(),
        policies=policies, baseline=baseline, response=response,
        exclude_blocked=study.exclude_blocked,
        test=spec.model_dump(include={"outcome", "distance", "contrast", "alpha"}))
    rows = run_simulations(tasks, simulate_power_study, grid, sims, out, POWER_COLUMNS,
                           spec.workers, progress, key)
    table, smallest = power_curve(rows, spec)
    table.to_csv(out / "power.csv", index=False)
    what = (f"{spec.outcome}: {spec.contrast} vs {baseline}" if spec.contrast
            else f"{spec.outcome}: any of {list(policies)} vs {baseline}")
    summary = {"target_power": spec.target_power, "read_from": spec.read_from,
               "confidence": spec.confidence, "alpha": spec.alpha, "simulations": sims,
               "tests": {"policy": what, "smooth": f"{spec.outcome} ~ s({spec.distance})"},
               "smallest_n": smallest,
               "eligible_applicants": int(eligible(pool, policies)["applicant_id"].nunique()),
               "table": table.to_dict(orient="records")}
    (out / "power.json").write_text(json.dumps(summary, indent=2))
    _plot(table, spec, summary["tests"], out / "power.png")
    return {"table": table, "smallest_n": smallest, "read_from": spec.read_from,
            "tests": summary["tests"]}


def _plot(table: pd.DataFrame, spec: Any, tests: dict[str, str], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for test, grp in table.groupby("test"):
        ax.errorbar(grp["n"], grp["power"], yerr=[grp["power"] - grp["lower"],
                                                  grp["upper"] - grp["power"]],
                    marker="o", capsize=3, label=tests[test])
    ax.axhline(spec.target_power, ls="--", color="grey")
    ax.set_xlabel("participants")
    ax.set_ylabel(f"power (alpha {spec.alpha})")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
