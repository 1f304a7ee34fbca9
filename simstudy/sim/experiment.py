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

from ..core.progress import track
from ..core.store import atomic_write
from ..people import PeopleSpec
from ..world.base import CausalWorld
from ..world.data import WorldData
from .outcomes import applicant_outcomes, replication_metrics, summarize, timeline
from .plots import plot_cumulative_approvals
from .spec import SimulationSpec
from .world import PolicyFactory, simulate

__all__ = ["SIM_FILES", "UNIT_TABLES", "run_event_world", "simulate_tables",
           "write_event_world"]

#: Files :func:`run_event_world` writes into the run directory.
SIM_FILES = ("events.parquet", "outcomes.parquet", "actions.parquet", "models.csv",
             "timeline.csv", "sim_summary.csv", "approvals.png")


#: Tables of one simulated replication x policy (:func:`simulate_tables`).
UNIT_TABLES = ("events", "outcomes", "actions", "models", "timeline", "replication_metrics")


def simulate_tables(
    spec: SimulationSpec, world: CausalWorld, data: WorldData, model: torch.nn.Module,
    policy: PolicyFactory, people: PeopleSpec, seed: int, tag: dict,
    timeline_step_days: float = 1.0,
) -> tuple[dict[str, pd.DataFrame], dict[str, float]]:
    """One replication of one policy: its tables (each with the ``tag`` columns) and timings.

    This is the event world's unit of work; :func:`write_event_world` combines units.
    """
    res = simulate(spec, world, data, model, policy, people, int(seed))
    o = applicant_outcomes(res)
    tables = {
        "events": res.events, "outcomes": o, "actions": res.actions, "models": res.models,
        "timeline": timeline(o, res.horizon_days, timeline_step_days),
        "replication_metrics": replication_metrics(o),
    }
    return {k: v.assign(**tag) for k, v in tables.items()}, dict(res.timings)


def write_event_world(units: Sequence[dict[str, pd.DataFrame]], baseline: str,
                      out_dir: str | Path) -> dict[str, pd.DataFrame]:
    """Concatenates units' tables (in the order given) and writes the run files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {k: pd.concat([u[k] for u in units], ignore_index=True) for k in UNIT_TABLES}
    tables["sim_summary"] = summarize(tables["replication_metrics"], baseline=baseline)
    for stem in ("events", "outcomes", "actions"):
        atomic_write(out / f"{stem}.parquet",
                     lambda p, t=tables[stem]: t.to_parquet(p, index=False, engine="pyarrow"))
    for stem in ("models", "timeline", "sim_summary"):
        atomic_write(out / f"{stem}.csv", lambda p, t=tables[stem]: t.to_csv(p, index=False))
    atomic_write(out / "approvals.png",
                 lambda p: plot_cumulative_approvals(tables["timeline"], p))
    return tables


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
    """Simulates ``len(seeds)`` replications of every policy in this process and writes the
    run files (scenario runs use the runner's work units instead; the files are the same).

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
        per_replication: optional ``(world, data, model)`` per seed, when each replication has
            its own world sample and decision model; overrides ``world``, ``data`` and ``model``.

    Returns:
        The written tables, by file stem (``events``, ``outcomes``, ``timeline``, ...), and
        ``timings``.

    Example:
        >>> import tempfile
        >>> from simstudy import policies, sim
        >>> from simstudy.examples import small_event_world
        >>> spec, world, data, model, who = small_event_world()
        >>> gs = {"gs": sim.fitted(policies.GrowingSpheres)}
        >>> tables = sim.run_event_world(spec, world, data, model, gs, who, [0], tempfile.mkdtemp())
        >>> sorted(tables)[:4]
        ['actions', 'events', 'models', 'outcomes']
    """
    jobs = [(r, s, name) for r, s in enumerate(seeds) for name in policies]
    jobs = track(jobs, desc="event world", unit="run", enabled=progress)
    units, timings = [], []
    for r, seed, name in jobs:
        w, d, m = per_replication[r] if per_replication is not None else (world, data, model)
        tag = {"policy": name, "replication": r}
        tables, t = simulate_tables(spec, w, d, m, policies[name], people, int(seed), tag,
                                    timeline_step_days)
        units.append(tables)
        timings.append({**tag, **t})
    tables = write_event_world(units, next(iter(policies)), out_dir)
    tables["timings"] = pd.DataFrame(timings)
    return tables
