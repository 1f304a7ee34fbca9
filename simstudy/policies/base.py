"""The recourse-policy interface.

Policies follow scikit-learn's estimator contract: the constructor only stores arguments,
:meth:`RecoursePolicy.fit` learns from a :class:`RecourseContext` (the world, the decision model
and the training data) and stores learned attributes with a trailing underscore, and
:meth:`RecoursePolicy.recommend` answers a whole batch of applicants at once. Randomness is
passed in explicitly as a seed; per-applicant draws are keyed by applicant id
(:func:`simstudy.rng.entity_uniforms`) so answers do not depend on batching.

Every policy must respect individual hard constraints: it may only intervene on features the
person can act on (``profiles.actionable``).

A policy that asks the people it serves questions (HARE) receives a
:class:`~simstudy.primitives.feedback.Feedback` from the caller; the others ignore it. Policies
never see a person's hidden truth.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch

from ..population import ActionabilityProfiles
from ..primitives.feedback import Feedback
from ..primitives.recourse import Recourse
from ..world.base import CausalWorld
from ..world.data import WorldData

__all__ = ["RecourseContext", "RecoursePolicy"]


@dataclass
class RecourseContext:
    """What a policy may know: the world (true SCM or learned flow), the decision model, data.

    Attributes:
        world: the causal world used for counterfactuals (and densities).
        model: the decision model (approval logit).
        data: the world's data splits; the training split defines the feasible range.
        seed: the replication's seed, for policies that train.
    """

    world: CausalWorld
    model: torch.nn.Module
    data: WorldData
    seed: int = 0

    @property
    def lower(self) -> np.ndarray:
        return self.data.lower.numpy()

    @property
    def upper(self) -> np.ndarray:
        return self.data.upper.numpy()

    @property
    def feature_range(self) -> np.ndarray:
        return self.data.feature_range.numpy()

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.world.roles.names


class RecoursePolicy(ABC):
    """Base class of recourse generators."""

    #: short name used in results tables
    kind: str = "policy"

    def fit(self, context: RecourseContext) -> RecoursePolicy:
        """Learns what the policy needs; the default only remembers the context."""
        self.context_ = context
        return self

    #: whether :meth:`recommend` asks the people questions (needs ``feedback``)
    asks_questions: bool = False

    @abstractmethod
    def recommend(
        self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray, seed: int = 0,
        feedback: Feedback | None = None,
    ) -> Recourse:
        """Recourse for every row of ``x`` (shape ``(n, d)``) given each person's profile.

        Args:
            x: the people's current features.
            profiles: the actionability they report.
            ids: their person ids (keys of every per-person draw).
            seed: the policy's stream.
            feedback: answers of these people, for policies that ask questions.
        """

    def model_hashes(self) -> dict[str, str]:
        """Content hashes of trained models, recorded in the run manifest."""
        return {}
