"""HARE's steps, batched over people: ActionableSampling, BoundaryPointSearch, the tournament.

From "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), all in [0, 1]-scaled
space, for people ``(n,)`` with ``k`` candidates each:

1. **ActionableSampling** around ``r``: ``k`` unit directions ``P = [p_1 .. p_k]``, initialised
   at random in the person's actionable subspace, refined by ``n`` steps of Adam on
   ``λ L1(P) + L2(P)`` with ``L1(P) = mean_i max_j (P P^T - 2 I)_ij`` (spreads the directions,
   as hyperspherical prototypes do) and ``L2(P) = mean_i BCE(g(r + γ p_i), 1)`` (candidates
   should be approved); after each step the directions are projected onto the actionable
   subspace (non-actionable coordinates zeroed) and renormalised. Candidates
   ``c_i = r + γ p_i``, clipped to the feasible box.
2. **BoundaryPointSearch**: bisect ``[x, c_i]`` until the ends are closer than the tolerance,
   keeping the approved end; the approved end replaces ``c_i`` (the smallest change along that
   direction). Over a causal base ``c_i`` holds intervention values and every point judged is
   the world's counterfactual of the interpolated action (``realise``).
3. **Comparative evaluation**: a tournament over the candidates in random order, the winner of
   each comparison meeting the next candidate (``k - 1`` pairwise queries).

:class:`Questions` is HARE's side of the conversation with the people
(:class:`~simstudy.primitives.feedback.Feedback`): scaled points out, answers in, questions
counted.

References:
    "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), Algorithms 1-4.

    Mettes, van der Pol, Snoek (2019), "Hyperspherical prototype networks", NeurIPS (the
    separation loss ``L1``). https://arxiv.org/abs/1901.10514
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch.optim.adam import adam as adam_update

from ..primitives.feedback import Feedback
from ..primitives.space import ScaledSpace, clip_to_box

__all__ = [
    "actionable_sampling",
    "boundary_point_search",
    "tournament",
    "tournament_winner",
    "redundancy",
    "Questions",
]


def actionable_sampling(
    space: ScaledSpace, r: torch.Tensor, mask: torch.Tensor, init: torch.Tensor,
    gamma: float = 1.0, lam: float = 10.0, steps: int = 100, lr: float = 0.1,
    factual: torch.Tensor | None = None,
    realise: Callable[[torch.Tensor], torch.Tensor] | None = None,
    box: tuple[torch.Tensor, torch.Tensor] | None = None,
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
        realise: maps ``(n, k, d)`` candidate intervention values to the points the person
            would be shown (over a causal base: the world's counterfactual, differentiable);
            ``None``: the candidates are the points.
        box: ``(n, d)`` bounds of each person's own box
            (:func:`~simstudy.primitives.space.person_box`), used with ``factual``.

    Returns:
        ``(n, k, d)`` unit directions, zero outside the actionable subspace.
    """
    m = mask[:, None, :].to(torch.float64)
    k = init.shape[1]

    def project(p: torch.Tensor) -> torch.Tensor:
        p = p * m
        return p / p.norm(dim=2, keepdim=True).clamp_min(1e-12)

    p = project(init.to(torch.float64)).requires_grad_(True)
    # Adam's update through torch's own functional form: the same arithmetic as
    # torch.optim.Adam (default settings) without the optimizer object's per-step bookkeeping,
    # which dominates on the small batches of one simulated day
    exp_avg, exp_avg_sq, adam_step = torch.zeros_like(p), torch.zeros_like(p), torch.tensor(0.0)
    eye2 = 2 * torch.eye(k, dtype=torch.float64)
    rt = r[:, None, :]
    if factual is not None:
        factual_t, movable = factual[:, None, :].to(torch.float64), mask[:, None, :].to(torch.bool)
        box_t = None if box is None else (box[0][:, None, :], box[1][:, None, :])
    for _ in range(steps):
        similarity = (p @ p.transpose(1, 2) - eye2).max(dim=2).values.mean(dim=1)
        cand = rt + gamma * p
        if factual is not None:
            cand = clip_to_box(cand, factual_t, movable, box_t)
        logit = space.logit(cand if realise is None else realise(cand))
        validity = torch.nn.functional.softplus(-logit).to(torch.float64).mean(dim=1)
        # gradients for the directions only: the decision model's parameters stay untouched
        (grad,) = torch.autograd.grad((lam * similarity + validity).sum(), p)
        with torch.no_grad():
            adam_update([p], [grad], [exp_avg], [exp_avg_sq], [], [adam_step], amsgrad=False,
                        beta1=0.9, beta2=0.999, lr=lr, weight_decay=0.0, eps=1e-8,
                        maximize=False)
            p.copy_(project(p))
    return p.detach()


@torch.no_grad()
def boundary_point_search(
    space: ScaledSpace, x: torch.Tensor, c: torch.Tensor, tolerance: float = 1e-6,
    realise: Callable[[torch.Tensor], torch.Tensor] | None = None, per_person: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bisection of every segment ``[x, c]`` to the decision boundary (HARE's BoundaryPointSearch).

    Args:
        x: ``(n, d)`` rejected factuals.
        c: ``(n, k, d)`` candidates.
        tolerance: stop when the two ends are closer than this (L2, scaled space).
        realise: maps ``(n, k, d)`` intervention values to the points the model judges. Over a
            causal base the segment is one of intervention values, ``θ(t) = x + t (c - x)`` on
            the intervened features, and every point judged is the world's counterfactual of
            ``θ(t)``: features the person does not act on follow the equations instead of
            being interpolated. ``None``: the segment's points themselves.
        per_person: halve each person's segments as often as their own longest needs, so
            that a person's boundary points do not depend on who else is in the batch; by
            default every segment is halved as often as the batch's longest needs (the same
            for a batch of one person).

    Returns:
        ``(c', approved)``: ``c'`` is the approved end, within ``tolerance`` of a rejected point
        on the segment, where ``c`` is approved; ``c`` itself elsewhere (intervention values
        when ``realise`` is given).
    """
    def approves(z: torch.Tensor) -> torch.Tensor:
        return space.approves(z if realise is None else realise(z))

    start = x[:, None, :].expand_as(c).clone()
    end = c.clone()
    approved = approves(end)
    def needed(length: float) -> int:
        return max(0, math.ceil(math.log2(length / tolerance))) if length > tolerance else 0

    longest = (end - start).norm(dim=2).max(dim=1).values if c.numel() else x.new_zeros(0)
    if per_person:
        halvings = torch.tensor([needed(v) for v in longest.tolist()], dtype=torch.int64)
    else:
        halvings = torch.full((len(longest),), needed(float(longest.max())) if len(longest)
                              else 0, dtype=torch.int64)
    for i in range(int(halvings.max()) if len(halvings) else 0):
        mid = (start + end) / 2
        ok = approves(mid)[..., None]
        going = (halvings > i)[:, None, None]
        end = torch.where(ok & going, mid, end)
        start = torch.where(~ok & going, mid, start)
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
    position, any_shown = tournament_winner(ask, candidates, shown, order, asking)
    return candidates[torch.arange(candidates.shape[0]), position], any_shown


def tournament_winner(
    ask: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    candidates: torch.Tensor, shown: torch.Tensor, order: torch.Tensor, asking: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`tournament`, returning the winner's position ``(n,)`` among the candidates (so
    that what stands behind a candidate, such as its action, can be taken with it)."""
    rows = torch.arange(candidates.shape[0])
    first = order[:, 0]
    win, win_ok, win_pos = candidates[rows, first], shown[rows, first].clone(), first.clone()
    for j in range(1, candidates.shape[1]):
        pos = order[:, j]
        challenger, ch_ok = candidates[rows, pos], shown[rows, pos]
        keep = ask(win, challenger, asking & win_ok & ch_ok)
        take = ch_ok & (~win_ok | ~keep)
        win = torch.where(take[:, None], challenger, win)
        win_pos = torch.where(take, pos, win_pos)
        win_ok |= ch_ok
    return win_pos, win_ok


@torch.no_grad()
def redundancy(space: ScaledSpace, x: torch.Tensor, r: torch.Tensor,
               acts: torch.Tensor | None = None,
               realise: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
    """Number of changed features whose lone reversion keeps ``r`` approved.

    Without ``realise``, a changed coordinate of the point ``r`` is set back to ``x``. With it
    (over a causal base), ``r`` holds intervention values on the intervened features ``acts``
    and ``realise(r, acts)`` is the point shown; reverting an intervened feature withdraws that
    intervention (the feature then follows the world's equations).
    """
    count = torch.zeros(x.shape[0], dtype=torch.int64)
    for j in range(x.shape[1]):
        changed = r[:, j] != x[:, j] if realise is None else acts[:, j]
        if not bool(changed.any()):
            continue
        if realise is None:
            trial = r.clone()
            trial[:, j] = x[:, j]
            approved = space.approves(trial)
        else:
            trial_acts = acts.clone()
            trial_acts[:, j] = False
            approved = space.approves(realise(r, trial_acts))
        count += (changed & approved).to(torch.int64)
    return count


class Questions:
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
