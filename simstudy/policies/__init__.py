"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy
from .growing_spheres import GrowingSpheres, GrowingSpheresSpec
from .oracle import CausalOracle, OracleSpec
from .wachter import Wachter, WachterSpec

# HARE last: its base may be any generator registered above
from .hare import HARE, HARESpec  # noqa: E402, I001

__all__ = [
    "RecourseContext",
    "RecoursePolicy",
    "CausalOracle",
    "OracleSpec",
    "GrowingSpheres",
    "GrowingSpheresSpec",
    "Wachter",
    "WachterSpec",
    "HARE",
    "HARESpec",
]
