"""From event logs to outcomes: per applicant, over time, by group, over replications.

* :func:`applicant_outcomes` — one row per applicant: final state, approval and its time,
  applications, recourses, actions, dropout and its time, recourses invalidated by retraining.
  Its columns: ``applicant``, ``group``, ``arrival_time``, ``state`` (the terminal event, or
  ``active`` at the horizon), ``approved``, ``approval_time``, ``time_to_approval``,
  ``applications``, ``recourses``, ``actions``, ``action_failures``, ``dropped_out``,
  ``dropout_time``, ``invalidated`` (recourses invalidated by a newer model), ``returns``
  (decisions after a completed action), ``hidden_mismatch``, and the applicants' group
  attributes (``gender``, ``race``, ``privileged``, ...).
* :func:`timeline` — cumulative arrivals and approvals per day and group.
* :func:`replication_metrics` — one row per group (and ``all``) of summary metrics.
* :func:`summarize` — means over replications with t confidence intervals, and paired
  differences between policies: the replications of two policies share their seeds (common
  random numbers), so the difference is taken within each replication first and its own
  interval reflects only the policy effect.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.intervals import mean_sd_ci, metric_interval
from .world import DROPOUT_EVENTS, EVENT_TYPES, TERMINAL_EVENTS, SimulationResult

__all__ = [
    "WORLD_SUMMARY_METRICS",
    "applicant_outcomes",
    "timeline",
    "replication_metrics",
    "summarize",
]

#: Replication-level summaries of the event world (:func:`replication_metrics`), summarized over
#: replications. The per-applicant metrics that the audit compares between groups are declared
#: in :data:`simstudy.metrics.METRICS` (``table="outcomes"``).
WORLD_SUMMARY_METRICS = (
    "approval_rate", "time_to_approval_mean", "time_to_approval_median", "dropout_rate",
    "dropout_time_mean", "active_rate", "recourses_per_person", "actions_per_person",
    "action_failures_per_person", "invalidated_per_recourse", "invalidated_per_return",
)

#: Shares of the people of a replication (``n``): intervals by the proportion rule of
#: :mod:`simstudy.core.intervals`, inside [0, 1], as in ``summary.csv`` and the audit.
PROPORTION_METRICS = ("approval_rate", "dropout_rate", "active_rate")

_CODE = {name: i for i, name in enumerate(EVENT_TYPES)}


def _count(events: pd.DataFrame, name: str, n: int) -> np.ndarray:
    sel = events["event"].to_numpy() == name
    return np.bincount(events["applicant"].to_numpy()[sel], minlength=n)


def applicant_outcomes(result: SimulationResult) -> pd.DataFrame:
    """One row per applicant of a simulated replication (columns: see the module docstring).

    Example:
        >>> from simstudy import sim
        >>> from simstudy.examples import small_simulation
        >>> result = small_simulation()
        >>> outcomes = sim.applicant_outcomes(result)
        >>> len(outcomes), list(outcomes.columns[:4])
        (20, ['applicant', 'group', 'arrival_time', 'state'])
    """
    ev = result.events
    apps = result.applicants
    n = len(apps)
    last = ev.drop_duplicates("applicant", keep="last")
    state = np.full(n, "active", dtype=object)
    terminal = last["event"].astype(str).isin(TERMINAL_EVENTS).to_numpy()
    state[last["applicant"].to_numpy()[terminal]] = last["event"].astype(str).to_numpy()[terminal]
    end_time = np.full(n, np.nan)
    end_time[last["applicant"].to_numpy()[terminal]] = last["time"].to_numpy()[terminal]
    approved = state == "approved"
    dropped = np.isin(state, list(DROPOUT_EVENTS))
    approval_time = np.where(approved, end_time, np.nan)
    arrival = apps["arrival_time"].to_numpy()
    # A return: a decision on an application that follows a completed action.
    done = ev.loc[ev["event"] == "action_completed", ["applicant", "attempt"]]
    decided = ev.loc[ev["event"] == "decision", ["applicant", "attempt"]]
    done_keys = done["applicant"].to_numpy() * 1024 + done["attempt"].to_numpy() + 1
    dec_keys = decided["applicant"].to_numpy() * 1024 + decided["attempt"].to_numpy()
    is_return = np.isin(dec_keys, done_keys)
    returns = np.bincount(decided["applicant"].to_numpy()[is_return], minlength=n)
    table = pd.DataFrame({
        "applicant": apps["applicant"].to_numpy(),
        "group": apps["group"].to_numpy(),
        "arrival_time": arrival,
        "state": state,
        "approved": approved,
        "approval_time": approval_time,
        "time_to_approval": approval_time - arrival,
        "applications": _count(ev, "decision", n),
        "recourses": _count(ev, "recourse_given", n),
        "actions": _count(ev, "action_completed", n),
        "action_failures": _count(ev, "action_failed", n),
        "dropped_out": dropped,
        "dropout_time": np.where(dropped, end_time, np.nan),
        "invalidated": _count(ev, "recourse_invalidated", n),
        "returns": returns,
        "hidden_mismatch": apps["hidden_mismatch"].to_numpy(),
    })
    # Group attributes (gender, race, privileged, ...) ride along for audits by group.
    own = {"applicant", "arrival_time", "group", "hidden_mismatch", "n_actionable_reported"}
    for col in apps.columns:
        if col not in own and not col.startswith("can_") and col not in table.columns:
            table[col] = apps[col].to_numpy()
    return table


def _groups(outcomes: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    labels = outcomes["group"].to_numpy()
    parts = [("all", np.ones(len(outcomes), dtype=bool))]
    parts += [(str(g), labels == g) for g in sorted(set(labels.tolist()))]
    return parts


def timeline(outcomes: pd.DataFrame, horizon_days: float, step_days: float = 1.0
             ) -> pd.DataFrame:
    """Cumulative arrivals and approvals at every ``step_days`` up to the horizon, by group.

    Columns: ``group``, ``day``, ``arrived``, ``approved``, ``approved_share`` (of arrivals so
    far), ``dropped_out``.

    Example:
        >>> from simstudy import sim
        >>> from simstudy.examples import small_simulation
        >>> result = small_simulation()
        >>> days = sim.timeline(sim.applicant_outcomes(result), horizon_days=10, step_days=5)
        >>> days[days["group"] == "all"][["day", "arrived"]].values.tolist()
        [[0.0, 20.0], [5.0, 20.0], [10.0, 20.0]]
    """
    days = np.arange(0.0, horizon_days + 1e-9, step_days)
    rows = []
    for label, sel in _groups(outcomes):
        o = outcomes[sel]
        arr = np.sort(o["arrival_time"].to_numpy())
        appr = np.sort(o["approval_time"].dropna().to_numpy())
        drop = np.sort(o["dropout_time"].dropna().to_numpy())
        arrived = np.searchsorted(arr, days, side="right")
        approved = np.searchsorted(appr, days, side="right")
        share = np.divide(approved, arrived, out=np.full(len(days), np.nan),
                          where=arrived > 0)
        rows.append(pd.DataFrame({"group": label, "day": days, "arrived": arrived,
                                  "approved": approved, "approved_share": share,
                                  "dropped_out": np.searchsorted(drop, days, side="right")}))
    return pd.concat(rows, ignore_index=True)


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b > 0 else float("nan")


def replication_metrics(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Summary metrics of one replication, one row per group (``all`` first).

    Example:
        >>> from simstudy import sim
        >>> from simstudy.examples import small_simulation
        >>> result = small_simulation()
        >>> metrics = sim.replication_metrics(sim.applicant_outcomes(result))
        >>> metrics["group"].iloc[0], "approval_rate" in metrics.columns
        ('all', True)
    """
    rows = []
    for label, sel in _groups(outcomes):
        o = outcomes[sel]
        n = len(o)
        tta = o["time_to_approval"].dropna()
        rows.append({
            "group": label,
            "n": n,
            "approval_rate": _ratio(o["approved"].sum(), n),
            "time_to_approval_mean": float(tta.mean()) if len(tta) else float("nan"),
            "time_to_approval_median": float(tta.median()) if len(tta) else float("nan"),
            "dropout_rate": _ratio(o["dropped_out"].sum(), n),
            "dropout_time_mean": float((o["dropout_time"] - o["arrival_time"]).mean()),
            "active_rate": _ratio((o["state"] == "active").sum(), n),
            "recourses_per_person": _ratio(o["recourses"].sum(), n),
            "actions_per_person": _ratio(o["actions"].sum(), n),
            "action_failures_per_person": _ratio(o["action_failures"].sum(), n),
            "invalidated_per_recourse": _ratio(o["invalidated"].sum(), o["recourses"].sum()),
            "invalidated_per_return": _ratio(o["invalidated"].sum(), o["returns"].sum()),
        })
    return pd.DataFrame(rows)


def summarize(metrics: pd.DataFrame, baseline: str | None = None, level: float = 0.95
              ) -> pd.DataFrame:
    """Estimates over replications and paired differences between policies.

    Args:
        metrics: rows of :func:`replication_metrics` with ``policy`` and ``replication``
            columns added.
        baseline: policy the others are compared with (default: the first policy).
        level: confidence level.

    Returns:
        Long table with ``kind`` (``estimate`` or ``paired_difference``), ``policy``,
        ``baseline``, ``group``, ``metric``, ``n_replications``, ``mean``, ``sd``,
        ``ci_low``, ``ci_high``. Differences are ``policy - baseline`` within a replication.
        Estimates keep to their range by the rule of :mod:`simstudy.core.intervals`: the shares of
        :data:`PROPORTION_METRICS` get the Wilson score interval at their effective sample
        size, the other (non-negative) metrics the Student-t interval over replications cut
        at zero; paired differences get the plain Student-t interval.

    Example:
        >>> from simstudy import people, policies, sim
        >>> from simstudy.world import DecisionConfig, LoanWorldSpec, decision
        >>> world, data, _ = LoanWorldSpec(n_samples=400).build(seed=0)
        >>> model = decision.train_decision_model(data, DecisionConfig(epochs=5))
        >>> spec = sim.SimulationSpec(horizon_days=10, arrivals={"kind": "cohort", "size": 20})
        >>> make_policy = sim.fitted(policies.GrowingSpheres)
        >>> who = people.PeopleSpec.model_validate({"population": {"groups": {}}})
        >>> import pandas as pd
        >>> rows = []
        >>> for seed in (0, 1):
        ...     result = sim.simulate(spec, world, data, model, make_policy, who, seed)
        ...     rows.append(sim.replication_metrics(sim.applicant_outcomes(result)).assign(
        ...         policy="growing_spheres", replication=seed))
        >>> table = sim.summarize(pd.concat(rows))
        >>> table["kind"].unique().tolist(), int(table["n_replications"].max())
        (['estimate'], 2)
    """
    policies = list(dict.fromkeys(metrics["policy"].tolist()))
    baseline = baseline if baseline is not None else policies[0]
    metric_cols = [m for m in WORLD_SUMMARY_METRICS if m in metrics.columns]
    rows = []
    for (policy, group), block in metrics.groupby(["policy", "group"], sort=False):
        for m in metric_cols:
            mean, sd, lo, hi = mean_sd_ci(block[m].to_numpy(), level)
            if m in PROPORTION_METRICS and "n" in block.columns:
                lo, hi = metric_interval("proportion", block[m].to_numpy(),
                                         block["n"].to_numpy(), level)
            else:  # rates, times and counts per person: never below zero
                lo, hi = metric_interval("nonnegative", block[m].to_numpy(), level=level)
            rows.append({"kind": "estimate", "policy": policy, "baseline": "", "group": group,
                         "metric": m, "n_replications": int(block[m].notna().sum()),
                         "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi})
    base = metrics[metrics["policy"] == baseline].set_index(["group", "replication"])
    for policy in policies:
        if policy == baseline:
            continue
        other = metrics[metrics["policy"] == policy].set_index(["group", "replication"])
        joined = other[metric_cols].merge(base[metric_cols], left_index=True,
                                          right_index=True, suffixes=("", "_base"))
        for group in dict.fromkeys(joined.index.get_level_values("group")):
            block = joined.xs(group, level="group")
            for m in metric_cols:
                diff = (block[m] - block[f"{m}_base"]).to_numpy()
                mean, sd, lo, hi = mean_sd_ci(diff, level)
                rows.append({"kind": "paired_difference", "policy": policy,
                             "baseline": baseline, "group": group, "metric": m,
                             "n_replications": int(np.isfinite(diff).sum()), "mean": mean,
                             "sd": sd, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)
