"""Replications x policies of the event world, written into a run directory.

:func:`run_event_world` simulates every replication for every policy with the replication's
seed (the same for all policies: common random numbers) and writes, beside the other run files:

* ``events.parquet`` — every event, with ``policy`` and ``replication`` columns;
* ``outcomes.parquet`` — one row per applicant, policy and replication;
* ``actions.parquet`` and ``models.csv`` — actions carried out and decision-model versions;
* ``timeline.csv`` — cumulative arrivals and approvals per day and group;
* ``sim_summary.csv`` — metrics over replications with confidence intervals, and paired
  differences of every policy against the first;
* ``approvals.png`` — cumulative approvals over time by group and policy.

Files are written to a temporary name and renamed, so an interrupted run leaves no torn file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import torch

from ..people import PeopleSpec
from ..progress import track
from ..store import atomic_write
from ..world.base import CausalWorld
from ..world.data import WorldData
from .outcomes import applicant_outcomes, replication_metrics, summarize, timeline
from .plots import plot_cumulative_approvals
from .spec import SimulationSpec
from .world import PolicyFactory, simulate

__all__ = ["SIM_FILES", "run_event_world"]

#: Files :func:`run_event_world` writes into the run directory.
SIM_FILES = ("events.parquet", "outcomes.parquet", "actions.parquet", "models.csv",
             "timeline.csv", "sim_summary.csv", "approvals.png")


def run_event_world(
    spec: SimulationSpec,
    world: CausalWorld,
    data: WorldData,
    model: torch.nn.Module,
    policies: Mapping[str, PolicyFactory],
    people: PeopleSpec,
    seeds: Sequence[int],
    out_dir: str | Path,
    timeline_step_days: float = 1.0,
    progress: bool = False,
    per_replication: Sequence[tuple[CausalWorld, WorldData, torch.nn.Module]] | None = None,
) -> dict[str, pd.DataFrame]:
    """Simulates ``len(seeds)`` replications of every policy and writes the run files.

    Args:
        spec: the event world.
        world, data, model: the true world, its data and the lender's initial model.
        policies: name -> factory of the fitted policy for a model version; the first is the
            baseline of the paired differences.
        people: who the applicants are (:class:`~simstudy.people.PeopleSpec`); every policy of
            a replication faces the same people.
        seeds: one seed per replication, shared by every policy.
        out_dir: the run directory.
        timeline_step_days: resolution of ``timeline.csv``.
        progress: show a progress bar.
        per_replication: optional ``(world, data, model)`` for each seed, when every
            replication has its own world sample and decision model (as scenario runs do);
            overrides ``world``, ``data`` and ``model``.

    Returns:
        The written tables, by file stem (``events``, ``outcomes``, ``timeline``, ...).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(r, s, name) for r, s in enumerate(seeds) for name in policies]
    jobs = track(jobs, desc="event world", unit="run", enabled=progress)
    events, outcomes, actions, models, timelines, metrics, timings = [], [], [], [], [], [], []
    for r, seed, name in jobs:
        w, d, m = per_replication[r] if per_replication is not None else (world, data, model)
        res = simulate(spec, w, d, m, policies[name], people, int(seed))
        tag = {"policy": name, "replication": r}
        events.append(res.events.assign(**tag))
        o = applicant_outcomes(res)
        outcomes.append(o.assign(**tag))
        actions.append(res.actions.assign(**tag))
        models.append(res.models.assign(**tag))
        timelines.append(timeline(o, res.horizon_days, timeline_step_days).assign(**tag))
        metrics.append(replication_metrics(o).assign(**tag))
        timings.append({**tag, **res.timings})
    tables = {
        "events": pd.concat(events, ignore_index=True),
        "outcomes": pd.concat(outcomes, ignore_index=True),
        "actions": pd.concat(actions, ignore_index=True),
        "models": pd.concat(models, ignore_index=True),
        "timeline": pd.concat(timelines, ignore_index=True),
        "replication_metrics": pd.concat(metrics, ignore_index=True),
        "timings": pd.DataFrame(timings),
    }
    tables["sim_summary"] = summarize(tables["replication_metrics"], baseline=next(iter(policies)))
    for stem in ("events", "outcomes", "actions"):
        atomic_write(out / f"{stem}.parquet",
                lambda p, t=tables[stem]: t.to_parquet(p, index=False, engine="pyarrow"))
    for stem in ("models", "timeline", "sim_summary"):
        atomic_write(out / f"{stem}.csv", lambda p, t=tables[stem]: t.to_csv(p, index=False))
    atomic_write(out / "approvals.png",
                 lambda p: plot_cumulative_approvals(tables["timeline"], p))
    return tables
