"""Hidden preferences of simulated people, generated as HARE's evaluation generates them.

Two kinds of hidden truth, following the evaluation scheme of HARE ("HARE: Human-in-the-Loop
Algorithmic Recourse", anonymous submission):

* a **ground-truth recourse** ``r_gt``: perturb the factual's actionable coordinates (scaled to
  [0, 1]) by a random vector of L2 norm ``eps`` (near 0.2, intermediate 0.8, far 1.5), clip to
  the box, and run Growing Spheres from the perturbed point; the approved point found is
  ``r_gt``. Only the person's own actionable features move, so ``r_gt`` respects their hard
  constraints;
* **preference weights** ``w``: per feature, a centre drawn uniformly from
  ``{0.2, 1, 2, 3, 4}`` plus unit normal noise, clipped to ``[0.1, 5]``; or the cost weights of
  the person's actionability profile. A weighted-preference person prefers the smaller
  ``sum_j w_j |r_j - x_j|``.

Every draw is keyed by ``(seed, purpose, applicant id)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..population import ActionabilityProfiles
from ..primitives.space import ScaledSpace
from ..primitives.spheres import growing_spheres
from ..rng import entity_normals, entity_uniforms

__all__ = [
    "GROUND_TRUTH_SCALES",
    "WEIGHT_CENTRES",
    "ground_truth_recourse",
    "centred_weights",
    "profile_weights",
]

#: Perturbation norm of each named ground-truth scale (HARE's near / intermediate / far).
GROUND_TRUTH_SCALES: dict[str, float] = {"near": 0.2, "intermediate": 0.8, "far": 1.5}

#: Centres of HARE's hidden per-feature preference weights.
WEIGHT_CENTRES: tuple[float, ...] = (0.2, 1.0, 2.0, 3.0, 4.0)


@torch.no_grad()
def ground_truth_recourse(
    space: ScaledSpace, x: torch.Tensor, mask: np.ndarray | torch.Tensor, ids: np.ndarray,
    seed: int, eps: float | str, n_samples: int = 200, eta: float = 0.05,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each person's hidden ground-truth recourse, for a whole batch.

    Args:
        space: the scaled decision model.
        x: ``(n, d)`` scaled factuals.
        mask: ``(n, d)`` bool, each person's actionable coordinates.
        ids: applicant ids keying the draws.
        seed: the replication's seed.
        eps: perturbation norm, or a name from :data:`GROUND_TRUTH_SCALES`.
        n_samples, eta: Growing Spheres settings.

    Returns:
        ``(r_gt, found)``, scaled ``(n, d)`` and ``(n,)`` bool (false: no approved point exists
        within the person's actionable subspace, or they cannot act at all).
    """
    if isinstance(eps, str):
        eps = GROUND_TRUTH_SCALES[eps]
    x = torch.as_tensor(x, dtype=torch.float64)
    m = torch.as_tensor(np.asarray(mask), dtype=torch.bool)
    z = torch.from_numpy(entity_normals(seed, "ground-truth-perturbation", ids, x.shape[1])) * m
    z = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
    start = (x + float(eps) * z).clamp(0.0, 1.0)
    return growing_spheres(space, start, m, np.asarray(ids), seed, "ground-truth-search",
                           n_samples, eta)


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
