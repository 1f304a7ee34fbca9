"""What the event world records: its event vocabulary, the event and action logs, the result.

Events are logged as array chunks while the world runs (one chunk per batch of people) and become
sorted tables once, at the end (:class:`EventLog`). Arrival times are keyed by applicant id
(:func:`arrival_times`), so they never depend on the order of execution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.rng import entity_uniforms
from .spec import CohortArrivals, SimulationSpec

__all__ = ["EVENT_TYPES", "EVENT_CODES", "TERMINAL_EVENTS", "DROPOUT_EVENTS", "ATTEMPT_STRIDE",
           "SimulationResult", "EventLog", "arrival_times"]

#: Event types in causal stage order (used to order events at equal times).
#:
#: ``arrival`` first application; ``reapplied`` a later application (its ``attempt`` is the new
#: application's index); ``decision`` value 1 approve / 0 reject; ``approved`` terminal;
#: ``rejected``; ``recourse_invalidated`` a recourse valid when given, acted on, is rejected by a
#: newer model; ``exhausted`` terminal, rejected after ``max_attempts`` recourses;
#: ``no_request`` terminal, rejected and did not ask; ``recourse_requested``;
#: ``session_abandoned`` terminal, patience ran out; ``no_recourse`` terminal, the policy found
#: none; ``recourse_given`` value = weighted cost; ``declined`` terminal, not accepted;
#: ``no_action`` terminal, accepted but not acted on; ``action_failed`` a recommended feature is
#: not actionable for the person (value = number of such features); ``action_started`` value =
#: planned duration in days; ``action_completed`` value = achieved fraction of the change.
EVENT_TYPES: tuple[str, ...] = (
    "arrival", "reapplied", "decision", "approved", "rejected", "recourse_invalidated",
    "exhausted", "no_request", "recourse_requested", "session_abandoned", "no_recourse",
    "recourse_given", "declined", "no_action", "action_failed", "action_started",
    "action_completed",
)
#: Integer code of every event type (its position in :data:`EVENT_TYPES`).
EVENT_CODES: dict[str, int] = {name: i for i, name in enumerate(EVENT_TYPES)}
#: Events after which a person takes no further part.
TERMINAL_EVENTS: frozenset[str] = frozenset({
    "approved", "exhausted", "no_request", "session_abandoned", "no_recourse", "declined",
    "no_action"})
#: Terminal events that mean leaving without approval.
DROPOUT_EVENTS: frozenset[str] = TERMINAL_EVENTS - {"approved"}


#: Per-attempt draws use the key ``applicant * ATTEMPT_STRIDE + attempt``.
ATTEMPT_STRIDE = 256


@dataclass
class SimulationResult:
    """What one simulated replication produced.

    Attributes:
        events: one row per event: ``time``, ``applicant``, ``attempt``, ``event``
            (categorical over :data:`EVENT_TYPES`), ``model_version``, ``value``; sorted by
            time, applicant, attempt and causal stage.
        applicants: one row per applicant: ``applicant``, ``arrival_time``, ``group``, the
            population's group columns, ``hidden_mismatch``, ``n_actionable_reported`` and
            ``can_<feature>`` (the hidden truth: can the person act on the feature).
        models: one row per decision-model version: ``version``, ``time``, ``n_train``,
            ``train_approval_rate``, ``state_dict_sha256``.
        actions: one row per action carried out: ``applicant``, ``attempt``, ``start``,
            ``end``, achieved ``fraction`` and ``target_<feature>`` (NaN where not intervened).
        horizon_days: the simulated horizon.
        timings: wall seconds per phase: ``setup_s`` (people and their draws), ``decide_s``
            (the lender's decisions), ``policy_s`` (recourses), ``evaluate_s`` (their
            counterfactuals and costs), ``act_s`` (counterfactuals of actions carried out),
            ``retrain_s``, ``tables_s`` (the result tables) and ``total_s`` (the rest is event
            scheduling and bookkeeping); ``policy_calls`` counts the policy's batches.

    Example:
        >>> from simstudy import sim
        >>> from simstudy.examples import small_simulation
        >>> result = small_simulation()
        >>> isinstance(result, sim.SimulationResult), list(result.events.columns[:4])
        (True, ['time', 'applicant', 'attempt', 'event'])
    """

    events: pd.DataFrame
    applicants: pd.DataFrame
    models: pd.DataFrame
    actions: pd.DataFrame
    horizon_days: float
    timings: dict[str, float] = field(default_factory=dict)


def arrival_times(spec: SimulationSpec, seed: int) -> np.ndarray:
    """Arrival time of every applicant (applicant id = position), keyed by id.

    Poisson arrivals are cumulative sums of exponential gaps whose uniforms are keyed by
    applicant id; a cohort arrives at day 0 or uniformly over its spread.
    """
    arr = spec.arrivals
    if isinstance(arr, CohortArrivals):
        ids = np.arange(arr.size)
        if arr.spread_days == 0:
            return np.zeros(arr.size)
        return entity_uniforms(seed, "arrival", ids)[:, 0] * arr.spread_days
    expected = arr.rate_per_day * spec.horizon_days
    n = int(expected + 10 * math.sqrt(expected) + 16)
    while True:
        gaps = -np.log(entity_uniforms(seed, "arrival", np.arange(n))[:, 0]) / arr.rate_per_day
        times = np.cumsum(gaps)
        if times[-1] > spec.horizon_days:
            return times[times <= spec.horizon_days]
        n *= 2



class EventLog:
    """The events and the actions of one simulated replication, as logged array chunks."""

    def __init__(self) -> None:
        self._events: list[tuple[np.ndarray, ...]] = []
        self._actions: list[tuple[np.ndarray, ...]] = []

    def emit(self, time: np.ndarray | float, ids: np.ndarray, attempt: np.ndarray, event: str,
             version: int, value: np.ndarray | float = np.nan) -> None:
        """Logs ``event`` for ``ids`` (scalar ``time`` and ``value`` apply to all of them)."""
        k = len(ids)
        if k == 0:
            return
        self._events.append((
            np.broadcast_to(np.asarray(time, dtype=np.float64), (k,)).copy(),
            ids.astype(np.int64),
            attempt.astype(np.int64),
            np.full(k, EVENT_CODES[event], dtype=np.int64),
            np.full(k, version, dtype=np.int64),
            np.broadcast_to(np.asarray(value, dtype=np.float64), (k,)).copy(),
        ))

    def action(self, ids: np.ndarray, attempt: np.ndarray, start: np.ndarray, end: np.ndarray,
               fraction: np.ndarray, target: np.ndarray) -> None:
        """Logs the actions of ``ids``: their span, achieved fraction and target values."""
        self._actions.append((ids, attempt, start, end, fraction, target))

    def events_frame(self, horizon_days: float) -> pd.DataFrame:
        """Events up to the horizon, sorted by time, applicant, attempt and causal stage."""
        if self._events:
            cols = [np.concatenate(c) for c in zip(*self._events, strict=True)]
        else:
            cols = [np.zeros(0, np.float64)] + [np.zeros(0, np.int64)] * 4 + [np.zeros(0)]
        time, app, att, code, ver, val = cols
        keep = time <= horizon_days
        time, app, att, code, ver, val = (c[keep] for c in (time, app, att, code, ver, val))
        order = np.lexsort((code, att, app, time))
        return pd.DataFrame({
            "time": time[order],
            "applicant": app[order],
            "attempt": att[order].astype(np.int16),
            "event": pd.Categorical.from_codes(code[order], categories=list(EVENT_TYPES)),
            "model_version": ver[order].astype(np.int32),
            "value": val[order],
        })

    def actions_frame(self, names: tuple[str, ...], horizon_days: float) -> pd.DataFrame:
        """Actions started up to the horizon, by start time and applicant."""
        if self._actions:
            cols = [np.concatenate(c) for c in zip(*self._actions, strict=True)]
        else:
            cols = [np.zeros(0, np.int64)] * 2 + [np.zeros(0)] * 3 + [np.zeros((0, len(names)))]
        app, att, t1, t2, frac, target = cols
        keep = t1 <= horizon_days
        df = pd.DataFrame({"applicant": app[keep], "attempt": att[keep].astype(np.int16),
                           "start": t1[keep], "end": t2[keep], "fraction": frac[keep]})
        for j, name in enumerate(names):
            df[f"target_{name}"] = target[keep, j]
        return df.sort_values(["start", "applicant"], kind="stable").reset_index(drop=True)
