"""The event world's response phase: a recourse is given, and the person accepts it and acts on
it, or not.

A generator that proposes points (a counterfactual) is read as "set the changed features to these
values". The person's answer comes from the people's response model
(:meth:`~simstudy.people.People.response_inputs`, ``response.probabilities``) with a keyed draw
per (person, attempt); the same draws decide, in the action phase, whether an action is carried
out only partly and how far.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..metrics import published_proximity

__all__ = ["Offer", "ResponsePhase"]


@dataclass
class Offer:
    """The recourses given in one batch of sessions (one row per person who got one).

    Attributes:
        ids: the people.
        time: when each session ended (the recourse was given).
        x: their features when they asked.
        cost: the recourse's weighted cost.
        intervened: ``(n, d)``, the features the recourse changes.
        values: ``(n, d)``, the target values (NaN where not intervened).
        blocked: ``(n, d)``, intervened features the person truly cannot act on.
        draws: ``(n, 4)`` keyed uniforms: accept, act, partial action, achieved fraction.
    """

    ids: np.ndarray
    time: np.ndarray
    x: np.ndarray
    cost: np.ndarray
    intervened: np.ndarray
    values: np.ndarray
    blocked: np.ndarray
    draws: np.ndarray


class ResponsePhase:
    """The response phase of :class:`~simstudy.sim.world.EventWorld` (a mixin: it reads the
    world's people and records what each person was given)."""

    def _give(self, ids: np.ndarray, rec: object, ev: dict[str, np.ndarray], found: np.ndarray,
              t_leave: np.ndarray) -> Offer:
        """Gives the found recourses (logs ``recourse_given``; remembers each one's validity,
        model version and counterfactual for the person's return)."""
        g = ids[found]
        x = self.x[g]
        cost = ev["cost"][found]
        intervened = rec.intervened[found] & rec.found[found, None]
        if rec.counterfactual is not None:
            # A generator that proposes points: the person sets the changed features to them.
            cf = rec.counterfactual[found]
            changed = np.zeros_like(intervened)
            changed[:, self.act_idx] = cf[:, self.act_idx] != x[:, self.act_idx]
            intervened = changed
            values = np.where(changed, cf, np.nan)
        else:
            values = rec.values[found]
        t1 = t_leave[found]
        self._emit(t1, g, "recourse_given", cost)
        self.rec_valid[g] = ev["valid"][found]
        self.rec_version[g] = self.version
        self.rec_xcf[g] = ev["x_cf"][found]
        # Can the person act? Every intervened feature must be truly actionable for them.
        allowed = np.zeros_like(intervened)
        allowed[:, self.act_idx] = self.hidden_actionable[g]
        blocked = intervened & ~allowed
        return Offer(g, t1, x, cost, intervened, values, blocked,
                     self._uniforms("respond", g, 4))

    def _respond(self, offer: Offer,
                 cost_unweighted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Who accepts and who acts once accepted (logs ``declined`` and ``no_action``)."""
        proximity = published_proximity(offer.intervened, offer.values, offer.x,
                                        self.feature_range, self.world.roles.categorical_mask())
        inputs = self.people.response_inputs(
            offer.ids, offer.cost, cost_unweighted, offer.intervened.sum(axis=1),
            proximity, offer.blocked.any(axis=1))
        p_accept, p_act = self.people.response.probabilities(inputs)
        u, g, t1 = offer.draws, offer.ids, offer.time
        accept = u[:, 0] < p_accept
        act = accept & (u[:, 1] < p_act)
        self._emit(t1[~accept], g[~accept], "declined")
        idle = accept & ~act
        self._emit(t1[idle], g[idle], "no_action")
        return accept, act
