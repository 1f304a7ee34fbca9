"""Growing Spheres recourse (Laugel et al., 2018), restricted to each person's actionable
features; the search itself is :func:`simstudy.primitives.spheres.growing_spheres`."""

from __future__ import annotations

import numpy as np

from ..population import ActionabilityProfiles
from ..primitives.recourse import Recourse
from ..primitives.spheres import growing_spheres, sample_shell, sparsify
from .params import GrowingSpheresParams
from .space import ScaledSpacePolicy, action_mask, points_to_recourse
from .specs import GrowingSpheresSpec

__all__ = ["sample_shell", "growing_spheres", "sparsify", "GrowingSpheres", "GrowingSpheresSpec"]


class GrowingSpheres(GrowingSpheresParams, ScaledSpacePolicy):
    """Growing Spheres recourse restricted to each person's actionable features.

    Args:
        n_samples: samples per sphere or shell.
        eta: initial radius and shell width (scaled units).
        select_features: run the feature-selection step.

    The constructor is :class:`~simstudy.policies.params.GrowingSpheresParams`'.

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> import numpy as np
        >>> from simstudy.policies import RecourseContext
        >>> from simstudy.population import ActionabilityProfiles
        >>> from simstudy.rng import generator
        >>> from simstudy.world import LoanSCM, sample_world_data
        >>> from simstudy.world.decision import DecisionConfig, train_decision_model
        >>> data = sample_world_data(LoanSCM(), 400, generator(0, "example"))
        >>> model = train_decision_model(data, DecisionConfig(epochs=5))
        >>> context = RecourseContext(LoanSCM(), model, data)
        >>> ids = np.flatnonzero(~context.model.approves(data.x_test).numpy())[:3]
        >>> x, actionable = data.x_test.numpy()[ids], LoanSCM.roles.actionable
        >>> profiles = ActionabilityProfiles(actionable, np.ones((3, 4), int), 1, np.ones((3, 4)))
        >>> from simstudy.policies import GrowingSpheres
        >>> recourse = GrowingSpheres(n_samples=50).fit(context).recommend(x, profiles, ids)
        >>> recourse.found.tolist(), recourse.counterfactual.shape
        ([True, True, True], (3, 7))
    """

    kind = "growing_spheres"

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        mask = action_mask(self.context_.feature_names, profiles)
        r, found = growing_spheres(self.space_, self.space_.scale(x), mask, np.asarray(ids), seed,
                                   "growing-spheres", self.n_samples, self.eta,
                                   select_features=self.select_features)
        return points_to_recourse(self.space_, x, r, found)

