"""The event world's action phase: a person who accepted a recourse acts on it and re-applies.

A person who finds that they cannot act (a recommended feature is not actionable for them, by
their hidden profile) reports those features as not actionable from then on and re-applies after
``retry_delay_days``. Otherwise the action takes ``base_days + per_unit_cost_days * cost /
capacity`` days, reaches only a fraction of the change with probability
``partial_probability`` (uniform between ``partial_min`` and 1), moves the person through the
world's causal model (:func:`~simstudy.sim.batching.counterfactual`), and the person re-applies
``reapply_delay_days`` later.
"""

from __future__ import annotations

import numpy as np
import simpy

from . import batching
from .response_phase import Offer

__all__ = ["ActionPhase"]


class ActionPhase:
    """The action phase of :class:`~simstudy.sim.world.EventWorld` (a mixin: it moves the
    world's people and schedules their re-applications)."""

    def _act(self, env: simpy.Environment, offer: Offer, act: np.ndarray, k: int) -> None:
        """Carries out the actions of the people who act (``act``), after window ``k``."""
        fails = act & offer.blocked.any(axis=1)
        if fails.any():
            self._fail(env, offer, fails, k)
        acts = act & ~fails
        if acts.any():
            self._carry_out(env, offer, acts, k)

    def _fail(self, env: simpy.Environment, offer: Offer, fails: np.ndarray, k: int) -> None:
        """People who found they cannot act: logs ``action_failed``; they learn, and retry."""
        f_ids, t1 = offer.ids[fails], offer.time[fails]
        self._emit(t1, f_ids, "action_failed", offer.blocked[fails].sum(axis=1))
        # The person now knows: the blocked features are reported as not actionable.
        bad = offer.blocked[fails][:, self.act_idx]
        sc = self.reported.scores[f_ids]
        wt = self.reported.weights[f_ids]
        sc[bad] = 0
        wt[bad] = np.inf
        self.reported.scores[f_ids] = sc
        self.reported.weights[f_ids] = wt
        t_retry = t1 + self.spec.retry_delay_days
        self.attempt[f_ids] += 1
        self._emit(t_retry, f_ids, "reapplied")
        self._reapply(env, f_ids, t_retry, k)

    def _carry_out(self, env: simpy.Environment, offer: Offer, acts: np.ndarray,
                   k: int) -> None:
        """People who act: the action's duration and achieved fraction, the world's answer to
        it (their new features), and their re-application."""
        spec = self.spec
        a_ids, u = offer.ids[acts], offer.draws[acts]
        duration = spec.action.base_days + spec.action.per_unit_cost_days * np.nan_to_num(
            offer.cost[acts]) / self.capacity[a_ids]
        partial = u[:, 2] < spec.action.partial_probability
        lo = spec.action.partial_min
        frac = np.where(partial, lo + (1.0 - lo) * u[:, 3], 1.0)
        xa, iv, values = offer.x[acts], offer.intervened[acts], offer.values[acts]
        achieved = xa + frac[:, None] * (np.where(iv, values, xa) - xa)
        x_new = self._timed("act_s", batching.counterfactual, self.world, xa, iv, achieved,
                            spec.batch_size)
        t1 = offer.time[acts]
        t2 = t1 + duration
        self.log.action(a_ids.copy(), self.attempt[a_ids].copy(), t1, t2, frac,
                        np.where(iv, values, np.nan))
        self._emit(t1, a_ids, "action_started", duration)
        self._emit(t2, a_ids, "action_completed", frac)
        self.x[a_ids] = x_new
        self.returning[a_ids] = True
        t_re = t2 + spec.reapply_delay_days
        self.attempt[a_ids] += 1
        self._emit(t_re, a_ids, "reapplied")
        self._reapply(env, a_ids, t_re, k)
