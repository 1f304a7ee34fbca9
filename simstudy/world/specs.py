"""Scenario entries for the built-in worlds."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from ..documents import StrictModel
from ..registry import register_world_spec
from ..rng import generator
from .data import SplitShares, WorldData, sample_world_data
from .loan import LOAN_ROLES, LoanSCM

__all__ = ["LoanWorldSpec"]


@register_world_spec
class LoanWorldSpec(StrictModel):
    """The Loan SCM: ``n_samples`` draws split into train / validation / deployment."""

    kind: Literal["loan"]
    #: the world has a label rule (``label(x, generator)``), so the event world may retrain
    labels: ClassVar[bool] = True
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: SplitShares = (0.5, 0.25, 0.25)
    stochastic_label: bool = False

    def feature_names(self) -> tuple[str, ...]:
        return LOAN_ROLES.names

    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "loan", "n_samples": 400}

    def build(self, seed: int, cache: Any = None, base_dir: Any = ".",
              ) -> tuple[LoanSCM, WorldData, dict]:
        world = LoanSCM(self.stochastic_label)
        data = sample_world_data(world, self.n_samples, generator(seed, "world-sample"),
                                 self.split)
        return world, data, {"kind": "loan", "data_sha256": data.content_hash()}
