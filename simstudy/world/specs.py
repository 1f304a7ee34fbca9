"""Scenario entries for the built-in worlds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ..documents import StrictModel
from ..registry import register_world_spec
from ..rng import generator
from .data import WorldData, sample_world_data
from .loan import LoanSCM

__all__ = ["LoanWorldSpec"]


@register_world_spec
class LoanWorldSpec(StrictModel):
    """The Loan SCM: ``n_samples`` draws split into train / validation / deployment."""

    kind: Literal["loan"]
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: tuple[float, float, float] = (0.5, 0.25, 0.25)
    stochastic_label: bool = False

    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "loan", "n_samples": 400}

    @field_validator("split")
    @classmethod
    def _shares(cls, v: tuple[float, float, float]) -> tuple[float, float, float]:
        if min(v) <= 0 or abs(sum(v) - 1.0) > 1e-9:
            raise ValueError("split must be three positive shares summing to 1")
        return v

    def build(self, seed: int, cache: Any = None, base_dir: Any = ".",
              ) -> tuple[LoanSCM, WorldData, dict]:
        world = LoanSCM(self.stochastic_label)
        data = sample_world_data(world, self.n_samples, generator(seed, "world-sample"),
                                 self.split)
        return world, data, {"kind": "loan", "data_sha256": data.content_hash()}
