"""The recourse-policy interface.

Policies follow scikit-learn's estimator contract: the constructor only stores its parameters
(one parameters model, :mod:`simstudy.policies.params`, kept as ``params``),
:meth:`RecoursePolicy.fit` learns from a :class:`RecourseContext` (the world, the decision model
and the training data) and stores learned attributes with a trailing underscore, and
:meth:`RecoursePolicy.recommend` answers a whole batch of applicants at once. Randomness is
passed in explicitly as a seed; per-applicant draws are keyed by applicant id
(:func:`simstudy.core.rng.entity_uniforms`) so answers do not depend on batching.

Every policy must respect individual hard constraints: it may only intervene on features the
person can act on (``profiles.actionable``).

A policy that asks the people it serves questions (HARE) receives a
:class:`~simstudy.primitives.feedback.Feedback` from the caller; the others ignore it. Policies
never see a person's hidden truth.

Every policy's parameters model derives from :class:`~simstudy.policies.params.PolicyParams`,
which gives it a ``name`` and the switch ``personalized``: with ``personalized: false`` the
policy is wrapped in :class:`UniversalPolicy` and never sees individual profiles, so
"personalized versus universal recourse" is one line in a scenario.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import BaseModel

from ..core.registry import build
from ..primitives.feedback import Feedback
from ..primitives.profiles import ActionabilityProfiles, CostProfile
from ..primitives.recourse import Recourse
from ..world.base import CausalWorld
from ..world.data import WorldData
from ..world.decision import ModelCache

__all__ = ["RecourseContext", "RecoursePolicy", "UniversalPolicy", "policy_to_run"]


@dataclass
class RecourseContext:
    """What a policy may know: the world (true SCM or learned flow), the decision model, data.

    Attributes:
        world: the causal world used for counterfactuals (and densities).
        model: the decision model (approval logit).
        data: the world's data splits; the training split defines the feasible range.
        seed: the replication's seed, for policies that train.
        cache: the run's model cache, where policies that train store their models (``None``:
            the default cache folder).
        cost: the cost profile of the population served (how scores become weights); policies
            that train for a profile (iCARMA) read its ``alpha`` and ``placement`` here.

    Example:
        >>> from simstudy.policies import RecourseContext
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import LoanSCM, sample_world_data
        >>> from simstudy.world.decision import DecisionConfig, train_decision_model
        >>> data = sample_world_data(LoanSCM(), 400, generator(0, "example"))
        >>> model = train_decision_model(data, DecisionConfig(epochs=5))
        >>> context = RecourseContext(LoanSCM(), model, data)
        >>> context.feature_names[:3], bool((context.upper > context.lower).all())
        (('gender', 'age', 'education'), True)
    """

    world: CausalWorld
    model: torch.nn.Module
    data: WorldData
    seed: int = 0
    cache: ModelCache | None = None
    cost: CostProfile = field(default_factory=CostProfile)

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
    """Base class of recourse generators.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> from simstudy.policies import RecoursePolicy
        >>> from simstudy.primitives import Recourse
        >>> class NoRecourse(RecoursePolicy):
        ...     kind = "none"
        ...     def recommend(self, x, profiles, ids, seed=0, feedback=None):
        ...         return Recourse.none(*x.shape)
        >>> NoRecourse().fit(context).recommend(x, profiles, ids).found.tolist()
        [False, False, False]
    """

    #: short name used in results tables
    kind: str = "policy"
    #: the parameters model the policy takes (``None``: a policy without parameters)
    Params: ClassVar[type[BaseModel] | None] = None

    def __init__(self, params: BaseModel | None = None, /, **values: Any) -> None:
        """``params``: the policy's parameters model, or ``None`` to make one from ``values``
        (validated as a document entry would be)."""
        if self.Params is None:
            if params is not None or values:
                raise TypeError(f"{type(self).__name__} takes no parameters")
            return
        if params is None:
            params = self.Params.model_validate({"kind": self.Params.model_fields[
                "kind"].default, **values})
        elif values:
            raise TypeError("give the parameters model or keyword values, not both")
        self.params = params

    def fit(self, context: RecourseContext) -> RecoursePolicy:
        """Learns what the policy needs; the default only remembers the context."""
        self.context_ = context
        return self

    #: whether :meth:`recommend` asks the people questions (needs ``feedback``)
    asks_questions: bool = False
    #: whether each person's arithmetic depends only on their own row and its place in a
    #: batch of a given size (tensors over all rows, masks, no gathering of some rows), so
    #: that a person's bits in a batch of fixed shape do not depend on the other rows
    #: (:mod:`simstudy.live.slots` batches only such policies)
    row_local: bool = False

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

    def to_run(self) -> RecoursePolicy:
        """The policy to run: this one, made universal (:class:`UniversalPolicy`) when its
        parameters say ``personalized: false``."""
        personalized = getattr(getattr(self, "params", None), "personalized", True)
        return self if personalized else UniversalPolicy(self)


class UniversalPolicy(RecoursePolicy):
    """A policy that ignores individual profiles: universal recourse.

    The wrapped policy is asked for recourse as if every person could act on every globally
    actionable feature at unit cost (:meth:`ActionabilityProfiles.universal`); the person's own
    profile is then only used to judge the answer (cost, hard actions, violations).

    Args:
        policy: the policy to run without individual profiles.

    Example:
        >>> from simstudy.policies import CausalOracle, UniversalPolicy
        >>> UniversalPolicy(CausalOracle()).kind
        'oracle'
    """

    def __init__(self, policy: RecoursePolicy):
        self.policy = policy

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.policy.kind

    def fit(self, context: RecourseContext) -> UniversalPolicy:
        self.policy.fit(context)
        self.context_ = context
        return self

    @property
    def asks_questions(self) -> bool:  # type: ignore[override]
        return self.policy.asks_questions

    def recommend(
        self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray, seed: int = 0,
        feedback: Feedback | None = None,
    ) -> Recourse:
        extra = {} if feedback is None else {"feedback": feedback}
        return self.policy.recommend(x, profiles.universal(), ids, seed, **extra)

    def model_hashes(self) -> dict[str, str]:
        return self.policy.model_hashes()


def policy_to_run(params: Any) -> RecoursePolicy:
    """The unfitted policy a parameters model configures, made universal when its
    ``personalized`` is false."""
    return build("policy", params).to_run()

