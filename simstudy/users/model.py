"""A declarative description of the simulated people a human-in-the-loop policy talks to.

A :class:`UserModel` says which hidden truth people hold (a ground-truth recourse at a named
scale, or preference weights) and how they answer (noise model, satisfaction threshold). A policy
such as HARE builds the people for the applicants it serves with :meth:`UserModel.build`, keyed
by applicant id, so that every policy compared in a scenario faces the same people.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch

from ..population import ActionabilityProfiles
from .feedback import NoiseModel, SimulatedUsers
from .ground_truth import (
    GROUND_TRUTH_SCALES,
    centred_weights,
    ground_truth_recourse,
    profile_weights,
)

if TYPE_CHECKING:
    # Annotation only: the policies package imports this one (HARE's users).
    from ..policies.space import ScaledSpace

__all__ = ["UserModel", "UserBatch"]


@dataclass
class UserBatch:
    """Simulated people built for one batch of applicants.

    Attributes:
        users: the feedback oracle.
        ground_truth: scaled hidden ground-truth recourses (distance users), else ``None``.
        has_truth: ``(n,)`` bool; false where no ground truth could be generated.
    """

    users: SimulatedUsers
    ground_truth: torch.Tensor | None
    has_truth: torch.Tensor


@dataclass(frozen=True)
class UserModel:
    """How simulated people hold and reveal their preferences.

    Attributes:
        preference: ``ground_truth`` (prefer the recourse nearest a hidden ``r_gt``) or
            ``weights`` (prefer the smaller hidden weighted change).
        scale: ground-truth perturbation norm or a name of
            :data:`~simstudy.users.ground_truth.GROUND_TRUTH_SCALES`.
        weights: ``centres`` (HARE's hidden weights) or ``profile`` (the actionability profile's
            cost weights).
        noise: the answer noise.
        accept_threshold: the hidden loss at or below which a person accepts a recourse.
        n_samples, eta: Growing Spheres settings of the ground-truth search.
    """

    preference: Literal["ground_truth", "weights"] = "ground_truth"
    scale: float | str = "far"
    weights: Literal["centres", "profile"] = "centres"
    noise: NoiseModel = field(default_factory=NoiseModel)
    accept_threshold: float = 0.1
    n_samples: int = 200
    eta: float = 0.05

    @property
    def eps(self) -> float:
        return GROUND_TRUTH_SCALES[self.scale] if isinstance(self.scale, str) else self.scale

    def build(
        self, space: ScaledSpace, x: torch.Tensor, mask: np.ndarray, ids: np.ndarray, seed: int,
        budget: int, feature_names: Sequence[str], profiles: ActionabilityProfiles,
    ) -> UserBatch:
        """The people behind applicants ``ids`` (scaled factuals ``x``)."""
        if self.preference == "ground_truth":
            r_gt, found = ground_truth_recourse(space, x, mask, ids, seed, self.eps,
                                                self.n_samples, self.eta)
            users = SimulatedUsers(ids, x, seed, budget, self.noise, target=r_gt,
                                   accept_threshold=self.accept_threshold)
            return UserBatch(users, r_gt, found)
        if self.weights == "profile":
            w = profile_weights(feature_names, profiles)
        else:
            w = np.where(mask, centred_weights(ids, seed, x.shape[1]), np.inf)
        users = SimulatedUsers(ids, x, seed, budget, self.noise, weights=w,
                               accept_threshold=self.accept_threshold)
        return UserBatch(users, None, torch.zeros(len(ids), dtype=torch.bool))
