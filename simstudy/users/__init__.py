"""Simulated people: hidden ground truth or preference weights, and noisy feedback."""

from .feedback import NoiseModel, SimulatedUsers
from .ground_truth import (
    GROUND_TRUTH_SCALES,
    WEIGHT_CENTRES,
    centred_weights,
    ground_truth_recourse,
    profile_weights,
)
from .metrics import (
    constraint_violations,
    ground_truth_dissimilarity,
    ground_truth_proximity,
    redundancy,
)
from .model import UserBatch, UserModel

__all__ = [
    "UserBatch",
    "UserModel",
    "NoiseModel",
    "SimulatedUsers",
    "GROUND_TRUTH_SCALES",
    "WEIGHT_CENTRES",
    "centred_weights",
    "ground_truth_recourse",
    "profile_weights",
    "constraint_violations",
    "ground_truth_dissimilarity",
    "ground_truth_proximity",
    "redundancy",
]
