"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy
from .growing_spheres import GrowingSpheres, GrowingSpheresSpec
from .hare import HARE, HARESpec
from .wachter import Wachter, WachterSpec

__all__ = [
    "RecourseContext",
    "RecoursePolicy",
    "GrowingSpheres",
    "GrowingSpheresSpec",
    "Wachter",
    "WachterSpec",
    "HARE",
    "HARESpec",
]
