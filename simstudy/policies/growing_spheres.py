"""Growing Spheres recourse (Laugel et al., 2018), restricted to each person's actionable
features; the search itself is :func:`simstudy.primitives.spheres.growing_spheres`."""

from __future__ import annotations

import numpy as np

from ..primitives.profiles import ActionabilityProfiles
from ..primitives.recourse import Recourse
from ..primitives.spheres import growing_spheres, sample_shell, sparsify
from .params import GrowingSpheresParams
from .scaled import ScaledSpacePolicy, action_mask, person_box, points_to_recourse, snap_points

__all__ = ["sample_shell", "growing_spheres", "sparsify", "GrowingSpheres"]


class GrowingSpheres(ScaledSpacePolicy):
    """Growing Spheres recourse restricted to each person's actionable features.

    Args:
        n_samples: samples per sphere or shell.
        eta: initial radius and shell width (scaled units).
        select_features: run the feature-selection step.

    Takes :class:`~simstudy.policies.params.GrowingSpheresParams` (or its fields as keywords).

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> from simstudy.policies import GrowingSpheres
        >>> recourse = GrowingSpheres(n_samples=50).fit(context).recommend(x, profiles, ids)
        >>> recourse.found.tolist(), recourse.counterfactual.shape
        ([True, True, True], (3, 7))
    """

    kind = "growing_spheres"
    Params = GrowingSpheresParams

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        mask = action_mask(self.context_.feature_names, profiles)
        xs = self.space_.scale(x)
        box = person_box(self.space_, xs, self.context_.feature_names, profiles)
        r, found = growing_spheres(self.space_, xs, mask, np.asarray(ids), seed,
                                   "growing-spheres", self.params.n_samples, self.params.eta,
                                   select_features=self.params.select_features, box=box)
        return points_to_recourse(self.space_, x, snap_points(self.space_, xs, r, box), found)

