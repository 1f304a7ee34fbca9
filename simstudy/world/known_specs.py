"""Scenario entries of CARMA's known synthetic worlds, without torch.

One kind per world (``world: {kind: triangle_non_linear, n_samples: 20000}``), all derived from
:class:`KnownWorldSpec`; the world itself is :func:`simstudy.world.known.known_world`. The six
kinds are registered when this module is imported (by :mod:`simstudy.world`).

Example:
    >>> from simstudy.core.registry import entry_model
    >>> spec = entry_model("world", "chain_linear").model_validate({"kind": "chain_linear"})
    >>> spec.n_samples, spec.roles().actionable
    (20000, ('x1', 'x2', 'x3'))
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, create_model

from ..core.documents import StrictModel
from ..core.registry import load_object, register
from ..core.rng import generator
from .base import FeatureRoles
from .known_roles import KNOWN_ROLES
from .specs import SplitShares

__all__ = ["KnownWorldSpec", "KNOWN_WORLD_KINDS"]

#: the kinds registered here, one per synthetic world
KNOWN_WORLD_KINDS: tuple[str, ...] = tuple(KNOWN_ROLES)


class KnownWorldSpec(StrictModel):
    """A known synthetic world of CARMA (its equations: :mod:`simstudy.world.known`): the
    world's sample of ``n_samples`` draws, split into train / validation / deployment.

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for
        causal algorithmic recourse at scale", FAccT 2024,
        https://doi.org/10.1145/3630106.3659003.
    """

    #: the world has a label rule, so the event world may retrain
    labels: ClassVar[bool] = True
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: SplitShares = (0.5, 0.25, 0.25)

    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return KNOWN_ROLES[self.kind]  # type: ignore[attr-defined]

    def feature_names(self) -> tuple[str, ...]:
        return self.roles().names

    def ranking_names(self) -> tuple[str, ...]:
        """The ranking distributions the world names (populations may draw from them)."""
        return tuple(self.roles().rankings)

    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"n_samples": 400}

    def build(self, seed: int, cache: Any = None, base_dir: Any = ".") -> tuple[Any, Any, dict]:
        """``(world, WorldData, info)``: the world and its sampled, split data."""
        world = load_object("simstudy.world.known:known_world")(self.kind)  # type: ignore[attr-defined]
        sample = load_object("simstudy.world.data:sample_world_data")
        data = sample(world, self.n_samples, generator(seed, "world-sample"), self.split)
        return world, data, {"kind": self.kind,  # type: ignore[attr-defined]
                             "data_sha256": data.content_hash()}


def _spec_name(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("_")) + "WorldSpec"


for _kind in KNOWN_WORLD_KINDS:
    _cls = create_model(_spec_name(_kind), __base__=KnownWorldSpec,
                        __module__=__name__, kind=(Literal[_kind], ...))
    _cls.__doc__ = f"The ``{_kind}`` world. " + (KnownWorldSpec.__doc__ or "")
    globals()[_cls.__name__] = register("world", _cls)  # module-level: documents pickle
    __all__.append(_cls.__name__)
del _kind, _cls
