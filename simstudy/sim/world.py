"""The discrete-event world: recourse as a process in time, on simpy.

Applicants arrive; the lender decides on every application at the next boundary of its batch
window; a rejected person may ask for recourse; the session takes the policy's latency plus the
time to answer its questions (or ends when the person's patience runs out); the person accepts
the recourse or not, acts or not, may find that they cannot act (their hidden profile forbids a
recommended feature), takes time to carry the action out (perhaps only partly), and re-applies.
Meanwhile the lender may retrain its model on recent applications, so a recourse that was valid
when given can be invalid when its receiver returns.

Design:

* **simpy schedules, numpy computes.** Three simpy processes run: the arrival process releases
  each window's arrivals, the lender wakes at every window boundary (retrains when due, then
  decides on all pending applications and answers all recourse requests at once, per model
  version), and each re-application is a simpy timeout that puts the person back in the queue.
  Everything numerical (decisions, recourses, responses, action outcomes) is computed for the
  whole window in vectorized batches, and events are logged as arrays.
* **Keyed luck.** Every random quantity depends only on ``(seed, purpose, applicant, attempt)``
  (:func:`simstudy.rng.entity_uniforms`), never on execution order. Two policies simulated with
  the same seed face the same applicants and the same luck (common random numbers), and the
  event log does not depend on the batch-size cap.
* **Windows fix the order.** A person who comes back at time ``t`` is decided on at the first
  window boundary strictly after ``t``; pending applications are handled in applicant-id order.

Events (``EVENT_TYPES``) and terminal states (``TERMINAL_EVENTS``) are documented below; every
arrival ends in exactly one terminal event by the horizon or is still active.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy
import torch

from ..people import PeopleSpec
from ..policies.base import RecourseContext, RecoursePolicy
from ..primitives.space import ScaledSpace
from ..rng import derive_seed, entity_uniforms, generator
from ..world.base import CausalWorld
from ..world.data import WorldData
from ..world.decision import DecisionConfig, DecisionModel, state_dict_hash, train_decision_model
from . import batching
from .spec import CohortArrivals, SimulationSpec

__all__ = [
    "EVENT_TYPES",
    "TERMINAL_EVENTS",
    "DROPOUT_EVENTS",
    "PolicyFactory",
    "SimulationResult",
    "EventWorld",
    "arrival_times",
    "simulate",
    "fitted",
]

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
_CODE = {name: i for i, name in enumerate(EVENT_TYPES)}
#: Events after which a person takes no further part.
TERMINAL_EVENTS: frozenset[str] = frozenset({
    "approved", "exhausted", "no_request", "session_abandoned", "no_recourse", "declined",
    "no_action"})
#: Terminal events that mean leaving without approval.
DROPOUT_EVENTS: frozenset[str] = TERMINAL_EVENTS - {"approved"}

# Per-attempt draws use the key ``applicant * _ATTEMPT_STRIDE + attempt``.
_ATTEMPT_STRIDE = 256


#: Builds a fitted policy for a model version (called once per version).
PolicyFactory = Callable[[RecourseContext], RecoursePolicy]


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


class EventWorld:
    """One replication of the event world for one policy.

    Args:
        spec: the simulation description.
        world: the true causal world (it moves people when they act, and labels data).
        data: the world's data (its training split fixes feature ranges).
        model: the lender's initial decision model (version 0).
        make_policy: builds the fitted policy for a model version.
        people: the people's description; the applicants become :class:`~simstudy.people.People`
            (``self.people``), whose reported profile the policy sees, whose answers a policy
            that asks questions gets, and whose hidden truth and dispositions decide what
            happens. Their hidden ground truth is an approved point of the initial model.
        seed: the replication's seed (the same for every policy compared).
        decision_config: training configuration of retrained models (epochs from the spec).
    """

    def __init__(self, spec: SimulationSpec, world: CausalWorld, data: WorldData,
                 model: torch.nn.Module, make_policy: PolicyFactory,
                 people: PeopleSpec, seed: int,
                 decision_config: DecisionConfig | None = None) -> None:
        if spec.max_attempts >= _ATTEMPT_STRIDE - 1:
            raise ValueError(f"max_attempts must be below {_ATTEMPT_STRIDE - 1}")
        self.spec = spec
        self.world = world
        self.data = data
        self.make_policy = make_policy
        self.people_spec = people
        self.seed = int(seed)
        epochs = spec.retraining.epochs if spec.retraining is not None else 20
        self.decision_config = decision_config or DecisionConfig(epochs=epochs)
        self.feature_range = data.feature_range.numpy()
        self._models: list[torch.nn.Module] = [model]
        self._policy = make_policy(RecourseContext(world, model, data, self.seed))

    # -- set-up ------------------------------------------------------------------------------
    def _setup(self) -> None:
        spec, seed = self.spec, self.seed
        self.t_arrival = arrival_times(spec, seed)
        n = self.n = len(self.t_arrival)
        self.ids = np.arange(n, dtype=np.int64)
        x = self.world.sample(n, generator(seed, "sim-applicants")) if n else None
        names = self.world.roles.names
        self.x = (x.numpy().copy() if x is not None
                  else np.zeros((0, len(names)), dtype=np.float64))
        context = RecourseContext(self.world, self._models[0], self.data, seed)
        people = self.people = self.people_spec.build(
            self.x, self.ids, seed, names, self.world.roles.actionable,
            ScaledSpace.from_context(context), immutable=self.world.roles.immutable)
        groups = self.groups = people.groups
        profiles = people.reported
        # what the person tells the policy; corrected after failures
        self.reported = profiles.subset(slice(None))
        self.reported.scores = self.reported.scores.copy()
        self.reported.weights = self.reported.weights.copy()
        self.act_idx = np.array([names.index(f) for f in profiles.features])
        self.hidden_actionable = people.true_actionable
        self.n_reported = profiles.actionable.sum(axis=1)
        self.mismatch = people.misreported
        column = groups.get(spec.group_column)
        if column is None:
            raise ValueError(f"group_column {spec.group_column!r} is not a population group; "
                             f"have {sorted(groups)}")
        values = np.asarray(column).astype(np.int64)
        self.group_label = np.array([f"{spec.group_column}={v}" for v in values.tolist()],
                                    dtype=object)
        p_req = np.full(n, spec.request_probability)
        for label, p in spec.request_probability_by_group.items():
            p_req[self.group_label == label] = p
        self.p_request = p_req
        # Person-level dispositions, drawn once per person by the people.
        self.capacity = people.capacity(spec.action.capacity_sd)
        self.question_time = people.question_time(spec.session.question_time_days,
                                                  spec.session.question_time_sd)
        self.patience = people.patience(spec.session.patience_questions)
        # Mutable per-person state.
        self.attempt = np.zeros(n, dtype=np.int64)
        self.returning = np.zeros(n, dtype=bool)
        self.rec_valid = np.zeros(n, dtype=bool)
        self.rec_version = np.full(n, -1, dtype=np.int64)
        self.rec_xcf = np.full_like(self.x, np.nan)
        self.version = 0
        self._pending: dict[int, list[np.ndarray]] = {}
        # Window of each person's next decision (-1: none scheduled), for the lookahead.
        w = spec.window_days
        self.next_bucket = np.maximum(np.floor(self.t_arrival / w).astype(np.int64) + 1, 1)
        # Answers computed ahead: block and row per person, valid for one (attempt, version).
        self._ahead: list[tuple[object, dict[str, np.ndarray]]] = []
        self._ahead_block = np.full(n, -1, dtype=np.int64)
        self._ahead_row = np.zeros(n, dtype=np.int64)
        self._ahead_attempt = np.full(n, -1, dtype=np.int64)
        self._ahead_version = np.full(n, -1, dtype=np.int64)
        self._log: list[tuple[np.ndarray, ...]] = []
        self._actions: list[tuple[np.ndarray, ...]] = []
        self._applications: list[tuple[float, np.ndarray]] = []
        m0 = self._models[0]
        self._model_rows = [{"version": 0, "time": 0.0, "n_train": 0,
                             "train_approval_rate": float("nan"),
                             "state_dict_sha256": state_dict_hash(m0)}]

    # -- bookkeeping -------------------------------------------------------------------------
    def _timed(self, phase: str, fn, *args):
        """``fn(*args)``, its wall time added to ``timings[phase]``."""
        t0 = time.perf_counter()
        out = fn(*args)
        self.timings[phase] += time.perf_counter() - t0
        return out

    def _emit(self, time: np.ndarray | float, ids: np.ndarray, event: str,
              value: np.ndarray | float = np.nan, attempt: np.ndarray | None = None) -> None:
        k = len(ids)
        if k == 0:
            return
        self._log.append((
            np.broadcast_to(np.asarray(time, dtype=np.float64), (k,)).copy(),
            ids.astype(np.int64),
            (self.attempt[ids] if attempt is None else attempt).astype(np.int64),
            np.full(k, _CODE[event], dtype=np.int64),
            np.full(k, self.version, dtype=np.int64),
            np.broadcast_to(np.asarray(value, dtype=np.float64), (k,)).copy(),
        ))

    def _bucket(self, t: np.ndarray, current: int) -> np.ndarray:
        # First boundary strictly after t; never the boundary being processed (rounding guard).
        return np.maximum(np.floor(t / self.spec.window_days).astype(np.int64) + 1, current + 1)

    def _enqueue(self, ids: np.ndarray, buckets: np.ndarray) -> None:
        for b in np.unique(buckets):
            self._pending.setdefault(int(b), []).append(ids[buckets == b])

    def _uniforms(self, purpose: str, ids: np.ndarray, n_draws: int = 1) -> np.ndarray:
        keys = ids.astype(np.uint64) * np.uint64(_ATTEMPT_STRIDE) + self.attempt[ids].astype(
            np.uint64)
        return entity_uniforms(self.seed, purpose, keys, n_draws)

    # -- simpy processes ----------------------------------------------------------------------
    def _arrivals(self, env: simpy.Environment, n_windows: int):
        w = self.spec.window_days
        order = np.argsort(self.t_arrival, kind="stable")
        times = self.t_arrival[order]
        start = 0
        for k in range(1, n_windows + 1):
            # Release the arrivals of window [(k-1) w, k w) at its start; they wait for boundary k.
            stop = np.searchsorted(times, k * w, side="left")
            if k == n_windows:
                stop = len(times)
            ids = order[start:stop]
            start = stop
            self._emit(self.t_arrival[ids], ids, "arrival")
            if len(ids):
                self._enqueue(ids, self._bucket(self.t_arrival[ids], k - 1))
            yield env.timeout(w)

    def _lender(self, env: simpy.Environment, n_windows: int):
        w = self.spec.window_days
        retrain = self.spec.retraining
        every = None if retrain is None else int(round(retrain.every_days / w))
        for k in range(1, n_windows + 1):
            yield env.timeout(w)
            if every is not None and k % every == 0:
                self._retrain(k * w)
            parts = self._pending.pop(k, [])
            if parts:
                ids = np.sort(np.concatenate(parts))
                self._decide(env, ids, k)

    def _reapply(self, env: simpy.Environment, ids: np.ndarray, times: np.ndarray,
                 k: int) -> None:
        """Schedules re-applications as simpy timeouts (one per distinct time)."""
        now = env.now
        buckets = self._bucket(times, k)
        self.next_bucket[ids] = buckets
        for t in np.unique(times):
            sel = times == t
            ev = env.timeout(max(float(t) - now, 0.0))
            chosen, chosen_b = ids[sel], buckets[sel]
            ev.callbacks.append(lambda _e, c=chosen, b=chosen_b: self._enqueue(c, b))

    # -- the lender's batch work --------------------------------------------------------------
    def _retrain(self, t: float) -> None:
        spec = self.spec.retraining
        recent = [x for (ta, x) in self._applications if ta > t - spec.window_days]
        if not recent:
            return
        x = np.concatenate(recent)
        if x.shape[0] < spec.min_samples:
            return
        started = time.perf_counter()
        xt = torch.from_numpy(x)
        version = self.version + 1
        label_gen = generator(self.seed, "retrain-labels", version)
        y = self.world.label(xt, label_gen)  # type: ignore[attr-defined]
        d = WorldData(self.world.roles, xt, y, xt[:0], y[:0], xt[:0], y[:0])
        model = train_decision_model(d, self.decision_config,
                                     derive_seed(self.seed, "retrain-model", version))
        self._models.append(model)
        self.version = version
        self._policy = self.make_policy(RecourseContext(self.world, model, self.data, self.seed))
        self._model_rows.append({"version": version, "time": float(t), "n_train": int(len(x)),
                                 "train_approval_rate": float(y.double().mean()),
                                 "state_dict_sha256": state_dict_hash(model)})
        self.timings["retrain_s"] += time.perf_counter() - started

    def _decide(self, env: simpy.Environment, ids: np.ndarray, k: int) -> None:
        spec, bs = self.spec, self.spec.batch_size
        t = k * spec.window_days
        model = self._models[self.version]
        x = self.x[ids]
        self._applications.append((t, x.copy()))
        self.next_bucket[ids] = -1
        approve = self._timed("decide_s", batching.decide, model, x, bs)
        self._emit(t, ids, "decision", approve.astype(np.float64))
        self._emit(t, ids[approve], "approved")
        rej = ids[~approve]
        self._emit(t, rej, "rejected")
        back = rej[self.returning[rej] & self.rec_valid[rej]
                   & (self.rec_version[rej] != self.version)]
        if len(back):
            still = self._timed("decide_s", batching.decide, model, self.rec_xcf[back], bs)
            self._emit(t, back[~still], "recourse_invalidated")
        self.returning[rej] = False
        done = self.attempt[rej] >= spec.max_attempts
        self._emit(t, rej[done], "exhausted")
        rej = rej[~done]
        ask = self._uniforms("request", rej)[:, 0] < self.p_request[rej]
        self._emit(t, rej[~ask], "no_request")
        req = rej[ask]
        self._emit(t, req, "recourse_requested")
        if len(req):
            self._serve(env, req, t, k)

    def _compute(self, ids: np.ndarray) -> tuple[object, dict[str, np.ndarray]]:
        """The policy's recourses for ``ids`` (current features and reports) and their metrics."""
        bs = self.spec.batch_size
        x = self.x[ids]
        profiles = self.reported.subset(ids)
        t0 = time.perf_counter()
        feedback = (self.people.feedback(x=self.x)
                    if getattr(self._policy, "asks_questions", False) else None)
        rec = batching.recommend(self._policy, x, profiles, ids, self.seed, bs, feedback)
        t1 = time.perf_counter()
        ev = batching.evaluate(self.world, self._models[self.version], x, rec, profiles,
                               self.feature_range, bs)
        self.timings["policy_s"] += t1 - t0
        self.timings["evaluate_s"] += time.perf_counter() - t1
        self.timings["policy_calls"] += 1
        return rec, ev

    def _segment_end(self, k: int) -> int:
        """Last window decided by the current model: before the next retraining, or the end."""
        n_windows = int(math.floor(self.spec.horizon_days / self.spec.window_days + 1e-9))
        retrain = self.spec.retraining
        if retrain is None:
            return n_windows
        every = int(round(retrain.every_days / self.spec.window_days))
        return min(n_windows, (k // every + 1) * every - 1)

    def _requests_ahead(self, k: int) -> np.ndarray:
        """People whose next decision, before the next retraining, will be a recourse request:
        rejected by the current model, attempts left, and asking (their keyed draw)."""
        nb = self.next_bucket
        cand = np.flatnonzero((nb > k) & (nb <= self._segment_end(k)))
        cand = cand[(self._ahead_attempt[cand] != self.attempt[cand])
                    | (self._ahead_version[cand] != self.version)]
        if not len(cand):
            return cand
        rejected = ~self._timed("decide_s", batching.decide, self._models[self.version],
                                self.x[cand],
                                    self.spec.batch_size)
        cand = cand[rejected]
        cand = cand[self.attempt[cand] < self.spec.max_attempts]
        ask = self._uniforms("request", cand)[:, 0] < self.p_request[cand]
        return cand[ask]

    def _answers(self, ids: np.ndarray, k: int) -> tuple[object, dict[str, np.ndarray]]:
        """Recourses of the people served now: computed ahead, or now together with every
        request already determined (``lookahead``), or now alone."""
        if not self.spec.lookahead:
            return self._compute(ids)
        known = ((self._ahead_attempt[ids] == self.attempt[ids])
                 & (self._ahead_version[ids] == self.version))
        if not known.all():
            batch = np.union1d(ids[~known], self._requests_ahead(k))
            rec, ev = self._compute(batch)
            self._ahead.append((rec, ev))
            self._ahead_block[batch] = len(self._ahead) - 1
            self._ahead_row[batch] = np.arange(len(batch))
            self._ahead_attempt[batch] = self.attempt[batch]
            self._ahead_version[batch] = self.version
        blocks = self._ahead_block[ids]
        parts, positions = [], []
        for b in np.unique(blocks):
            sel = np.flatnonzero(blocks == b)
            rec_b, ev_b = self._ahead[b]
            rows = self._ahead_row[ids[sel]]
            parts.append((batching.slice_recourse(rec_b, rows),
                          {key: v[rows] for key, v in ev_b.items()}))
            positions.append(sel)
        order = np.argsort(np.concatenate(positions), kind="stable")
        rec = batching.slice_recourse(batching.concat_recourse([p[0] for p in parts]), order)
        ev = {key: np.concatenate([p[1][key] for p in parts])[order] for key in parts[0][1]}
        return rec, ev

    def _serve(self, env: simpy.Environment, ids: np.ndarray, t: float, k: int) -> None:
        spec, bs = self.spec, self.spec.batch_size
        x = self.x[ids]
        rec, ev = self._answers(ids, k)
        queries = np.asarray(rec.extras.get("queries", np.zeros(len(ids))), dtype=np.float64)
        abandon = queries > self.patience[ids]
        t_leave = t + spec.session.latency_days + np.where(
            abandon, self.patience[ids], queries) * self.question_time[ids]
        self._emit(t_leave[abandon], ids[abandon], "session_abandoned")
        found = ev["found"] & ~abandon
        none = ~abandon & ~found
        self._emit(t_leave[none], ids[none], "no_recourse")
        g = ids[found]
        if not len(g):
            return
        t1 = t_leave[found]
        cost = ev["cost"][found]
        intervened = rec.intervened[found] & rec.found[found, None]
        if rec.counterfactual is not None:
            # A generator that proposes points: the person sets the changed features to them.
            cf = rec.counterfactual[found]
            changed = np.zeros_like(intervened)
            changed[:, self.act_idx] = cf[:, self.act_idx] != x[found][:, self.act_idx]
            intervened = changed
            values = np.where(changed, cf, np.nan)
        else:
            values = rec.values[found]
        self._emit(t1, g, "recourse_given", cost)
        self.rec_valid[g] = ev["valid"][found]
        self.rec_version[g] = self.version
        self.rec_xcf[g] = ev["x_cf"][found]
        xg = x[found]
        delta = np.where(intervened, np.abs(values - xg), 0.0) / self.feature_range
        # Can the person act? Every intervened feature must be truly actionable for them.
        allowed = np.zeros_like(intervened)
        allowed[:, self.act_idx] = self.hidden_actionable[g]
        blocked = intervened & ~allowed
        inputs = self.people.response_inputs(
            g, cost, ev["cost_unweighted"][found], intervened.sum(axis=1), delta.sum(axis=1),
            blocked.any(axis=1))
        p_accept, p_act = self.people.response.probabilities(inputs)
        u = self._uniforms("respond", g, 4)
        accept = u[:, 0] < p_accept
        act = accept & (u[:, 1] < p_act)
        self._emit(t1[~accept], g[~accept], "declined")
        idle = accept & ~act
        self._emit(t1[idle], g[idle], "no_action")
        fails = act & blocked.any(axis=1)
        if fails.any():
            f_ids = g[fails]
            self._emit(t1[fails], f_ids, "action_failed", blocked[fails].sum(axis=1))
            # The person now knows: the blocked features are reported as not actionable.
            bad = blocked[fails][:, self.act_idx]
            sc = self.reported.scores[f_ids]
            wt = self.reported.weights[f_ids]
            sc[bad] = 0
            wt[bad] = np.inf
            self.reported.scores[f_ids] = sc
            self.reported.weights[f_ids] = wt
            t_retry = t1[fails] + spec.retry_delay_days
            self.attempt[f_ids] += 1
            self._emit(t_retry, f_ids, "reapplied")
            self._reapply(env, f_ids, t_retry, k)
        acts = act & ~fails
        if not acts.any():
            return
        a_ids = g[acts]
        a_cost = cost[acts]
        duration = spec.action.base_days + spec.action.per_unit_cost_days * np.nan_to_num(
            a_cost) / self.capacity[a_ids]
        partial = u[acts, 2] < spec.action.partial_probability
        lo = spec.action.partial_min
        frac = np.where(partial, lo + (1.0 - lo) * u[acts, 3], 1.0)
        xa = xg[acts]
        iv = intervened[acts]
        achieved = xa + frac[:, None] * (np.where(iv, values[acts], xa) - xa)
        x_new = self._timed("act_s", batching.counterfactual, self.world, xa, iv, achieved, bs)
        t2 = t1[acts] + duration
        self._actions.append((a_ids.copy(), self.attempt[a_ids].copy(), t1[acts], t2, frac,
                              np.where(iv, values[acts], np.nan)))
        self._emit(t1[acts], a_ids, "action_started", duration)
        self._emit(t2, a_ids, "action_completed", frac)
        self.x[a_ids] = x_new
        self.returning[a_ids] = True
        t_re = t2 + spec.reapply_delay_days
        self.attempt[a_ids] += 1
        self._emit(t_re, a_ids, "reapplied")
        self._reapply(env, a_ids, t_re, k)

    # -- run ---------------------------------------------------------------------------------
    def run(self) -> SimulationResult:
        """Simulates up to the horizon and returns the event log and applicant table."""
        started = time.perf_counter()
        self.timings = {"setup_s": 0.0, "decide_s": 0.0, "policy_s": 0.0, "evaluate_s": 0.0,
                        "act_s": 0.0, "retrain_s": 0.0, "tables_s": 0.0, "policy_calls": 0}
        self._timed("setup_s", self._setup)
        spec = self.spec
        n_windows = int(math.floor(spec.horizon_days / spec.window_days + 1e-9))
        env = simpy.Environment()
        env.process(self._arrivals(env, n_windows))
        env.process(self._lender(env, n_windows))
        env.run(until=spec.horizon_days + spec.window_days * 1e-6)
        t_tables = time.perf_counter()
        result = SimulationResult(self._events_frame(), self._applicants_frame(),
                                  pd.DataFrame(self._model_rows), self._actions_frame(),
                                  spec.horizon_days)
        self.timings["tables_s"] += time.perf_counter() - t_tables
        self.timings["total_s"] = time.perf_counter() - started
        result.timings = {k: round(v, 3) for k, v in self.timings.items()}
        return result

    def _events_frame(self) -> pd.DataFrame:
        if self._log:
            cols = [np.concatenate(c) for c in zip(*self._log, strict=True)]
        else:
            cols = [np.zeros(0, np.float64)] + [np.zeros(0, np.int64)] * 4 + [np.zeros(0)]
        time, app, att, code, ver, val = cols
        keep = time <= self.spec.horizon_days
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

    def _applicants_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"applicant": self.ids, "arrival_time": self.t_arrival,
                           "group": self.group_label.astype(str) if self.n else []})
        for name, col in self.groups.items():
            df[name] = np.asarray(col).astype(np.int64)
        names = list(self.world.roles.names)
        # Sensitive features are audited by group like the recourse tables (run_tables).
        for sensitive in ("gender",):
            if sensitive in names and sensitive not in df.columns:
                df[sensitive] = self.x[:, names.index(sensitive)].astype(np.int64)
        df["hidden_mismatch"] = self.mismatch
        df["n_actionable_reported"] = self.n_reported
        for j, name in enumerate(self.reported.features):
            df[f"can_{name}"] = self.hidden_actionable[:, j]
        return df

    def _actions_frame(self) -> pd.DataFrame:
        names = self.world.roles.names
        if self._actions:
            cols = [np.concatenate(c) for c in zip(*self._actions, strict=True)]
        else:
            cols = [np.zeros(0, np.int64)] * 2 + [np.zeros(0)] * 3 + [np.zeros((0, len(names)))]
        app, att, t1, t2, frac, target = cols
        keep = t1 <= self.spec.horizon_days
        df = pd.DataFrame({"applicant": app[keep], "attempt": att[keep].astype(np.int16),
                           "start": t1[keep], "end": t2[keep], "fraction": frac[keep]})
        for j, name in enumerate(names):
            df[f"target_{name}"] = target[keep, j]
        return df.sort_values(["start", "applicant"], kind="stable").reset_index(drop=True)


def simulate(spec: SimulationSpec, world: CausalWorld, data: WorldData,
             model: DecisionModel | torch.nn.Module, make_policy: PolicyFactory,
             people: PeopleSpec, seed: int) -> SimulationResult:
    """Runs one replication of the event world (see :class:`EventWorld`)."""
    return EventWorld(spec, world, data, model, make_policy, people, seed).run()


def fitted(policy_builder: Callable[[], RecoursePolicy]) -> PolicyFactory:
    """A :data:`PolicyFactory` from a builder of unfitted policies (fits a fresh one)."""
    return lambda context: policy_builder().fit(context)
