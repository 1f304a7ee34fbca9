"""The GAMM families as kinds (torch- and scipy-free): ``family: ocat`` in an analysis names a
row of the table of kinds (:mod:`simstudy.core.registry`), whose runtime
(:mod:`simstudy.analysis.families`) is built with the number of rating categories.

Example:
    >>> from simstudy.core.registry import kinds
    >>> kinds("family")
    ['binomial', 'gaussian', 'ocat']
"""

from __future__ import annotations

from typing import Literal

from ..core.documents import StrictModel
from ..core.registry import register

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


register("family", GaussianFamilyParams, "simstudy.analysis.families:gaussian_family")
register("family", BinomialFamilyParams, "simstudy.analysis.families:binomial_family")
register("family", OrderedCategoricalParams, "simstudy.analysis.families:ocat_family")
