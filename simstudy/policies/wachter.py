"""Wachter counterfactuals, batched over people (Wachter, Mittelstadt & Russell, 2017,
"Counterfactual explanations without opening the black box").

In [0, 1]-scaled space each person's point ``r = x + δ`` minimises

    λ BCE(g(r), 1) + ||δ||_p,   p ∈ {1, 2},

by Adam over ``δ`` restricted to the person's actionable coordinates and clipped to the feasible
box (:func:`~simstudy.policies.scaled.clip_to_box`; the other coordinates stay exactly at the
factual, even when it lies outside the training range). The approved iterate nearest the
factual is kept; people still rejected after a round get ``λ`` multiplied by ``lambda_growth``
and continue. The prediction loss is the cross-entropy
toward approval, as in common implementations: the squared error of the original paper,
``(σ(g(r)) - 1)^2``, has a vanishing gradient for firmly rejected people. Losses are summed
over people and Adam is elementwise, so each person's trajectory is the one it would have alone.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from torch.optim.adam import adam as adam_update

from ..metrics import Recourse
from ..primitives.profiles import ActionabilityProfiles
from .params import WachterParams
from .scaled import (
    ScaledSpace,
    ScaledSpacePolicy,
    action_mask,
    clip_to_box,
    person_box,
    points_to_recourse,
    snap_points,
)

__all__ = ["wachter", "Wachter"]


def wachter(
    space: ScaledSpace, x: torch.Tensor, mask: np.ndarray | torch.Tensor,
    distance: Literal["l1", "l2"] = "l2", lam: float = 1.0, lr: float = 0.01,
    steps: int = 200, rounds: int = 4, lambda_growth: float = 10.0,
    box: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batched Wachter search in scaled space, each iterate projected onto the feasible box
    (``box``: each person's own, :func:`~simstudy.primitives.space.person_box`).

    Returns:
        ``(r, found)``: the nearest approved iterate per person (``x`` if none) and ``(n,)`` bool.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    m = torch.as_tensor(np.asarray(mask), dtype=torch.float64)
    n = x.shape[0]
    delta = torch.zeros_like(x, requires_grad=True)
    # Adam's update through torch's own functional form: the same arithmetic as
    # torch.optim.Adam (default settings) without the optimizer object's per-step bookkeeping,
    # which dominates on the small batches of one simulated day
    exp_avg, exp_avg_sq, adam_step = (torch.zeros_like(x), torch.zeros_like(x),
                                      torch.tensor(0.0))
    lam_i = torch.full((n,), float(lam), dtype=torch.float64)
    best = x.clone()
    best_dist = torch.full((n,), torch.inf, dtype=torch.float64)
    active = m.any(dim=1)
    movable = m > 0
    for _ in range(rounds):
        for _ in range(steps):
            r = clip_to_box(x + delta * m, x, movable, box)
            logit = space.logit(r)
            if distance == "l1":
                dist = (r - x).abs().sum(dim=1)
            else:
                # the epsilon keeps the gradient finite at δ = 0, where every search starts
                dist = ((r - x) ** 2).sum(dim=1).add(1e-12).sqrt()
            loss = lam_i * torch.nn.functional.softplus(-logit).to(torch.float64) + dist
            # gradients for δ only: the decision model's parameters stay untouched
            (grad,) = torch.autograd.grad((loss * active).sum(), delta)
            with torch.no_grad():
                adam_update([delta], [grad], [exp_avg], [exp_avg_sq], [], [adam_step],
                            amsgrad=False, beta1=0.9, beta2=0.999, lr=lr, weight_decay=0.0,
                            eps=1e-8, maximize=False)
                better = (logit >= 0) & (dist < best_dist) & active
                # a selection, not a masked assignment: the same values, fewer operations
                best = torch.where(better[:, None], r.detach(), best)
                best_dist = torch.where(better, dist.detach(), best_dist)
        missing = active & torch.isinf(best_dist)
        if not missing.any():
            break
        # only people still rejected go on to the next round: a person found in this round
        # keeps this round's answer, as if searched alone (answers must not depend on batching)
        active = missing
        lam_i = torch.where(missing, lam_i * lambda_growth, lam_i)
    return best, torch.isfinite(best_dist)


class Wachter(ScaledSpacePolicy):
    """Wachter et al. (2017) gradient counterfactuals on each person's actionable features.

    Args:
        distance: ``l1`` or ``l2`` distance in scaled space.
        lam: initial weight of the prediction loss.
        lr: Adam learning rate.
        steps: Adam steps per round.
        rounds: rounds, ``λ`` growing between rounds for people still rejected.
        lambda_growth: factor applied to ``λ`` between rounds.

    Takes :class:`~simstudy.policies.params.WachterParams` (or its fields as keywords).

    References:
        Wachter, Mittelstadt & Russell, "Counterfactual explanations without opening the black
        box: automated decisions and the GDPR", Harvard Journal of Law & Technology 31(2),
        2017, https://arxiv.org/abs/1711.00399.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> from simstudy.policies import Wachter
        >>> recourse = Wachter(steps=50, rounds=2).fit(context).recommend(x, profiles, ids)
        >>> recourse.found.tolist(), recourse.counterfactual.shape
        ([False, True, True], (3, 7))
    """

    kind = "wachter"
    Params = WachterParams
    row_local = True

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        mask = action_mask(self.context_.feature_names, profiles)
        xs = self.space_.scale(x)
        box = person_box(self.space_, xs, self.context_.feature_names, profiles)
        p = self.params
        r, found = wachter(self.space_, xs, mask, p.distance, p.lam, p.lr, p.steps, p.rounds,
                           p.lambda_growth, box)
        return points_to_recourse(self.space_, x, snap_points(self.space_, xs, r, box), found)

