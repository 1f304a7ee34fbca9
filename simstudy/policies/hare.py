"""HARE and Multi-HARE: human-in-the-loop recourse, batched over people.

From "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission). A base generator
gives a first recourse ``r_0`` for the factual ``x`` (all in [0, 1]-scaled space). The query
budget ``B`` is split over ``T`` iterations (HARE: ``T = 1``; Multi-HARE: ``T > 1``), ``k = B / T``
queries each. Iteration ``t``:

1. **ActionableSampling** around ``r_{t-1}``: ``k`` unit directions ``P = [p_1 .. p_k]``,
   initialised at random in the person's actionable subspace, refined by ``n`` steps of Adam on
   ``λ L1(P) + L2(P)`` with ``L1(P) = mean_i max_j (P P^T - 2 I)_ij`` (spreads the directions,
   as hyperspherical prototypes do) and ``L2(P) = mean_i BCE(g(r_{t-1} + γ p_i), 1)``
   (candidates should be approved); after each step the directions are projected onto the
   actionable subspace (non-actionable coordinates zeroed) and renormalised. Candidates
   ``c_i = r_{t-1} + γ p_i``, clipped to the feasible box.
2. **BoundaryPointSearch**: bisect ``[x, c_i]`` until the ends are closer than the tolerance,
   keeping the approved end; the approved end replaces ``c_i`` (the smallest change along that
   direction). The rule for a candidate the model does not approve even at ``c_i`` (no point
   of the segment is approved): it is not shown, i.e. it loses its tournament match without a
   query; the person's ``unapproved_candidates`` column counts such candidates. A person with
   no approved candidate in an iteration keeps ``r_{t-1}``.
3. **Comparative evaluation**: a tournament over the candidates in random order, the winner of
   each comparison meeting the next candidate (``k - 1`` pairwise queries); the survivor is
   ``r_t``.
4. **Indicator evaluation**: the person is asked whether ``r_t`` is satisfactory (one query);
   a yes stops their search.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..metrics import Recourse
from ..population import ActionabilityProfiles
from ..primitives.feedback import Feedback
from ..rng import entity_normals, entity_uniforms
from .params import HAREParams
from .space import ScaledSpace, ScaledSpacePolicy, action_mask, clip_to_box, points_to_recourse
from .specs import HARESpec

__all__ = [
    "actionable_sampling",
    "boundary_point_search",
    "tournament",
    "redundancy",
    "HARE",
    "HARESpec",
]


def actionable_sampling(
    space: ScaledSpace, r: torch.Tensor, mask: torch.Tensor, init: torch.Tensor,
    gamma: float = 1.0, lam: float = 10.0, steps: int = 100, lr: float = 0.1,
    factual: torch.Tensor | None = None,
) -> torch.Tensor:
    """Diverse unit directions in each person's actionable subspace (HARE's ActionableSampling).

    Args:
        space: the scaled decision model.
        r: ``(n, d)`` current recourses.
        mask: ``(n, d)`` bool actionable coordinates.
        init: ``(n, k, d)`` initial directions (projected and normalised here).
        gamma, lam, steps, lr: step length, diversity weight, Adam steps and learning rate.
        factual: ``(n, d)`` scaled factuals. When given, the validity term scores the
            candidates where they will be, clipped to the feasible box
            (:func:`~simstudy.primitives.space.clip_to_box`), so optimisation and search use
            the same box; ``None`` scores the unclipped points.

    Returns:
        ``(n, k, d)`` unit directions, zero outside the actionable subspace.
    """
    m = mask[:, None, :].to(torch.float64)
    k = init.shape[1]

    def project(p: torch.Tensor) -> torch.Tensor:
        p = p * m
        return p / p.norm(dim=2, keepdim=True).clamp_min(1e-12)

    p = project(init.to(torch.float64)).requires_grad_(True)
    opt = torch.optim.Adam([p], lr=lr)
    eye2 = 2 * torch.eye(k, dtype=torch.float64)
    for _ in range(steps):
        similarity = (p @ p.transpose(1, 2) - eye2).max(dim=2).values.mean(dim=1)
        cand = r[:, None, :] + gamma * p
        if factual is not None:
            cand = clip_to_box(cand, factual[:, None, :], mask[:, None, :])
        logit = space.logit(cand)
        validity = torch.nn.functional.softplus(-logit).to(torch.float64).mean(dim=1)
        # gradients for the directions only: the decision model's parameters stay untouched
        (p.grad,) = torch.autograd.grad((lam * similarity + validity).sum(), p)
        opt.step()
        with torch.no_grad():
            p.copy_(project(p))
    return p.detach()


@torch.no_grad()
def boundary_point_search(
    space: ScaledSpace, x: torch.Tensor, c: torch.Tensor, tolerance: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bisection of every segment ``[x, c]`` to the decision boundary (HARE's BoundaryPointSearch).

    Args:
        x: ``(n, d)`` rejected factuals.
        c: ``(n, k, d)`` candidates.
        tolerance: stop when the two ends are closer than this (L2, scaled space).

    Returns:
        ``(c', approved)``: ``c'`` is the approved end, within ``tolerance`` of a rejected point
        on the segment, where ``c`` is approved; ``c`` itself elsewhere.
    """
    start = x[:, None, :].expand_as(c).clone()
    end = c.clone()
    approved = space.approves(end)
    length = float((end - start).norm(dim=2).max()) if c.numel() else 0.0
    n_iter = max(0, math.ceil(math.log2(length / tolerance))) if length > tolerance else 0
    for _ in range(n_iter):
        mid = (start + end) / 2
        ok = space.approves(mid)[..., None]
        end = torch.where(ok, mid, end)
        start = torch.where(ok, start, mid)
    return torch.where(approved[..., None], end, c), approved


def tournament(
    ask: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    candidates: torch.Tensor, shown: torch.Tensor, order: torch.Tensor, asking: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairwise tournament: the winner of each comparison meets the next candidate.

    Args:
        ask: ``ask(a, b, asking)`` puts "do you prefer a over b?" to the people where ``asking``
            is true and returns ``(n,)`` bool answers (true for people not asked).
        candidates: ``(n, k, d)``.
        shown: ``(n, k)`` bool; candidates not shown lose without a query.
        order: ``(n, k)`` the order in which each person meets the candidates.
        asking: ``(n,)`` bool, the people still searching.

    Returns:
        ``(winner, any_shown)``: ``(n, d)`` and ``(n,)`` bool.
    """
    rows = torch.arange(candidates.shape[0])[:, None]
    cands, ok = candidates[rows, order], shown[rows, order]
    win, win_ok = cands[:, 0], ok[:, 0].clone()
    for j in range(1, cands.shape[1]):
        challenger, ch_ok = cands[:, j], ok[:, j]
        keep = ask(win, challenger, asking & win_ok & ch_ok)
        take = ch_ok & (~win_ok | ~keep)
        win = torch.where(take[:, None], challenger, win)
        win_ok |= ch_ok
    return win, win_ok


@torch.no_grad()
def redundancy(space: ScaledSpace, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Number of changed features whose lone reversion to ``x`` keeps ``r`` approved."""
    count = torch.zeros(x.shape[0], dtype=torch.int64)
    for j in range(x.shape[1]):
        changed = r[:, j] != x[:, j]
        if not bool(changed.any()):
            continue
        trial = r.clone()
        trial[:, j] = x[:, j]
        count += (changed & space.approves(trial)).to(torch.int64)
    return count


class _Questions:
    """HARE's side of the conversation: scaled points out, answers in, questions counted."""

    def __init__(self, feedback: Feedback, space: ScaledSpace, ids: np.ndarray) -> None:
        self.feedback = feedback
        self.space = space
        self.ids = ids
        self.queries = np.zeros(len(ids), dtype=np.int64)

    def prefer(self, a: torch.Tensor, b: torch.Tensor, asking: torch.Tensor) -> torch.Tensor:
        rows = asking.nonzero().squeeze(1)
        yes = torch.ones(len(self.ids), dtype=torch.bool)
        if rows.numel():
            sel = rows.numpy()
            answer = self.feedback.prefer(self.ids[sel], self.space.unscale(a[rows]).numpy(),
                                          self.space.unscale(b[rows]).numpy())
            yes[rows] = torch.from_numpy(np.asarray(answer, dtype=bool))
            self.queries[sel] += 1
        return yes

    def accept(self, r: torch.Tensor, asking: torch.Tensor) -> torch.Tensor:
        rows = asking.nonzero().squeeze(1)
        yes = torch.zeros(len(self.ids), dtype=torch.bool)
        if rows.numel():
            sel = rows.numpy()
            answer = self.feedback.accept(self.ids[sel], self.space.unscale(r[rows]).numpy())
            yes[rows] = torch.from_numpy(np.asarray(answer, dtype=bool))
            self.queries[sel] += 1
        return yes


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
        space = self.space_
        names = self.context_.feature_names
        mask_np = action_mask(names, profiles)
        mask = torch.from_numpy(mask_np)
        xs = space.scale(x)
        r0, base_found, base_acted, base_rec = self._base_points(x, profiles, ids, seed)
        users = _Questions(feedback, space, ids)
        k = self.budget // self.iterations
        r = r0.clone()
        # as published, HARE refines the base's recourse: nobody the base failed is searched, so
        # HARE's success rate is the base's (search_without_base: the earlier variant)
        searching = mask.any(dim=1) if self.search_without_base else mask.any(dim=1) & base_found
        unapproved = torch.zeros(len(ids), dtype=torch.int64)
        accepted = torch.zeros(len(ids), dtype=torch.bool)
        rounds = torch.zeros(len(ids), dtype=torch.int64)
        for t in range(self.iterations):
            idx = searching.nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            sub = ids[idx.numpy()]
            d = xs.shape[1]
            # from the second iteration on, the incumbent takes one of the k places
            incumbent = self.keep_best and t > 0
            fresh = k - 1 if incumbent else k
            c = xs.new_zeros((len(idx), 0, d))
            shown = torch.zeros((len(idx), 0), dtype=torch.bool)
            if fresh > 0:
                init = torch.from_numpy(
                    entity_normals(seed, f"hare-directions:{t}", sub, fresh * d))
                p = actionable_sampling(space, r[idx], mask[idx], init.reshape(-1, fresh, d),
                                        self.gamma, self.lam, self.steps, self.lr,
                                        xs[idx] if self.same_box else None)
                c = clip_to_box(r[idx, None, :] + self.gamma * p, xs[idx, None, :],
                                mask[idx, None, :])
                c, shown = boundary_point_search(space, xs[idx], c, self.tolerance)
                unapproved[idx] += (~shown).sum(dim=1)
            if incumbent:
                c = torch.cat([r[idx, None, :], c], dim=1)
                shown = torch.cat([space.approves(r[idx])[:, None], shown], dim=1)
            full_c = r[:, None, :].expand(-1, k, -1).clone()
            full_c[idx] = c
            full_shown = torch.zeros(len(ids), k, dtype=torch.bool)
            full_shown[idx] = shown
            order = torch.from_numpy(
                entity_uniforms(seed, f"hare-tournament:{t}", ids, k)).argsort(dim=1)
            win, any_shown = tournament(users.prefer, full_c, full_shown, order, searching)
            r = torch.where((searching & any_shown)[:, None], win, r)
            rounds += searching.to(torch.int64)
            if self.early_stop:
                yes = users.accept(r, searching)
                accepted |= yes
                searching &= ~yes
        found = base_found | space.approves(r)
        if not self.search_without_base:
            found = base_found.clone()
        extras = {
            "unapproved_candidates": unapproved.numpy(),
            "queries": users.queries.copy(),
            "accepted": accepted.numpy(),
            "iterations_run": rounds.numpy(),
            "base_found": base_found.numpy(),
            "redundancy": redundancy(space, xs, r).numpy(),
            "redundancy_base": redundancy(space, xs, r0).numpy(),
            # changed coordinates outside the person's actionable set and not moved by the base
            "violations": ((r != xs) & ~(mask | (r0 != xs))).sum(dim=-1).numpy(),
        }
        # HARE moves only actionable coordinates; other coordinates can differ from the factual
        # only as causal consequences carried over from a causal base's point, which are effects,
        # not actions
        rec = points_to_recourse(space, x, r, found & (r != xs).any(dim=1), extras,
                                 acted=mask_np | base_acted)
        rec.base = base_rec
        return rec

