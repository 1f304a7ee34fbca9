"""The recourse type: what a policy recommends to a batch of people.

It sits below both the simulated people and the policies, so either can use it without
importing the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Recourse"]


@dataclass
class Recourse:
    """What a policy recommends to ``n`` applicants.

    Attributes:
        intervened: ``(n, d)`` bool over all world features: the action ``do(X_I := θ_I)``.
        values: ``(n, d)`` intervention values θ (NaN where not intervened).
        found: ``(n,)`` bool; false is an explicit "no recourse" for that person.
        extras: policy-specific per-applicant columns (for example queries asked).
        counterfactual: optional ``(n, d)`` points shown: proposed directly by a generator that
            searches points (Wachter, Growing Spheres, HARE over them), or the world's
            counterfactual of the action (HARE over a causal base). When set, they are the
            counterfactuals evaluated, instead of propagating the intervention through the
            world's structural equations; :func:`simstudy.checks.check_recourse_values` checks
            they are causally consistent.
        base: for a policy that refines another policy's answer (HARE over its base
            generator), the recourse it started from, so that both can be measured against the
            same people.

    Example:
        >>> import numpy as np
        >>> from simstudy.primitives import Recourse
        >>> recourse = Recourse(intervened=np.array([[False, True]]),
        ...                     values=np.array([[np.nan, 2.0]]), found=np.array([True]))
        >>> len(recourse), len(Recourse.none(3, 2)), Recourse.none(3, 2).found.tolist()
        (1, 3, [False, False, False])
    """

    intervened: np.ndarray
    values: np.ndarray
    found: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    counterfactual: np.ndarray | None = None
    base: Recourse | None = None

    def __post_init__(self) -> None:
        self.intervened = np.asarray(self.intervened, dtype=bool)
        self.values = np.where(self.intervened, np.asarray(self.values, dtype=np.float64), np.nan)
        self.found = np.asarray(self.found, dtype=bool)

    def __len__(self) -> int:
        return self.found.shape[0]

    def subset(self, rows: np.ndarray | slice) -> Recourse:
        """The recourse of the people at ``rows`` (extras, points shown and the base recourse
        included)."""
        return Recourse(self.intervened[rows], self.values[rows], self.found[rows],
                        {k: np.asarray(v)[rows] for k, v in self.extras.items()},
                        None if self.counterfactual is None else self.counterfactual[rows],
                        None if self.base is None else self.base.subset(rows))

    @classmethod
    def concat(cls, parts: Sequence[Recourse]) -> Recourse:
        """The recourses of ``parts`` one after another: the extras every part has, the
        points shown where any part has them (a part without: its intervention values), the
        base where every part has one."""
        if len(parts) == 1:
            return parts[0]
        keys = [k for k in parts[0].extras if all(k in p.extras for p in parts)]
        cfs = [p.counterfactual for p in parts]
        cf = None
        if any(c is not None for c in cfs):
            cf = np.concatenate([c if c is not None else np.where(p.intervened, p.values, np.nan)
                                 for c, p in zip(cfs, parts, strict=True)])
        bases = [p.base for p in parts]
        return cls(np.concatenate([p.intervened for p in parts]),
                   np.concatenate([p.values for p in parts]),
                   np.concatenate([p.found for p in parts]),
                   {k: np.concatenate([np.asarray(p.extras[k]) for p in parts]) for k in keys},
                   cf, cls.concat(bases) if all(b is not None for b in bases) else None)

    @classmethod
    def none(cls, n: int, d: int) -> Recourse:
        return cls(np.zeros((n, d), bool), np.full((n, d), np.nan), np.zeros(n, bool))
