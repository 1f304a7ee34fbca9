"""The built-in policy kinds, each one declaration: its parameters model (torch-free,
:mod:`simstudy.policies.params`, :mod:`simstudy.policies.icarma.spec`; its example is the
model's ``check_example()``) and its runtime, imported when an entry is first built.

Named by the entry-point group ``simstudy.kinds`` (``pyproject.toml``), as a plugin's kinds are;
apart from the parameters models for the reason :mod:`simstudy.core.registry` gives.

Example:
    >>> from simstudy.core.registry import runtime_of
    >>> runtime_of("policy", "wachter").__name__
    'Wachter'
"""

from __future__ import annotations

from ..core.registry import lazy, register
from .icarma.spec import ICARMAParams
from .params import GrowingSpheresParams, HAREParams, OracleParams, WachterParams

__all__: list[str] = []


def _wachter() -> type:
    from .wachter import Wachter
    return Wachter


def _growing_spheres() -> type:
    from .growing_spheres import GrowingSpheres
    return GrowingSpheres


def _oracle() -> type:
    from .oracle import CausalOracle
    return CausalOracle


def _hare() -> type:
    from .hare import HARE
    return HARE


def _icarma() -> type:
    from .icarma.policy import ICARMA
    return ICARMA


register("policy", WachterParams, lazy(_wachter))
register("policy", GrowingSpheresParams, lazy(_growing_spheres))
register("policy", OracleParams, lazy(_oracle))
register("policy", HAREParams, lazy(_hare))
register("policy", ICARMAParams, lazy(_icarma))
