"""HARE and Multi-HARE: human-in-the-loop recourse, batched over people.

From "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission). A base generator
gives a first recourse ``r_0`` for the factual ``x`` (all in [0, 1]-scaled space). The query
budget ``B`` is split over ``T`` iterations (HARE: ``T = 1``; Multi-HARE: ``T > 1``), ``k = B / T``
queries each. Iteration ``t``:

1. **ActionableSampling** around ``r_{t-1}``: ``k`` diverse candidates in the person's
   actionable subspace, pushed towards approval;
2. **BoundaryPointSearch**: each candidate moved to the decision boundary along its segment
   from ``x``. The rule for a candidate the model does not approve even at its far end (no
   point of the segment is approved): it is not shown, i.e. it loses its tournament match
   without a query; the person's ``unapproved_candidates`` column counts such candidates. A
   person with no approved candidate in an iteration keeps ``r_{t-1}``;
3. **Comparative evaluation**: a tournament over the candidates (``k - 1`` pairwise queries);
   the survivor is ``r_t``;
4. **Indicator evaluation**: the person is asked whether ``r_t`` is satisfactory (one query);
   a yes stops their search. A simulated person says yes when their hidden loss is within
   their threshold (:attr:`simstudy.people.People.accept_threshold`, derived from their model).

The steps, with their formulas, are in :mod:`simstudy.policies.hare_steps`.

As published, HARE refines the base recourse: people for whom the base generator found nothing
are not searched, so HARE's success rate equals the base's (``search_without_base: true`` is the
earlier variant that searches from the factual). The candidates' validity term in
ActionableSampling scores the points where they will be, in the same feasible box the search
uses (``same_box: false``: the earlier unclipped scoring).

``keep_best`` is a departure from the reference, off by default: from the second iteration on,
the incumbent ``r_{t-1}`` is one of the ``k`` entrants of the tournament (with ``k - 1`` fresh
candidates, so the budget is unchanged). In the reference, iteration ``t``'s winner replaces
``r_{t-1}`` even when the person preferred ``r_{t-1}``, so Multi-HARE can end further from what
the person wants than an earlier iteration's winner; keeping the incumbent makes the hidden
loss of a noiseless person's recourse non-increasing across iterations.

All people run at once: the gradient steps and bisections are tensors over
``(people, candidates, features)``; only who is still searching differs, through masks. Because
Adam is elementwise and every loss is a sum of per-person terms, a person's trajectory does not
depend on who else is in the batch. Random directions and tournament orders are keyed by
``(seed, purpose:iteration, applicant id)``.

References:
    "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), Algorithm 4 and
    section 4.
"""

from __future__ import annotations

import numpy as np
import torch

from ..metrics import Recourse
from ..population import ActionabilityProfiles
from ..primitives.feedback import Feedback
from ..rng import entity_normals, entity_uniforms
from .hare_steps import (
    Questions,
    actionable_sampling,
    boundary_point_search,
    redundancy,
    tournament,
)
from .params import HAREParams
from .space import (
    ScaledSpacePolicy,
    action_mask,
    clip_to_box,
    person_box,
    points_to_recourse,
    snap_points,
)
from .specs import HARESpec

__all__ = [
    "actionable_sampling",
    "boundary_point_search",
    "tournament",
    "redundancy",
    "HARE",
    "HARESpec",
]


class HARE(HAREParams, ScaledSpacePolicy):
    """HARE (``iterations = 1``) and Multi-HARE (``iterations > 1``) over a base generator.

    Args:
        base: unfitted base recourse policy (Wachter, Growing Spheres, the causal oracle, ...).
        budget: queries per person ``B``.
        iterations: ``T``; each iteration uses ``B // T`` queries (``B // T - 1`` comparisons and
            one accept / reject question).
        gamma, lam, steps, lr: ActionableSampling settings.
        tolerance: BoundaryPointSearch tolerance.
        early_stop: ask the accept / reject question and stop on a yes.
        keep_best: from the second iteration on, enter the incumbent ``r_{t-1}`` in the
            tournament in place of one fresh candidate (not in the reference; see above).
        search_without_base: also search for people the base found nothing for (not in the
            paper; HARE's success rate may then exceed the base's).
        same_box: score candidates in ActionableSampling where they will be after clipping.

    The people answer through the :class:`~simstudy.primitives.feedback.Feedback` passed to
    :meth:`recommend`; HARE never sees their hidden truth. Per-applicant extras: ``queries``
    asked, ``accepted`` (stopped early), ``iterations_run``, ``base_found``, ``redundancy`` and
    ``redundancy_base``, ``violations`` (changed coordinates neither actionable for the person
    nor moved by a causal base's counterfactual). The returned recourse carries the base
    generator's recourse as ``base``, so the caller can measure both against the people's
    hidden truth. The constructor is :class:`~simstudy.policies.params.HAREParams`'.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context, small_people
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> people = small_people(context, ids, x, profiles)
        >>> from simstudy.policies import HARE, GrowingSpheres
        >>> hare = HARE(GrowingSpheres(n_samples=30), budget=6, steps=10).fit(context)
        >>> recourse = hare.recommend(x, profiles, ids, feedback=people.feedback())
        >>> recourse.found.tolist(), recourse.extras["queries"].tolist()
        ([True, True, True], [2, 3, 2])
    """

    kind = "hare"
    asks_questions = True

    def fit(self, context) -> HARE:
        super().fit(context)
        if self.budget // self.iterations < 1:
            raise ValueError(f"budget {self.budget} cannot be split over {self.iterations} "
                             "iterations")
        self.base_ = self.base.fit(context)
        return self

    def _base_points(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                     seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, Recourse]:
        """Scaled base recourses ``r_0`` (``x`` where none), found flags, base actions, and the
        base's own recourse."""
        rec = self.base_.recommend(x, profiles, ids, seed)
        if rec.counterfactual is not None:
            cf = rec.counterfactual
        else:
            # a causal base proposes an action; its point is the action's counterfactual
            with torch.no_grad():
                xt = torch.as_tensor(x, dtype=torch.float64)
                values = np.where(rec.intervened, rec.values, x)
                cf = self.context_.world.counterfactual(
                    xt, torch.from_numpy(rec.intervened), torch.from_numpy(values)).numpy()
        found = torch.from_numpy(rec.found & np.isfinite(cf).all(axis=1))
        r0 = torch.where(found[:, None], self.space_.scale(np.nan_to_num(cf)),
                         self.space_.scale(x))
        return r0, found, rec.intervened & found.numpy()[:, None], rec

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback: Feedback | None = None) -> Recourse:
        if feedback is None:
            raise ValueError("HARE asks the people questions: pass their feedback "
                             "(e.g. people.feedback())")
        x = np.asarray(x, dtype=np.float64)
        ids = np.asarray(ids)
        mask_np = action_mask(self.context_.feature_names, profiles)
        mask = torch.from_numpy(mask_np)
        xs = self.space_.scale(x)
        r0, base_found, base_acted, base_rec = self._base_points(x, profiles, ids, seed)
        state = _Search(ids, xs, mask, r0, Questions(feedback, self.space_, ids))
        # each person's own directions and bounds narrow the box every candidate stays in
        state.box = person_box(self.space_, xs, self.context_.feature_names, profiles)
        # as published, HARE refines the base's recourse: nobody the base failed is searched, so
        # HARE's success rate is the base's (search_without_base: the earlier variant)
        state.searching = mask.any(dim=1) if self.search_without_base else (
            mask.any(dim=1) & base_found)
        for t in range(self.iterations):
            if not bool(state.searching.any()):
                break
            self._iteration(state, t, seed)
        r = snap_points(self.space_, xs, state.r, state.box)
        found = base_found.clone() if not self.search_without_base else (
            base_found | self.space_.approves(r))
        extras = {
            "unapproved_candidates": state.unapproved.numpy(),
            "queries": state.users.queries.copy(),
            "accepted": state.accepted.numpy(),
            "iterations_run": state.rounds.numpy(),
            "base_found": base_found.numpy(),
            "redundancy": redundancy(self.space_, xs, r).numpy(),
            "redundancy_base": redundancy(self.space_, xs, r0).numpy(),
            # changed coordinates outside the person's actionable set and not moved by the base
            "violations": ((r != xs) & ~(mask | (r0 != xs))).sum(dim=-1).numpy(),
        }
        # HARE moves only actionable coordinates; other coordinates can differ from the factual
        # only as causal consequences carried over from a causal base's point, which are effects,
        # not actions
        rec = points_to_recourse(self.space_, x, r, found & (r != xs).any(dim=1), extras,
                                 acted=mask_np | base_acted)
        rec.base = base_rec
        return rec

    def _candidates(self, state: _Search, idx: torch.Tensor, t: int,
                    seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Iteration ``t``'s entrants of the people at rows ``idx``: fresh candidates on the
        boundary (and, with ``keep_best`` from the second iteration on, the incumbent), and
        whether each may be shown (approved)."""
        space, xs, mask, r = self.space_, state.xs, state.mask, state.r
        k = self.budget // self.iterations
        incumbent = self.keep_best and t > 0
        fresh = k - 1 if incumbent else k
        d = xs.shape[1]
        c = xs.new_zeros((len(idx), 0, d))
        shown = torch.zeros((len(idx), 0), dtype=torch.bool)
        if fresh > 0:
            init = torch.from_numpy(entity_normals(seed, f"hare-directions:{t}",
                                                   state.ids[idx.numpy()], fresh * d))
            box = None if state.box is None else (state.box[0][idx], state.box[1][idx])
            p = actionable_sampling(space, r[idx], mask[idx], init.reshape(-1, fresh, d),
                                    self.gamma, self.lam, self.steps, self.lr,
                                    xs[idx] if self.same_box else None, box)
            c = clip_to_box(r[idx, None, :] + self.gamma * p, xs[idx, None, :],
                            mask[idx, None, :],
                            None if box is None else (box[0][:, None], box[1][:, None]))
            c, shown = boundary_point_search(space, xs[idx], c, self.tolerance)
            state.unapproved[idx] += (~shown).sum(dim=1)
        if incumbent:
            c = torch.cat([r[idx, None, :], c], dim=1)
            shown = torch.cat([space.approves(r[idx])[:, None], shown], dim=1)
        return c, shown

    def _iteration(self, state: _Search, t: int, seed: int) -> None:
        """One round for everyone still searching: candidates, tournament, accept question."""
        idx = state.searching.nonzero().squeeze(1)
        c, shown = self._candidates(state, idx, t, seed)
        n, k = len(state.ids), self.budget // self.iterations
        full_c = state.r[:, None, :].expand(-1, k, -1).clone()
        full_c[idx] = c
        full_shown = torch.zeros(n, k, dtype=torch.bool)
        full_shown[idx] = shown
        order = torch.from_numpy(
            entity_uniforms(seed, f"hare-tournament:{t}", state.ids, k)).argsort(dim=1)
        win, any_shown = tournament(state.users.prefer, full_c, full_shown, order,
                                    state.searching)
        state.r = torch.where((state.searching & any_shown)[:, None], win, state.r)
        state.rounds += state.searching.to(torch.int64)
        if self.early_stop:
            yes = state.users.accept(state.r, state.searching)
            state.accepted |= yes
            state.searching &= ~yes


class _Search:
    """Where every person's search stands: current recourses, who is still searching, and the
    counters HARE reports."""

    def __init__(self, ids: np.ndarray, xs: torch.Tensor, mask: torch.Tensor, r0: torch.Tensor,
                 users: Questions) -> None:
        n = len(ids)
        self.ids, self.xs, self.mask, self.users = ids, xs, mask, users
        self.r = r0.clone()
        self.box: tuple[torch.Tensor, torch.Tensor] | None = None
        self.searching = torch.zeros(n, dtype=torch.bool)
        self.unapproved = torch.zeros(n, dtype=torch.int64)
        self.accepted = torch.zeros(n, dtype=torch.bool)
        self.rounds = torch.zeros(n, dtype=torch.int64)

