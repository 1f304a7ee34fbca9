"""The built-in response kinds, each one declaration: its parameters model (torch- and
scipy-free, :mod:`simstudy.people.response_params`) and its runtime, imported when an entry is
first built (:class:`~simstudy.people.response.LogisticResponse`,
:class:`~simstudy.people.rating.RatingResponse`).

Named by the entry-point group ``simstudy.kinds`` (``pyproject.toml``), as a plugin's kinds are;
apart from the parameters models for the reason :mod:`simstudy.core.registry` gives.

Example:
    >>> from simstudy.core.registry import runtime_of
    >>> runtime_of("response", "rating").__name__
    'RatingResponse'
"""

from __future__ import annotations

from ..core.registry import lazy, register
from .response_params import LogisticResponseParams, RatingResponseParams

__all__: list[str] = []


def _logistic() -> type:
    from .response import LogisticResponse
    return LogisticResponse


def _rating() -> type:
    from .rating import RatingResponse
    return RatingResponse


register("response", LogisticResponseParams, lazy(_logistic))
register("response", RatingResponseParams, lazy(_rating))
