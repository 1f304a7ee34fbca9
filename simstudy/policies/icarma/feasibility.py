"""Which training person-profiles any action inside the latent clamp can make valid.

iCARMA's action shifts the acted-on features' causal noise by ``s_j σ_j`` with the step ``s_j``
held in the clamp ``[lo, hi]`` (:func:`~.objective.latent_step_bounds`). For a person with noise
``u`` and the actionable set ``S`` of a training profile, the best approval probability any
action of the networks can reach is

    p*(u, S) = max_{s in [lo, hi]^S} sigmoid(f(predict(u + σ ⊙ s)))

(the mask can only switch features of ``S`` off, which the box contains as ``s_j = 0``). A
person-profile with ``p* < 1/2`` cannot be made valid by any output of the networks: its hinge
adds about one to every batch and no useful gradient, and under CARMA's multiplier it keeps the
multiplier growing (``benchmarks/ICARMA_RESULTS.md``, "The measured cause").

``p*`` is searched for every person and every non-empty subset of the actionable features, once
before training (``2^k - 1`` subsets; 15 for Loan): the best point of a grid over the box
(``grid`` values per feature, the clamp's ends included) and of no action, then projected
gradient ascent on the decision model's logit from there. It is a lower bound on the true
maximum; the rows it calls infeasible are ones neither the grid nor the ascent could make valid.

References:
    Majumdar & Valera, "CARMA: a practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024 (the clamped latent action).

Example:
    >>> import torch
    >>> from simstudy.examples import small_context
    >>> from simstudy.policies.icarma import noise_scale
    >>> context = small_context()
    >>> x = context.data.x_train[:8].double()
    >>> u = context.world.abduct(x)
    >>> idx = torch.tensor(context.world.roles.actionable_index)
    >>> best = reachable_probability(context.world, context.model, u, idx,
    ...                              noise_scale(context), (-3.0, 3.0), grid=3, steps=5)
    >>> tuple(best.shape), bool(((best >= 0) & (best <= 1)).all())
    ((8, 16), True)
    >>> subset_code(torch.tensor([[True, False, True, False]])).tolist()
    [5]
"""

from __future__ import annotations

import torch

__all__ = ["reachable_probability", "subset_code", "GRID_POINTS"]

#: The most grid points one subset's search starts from (``grid ** |S|`` up to it: every
#: subset of Loan's four and German credit's five actionable features keeps ``grid = 5``).
GRID_POINTS = 4096


def subset_code(actionable: torch.Tensor) -> torch.Tensor:
    """The index ``sum_j a_j 2^j`` of each row's actionable subset (columns: the globally
    actionable features)."""
    powers = 2 ** torch.arange(actionable.shape[1])
    return (actionable.long() * powers).sum(dim=1)


def reachable_probability(world, model, u: torch.Tensor, act_index: torch.Tensor,
                          noise_std: torch.Tensor, bounds: tuple[float, float],
                          grid: int = 5, steps: int = 40, chunk: int = 20000) -> torch.Tensor:
    """``(n, 2^k)``: the best approval probability projected gradient ascent reaches inside the
    clamp for every person (noise ``u``) and subset (column :func:`subset_code`; column 0, no
    action, is the factual probability).

    Args:
        world: the training world (``predict`` from noise).
        model: the decision model (logit).
        u: ``(n, d)`` abducted noise of the people.
        act_index: the globally actionable features' columns.
        noise_std: the noise's spread per feature (the latent action's unit).
        bounds: the clamp ``(lo, hi)`` of the step, in units of the spread (finite; an
            unbounded action is given a box of +/-10 spreads).
        grid: points per feature of the grid the search starts from (its ends: the clamp);
            fewer (at least the two ends) where a subset's grid would exceed ``GRID_POINTS``.
        steps: projected Adam steps from the grid's best point.
        chunk: rows evaluated together.
    """
    k = len(act_index)
    lo, hi = (max(float(b), -10.0) if i == 0 else min(float(b), 10.0)
              for i, b in enumerate(bounds))
    sd = noise_std[act_index].to(torch.float64)
    out = torch.empty(len(u), 2**k, dtype=torch.float64)
    with torch.no_grad():
        out[:, 0] = torch.sigmoid(model(world.predict(u)).to(torch.float64))

    def logit(uu: torch.Tensor, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        shift = torch.zeros_like(uu)
        shift[:, act_index] = s * mask * sd
        return model(world.predict(uu + shift)).to(torch.float64).reshape(-1)

    lr = (hi - lo) / 20
    for code in range(1, 2**k):
        mask = torch.tensor([(code >> j) & 1 for j in range(k)], dtype=torch.float64)
        cols = [j for j in range(k) if mask[j] > 0]
        per = grid
        while per > 2 and per ** len(cols) > GRID_POINTS:
            per -= 1
        levels = torch.linspace(lo, hi, per, dtype=torch.float64)
        points = torch.zeros(per ** len(cols), k, dtype=torch.float64)
        points[:, cols] = torch.cartesian_prod(*[levels] * len(cols)).reshape(-1, len(cols))
        for start in range(0, len(u), chunk):
            uu = u[start:start + chunk].to(torch.float64)
            n = len(uu)
            arg = torch.zeros(n, k, dtype=torch.float64)  # no action: the box holds it
            with torch.no_grad():
                best = logit(uu, arg, mask)
                for point in points:
                    value = logit(uu, point.expand(n, k), mask)
                    better = value > best
                    best = torch.where(better, value, best)
                    arg[better] = point
            s = arg.clone().requires_grad_(True)
            opt = torch.optim.Adam([s], lr=lr)
            for _ in range(steps):
                value = logit(uu, s, mask)
                best = torch.maximum(best, value.detach())
                s.grad, = torch.autograd.grad(-value.sum(), s)
                opt.step()
                with torch.no_grad():
                    s.clamp_(lo, hi)
            with torch.no_grad():
                best = torch.maximum(best, logit(uu, s, mask))
            out[start:start + chunk, code] = torch.sigmoid(best)
    return out
