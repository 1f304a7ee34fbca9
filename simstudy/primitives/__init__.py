"""Primitives shared by the simulated people and the policies (neither imports the other).

* :class:`~simstudy.primitives.recourse.Recourse`: what a policy recommends;
* :class:`~simstudy.primitives.space.ScaledSpace`: the [0, 1]-scaled feature space and the
  decision model seen from it, with :func:`~simstudy.primitives.space.action_mask`;
* :func:`~simstudy.primitives.spheres.growing_spheres`: the batched sphere search;
* :class:`~simstudy.primitives.feedback.Feedback`: how a policy asks people questions.
"""

from .feedback import Feedback
from .recourse import Recourse
from .space import ScaledSpace, action_mask, points_to_recourse
from .spheres import growing_spheres, sample_shell, sparsify

__all__ = ["Feedback", "Recourse", "ScaledSpace", "action_mask", "points_to_recourse",
           "growing_spheres", "sample_shell", "sparsify"]
