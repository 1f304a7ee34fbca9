"""Growing Spheres recourse (Laugel et al., 2018), restricted to each person's actionable
features; the search itself is :func:`simstudy.primitives.spheres.growing_spheres`."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from annotated_types import Gt

from ..population import ActionabilityProfiles
from ..primitives.recourse import Recourse
from ..primitives.spheres import growing_spheres, sample_shell, sparsify
from ..registry import register_policy_spec
from ..schema import derive_spec
from .base import PolicySpec
from .space import ScaledSpacePolicy, action_mask, points_to_recourse

__all__ = ["sample_shell", "growing_spheres", "sparsify", "GrowingSpheres", "GrowingSpheresSpec"]


class GrowingSpheres(ScaledSpacePolicy):
    """Growing Spheres recourse restricted to each person's actionable features.

    Args:
        n_samples: samples per sphere or shell.
        eta: initial radius and shell width (scaled units).
        select_features: run the feature-selection step.
    """

    kind = "growing_spheres"

    def __init__(self, n_samples: Annotated[int, Gt(0)] = 200, eta: Annotated[float, Gt(0)] = 0.05,
                 select_features: bool = True) -> None:
        self.n_samples = n_samples
        self.eta = eta
        self.select_features = select_features

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        mask = action_mask(self.context_.feature_names, profiles)
        r, found = growing_spheres(self.space_, self.space_.scale(x), mask, np.asarray(ids), seed,
                                   "growing-spheres", self.n_samples, self.eta,
                                   select_features=self.select_features)
        return points_to_recourse(self.space_, x, r, found)


@register_policy_spec
class GrowingSpheresSpec(derive_spec(GrowingSpheres, kind="growing_spheres", base=PolicySpec)):
    """Scenario entry of :class:`GrowingSpheres` (fields and defaults are its constructor's)."""

    @classmethod
    def check_example(cls) -> dict:
        """Few samples per shell for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "growing_spheres", "n_samples": 50, "eta": 0.1}
