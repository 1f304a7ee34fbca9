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

Over a causal base (one that proposes actions, such as the causal oracle or iCARMA) a
recourse is an action ``do(X_I := θ_I)`` on the person's actionable features, and the point
shown is the world's counterfactual ``CF(x, I, θ)`` (its structural equations or flow). HARE then
samples and bisects *intervention values*: a candidate moves the actionable features ``I`` of the
current recourse to ``θ' = r + γ p`` (clipped to the feasible box), the segment searched is
``θ(t) = x_I + t (θ' - x_I)``, and every point judged or shown is ``CF(x, I, θ(t))``, so a feature
the person may not act on keeps its factual value or follows the allowed interventions exactly;
interpolating the counterfactual's coordinates instead would put descendants at values no
action produces. Over a generator that proposes points (Wachter, Growing Spheres) the points
are searched themselves, as published, and features outside the person's actionable set never
move. ``violations`` counts, by value, the features the person may not act on whose shown value
is neither their own nor the world's consequence of the action
(:func:`~simstudy.primitives.consistency.inconsistent_features`).

Features with levels (a codebook in the world's roles) take only codes the person allows: right
after the bisection each candidate's value of such a feature is snapped outward, to the nearest
allowed code at least as far from the factual as the boundary point
(:func:`~simstudy.primitives.levels.snap_values`), so the snapped candidate stays on the approved
side wherever the model is monotone along the move; over a causal base the snapped value is the
intervention's and the point shown is recomputed as the counterfactual of the snapped action. A
candidate the model no longer approves after snapping is not shown.

``keep_best`` is a departure from the reference, off by default: from the second iteration on,
the incumbent ``r_{t-1}`` is one of the ``k`` entrants of the tournament (with ``k - 1`` fresh
candidates, so the budget is unchanged). In the reference, iteration ``t``'s winner replaces
``r_{t-1}`` even when the person preferred ``r_{t-1}``, so Multi-HARE can end further from what
the person wants than an earlier iteration's winner; keeping the incumbent makes the hidden
loss of a noiseless person's recourse non-increasing across iterations.

All people run at once: the gradient steps and bisections are tensors over
``(people, candidates, features)``; only who is still searching differs, through masks. Because
Adam is elementwise and every loss is a sum of per-person terms, a person's trajectory does not
depend on who else is in the batch up to the last bits of float arithmetic, whose kernels
depend on the batch's shape, and to the bisection, which halves every segment as often as the
batch's longest segment needs (within the tolerance of the person's own stop;
``halvings_per_person`` removes even that, as :mod:`simstudy.live.slots` needs).
Random directions and tournament orders are keyed by
``(seed, purpose:iteration, applicant id)``.

References:
    "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), Algorithm 4 and
    section 4.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.normal_draws import entity_normals
from ..core.rng import entity_uniforms
from ..metrics import Recourse
from ..primitives.consistency import inconsistent_features, world_counterfactual
from ..primitives.feedback import Feedback
from ..primitives.profiles import ActionabilityProfiles
from .base import RecoursePolicy
from .hare_steps import (
    Questions,
    actionable_sampling,
    boundary_point_search,
    redundancy,
    tournament,
    tournament_winner,
)
from .params import HAREParams
from .scaled import (
    ScaledSpacePolicy,
    action_mask,
    clip_to_box,
    person_box,
    points_to_recourse,
    snap_points,
)

__all__ = [
    "actionable_sampling",
    "boundary_point_search",
    "tournament",
    "redundancy",
    "HARE",
]


class HARE(ScaledSpacePolicy):
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
    ``redundancy_base``, ``violations`` (features the person may not act on at a value that is
    neither their own nor the world's counterfactual of the action). The returned recourse
    carries the base generator's recourse as ``base``, so the caller can measure both against
    the people's hidden truth. Takes :class:`~simstudy.policies.params.HAREParams` (whose
    ``base`` entry is built), or the unfitted base policy and the other fields as keywords.

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
    Params = HAREParams
    asks_questions = True
    #: BoundaryPointSearch halves each person's segments as often as their own longest needs
    #: (:func:`~simstudy.policies.hare_steps.boundary_point_search`); by default, as often as
    #: the batch's longest needs
    halvings_per_person: bool = False

    def __init__(self, params: HAREParams | RecoursePolicy | None = None, /,
                 **values: Any) -> None:
        base = values.pop("base", None)
        if isinstance(params, RecoursePolicy):
            params, base = None, params
        if not isinstance(base, RecoursePolicy):
            super().__init__(params, **({} if base is None else {"base": base}), **values)
            self.base = self.params.base.build()
            return
        # a base given as a policy is used as is; ``params.base`` is its entry (``None`` for a
        # policy that has none, which no document can give)
        super().__init__(params, **values)
        self.params = self.params.model_copy(update={"base": getattr(base, "params", None)})
        self.base = base

    def fit(self, context) -> HARE:
        super().fit(context)
        if self.params.budget // self.params.iterations < 1:
            raise ValueError(f"budget {self.params.budget} cannot be split over "
                             f"{self.params.iterations} iterations")
        self.base_ = self.base.fit(context)
        return self

    def _base_points(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                     seed: int) -> tuple[_Start, Recourse]:
        """Where every person's search starts (the base's recourse, ``x`` where none) and the
        base's own recourse."""
        rec = self.base_.recommend(x, profiles, ids, seed)
        causal = rec.counterfactual is None
        acts = rec.intervened & rec.found[:, None]
        if causal:
            # a causal base proposes an action; its point is the action's counterfactual
            cf = world_counterfactual(self.context_.world, x, acts, rec.values)
        else:
            cf = rec.counterfactual
        found = torch.from_numpy(rec.found & np.isfinite(cf).all(axis=1))
        xs = self.space_.scale(x)
        r0 = torch.where(found[:, None], self.space_.scale(np.nan_to_num(cf)), xs)
        acts_t = torch.from_numpy(acts) & found[:, None]
        # the intervention values themselves (not their scaled round trip through the point)
        z0 = torch.where(acts_t, self.space_.scale(np.where(acts, rec.values, x)), r0)
        return _Start(r0, z0, acts_t, found, causal), rec

    def _realiser(self, x: torch.Tensor
                  ) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
        """``realise(rows, z, acts)``: the scaled points shown to the people at ``rows`` for
        intervention values ``z`` (scaled) on the features ``acts``, any shape ``(m, ..., d)``:
        the world's counterfactual, differentiable in ``z``."""
        world, space = self.context_.world, self.space_

        def realise(rows: torch.Tensor, z: torch.Tensor, acts: torch.Tensor) -> torch.Tensor:
            shape = z.shape
            xr = x[rows].reshape(len(rows), *([1] * (len(shape) - 2)), shape[-1])
            cf = world.counterfactual(xr.expand(shape).reshape(-1, shape[-1]),
                                      acts.expand(shape).reshape(-1, shape[-1]),
                                      space.unscale(z).reshape(-1, shape[-1]))
            return space.scale(cf).reshape(shape)

        return realise

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback: Feedback | None = None) -> Recourse:
        if feedback is None:
            raise ValueError("HARE asks the people questions: pass their feedback "
                             "(e.g. people.feedback())")
        x = np.asarray(x, dtype=np.float64)
        ids = np.asarray(ids)
        state, start, base_rec = self._begin(x, profiles, ids, seed, feedback)
        xs, base_found, realise = state.xs, start.found, state.realise
        mask_np = state.mask.numpy()
        for t in range(self.params.iterations):
            if not bool(state.searching.any()):
                break
            self._iteration(state, t, seed)
        r = snap_points(self.space_, xs, state.r, state.box)
        found = base_found.clone() if not self.params.search_without_base else (
            base_found | self.space_.approves(r))
        everyone = torch.arange(len(ids))
        if realise is None:
            red = redundancy(self.space_, xs, r)
            red_base = redundancy(self.space_, xs, start.r)
        else:
            def realise_all(z, acts):
                return realise(everyone, z, acts)
            red = redundancy(self.space_, xs, state.z, state.acts, realise_all)
            red_base = redundancy(self.space_, xs, start.z, start.acts, realise_all)
        extras = {
            "unapproved_candidates": state.unapproved.numpy(),
            "queries": state.users.queries.copy(),
            "accepted": state.accepted.numpy(),
            "iterations_run": state.rounds.numpy(),
            "base_found": base_found.numpy(),
            "redundancy": red.numpy(),
            "redundancy_base": red_base.numpy(),
        }
        if realise is None:
            # HARE moves only actionable coordinates; every other one keeps the factual value
            rec = points_to_recourse(self.space_, x, r, found & (r != xs).any(dim=1), extras,
                                     acted=mask_np | start.acts.numpy())
        else:
            # over a causal base the recourse is an action; the point shown is the world's
            # counterfactual of it, computed here once more for the whole batch
            z, acts_t = _snap_actions(self.space_, xs, state.z, state.acts, state.box)
            acts = (acts_t & found[:, None]).numpy()
            shown = found.numpy() & acts.any(axis=1)
            acts &= shown[:, None]
            values = np.where(acts, self.space_.unscale(z).numpy(), np.nan)
            cf = world_counterfactual(self.context_.world, x, acts, values)
            rec = Recourse(acts, values, shown, extras=extras, counterfactual=cf)
        # by value: features the person may not act on at a value that is neither their own nor
        # the world's consequence of the action (zero by construction; measured, not assumed)
        bad = inconsistent_features(self.context_.world, x, rec.intervened, rec.values,
                                    np.where(rec.found[:, None], rec.counterfactual, x),
                                    self.context_.feature_range)
        rec.extras["violations"] = (bad & ~mask_np).sum(axis=1)
        rec.base = base_rec
        return rec

    def _begin(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
               seed: int, feedback: Feedback | None) -> tuple[_Search, _Start, Recourse]:
        """Where everyone's search stands before the first iteration (``x`` in float64),
        where it started, and the base's recourse."""
        mask = torch.from_numpy(action_mask(self.context_.feature_names, profiles))
        xs = self.space_.scale(x)
        start, base_rec = self._base_points(x, profiles, ids, seed)
        realise = self._realiser(torch.from_numpy(x)) if start.causal else None
        state = _Search(ids, xs, mask, start, Questions(feedback, self.space_, ids), realise)
        # each person's own directions and bounds narrow the box every candidate stays in
        state.box = person_box(self.space_, xs, self.context_.feature_names, profiles)
        # as published, HARE refines the base's recourse: nobody the base failed is searched, so
        # HARE's success rate is the base's (search_without_base: the earlier variant)
        state.searching = mask.any(dim=1) if self.params.search_without_base else (
            mask.any(dim=1) & start.found)
        return state, start, base_rec

    def _candidates(self, state: _Search, idx: torch.Tensor, t: int, seed: int
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Iteration ``t``'s entrants of the people at rows ``idx``: fresh candidates on the
        boundary (and, with ``keep_best`` from the second iteration on, the incumbent), as the
        points shown, their intervention values and intervened features, and whether each may
        be shown (approved)."""
        space, xs, mask, r = self.space_, state.xs, state.mask, state.r
        k = self.params.budget // self.params.iterations
        incumbent = self.params.keep_best and t > 0
        fresh = k - 1 if incumbent else k
        d = xs.shape[1]
        c = xs.new_zeros((len(idx), 0, d))
        z, acts = c.clone(), torch.zeros((len(idx), 0, d), dtype=torch.bool)
        shown = torch.zeros((len(idx), 0), dtype=torch.bool)
        if fresh > 0:
            init = torch.from_numpy(entity_normals(seed, f"hare-directions:{t}",
                                                   state.ids[idx.numpy()], fresh * d))
            r_i, m_i = r[idx, None, :], mask[idx, None, :]
            realise = None
            if state.realise is not None:
                acts_r, z_r = state.acts[idx, None, :], state.z[idx, None, :]

                def realise(cand: torch.Tensor) -> torch.Tensor:
                    # a coordinate the direction moves becomes an intervention at its value
                    moved = m_i & (cand != r_i)
                    return state.realise(idx, torch.where(moved, cand, z_r), acts_r | moved)

            box = None if state.box is None else (state.box[0][idx], state.box[1][idx])
            p = actionable_sampling(space, r[idx], mask[idx], init.reshape(-1, fresh, d),
                                    self.params.gamma, self.params.lam, self.params.steps,
                                    self.params.lr,
                                    xs[idx] if self.params.same_box else None, realise=realise,
                                    box=box)
            c = clip_to_box(r_i + self.params.gamma * p, xs[idx, None, :], m_i,
                            None if box is None else (box[0][:, None], box[1][:, None]))
            box_i = None if box is None else (box[0][:, None], box[1][:, None])
            if state.realise is None:
                c, shown = boundary_point_search(space, xs[idx], c, self.params.tolerance,
                                                 per_person=self.halvings_per_person)
                if space.levels:
                    # a feature with levels is set to a code the person allows
                    c = snap_points(space, xs[idx, None, :], c, box_i, outward=True)
                    shown = shown & space.approves(c)
                z, acts = c, m_i.expand_as(c)
            else:
                moved = m_i & (c != r_i)
                acts = acts_r | moved
                z = torch.where(moved, c, z_r)

                def judged(zz: torch.Tensor) -> torch.Tensor:
                    return state.realise(idx, zz, acts)

                # bisection of the intervention values; descendants follow the world
                z, shown = boundary_point_search(space, xs[idx], z, self.params.tolerance, judged,
                                                 per_person=self.halvings_per_person)
                if space.levels:
                    # intervention values of features with levels set to codes the person
                    # allows; the point shown is the counterfactual of the snapped action
                    z, acts = _snap_actions(space, xs[idx, None, :], z, acts, box_i)
                with torch.no_grad():
                    c = judged(z)
                if space.levels:
                    shown = shown & space.approves(c)
            state.unapproved[idx] += (~shown).sum(dim=1)
        if incumbent:
            c = torch.cat([r[idx, None, :], c], dim=1)
            z = torch.cat([state.z[idx, None, :], z], dim=1)
            acts = torch.cat([state.acts[idx, None, :], acts], dim=1)
            shown = torch.cat([space.approves(r[idx])[:, None], shown], dim=1)
        return c, z, acts, shown

    def _iteration(self, state: _Search, t: int, seed: int) -> None:
        """One round for everyone still searching: candidates, tournament, accept question."""
        idx = state.searching.nonzero().squeeze(1)
        c, z, acts, shown = self._candidates(state, idx, t, seed)
        n, k = len(state.ids), self.params.budget // self.params.iterations
        full_c = state.r[:, None, :].expand(-1, k, -1).clone()
        full_c[idx] = c
        full_z = state.z[:, None, :].expand(-1, k, -1).clone()
        full_z[idx] = z
        full_acts = state.acts[:, None, :].expand(-1, k, -1).clone()
        full_acts[idx] = acts
        full_shown = torch.zeros(n, k, dtype=torch.bool)
        full_shown[idx] = shown
        order = torch.from_numpy(
            entity_uniforms(seed, f"hare-tournament:{t}", state.ids, k)).argsort(dim=1)
        pos, any_shown = tournament_winner(state.users.prefer, full_c, full_shown, order,
                                           state.searching)
        rows = torch.arange(n)
        take = (state.searching & any_shown)[:, None]
        state.r = torch.where(take, full_c[rows, pos], state.r)
        state.z = torch.where(take, full_z[rows, pos], state.z)
        state.acts = torch.where(take, full_acts[rows, pos], state.acts)
        state.rounds += state.searching.to(torch.int64)
        if self.params.early_stop:
            yes = state.users.accept(state.r, state.searching)
            state.accepted |= yes
            state.searching &= ~yes


def _snap_actions(space, factual: torch.Tensor, z: torch.Tensor, acts: torch.Tensor,
                  box: tuple[torch.Tensor, torch.Tensor] | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Intervention values ``z`` (scaled, ``(..., d)``) of the features with levels snapped
    outward to codes inside the box (:func:`~simstudy.primitives.space.snap_points`); a
    feature snapped back to its factual value is no longer intervened on. Unchanged without
    levels."""
    if not space.levels:
        return z, acts
    factual = factual.expand(z.shape)
    snapped = snap_points(space, factual, torch.where(acts, z, factual), box, outward=True)
    cols = torch.zeros(z.shape[-1], dtype=torch.bool)
    cols[list(space.levels)] = True
    acts = acts & ~(cols & (snapped == factual))
    return torch.where(acts & cols, snapped, z), acts


@dataclass
class _Start:
    """Where the searches start: the base's points ``r`` (scaled), its intervention values
    ``z`` on the intervened features ``acts`` (over a causal base), who the base found, and
    whether the base is causal (proposes actions, not points)."""

    r: torch.Tensor
    z: torch.Tensor
    acts: torch.Tensor
    found: torch.Tensor
    causal: bool


class _Search:
    """Where every person's search stands: the current recourses (the points shown ``r``, and
    the intervention values ``z`` on the features ``acts`` behind them), who is still
    searching, and the counters HARE reports."""

    def __init__(self, ids: np.ndarray, xs: torch.Tensor, mask: torch.Tensor, start: _Start,
                 users: Questions, realise=None) -> None:
        n = len(ids)
        self.ids, self.xs, self.mask, self.users, self.realise = ids, xs, mask, users, realise
        self.r = start.r.clone()
        self.z = start.z.clone()
        self.acts = start.acts.clone()
        self.box: tuple[torch.Tensor, torch.Tensor] | None = None
        self.searching = torch.zeros(n, dtype=torch.bool)
        self.unapproved = torch.zeros(n, dtype=torch.int64)
        self.accepted = torch.zeros(n, dtype=torch.bool)
        self.rounds = torch.zeros(n, dtype=torch.int64)
