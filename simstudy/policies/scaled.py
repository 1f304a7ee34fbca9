"""Base of the generators that search in the [0, 1]-scaled feature space.

The space itself (:class:`~simstudy.primitives.space.ScaledSpace`, :func:`action_mask`,
:func:`points_to_recourse`) is a primitive shared with the simulated people; it is re-exported
here for the policies that build on it.
"""

from __future__ import annotations

from ..primitives.space import (
    ScaledSpace,
    action_mask,
    clip_to_box,
    person_box,
    points_to_recourse,
    snap_points,
)
from .base import RecourseContext, RecoursePolicy

__all__ = ["ScaledSpace", "ScaledSpacePolicy", "action_mask", "points_to_recourse",
           "clip_to_box", "person_box", "snap_points"]


class ScaledSpacePolicy(RecoursePolicy):
    """Base of the non-causal generators that search in the ``[0, 1]``-scaled feature space."""

    def fit(self, context: RecourseContext) -> ScaledSpacePolicy:
        super().fit(context)
        self.space_ = ScaledSpace.from_context(context)
        return self
