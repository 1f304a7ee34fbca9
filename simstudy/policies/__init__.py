"""Recourse policies behind one small batched interface.

The scenario entries (:mod:`simstudy.policies.params`, torch-free) are declared as kinds in
:mod:`simstudy.policies.kinds`; the runtime policies, which import torch, load when first used.
"""

from ..core.lazy import lazy_exports

_EXPORTS = {
    "RecourseContext": "base",
    "RecoursePolicy": "base",
    "UniversalPolicy": "base",
    "PolicyParams": "params",
    "CausalOracle": "oracle",
    "OracleParams": "params",
    "GrowingSpheres": "growing_spheres",
    "GrowingSpheresParams": "params",
    "Wachter": "wachter",
    "WachterParams": "params",
    "HARE": "hare",
    "HAREParams": "params",
    "ICARMA": "icarma",
    "ICARMAConfig": "icarma",
    "ICARMAParams": "icarma",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
