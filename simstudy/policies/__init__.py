"""Recourse policies behind one small batched interface.

The scenario entries (:mod:`simstudy.policies.specs`, torch-free) are registered on import;
the runtime policies, which import torch, load when first used.
"""

from ..core.lazy import lazy_exports
from . import specs as _specs  # noqa: F401 - registers the built-in policy kinds
from .icarma import spec as _icarma_spec  # noqa: F401 - registers iCARMA

_EXPORTS = {
    "RecourseContext": "base",
    "RecoursePolicy": "base",
    "UniversalPolicy": "base",
    "PolicySpec": "specs",
    "CausalOracle": "oracle",
    "OracleSpec": "specs",
    "GrowingSpheres": "growing_spheres",
    "GrowingSpheresSpec": "specs",
    "Wachter": "wachter",
    "WachterSpec": "specs",
    "HARE": "hare",
    "HARESpec": "specs",
    "ICARMA": "icarma",
    "ICARMAConfig": "icarma",
    "ICARMASpec": "icarma",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
