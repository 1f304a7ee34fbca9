"""CARMA's known synthetic worlds, each one declaration (torch-free): its graph, its structural
equations, its roles and levels, checked to agree when declared; and the scenario entry.

Every synthetic world has a binary sensitive attribute ``sex`` and three actionable features;
``s`` is the logistic sigmoid and ``u1`` the noise of ``x1``. Exogenous noise::

    U_sex ~ Bernoulli(0.5)
    U_1   ~ 0.5 N(-2, 1.5) + 0.5 N(1.5, 1)          (variances)
    U_2   ~ N(0, 1)    (N(0, 0.1) in collider and triangle non-linear)
    U_3   ~ N(0, 1)

Equations (``sex = U_sex``; label ``Y = 1[s(score) >= 0.5]``)::

    chain, linear:        x1 = sex + U_1
                          x2 = sex + 0.5 x1 + U_2
                          x3 = 0.25 sex + 0.5 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    chain, non-linear:    x1 = sex + U_1
                          x2 = sex + 3 s(2 x1) + U_2
                          x3 = 0.25 sex + x2^2 + U_3
                          score = x1^3 + x2 + 0.75 exp(x3) + 0.5 u1 - 50
    collider, linear:     x1 = sex + U_1
                          x2 = 0.5 sex + U_2
                          x3 = 0.05 sex + 0.25 x1 + 0.25 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    collider, non-linear: x1 = 0.5 sex + U_1
                          x2 = 0.5 sex + U_2
                          x3 = 0.25 sex + 0.25 x1^2 + 0.25 x2^2 + U_3
                          score = x1^3 + x2 + 3 x3 + 0.5 u1
    triangle, linear:     x1 = sex + U_1
                          x2 = x1 + U_2
                          x3 = sex + 0.25 x1 + 0.5 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    triangle, non-linear: x1 = sex + U_1
                          x2 = -1 + 3 s(2 x1) + U_2
                          x3 = sex + 0.25 x1^2 + 0.5 x2 + U_3
                          score = -1 + 2^x1 + 0.75 x2^-3 + 0.1 x3^2 + 0.5 u1

The label's noise term is the noise of ``x1``, as CARMA draws it (its data generator passes the
second exogenous column to the label equation); since ``u1`` is abducted exactly from ``x``,
the label is a deterministic function of the features.

Each world is a :class:`KnownWorld` in :data:`KNOWN_WORLDS`: the parents of each feature (the
graph), one equation mean per feature whose arguments are the feature's parents by name, the
label score, and the noise of ``x2``. A world whose graph and equations disagree (a feature
without an equation, an equation of a feature the graph lacks, arguments other than its
parents) is refused where it is declared. The equations compute with tensor methods only
(``z.sigmoid()``, ``x.exp()``), so this module reads without torch; the runtime
(:mod:`simstudy.world.known`) adds the noise distributions and builds the world.

One parameters model, :class:`KnownWorldSpec`, whose ``kind`` names the world
(``world: {kind: triangle_non_linear, n_samples: 20000}``), is registered under each name.

References:
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003
    (equations and noise: public repository ``ayanmaj92/carma-recourse``,
    ``causal_flows/causal_nf/sem_equations`` and ``preparators/scm/_base_distributions.py``).

Example:
    >>> from simstudy.core.registry import entry_model
    >>> spec = entry_model("world", "chain_linear").model_validate({"kind": "chain_linear"})
    >>> spec.n_samples, spec.roles().actionable
    (20000, ('x1', 'x2', 'x3'))
    >>> KNOWN_ROLES["collider_linear"].parents["x3"]
    ('sex', 'x1', 'x2')
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field

from .base import FeatureRoles, causal_order_check
from .specs import SplitShares, WorldParams

__all__ = ["KnownWorld", "KNOWN_WORLDS", "KNOWN_ROLES", "KNOWN_WORLD_KINDS", "KnownWorldKind",
           "KnownWorldSpec"]

#: the parents of each feature in each graph
_CHAIN = {"sex": (), "x1": ("sex",), "x2": ("sex", "x1"), "x3": ("sex", "x2")}
_COLLIDER = {"sex": (), "x1": ("sex",), "x2": ("sex",), "x3": ("sex", "x1", "x2")}
_TRIANGLE = {"sex": (), "x1": ("sex",), "x2": ("x1",), "x3": ("sex", "x1", "x2")}


@dataclass(frozen=True)
class KnownWorld:
    """One known synthetic world: graph, equations, roles and levels, in agreement.

    Attributes:
        name: the world's kind (``chain_linear``, ...).
        graph: the parents of each feature, in causal order.
        means: one equation mean per feature of the graph, ``x = mean(*parents) + u``; its
            arguments are named as the parents.
        label_score: ``s(x, u)`` from the feature and noise columns (``{name: column}``); the
            label is ``1[sigmoid(s) >= 0.5]``.
        x2_sd: the standard deviation of the noise of ``x2``.
        roles: the feature roles (derived from the graph; the levels of ``sex``).

    Example:
        >>> KnownWorld("one", {"sex": (), "x1": ("sex",)},
        ...            {"sex": lambda: 0.0}, lambda x, u: x["x1"])
        Traceback (most recent call last):
        ...
        ValueError: known world 'one': the features ['x1'] have no equation
    """

    name: str
    graph: Mapping[str, tuple[str, ...]]
    means: Mapping[str, Callable[..., Any]]
    label_score: Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
    x2_sd: float = 1.0
    roles: FeatureRoles = field(init=False)

    def __post_init__(self) -> None:
        lacking = [f for f in self.graph if f not in self.means]
        if lacking:
            raise ValueError(f"known world {self.name!r}: the features {lacking} have no "
                             "equation")
        extra = [f for f in self.means if f not in self.graph]
        if extra:
            raise ValueError(f"known world {self.name!r}: equations of {extra}, which the "
                             "graph lacks")
        for feature, mean in self.means.items():
            arguments = tuple(inspect.signature(mean).parameters)
            if arguments != tuple(self.graph[feature]):
                raise ValueError(f"known world {self.name!r}: the equation of {feature!r} "
                                 f"takes {arguments}, its parents are {self.graph[feature]}")
        names = tuple(self.graph)
        roles = FeatureRoles(
            names=names,
            immutable=("sex",),
            actionable=tuple(n for n in names if n != "sex"),
            sensitive=("sex",),
            parents={f: tuple(p) for f, p in self.graph.items()},
            rankings={"causal_order": ("x1", "x2"), "reverse_causal_order": ("x3", "x2")},
            # ``sex`` raises x1 (directly or through the graph), and x1 raises the label's
            # score: 1 is the advantaged level, the reference of audit gaps.
            codebook={"sex": {0: "sex 0", 1: "sex 1"}},
            reference_levels={"sex": 1},
        )
        causal_order_check(roles)
        object.__setattr__(self, "roles", roles)


def _sex() -> float:
    return 0.0


def _s(z: Any) -> Any:
    return z.sigmoid()


_NARROW = math.sqrt(0.1)


def _linear_score(x, u):
    return x["x1"] + 0.5 * x["x2"] + x["x3"] + 0.5 * u["x1"]


#: every known synthetic world, by kind
KNOWN_WORLDS: dict[str, KnownWorld] = {w.name: w for w in (
    KnownWorld("chain_linear", _CHAIN, {
        "sex": _sex,
        "x1": lambda sex: sex,
        "x2": lambda sex, x1: sex + 0.5 * x1,
        "x3": lambda sex, x2: 0.25 * sex + 0.5 * x2}, _linear_score),
    KnownWorld("chain_non_linear", _CHAIN, {
        "sex": _sex,
        "x1": lambda sex: sex,
        "x2": lambda sex, x1: sex + 3 * _s(2 * x1),
        "x3": lambda sex, x2: 0.25 * sex + x2**2},
        lambda x, u: x["x1"]**3 + x["x2"] + 0.75 * x["x3"].exp() + 0.5 * u["x1"] - 50),
    KnownWorld("collider_linear", _COLLIDER, {
        "sex": _sex,
        "x1": lambda sex: sex,
        "x2": lambda sex: 0.5 * sex,
        "x3": lambda sex, x1, x2: 0.05 * sex + 0.25 * x1 + 0.25 * x2}, _linear_score),
    KnownWorld("collider_non_linear", _COLLIDER, {
        "sex": _sex,
        "x1": lambda sex: 0.5 * sex,
        "x2": lambda sex: 0.5 * sex,
        "x3": lambda sex, x1, x2: 0.25 * sex + 0.25 * x1**2 + 0.25 * x2**2},
        lambda x, u: x["x1"]**3 + x["x2"] + 3 * x["x3"] + 0.5 * u["x1"], x2_sd=_NARROW),
    KnownWorld("triangle_linear", _TRIANGLE, {
        "sex": _sex,
        "x1": lambda sex: sex,
        "x2": lambda x1: x1,
        "x3": lambda sex, x1, x2: sex + 0.25 * x1 + 0.5 * x2}, _linear_score),
    KnownWorld("triangle_non_linear", _TRIANGLE, {
        "sex": _sex,
        "x1": lambda sex: sex,
        "x2": lambda x1: -1 + 3 * _s(2 * x1),
        "x3": lambda sex, x1, x2: sex + 0.25 * x1**2 + 0.5 * x2},
        lambda x, u: (-1 + 2**x["x1"] + 0.75 * x["x2"]**-3 + 0.1 * x["x3"]**2
                      + 0.5 * u["x1"]), x2_sd=_NARROW),
)}
#: ``{kind: roles}`` of every known synthetic world
KNOWN_ROLES: dict[str, FeatureRoles] = {name: w.roles for name, w in KNOWN_WORLDS.items()}
#: the kinds registered for the known worlds, one per world
KNOWN_WORLD_KINDS: tuple[str, ...] = tuple(KNOWN_WORLDS)
KnownWorldKind = Literal[KNOWN_WORLD_KINDS]  # type: ignore[valid-type]


class KnownWorldSpec(WorldParams):
    """A known synthetic world of CARMA (its equations: :mod:`simstudy.world.known`): the
    world's sample of ``n_samples`` draws, split into train / validation / deployment.

    Attributes:
        kind: the world (see :data:`KNOWN_WORLD_KINDS`).
        n_samples: draws from the world.
        split: train / validation / deployment shares of the draws.

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for
        causal algorithmic recourse at scale", FAccT 2024,
        https://doi.org/10.1145/3630106.3659003.

    Example:
        >>> from simstudy.world.known_specs import KnownWorldSpec
        >>> KnownWorldSpec(kind="collider_linear", n_samples=500).roles().parents["x3"]
        ('sex', 'x1', 'x2')
    """

    kind: KnownWorldKind  # type: ignore[valid-type]
    labels: ClassVar[bool] = True
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: SplitShares = (0.5, 0.25, 0.25)

    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return KNOWN_WORLDS[self.kind].roles

    def feature_names(self) -> tuple[str, ...]:
        return self.roles().names

    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"n_samples": 400}
