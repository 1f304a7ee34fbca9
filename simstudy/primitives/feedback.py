"""The narrow channel through which a policy asks people questions.

A policy that learns from the people it serves (HARE) never sees their hidden truth. The caller
hands it an object satisfying :class:`Feedback`, backed by the simulated people of the run
(:meth:`simstudy.people.People.feedback`) or, in a live study, by real answers. Points are in the
world's original feature units, one row per person asked.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Feedback"]


@runtime_checkable
class Feedback(Protocol):
    """Answers of people to pairwise and accept / reject questions about recourses.

    Every call asks each listed person one question; the answer's luck depends on the person and
    on how many questions they answered before in this session, never on who else is asked.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context, small_people
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> people = small_people(context, ids, x, profiles)
        >>> from simstudy.primitives import Feedback
        >>> feedback = people.feedback()
        >>> isinstance(feedback, Feedback)
        True
        >>> feedback.prefer(ids, x, x + 1.0).shape, feedback.accept(ids, x).shape
        ((3,), (3,))
    """

    def prefer(self, ids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """"Do you prefer ``a`` over ``b``?" to person ``ids[i]`` about rows ``a[i]``, ``b[i]``.

        Args:
            ids: ``(m,)`` person ids (distinct).
            a, b: ``(m, d)`` candidate points in original feature units.

        Returns:
            ``(m,)`` bool, true where the person prefers ``a``.
        """
        ...

    def accept(self, ids: np.ndarray, r: np.ndarray) -> np.ndarray:
        """"Is ``r`` satisfactory?" to person ``ids[i]`` about row ``r[i]``; ``(m,)`` bool."""
        ...
