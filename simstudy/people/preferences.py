"""Hidden preferences of simulated people, generated as HARE's evaluation generates them.

Two kinds of hidden truth, following the evaluation scheme of HARE ("HARE: Human-in-the-Loop
Algorithmic Recourse", anonymous submission):

* a **ground-truth recourse** ``r_gt``: perturb the factual's movable coordinates (scaled to
  [0, 1]) by a random vector of L2 norm ``eps`` (near 0.2, intermediate 0.8, far 1.5), clip to
  the box, and run Growing Spheres from the perturbed point; the approved point found is
  ``r_gt``. How it is searched is a :class:`TruthSearch` (:data:`GROUND_TRUTH_SEARCHES`):
  ``actionable`` (the default, as HARE's evaluation does it) moves the changes the person can
  actually make, their truly actionable features, and searches with CARLA's Growing Spheres
  (shells of width 0.2 from the start, 1,000 samples per shell, radius uniform in length, no
  feature selection); ``all_mutable`` runs the same search over every mutable feature of the
  world, including features the person cannot act on and features no action reaches;
  ``actionable_sparse`` (the earlier variant) moves the person's actionable features and
  searches with the project's Growing Spheres (radius halving from 0.05, 200 samples, feature
  selection). Except under ``all_mutable``, ``r_gt`` respects the person's hard constraints;
* **preference weights** ``w``: per feature, a centre drawn uniformly from
  ``{0.2, 1, 2, 3, 4}`` plus unit normal noise, clipped to ``[0.1, 5]``; or the cost weights of
  the person's actionability profile. A weighted-preference person prefers the smaller
  ``sum_j w_j |r_j - x_j|``.

The threshold under which a person calls a recourse satisfactory is derived from the same
model (:func:`derived_accept_threshold`). Every draw is keyed by ``(seed, purpose, applicant
id)``.

References:
    "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), section 4.1,
    "Simulating Ground-Truth Recourses".

    Pawelczyk et al. (2021), "CARLA: A Python library to benchmark algorithmic recourse and
    counterfactual explanation algorithms", NeurIPS Datasets and Benchmarks (its Growing
    Spheres). https://arxiv.org/abs/2108.00783
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from ..core.normal_draws import entity_normals
from ..core.rng import entity_uniforms
from ..primitives.profiles import ActionabilityProfiles
from ..primitives.space import ScaledSpace, clip_to_box
from ..primitives.spheres import growing_spheres
from .settings import GROUND_TRUTH_SCALES, GROUND_TRUTH_SEARCHES, TruthSearch

__all__ = [
    "GROUND_TRUTH_SCALES",
    "GROUND_TRUTH_SEARCHES",
    "WEIGHT_CENTRES",
    "TruthSearch",
    "ground_truth_recourse",
    "derived_accept_threshold",
    "centred_weights",
    "profile_weights",
]

#: Centres of HARE's hidden per-feature preference weights.
WEIGHT_CENTRES: tuple[float, ...] = (0.2, 1.0, 2.0, 3.0, 4.0)


@torch.no_grad()
def ground_truth_recourse(
    space: ScaledSpace, x: torch.Tensor, mask: np.ndarray | torch.Tensor, ids: np.ndarray,
    seed: int, eps: float | str, search: TruthSearch | str = "actionable",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each person's hidden ground-truth recourse, for a whole batch.

    ``start = clip(x + eps z / ||z||)`` with ``z`` standard normal on the coordinates in
    ``mask`` (clipped to the feasible box of
    :func:`~simstudy.primitives.space.clip_to_box`), then Growing Spheres from ``start`` over
    the same coordinates; ``r_gt`` is the approved point it finds.

    Args:
        space: the scaled decision model.
        x: ``(n, d)`` scaled factuals.
        mask: ``(n, d)`` bool, the coordinates perturbed and searched (the world's mutable
            features, or each person's actionable ones, as ``search.features`` says).
        ids: applicant ids keying the draws.
        seed: the replication's seed.
        eps: perturbation norm, or a name from :data:`GROUND_TRUTH_SCALES`.
        search: a :class:`TruthSearch` or a name from :data:`GROUND_TRUTH_SEARCHES`.

    Returns:
        ``(r_gt, found)``, scaled ``(n, d)`` and ``(n,)`` bool (false: no approved point exists
        within the searched subspace, or nothing can move).
    """
    if isinstance(eps, str):
        eps = GROUND_TRUTH_SCALES[eps]
    if isinstance(search, str):
        search = GROUND_TRUTH_SEARCHES[search]
    x = torch.as_tensor(x, dtype=torch.float64)
    m = torch.as_tensor(np.asarray(mask), dtype=torch.bool)
    key = _truth_key(space, x, m, np.asarray(ids), seed, float(eps), search)
    if key not in _TRUTHS:
        z = torch.from_numpy(entity_normals(seed, "ground-truth-perturbation", ids,
                                            x.shape[1])) * m
        z = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
        start = clip_to_box(x + float(eps) * z, x, m)
        if len(_TRUTHS) >= _TRUTHS_SIZE:
            _TRUTHS.pop(next(iter(_TRUTHS)))
        _TRUTHS[key] = growing_spheres(
            space, start, m, np.asarray(ids), seed, "ground-truth-search", search.n_samples,
            search.shell_width, select_features=search.select_features,
            halving=search.halving, radius=search.radius)
    r_gt, found = _TRUTHS[key]
    return r_gt.clone(), found.clone()


# Per-process memo of the last ground truths, keyed by everything they are computed from: the
# units of one replication and condition (one per policy) share the same people, so a worker
# given several of them searches their ground truth once. The search is a pure function of
# these inputs, so a memo hit returns the very bytes a fresh search would.
_TRUTHS: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
_TRUTHS_SIZE = 8


def _truth_key(space: ScaledSpace, x: torch.Tensor, mask: torch.Tensor, ids: np.ndarray,
               seed: int, eps: float, search: TruthSearch) -> str:
    h = hashlib.sha256(repr((type(space.model).__qualname__, int(seed), eps, search,
                             tuple(x.shape), str(ids.dtype))).encode())
    for tensor in (x, mask, space.lower, space.feature_range,
                   *space.model.state_dict().values()):
        h.update(str(tensor.dtype).encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    h.update(np.ascontiguousarray(ids).tobytes())
    return h.hexdigest()


def derived_accept_threshold(search: TruthSearch, preference: Literal["ground_truth", "weights"],
                             weights: np.ndarray | None = None, n: int = 1) -> np.ndarray:
    """The hidden loss at or below which a simulated person calls a recourse satisfactory.

    The person's ideal ``r_gt`` is the approved sample nearest the start in the first shell
    of width ``w`` (``search.shell_width``) that holds one, so the search places it only to
    within one shell: the nearest approved point lies somewhere in that shell, up to ``w``
    closer to the start. The simulated preference is therefore defined to a resolution of
    ``w``; a recourse within half a shell of ``r_gt`` is, at that resolution, the ideal. With
    ``u_i`` the person's hidden loss per unit of scaled distance,

    ``tau_i = (w / 2) u_i``

    with ``u_i = 1`` for ground-truth preferences (the loss is ``||r - r_gt||_2``) and, for
    weighted-change preferences (``sum_j w_ij |r_j - x_j|``), ``u_i = min_j w_ij`` over the
    features they can move (the loss of a change along their cheapest direction). For HARE's
    search (``w = 0.2``) ``tau = 0.1``. The answer noise acts around ``tau``, not on it: a
    person accepts with probability ``answer_probability(noise, tau - loss, ...)``
    (:class:`~simstudy.people.answers.NoiseModel`).

    Args:
        search: the ground-truth search whose resolution defines the preference.
        preference: ``ground_truth`` or ``weights``.
        weights: ``(n, d)`` hidden weights (``inf`` where the person cannot act), for
            ``weights``.
        n: the number of people, for ``ground_truth``.

    Returns:
        ``(n,)`` thresholds (0 for a person who can move nothing).

    Example:
        >>> derived_accept_threshold(GROUND_TRUTH_SEARCHES["actionable"], "ground_truth", n=2)
        array([0.1, 0.1])
        >>> derived_accept_threshold(GROUND_TRUTH_SEARCHES["actionable"], "weights",
        ...                          np.array([[2.0, 0.5, np.inf]]))
        array([0.05])
    """
    half = search.shell_width / 2
    if preference == "ground_truth":
        return np.full(n, half)
    w = np.asarray(weights, dtype=np.float64)
    cheapest = np.where(np.isfinite(w), w, np.inf).min(axis=1)
    return np.where(np.isfinite(cheapest), half * cheapest, 0.0)


def centred_weights(
    ids: np.ndarray, seed: int, n_features: int, centres: Sequence[float] = WEIGHT_CENTRES,
    low: float = 0.1, high: float = 5.0,
) -> np.ndarray:
    """HARE's hidden weights: ``clip(c + N(0, 1), low, high)`` with ``c`` uniform over centres.

    Returns:
        ``(n, n_features)`` weights.
    """
    u = entity_uniforms(seed, "preference-centres", ids, n_features)
    c = np.asarray(centres, dtype=np.float64)[np.minimum((u * len(centres)).astype(int),
                                                          len(centres) - 1)]
    return np.clip(c + entity_normals(seed, "preference-weights", ids, n_features), low, high)


def profile_weights(feature_names: Sequence[str], profiles: ActionabilityProfiles) -> np.ndarray:
    """Hidden weights read from the actionability profile's cost weights, ``(n, d)``.

    Features outside the profile (immutable, not actionable) get ``inf``; a person never
    prefers moving them.
    """
    names = list(feature_names)
    w = np.full((len(profiles), len(names)), np.inf)
    for k, feature in enumerate(profiles.features):
        w[:, names.index(feature)] = profiles.weights[:, k]
    return w
