"""Recourse policies behind one small batched interface."""

from .base import PolicySpec, RecourseContext, RecoursePolicy, UniversalPolicy
from .growing_spheres import GrowingSpheres, GrowingSpheresSpec
from .hare import HARE, HARESpec
from .icarma import ICARMA, ICARMAConfig, ICARMASpec
from .oracle import CausalOracle, OracleSpec
from .wachter import Wachter, WachterSpec

__all__ = [
    "RecourseContext",
    "RecoursePolicy",
    "PolicySpec",
    "UniversalPolicy",
    "CausalOracle",
    "OracleSpec",
    "GrowingSpheres",
    "GrowingSpheresSpec",
    "Wachter",
    "WachterSpec",
    "HARE",
    "HARESpec",
    "ICARMA",
    "ICARMAConfig",
    "ICARMASpec",
]
