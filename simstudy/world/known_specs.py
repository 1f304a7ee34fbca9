"""Scenario entry of CARMA's known synthetic worlds, without torch.

One parameters model, :class:`KnownWorldSpec`, whose ``kind`` names the world
(``world: {kind: triangle_non_linear, n_samples: 20000}``); it is registered under each of the
six names, all built by :func:`simstudy.world.known.build_known_world` (the equations:
:mod:`simstudy.world.known`).

Example:
    >>> from simstudy.core.registry import entry_model
    >>> spec = entry_model("world", "chain_linear").model_validate({"kind": "chain_linear"})
    >>> spec.n_samples, spec.roles().actionable
    (20000, ('x1', 'x2', 'x3'))
"""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

from pydantic import Field

from .base import FeatureRoles
from .known_roles import KNOWN_ROLES
from .specs import SplitShares, WorldParams

__all__ = ["KnownWorldSpec", "KnownWorldKind", "KNOWN_WORLD_KINDS"]

#: the names of the synthetic worlds: a graph (chain, collider, triangle) and a form
KnownWorldKind = Literal["chain_linear", "chain_non_linear", "collider_linear",
                         "collider_non_linear", "triangle_linear", "triangle_non_linear"]
#: the kinds registered here, one per synthetic world
KNOWN_WORLD_KINDS: tuple[str, ...] = get_args(KnownWorldKind)


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

    kind: KnownWorldKind
    labels: ClassVar[bool] = True
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: SplitShares = (0.5, 0.25, 0.25)

    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return KNOWN_ROLES[self.kind]

    def feature_names(self) -> tuple[str, ...]:
        return self.roles().names


    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"n_samples": 400}
