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
  (:func:`simstudy.core.rng.entity_uniforms`), never on execution order. Two policies simulated with
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

import numpy as np
import pandas as pd
import simpy
import torch

from ..core.rng import derive_seed, entity_uniforms, generator
from ..people import People, PeopleSpec
from ..policies.base import RecourseContext, RecoursePolicy
from ..primitives.space import ScaledSpace
from ..world.base import CausalWorld
from ..world.data import WorldData
from ..world.decision import DecisionConfig, DecisionModel, state_dict_hash, train_decision_model
from . import batching
from .action import ActionPhase
from .events import (
    ATTEMPT_STRIDE,
    DROPOUT_EVENTS,
    EVENT_TYPES,
    TERMINAL_EVENTS,
    EventLog,
    SimulationResult,
    arrival_times,
)
from .response_phase import ResponsePhase
from .session import SessionPhase
from .spec import SimulationSpec

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

#: Builds a fitted policy for a model version (called once per version).
PolicyFactory = Callable[[RecourseContext], RecoursePolicy]


class EventWorld(SessionPhase, ResponsePhase, ActionPhase):
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

    Example:
        >>> from simstudy.examples import small_event_world
        >>> from simstudy.policies import GrowingSpheres
        >>> spec, world, data, model, who = small_event_world()
        >>> replica = EventWorld(spec, world, data, model, fitted(GrowingSpheres), who, 0)
        >>> sorted(replica.run().events["event"].unique())[:3], len(replica.people)
        (['action_completed', 'action_started', 'approved'], 20)
    """

    def __init__(self, spec: SimulationSpec, world: CausalWorld, data: WorldData,
                 model: torch.nn.Module, make_policy: PolicyFactory,
                 people: PeopleSpec, seed: int,
                 decision_config: DecisionConfig | None = None) -> None:
        if spec.max_attempts >= ATTEMPT_STRIDE - 1:
            raise ValueError(f"max_attempts must be below {ATTEMPT_STRIDE - 1}")
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
        self._setup_people()
        self._setup_state()

    def _setup_people(self) -> None:
        """The applicants: arrival times, features, reports, groups and dispositions."""
        spec, seed = self.spec, self.seed
        self.t_arrival = arrival_times(spec, seed)
        n = self.n = len(self.t_arrival)
        self.ids = np.arange(n, dtype=np.int64)
        x = self.world.sample(n, generator(seed, "sim-applicants")) if n else None
        names = self.world.roles.names
        self.x = (x.numpy().copy() if x is not None
                  else np.zeros((0, len(names)), dtype=np.float64))
        context = RecourseContext(self.world, self._models[0], self.data, seed)
        people = self.people = People.from_spec(
            self.people_spec, self.x, self.ids, seed, names, self.world.roles.actionable,
            ScaledSpace.from_context(context), immutable=self.world.roles.immutable,
            rankings=self.world.roles.rankings, income=self.world.roles.income,
            sensitive=self.world.roles.sensitive)
        groups = self.groups = people.groups
        profiles = people.reported
        # what the person tells the policy; corrected after failures
        self.reported = profiles.subset(slice(None))
        self.reported.scores = self.reported.scores.copy()
        self.reported.weights = self.reported.weights.copy()
        self.act_idx = profiles.columns_in(names)
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

    def _setup_state(self) -> None:
        """Mutable per-person state, the lender's queue and the logs."""
        spec, n = self.spec, self.n
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
        self.log = EventLog()
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
        if len(ids):
            self.log.emit(time, ids, self.attempt[ids] if attempt is None else attempt, event,
                          self.version, value)

    def _bucket(self, t: np.ndarray, current: int) -> np.ndarray:
        # First boundary strictly after t; never the boundary being processed (rounding guard).
        return np.maximum(np.floor(t / self.spec.window_days).astype(np.int64) + 1, current + 1)

    def _enqueue(self, ids: np.ndarray, buckets: np.ndarray) -> None:
        for b in np.unique(buckets):
            self._pending.setdefault(int(b), []).append(ids[buckets == b])

    def _uniforms(self, purpose: str, ids: np.ndarray, n_draws: int = 1) -> np.ndarray:
        keys = ids.astype(np.uint64) * np.uint64(ATTEMPT_STRIDE) + self.attempt[ids].astype(
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

    def _serve(self, env: simpy.Environment, ids: np.ndarray, t: float, k: int) -> None:
        """Recourse requests of ``ids`` at ``t`` (window ``k``), phase by phase: the session
        (:class:`SessionPhase`), the response (:class:`ResponsePhase`), the action
        (:class:`ActionPhase`)."""
        rec, ev, found, t_leave = self._session(ids, t, k)
        if not found.any():
            return
        offer = self._give(ids, rec, ev, found, t_leave)
        _, act = self._respond(offer, ev["cost_unweighted"][found])
        self._act(env, offer, act, k)

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
        result = SimulationResult(self.log.events_frame(spec.horizon_days),
                                  self._applicants_frame(), pd.DataFrame(self._model_rows),
                                  self.log.actions_frame(self.world.roles.names,
                                                         spec.horizon_days),
                                  spec.horizon_days)
        self.timings["tables_s"] += time.perf_counter() - t_tables
        self.timings["total_s"] = time.perf_counter() - started
        result.timings = {k: round(v, 3) for k, v in self.timings.items()}
        return result

    def _applicants_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"applicant": self.ids, "arrival_time": self.t_arrival,
                           "group": self.group_label.astype(str) if self.n else []})
        for name, col in self.groups.items():
            df[name] = np.asarray(col).astype(np.int64)
        names = list(self.world.roles.names)
        # Sensitive features are audited by group like the recourse tables (run_tables).
        for sensitive in self.world.roles.sensitive:
            if sensitive in names and sensitive not in df.columns:
                df[sensitive] = self.x[:, names.index(sensitive)].astype(np.int64)
        df["hidden_mismatch"] = self.mismatch
        df["n_actionable_reported"] = self.n_reported
        for j, name in enumerate(self.reported.features):
            df[f"can_{name}"] = self.hidden_actionable[:, j]
        return df


def simulate(spec: SimulationSpec, world: CausalWorld, data: WorldData,
             model: DecisionModel | torch.nn.Module, make_policy: PolicyFactory,
             people: PeopleSpec, seed: int) -> SimulationResult:
    """Runs one replication of the event world (see :class:`EventWorld`).

    Example:
        >>> from simstudy.examples import small_event_world
        >>> from simstudy.policies import GrowingSpheres
        >>> spec, world, data, model, who = small_event_world()
        >>> result = simulate(spec, world, data, model, fitted(GrowingSpheres), who, 0)
        >>> len(result.applicants), result.horizon_days
        (20, 10.0)
    """
    return EventWorld(spec, world, data, model, make_policy, people, seed).run()


def fitted(policy_builder: Callable[[], RecoursePolicy]) -> PolicyFactory:
    """A :data:`PolicyFactory` from a builder of unfitted policies (fits a fresh one).

    Example:
        >>> from simstudy.policies import Wachter; from simstudy.world import LoanWorldSpec
        >>> world, data, _ = LoanWorldSpec(n_samples=200).build(seed=0)
        >>> fitted(Wachter)(RecourseContext(world, torch.nn.Identity(), data)).context_.data is data
        True
    """
    return lambda context: policy_builder().fit(context)
