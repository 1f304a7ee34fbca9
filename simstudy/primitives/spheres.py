"""The Growing Spheres search, batched over people (Laugel et al., 2018, "Comparison-based inverse
classification for interpretability in machine learning").

For a factual ``x`` (scaled to [0, 1]) the search first halves a radius ``eta`` while the ball
``B(x, eta)`` still contains approved points, then samples uniformly in growing shells
``{z : a0 <= ||z - x||_2 <= a1}`` with ``a0 = (s + 1) eta``, ``a1 = (s + 2) eta``, until a shell
holds an approved point; the approved sample closest to ``x`` is kept. A feature-selection step
then reverts changed features to the factual, smallest change first, for as long as the point
stays approved.

Sampling is restricted to each person's actionable subspace (the shell of dimension
``k_i = #actionable``, radius drawn as ``(a0^k + u (a1^k - a0^k))^(1/k)`` for uniformity) and
clipped to the feasible box. Every sample is keyed by ``(seed, purpose:step, applicant id)``.

CARLA's variant (Pawelczyk et al., 2021), which HARE's evaluation uses to simulate its
ground truths, is the same search with three settings changed: no halving phase (the shells
start at the factual, ``a0 = s eta``, ``a1 = (s + 1) eta``, ``eta = 0.2``), the radius drawn
uniformly in length, ``a0 + u (a1 - a0)`` (``radius="length"``), and no feature selection.

References:
    Laugel, Lesot, Marsala, Renard, Detyniecki (2018), "Comparison-based inverse classification
    for interpretability in machine learning", IPMU. https://arxiv.org/abs/1712.08443

    Pawelczyk, Bielawski, van den Heuvel, Richter, Kasneci (2021), "CARLA: A Python library to
    benchmark algorithmic recourse and counterfactual explanation algorithms", NeurIPS Datasets
    and Benchmarks. https://arxiv.org/abs/2108.00783

The search is a primitive: the Growing Spheres policy uses it, and so do the simulated people,
whose hidden ground-truth recourse is found with it.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch

from ..core.normal_draws import entity_normals
from ..core.rng import entity_uniforms
from .space import ScaledSpace, clip_to_box

__all__ = ["sample_shell", "growing_spheres", "sparsify"]


def sample_shell(
    center: torch.Tensor, mask: torch.Tensor, inner: torch.Tensor, outer: torch.Tensor,
    ids: np.ndarray, seed: int, purpose: str, n_samples: int,
    radius: Literal["volume", "length"] = "volume",
    box: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Samples in each person's shell, inside their actionable subspace and the box
    (:func:`~simstudy.primitives.space.clip_to_box`, ``box``: each person's own, ``(n, d)``
    each; the other coordinates stay at the center).

    ``radius="volume"`` spreads the samples uniformly over the shell's volume; ``"length"``
    draws the radius uniformly in ``[inner, outer]`` (CARLA's sampler).

    Returns:
        ``(n, n_samples, d)`` points.

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> import numpy as np, torch
        >>> from simstudy.primitives import sample_shell
        >>> center = torch.full((1, 3), 0.5, dtype=torch.float64)
        >>> mask = torch.tensor([[1.0, 1.0, 0.0]])
        >>> points = sample_shell(center, mask, torch.tensor([0.1]), torch.tensor([0.2]),
        ...                       np.array([7]), seed=0, purpose="example", n_samples=100)
        >>> distance = (points - center[:, None]).norm(dim=2)
        >>> tuple(points.shape), float(distance.min()) >= 0.1 - 1e-9
        ((1, 100, 3), True)
        >>> float(distance.max()) <= 0.2 + 1e-9
        True
        >>> bool((points[..., 2] == 0.5).all())
        True
    """
    n, d = center.shape
    z = torch.from_numpy(entity_normals(seed, purpose, ids, n_samples * d)).reshape(n, n_samples, d)
    z = z * mask[:, None, :]
    direction = z / z.norm(dim=2, keepdim=True).clamp_min(1e-12)
    u = torch.from_numpy(entity_uniforms(seed, purpose + ":radius", ids, n_samples))
    if radius == "length":
        r = inner[:, None] + u * (outer - inner)[:, None]
    else:
        k = mask.sum(dim=1).clamp_min(1).to(torch.float64)[:, None]
        r = (inner[:, None] ** k + u * (outer[:, None] ** k - inner[:, None] ** k)) ** (1 / k)
    points = center[:, None, :] + r[..., None] * direction
    if box is not None:
        box = (box[0][:, None, :], box[1][:, None, :])
    return clip_to_box(points, center[:, None, :], mask[:, None, :] > 0, box)


@torch.no_grad()
def sparsify(space: ScaledSpace, x: torch.Tensor, r: torch.Tensor,
             found: torch.Tensor) -> torch.Tensor:
    """Feature selection: revert changed features to ``x``, smallest change first, while approved.

    Stops for a person at the first reversion that would lose approval (Laugel et al., 2018).

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> data = context.data
        >>> from simstudy.primitives import ScaledSpace, sparsify
        >>> space = ScaledSpace.from_context(context)
        >>> s = space.scale(data.x_test[:4])
        >>> far = s.clone()
        >>> far[:, 5:] = 1.0
        >>> found = space.approves(far)
        >>> sparse = sparsify(space, s, far, found)
        >>> bool(space.approves(sparse[found]).all())
        True
        >>> bool(((sparse != s).sum(1) <= (far != s).sum(1)).all())
        True
    """
    r = r.clone()
    delta = (r - x).abs()
    order = delta.argsort(dim=1)
    rows = torch.arange(x.shape[0])
    going = found.clone()
    for j in range(x.shape[1]):
        f = order[:, j]
        changed = delta[rows, f] > 0
        trial = r.clone()
        trial[rows, f] = x[rows, f]
        ok = space.approves(trial)
        r = torch.where((going & changed & ok)[:, None], trial, r)
        going &= ~changed | ok
    return r


@torch.no_grad()
def _halved_widths(space: ScaledSpace, x: torch.Tensor, mask: torch.Tensor, ids: np.ndarray,
                   seed: int, purpose: str, n_samples: int, width: torch.Tensor,
                   max_halvings: int, radius: Literal["volume", "length"],
                   box: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """The halving phase: each person's radius halved while the ball ``B(x, radius)`` still
    holds an approved sample (at most ``max_halvings`` times)."""
    width = width.clone()
    zero = torch.zeros(len(width), dtype=torch.float64)
    shrinking = mask.any(dim=1)
    for h in range(max_halvings):
        idx = shrinking.nonzero().squeeze(1)
        if idx.numel() == 0:
            break
        pts = sample_shell(x[idx], mask[idx], zero[idx], width[idx], ids[idx.numpy()], seed,
                           f"{purpose}:ball{h}", n_samples, radius, _rows(box, idx))
        hit = space.approves(pts).any(dim=1)
        width[idx[hit]] /= 2
        shrinking[idx[~hit]] = False
    return width


@torch.no_grad()
def growing_spheres(
    space: ScaledSpace, x: torch.Tensor, mask: np.ndarray | torch.Tensor, ids: np.ndarray,
    seed: int, purpose: str = "growing-spheres", n_samples: int = 200, eta: float = 0.05,
    max_halvings: int = 10, select_features: bool = True, halving: bool = True,
    radius: Literal["volume", "length"] = "volume",
    box: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batched Growing Spheres in scaled space.

    Args:
        space: the scaled decision model.
        x: ``(n, d)`` scaled starting points.
        mask: ``(n, d)`` bool, the coordinates each person may move.
        ids: applicant ids keying the random draws.
        seed, purpose: the stream.
        n_samples: samples per sphere or shell.
        eta: initial radius and shell width.
        max_halvings: cap on the radius-halving phase.
        select_features: run the feature-selection step.
        halving: run the radius-halving phase; without it the first shell is the ball
            ``B(x, eta)`` and shell ``s`` spans ``[s eta, (s + 1) eta]`` (CARLA).
        radius: how radii are drawn in a shell (:func:`sample_shell`).
        box: each person's feasible box (:func:`~simstudy.primitives.space.person_box`);
            every sample stays inside it.

    Returns:
        ``(r, found)``: ``(n, d)`` approved points (``x`` where none was found) and ``(n,)`` bool.

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> from simstudy.policies import RecourseContext
        >>> from simstudy.world import DecisionConfig, LoanWorldSpec, decision
        >>> world, data, _ = LoanWorldSpec(n_samples=400).build(seed=0)
        >>> model = decision.train_decision_model(data, DecisionConfig(epochs=5))
        >>> space = ScaledSpace.from_context(RecourseContext(world, model, data))
        >>> ids = np.flatnonzero(~model.approves(data.x_test).numpy())[:3]
        >>> mask = np.tile(np.isin(world.roles.names, world.roles.actionable), (3, 1))
        >>> r, found = growing_spheres(space, space.scale(data.x_test[ids]), mask, ids, seed=0)
        >>> found.tolist(), bool(space.approves(r[found]).all())
        ([True, True, True], True)
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    mask = torch.as_tensor(np.asarray(mask), dtype=torch.bool)
    ids = np.asarray(ids)
    n, d = x.shape
    movable = mask.any(dim=1)
    width = torch.full((n,), float(eta), dtype=torch.float64)
    if halving:
        width = _halved_widths(space, x, mask, ids, seed, purpose, n_samples, width,
                               max_halvings, radius, box)
    # after halving, the ball B(x, width) holds no approved sample: the shells start beyond it
    first = 1 if halving else 0
    # the feasible box has diameter sqrt(d) in scaled space; beyond it shells add nothing
    max_shells = math.ceil(math.sqrt(d) / eta) + 1
    r, found = _search_shells(space, x, mask, ids, seed, purpose, n_samples, width, first,
                              max_shells * 2 ** max_halvings, movable, radius, box)
    if select_features:
        r = sparsify(space, x, r, found)
    return r, found


def _rows(box: tuple[torch.Tensor, torch.Tensor] | None, idx: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor] | None:
    return None if box is None else (box[0][idx], box[1][idx])


def _search_shells(space: ScaledSpace, x: torch.Tensor, mask: torch.Tensor, ids: np.ndarray,
                   seed: int, purpose: str, n_samples: int, width: torch.Tensor, first: int,
                   n_shells: int, movable: torch.Tensor,
                   radius: Literal["volume", "length"],
                   box: tuple[torch.Tensor, torch.Tensor] | None = None,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Shells ``[(s + first) w, (s + first + 1) w]`` outward, each person until an approved
    sample (the nearest one kept) or the feasible box is left behind."""
    n, d = x.shape
    r = x.clone()
    found = torch.zeros(n, dtype=torch.bool)
    searching = movable.clone()
    for s in range(n_shells):
        idx = searching.nonzero().squeeze(1)
        if idx.numel() == 0:
            break
        w = width[idx]
        inner, outer = (s + first) * w, (s + first + 1) * w
        pts = sample_shell(x[idx], mask[idx], inner, outer, ids[idx.numpy()], seed,
                           f"{purpose}:shell{s}", n_samples, radius, _rows(box, idx))
        ok = space.approves(pts)
        dist = torch.where(ok, (pts - x[idx, None, :]).norm(dim=2), torch.inf)
        best = dist.argmin(dim=1)
        hit = ok.any(dim=1)
        r[idx[hit]] = pts[hit, best[hit]]
        found[idx[hit]] = True
        searching[idx[hit]] = False
        searching[idx[inner > math.sqrt(d)]] = False
    return r, found
