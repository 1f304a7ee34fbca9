"""The calibrated 7-point rating model; its home is :mod:`simstudy.people.rating`."""

from ..people.rating import (
    N_CATEGORIES,
    DistanceEffect,
    PersonEffects,
    RatingModel,
    RatingResponse,
    published_model,
)

#: The calibrated model's class under its earlier name.
ResponseModel = RatingResponse

__all__ = ["DistanceEffect", "RatingModel", "PersonEffects", "RatingResponse", "ResponseModel",
           "published_model", "N_CATEGORIES"]
