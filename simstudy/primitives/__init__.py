"""Primitives shared by the simulated people and the policies (neither imports the other).

* :class:`~simstudy.primitives.recourse.Recourse`: what a policy recommends;
* :class:`~simstudy.primitives.space.ScaledSpace`: the [0, 1]-scaled feature space and the
  decision model seen from it, with :func:`~simstudy.primitives.space.action_mask`;
* :func:`~simstudy.primitives.spheres.growing_spheres`: the batched sphere search;
* :class:`~simstudy.primitives.feedback.Feedback`: how a policy asks people questions;
* :func:`~simstudy.primitives.consistency.inconsistent_features`: causal consistency of a
  shown recourse, by value.

Each loads when first used (the space and the search import torch).
"""

from ..core.lazy import lazy_exports

_EXPORTS = {
    "Feedback": "feedback",
    "Recourse": "recourse",
    "ScaledSpace": "space",
    "action_mask": "space",
    "points_to_recourse": "space",
    "growing_spheres": "spheres",
    "sample_shell": "spheres",
    "sparsify": "spheres",
    "inconsistent_features": "consistency",
    "world_counterfactual": "consistency",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
