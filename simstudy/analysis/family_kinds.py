"""The GAMM families as kinds (torch- and scipy-free): ``family: ocat`` in an analysis names a
row of the table of kinds (:mod:`simstudy.core.registry`), whose runtime
(:mod:`simstudy.analysis.families`) is built with the number of rating categories.

Example:
    >>> from simstudy.core.registry import kinds
    >>> kinds("family")
    ['binomial', 'gaussian', 'ocat']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ..core.documents import StrictModel
from ..core.registry import lazy, register

__all__ = ["GaussianFamilyParams", "BinomialFamilyParams", "OrderedCategoricalParams"]


class GaussianFamilyParams(StrictModel):
    """Ratings as interval data: the exact REML engine, unknown scale."""

    kind: Literal["gaussian"] = "gaussian"


class BinomialFamilyParams(StrictModel):
    """0/1 outcomes with the logit link."""

    kind: Literal["binomial"] = "binomial"


class OrderedCategoricalParams(StrictModel):
    """Ordered categories of the rating scale, cumulative logit (Wood, Pya & Säfken 2016)."""

    kind: Literal["ocat"] = "ocat"


def _gaussian() -> Callable:
    from .families import gaussian_family
    return gaussian_family


def _binomial() -> Callable:
    from .families import binomial_family
    return binomial_family


def _ocat() -> Callable:
    from .families import ocat_family
    return ocat_family


register("family", GaussianFamilyParams, lazy(_gaussian))
register("family", BinomialFamilyParams, lazy(_binomial))
register("family", OrderedCategoricalParams, lazy(_ocat))
