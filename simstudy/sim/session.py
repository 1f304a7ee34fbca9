"""The event world's session phase: a person asks for recourse and the policy answers.

The session lasts the policy's latency plus the time to answer its questions, or ends when the
person's patience (in questions) runs out first. Answers are computed in batches: with
``lookahead``, a request is answered together with every request already determined before the
next retraining (people the current model rejects, with attempts left, whose keyed draw says
they will ask), so a policy with a fixed cost per call is called a few times per model version
rather than once per window.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..primitives.recourse import Recourse
from . import batching

__all__ = ["SessionPhase"]


class SessionPhase:
    """The session phase of :class:`~simstudy.sim.world.EventWorld` (a mixin: it reads the
    world's people, model and spec, and keeps the answers computed ahead)."""

    def _session(self, ids: np.ndarray, t: float,
                 k: int) -> tuple[object, dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Sessions of ``ids`` opened at ``t`` (window ``k``): the policy's recourses and their
        metrics, who got one (``found``: a recourse, and patience left) and when each session
        ended; logs ``session_abandoned`` and ``no_recourse``."""
        spec = self.spec
        rec, ev = self._answers(ids, k)
        queries = np.asarray(rec.extras.get("queries", np.zeros(len(ids))), dtype=np.float64)
        abandon = queries > self.patience[ids]
        t_leave = t + spec.session.latency_days + np.where(
            abandon, self.patience[ids], queries) * self.question_time[ids]
        self._emit(t_leave[abandon], ids[abandon], "session_abandoned")
        found = ev["found"] & ~abandon
        none = ~abandon & ~found
        self._emit(t_leave[none], ids[none], "no_recourse")
        return rec, ev, found, t_leave

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
                                self.x[cand], self.spec.batch_size)
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
            parts.append((rec_b.subset(rows),
                          {key: v[rows] for key, v in ev_b.items()}))
            positions.append(sel)
        order = np.argsort(np.concatenate(positions), kind="stable")
        rec = Recourse.concat([p[0] for p in parts]).subset(order)
        ev = {key: np.concatenate([p[1][key] for p in parts])[order] for key in parts[0][1]}
        return rec, ev
