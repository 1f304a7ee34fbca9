"""The causal-world protocol shared by known SCMs and learned causal flows.

A world is a bijection between exogenous noise ``u`` and features ``x`` that respects a causal
graph, plus the exact density of ``x``. Every method is batched over rows of a ``(n, d)`` torch
tensor, so policies and metrics run on whole populations at once.

Counterfactuals follow Pearl's three steps (abduction, action, prediction): abduct ``u`` from the
factual ``x``, replace the equations of the intervened features by constants, and recompute every
other feature from the same ``u`` in causal order. Each row may intervene on a different set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # torch is imported where a world computes; documents validate without it
    import torch

__all__ = ["FeatureRoles", "CausalWorld", "causal_order_check", "LEVEL_SCALES"]

#: How the codes of a coded feature are measured (:attr:`FeatureRoles.scales`).
LEVEL_SCALES = ("ordinal", "categorical")


@dataclass(frozen=True)
class FeatureRoles:
    """Names and roles of a world's features, in causal order.

    Attributes:
        names: every feature, in causal (topological) order.
        immutable: features nobody can change (for example gender, age).
        actionable: globally actionable features (some people may still be unable to act on them).
        sensitive: features used to define groups in audits (the first also stratifies a
            population's stylized attribute, see :func:`simstudy.people.population.assign_groups`).
        parents: for every feature, the names of its causal parents.
        rankings: the world's named ranking distributions over its actionable features: the
            two features each one ranks on top (``uniform`` needs no entry; see
            :func:`simstudy.people.population.permutation_distribution`).
        income: the income-like feature that a population's ``income`` group rule ranks on
            (``None``: the world has none; a population document may name one).
        codebook: readable labels of coded values, ``{feature: {code: label}}`` (audits and
            reports name groups with them). A globally actionable feature with a codebook has
            levels: its codes are the only values a recourse may set it to
            (:attr:`levels`, :mod:`simstudy.primitives.levels`).
        reference_levels: the reference (conventionally advantaged) level of a coded feature;
            audit gaps are ``focal - reference``.
        scales: how the codes of a coded feature are measured, ``ordinal`` (the codes are
            ordered: a change counts ``|delta code| / range``) or ``categorical`` (unordered:
            any change of category counts one unit); a coded feature not named is ordinal
            (:func:`simstudy.metrics.normalized_change`).

    Example:
        >>> from simstudy.world import FeatureRoles
        >>> roles = FeatureRoles(names=("a", "b"), immutable=(), actionable=("a", "b"),
        ...                      sensitive=(), parents={"a": (), "b": ("a",)})
        >>> roles.dim, roles.index("b"), roles.descendants("a")
        (2, 1, {'b'})
    """

    names: tuple[str, ...]
    immutable: tuple[str, ...]
    actionable: tuple[str, ...]
    sensitive: tuple[str, ...]
    parents: dict[str, tuple[str, ...]]
    rankings: dict[str, tuple[str, str]] = field(default_factory=dict)
    income: str | None = None
    codebook: dict[str, dict[int, str]] = field(default_factory=dict)
    reference_levels: dict[str, int] = field(default_factory=dict)
    scales: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for feature, scale in self.scales.items():
            if scale not in LEVEL_SCALES:
                raise ValueError(f"scale of {feature!r} must be one of {LEVEL_SCALES}, not "
                                 f"{scale!r}")
            if feature not in self.codebook:
                raise ValueError(f"{feature!r} has a scale but no codebook: only coded "
                                 "features are ordinal or categorical")

    @property
    def dim(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)

    @property
    def actionable_index(self) -> list[int]:
        return [self.names.index(n) for n in self.actionable]

    @property
    def levels(self) -> dict[str, tuple[float, ...]]:
        """``{feature: ascending codes}`` of the globally actionable features with levels."""
        return {f: tuple(float(c) for c in sorted(self.codebook[f]))
                for f in self.actionable if f in self.codebook}

    @property
    def categorical(self) -> tuple[str, ...]:
        """The coded features whose codes name unordered categories (:attr:`scales`)."""
        return tuple(f for f in self.names if self.scales.get(f) == "categorical")

    def categorical_mask(self, names=None) -> np.ndarray:
        """``(len(names),)`` bool: which of ``names`` (default: every feature) are
        categorical."""
        return np.array([f in self.categorical for f in (self.names if names is None
                                                         else names)], dtype=bool)

    def adjacency(self) -> npt.NDArray[np.bool_]:
        """Boolean ``(d, d)`` matrix with ``A[i, j]`` true when feature j is a parent of i
        (a NumPy array: the roles are read without torch)."""
        d = self.dim
        adj = np.zeros((d, d), dtype=bool)
        for i, name in enumerate(self.names):
            for parent in self.parents.get(name, ()):
                adj[i, self.names.index(parent)] = True
        return adj

    def descendants(self, name: str) -> set[str]:
        """Every feature reachable from ``name`` along causal edges."""
        children: dict[str, list[str]] = {n: [] for n in self.names}
        for child, parents in self.parents.items():
            for p in parents:
                children[p].append(child)
        seen: set[str] = set()
        stack = list(children[name])
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(children[node])
        return seen


@runtime_checkable
class CausalWorld(Protocol):
    """What every world (known SCM or learned flow) provides.

    Example:
        >>> import torch
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import CausalWorld, LoanSCM
        >>> world: CausalWorld = LoanSCM()
        >>> x = world.sample(3, generator(0, "example"))
        >>> bool(torch.allclose(world.predict(world.abduct(x)), x))
        True
    """

    roles: FeatureRoles

    def sample(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        """Draws ``n`` feature rows from the observational distribution (float64)."""
        ...

    def abduct(self, x: torch.Tensor) -> torch.Tensor:
        """Exogenous noise ``u`` that produces ``x``."""
        ...

    def predict(self, u: torch.Tensor) -> torch.Tensor:
        """Features produced by noise ``u`` (the inverse of :meth:`abduct`)."""
        ...

    def counterfactual(
        self, x: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        """Counterfactual of ``x`` under ``do(X_I := values_I)`` with per-row sets ``I``.

        Args:
            x: factual features, ``(n, d)``.
            intervened: boolean ``(n, d)``; true where the row intervenes on the feature.
            values: ``(n, d)`` intervention values (ignored where ``intervened`` is false).

        Differentiable with respect to ``values`` (the amortized solvers train through it).
        """
        ...

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Log-density of each row of ``x`` under the observational distribution, ``(n,)``."""
        ...


def causal_order_check(roles: FeatureRoles) -> None:
    """Raises ``ValueError`` unless every parent precedes its child in ``roles.names``.

    Example:
        >>> from simstudy.world import FeatureRoles, causal_order_check
        >>> roles = FeatureRoles(names=("b", "a"), immutable=(), actionable=("a", "b"),
        ...                      sensitive=(), parents={"a": (), "b": ("a",)})
        >>> try:
        ...     causal_order_check(roles)
        ... except ValueError as error:
        ...     print("refused")
        refused
    """
    position = {n: i for i, n in enumerate(roles.names)}
    for child, parents in roles.parents.items():
        for p in parents:
            if position[p] >= position[child]:
                raise ValueError(f"parent {p!r} of {child!r} does not precede it in causal order")
