"""The built-in world kinds and decision-model readers, each one declaration: its parameters
model (torch-free: :mod:`simstudy.world.specs`, :mod:`simstudy.world.known_specs`,
:mod:`simstudy.world.german_credit`), which carries its roles and its example, and its runtime
(the builder of the world and its data, or the reader of a model file), imported when an entry
is first built.

Named by the entry-point group ``simstudy.kinds`` (``pyproject.toml``), as a plugin's kinds are;
apart from the parameters models for the reason :mod:`simstudy.core.registry` gives.

Example:
    >>> from simstudy.core.registry import runtime_of
    >>> runtime_of("world", "loan").__name__
    'build_loan_world'
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.registry import lazy, register
from .german_credit import GermanCreditWorldSpec
from .known_specs import KnownWorldSpec
from .specs import CausalFlowWorldSpec, ExternalModelSpec, LoanWorldSpec

__all__: list[str] = []


def _loan() -> Callable:
    from .loan import build_loan_world
    return build_loan_world


def _causal_flow() -> Callable:
    from .learned import build_flow_world
    return build_flow_world


def _german_credit() -> Callable:
    from .learned import build_german_credit_world
    return build_german_credit_world


def _known() -> Callable:
    from .known import build_known_world
    return build_known_world


def _model_file() -> Callable:
    from .external import load_external_model
    return load_external_model


register("world", LoanWorldSpec, lazy(_loan))
register("world", CausalFlowWorldSpec, lazy(_causal_flow))
register("world", GermanCreditWorldSpec, lazy(_german_credit))
register("world", KnownWorldSpec, lazy(_known))
register("model", ExternalModelSpec, lazy(_model_file))
