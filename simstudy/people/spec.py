"""The documents that describe simulated people: population, users and response sections.

A population document states how individual actionability is assigned (its entries live in
:mod:`simstudy.people.population_spec`)::

    actionability: {kind: ranking, bias: uniform, n_actionable: 2}
    cost: {shape: linear, alpha: 3.0}
    groups: {rule: income, privileged: {bias: privileged}, non_privileged: {bias: non_privileged}}
    hidden_mismatch_probability: 0.25   # one reported-actionable feature is in truth not

A scenario's (or a condition's) ``users:`` section states the people's hidden preferences and
how they answer questions; its ``response:`` section how they accept and act on a recourse
(a registered kind, see :mod:`simstudy.people.response`). :class:`PeopleSpec` joins the three
and builds :class:`~simstudy.people.People`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, SerializeAsAny

from ..core.documents import StrictModel
from ..core.registry import build, entries
from ..core.schema import derive_spec
from ..primitives.profiles import ActionabilityProfiles
from . import rating as _rating  # noqa: F401 - registers the rating response kind
from .noise import NoiseModel
from .population_spec import (
    ActionabilitySpec,
    CostSpec,
    GroupsSpec,
    PopulationSpec,
    population_problems,
)
from .response import LogisticResponseSpec
from .settings import GROUND_TRUTH_SCALES, GROUND_TRUTH_SEARCHES, UserSettings

if TYPE_CHECKING:  # the people themselves are built with torch; documents validate without it
    from ..primitives.space import ScaledSpace
    from .people import People

__all__ = ["ActionabilitySpec", "CostSpec", "GroupsSpec", "PopulationSpec", "NoiseSpec",
           "UsersSpec", "ResponseSpecs", "PeopleSpec", "population_problems"]

class NoiseSpec(derive_spec(NoiseModel, name="NoiseSpec")):
    """Scenario entry of :class:`~simstudy.people.noise.NoiseModel` (its fields and defaults).

    Example:
        >>> from simstudy.people import NoiseSpec
        >>> NoiseSpec.model_validate({"kind": "bernoulli", "p": 0.1}).build()
        NoiseModel(kind='bernoulli', p=0.1, scale=2.0, offset=1.0, temperature=0.1)
    """


class UsersSpec(derive_spec(UserSettings, name="UsersSettingsSpec", exclude=("eps", "truth"))):
    """The people's hidden preferences and how they answer questions: ``preference``,
    ``weights``, ``noise`` and ``accept_threshold`` with their defaults are
    :class:`~simstudy.people.settings.UserSettings`'; the document names the ground-truth
    scale and search, which :meth:`settings` resolves into its ``eps`` and ``truth``.

    Attributes:
        scale: ground-truth perturbation norm or a name of
            :data:`~simstudy.people.settings.GROUND_TRUTH_SCALES`.
        ground_truth: how ``r_gt`` is searched for, a name of
            :data:`~simstudy.people.settings.GROUND_TRUTH_SEARCHES`: ``actionable`` (the
            default, HARE's evaluation: CARLA's Growing Spheres over the changes the person can
            actually make, their truly actionable features), ``all_mutable`` (the same search
            over every mutable feature of the world, including ones the person cannot act on and
            ones no action reaches) or ``actionable_sparse`` (the earlier variant: the person's
            actionable features, the project's Growing Spheres with its feature-selection step).
        n_samples, eta: replace the ground-truth search's samples per shell and shell width.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.people import UsersSpec
        >>> spec = UsersSpec.model_validate({"scale": "near", "noise": {"kind": "logistic"}})
        >>> spec.scale, spec.settings().noise.kind
        ('near', 'logistic')
    """

    scale: Literal["near", "intermediate", "far"] | Annotated[float, Field(gt=0.0)] = "far"
    ground_truth: Literal["actionable", "all_mutable", "actionable_sparse"] = "actionable"
    n_samples: int | None = Field(None, gt=0)
    eta: float | None = Field(None, gt=0.0)

    def settings(self) -> UserSettings:
        """The runtime settings, named scale and search resolved."""
        eps = GROUND_TRUTH_SCALES[self.scale] if isinstance(self.scale, str) else self.scale
        truth = GROUND_TRUTH_SEARCHES[self.ground_truth]
        if self.n_samples is not None:
            truth = replace(truth, n_samples=self.n_samples)
        if self.eta is not None:
            truth = replace(truth, shell_width=self.eta)
        return UserSettings(**self.arguments(), eps=float(eps), truth=truth)

    build = settings


def _response_entry(value: Any) -> Any:
    # looked up in the registry when a document is validated, not when this module was
    # imported, so a response kind registered later (from user code) is a kind like any other
    if isinstance(value, StrictModel):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("a response entry is a mapping with a `kind`")
    kind = value.get("kind", "logistic")
    models = entries("response")
    if kind not in models:
        raise ValueError(f"unknown response kind {kind!r}; choose from {sorted(models)}")
    return models[kind].model_validate(dict(value))


#: Any registered response-model entry, chosen by its ``kind`` (default ``logistic``) from the
#: registry at validation time.
ResponseSpecs = Annotated[SerializeAsAny[StrictModel], BeforeValidator(_response_entry)]


class PeopleSpec(StrictModel):
    """Everything that describes the simulated people of one condition.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> from simstudy.people import PeopleSpec
        >>> from simstudy.primitives import ScaledSpace
        >>> roles = context.world.roles
        >>> people = PeopleSpec().build(x, ids, 0, context.feature_names, roles.actionable,
        ...                             ScaledSpace.from_context(context), reported=profiles,
        ...                             immutable=roles.immutable)
        >>> len(people), type(people.response).__name__
        (3, 'LogisticResponse')
    """

    population: PopulationSpec = Field(default_factory=PopulationSpec)
    users: UsersSpec = Field(default_factory=UsersSpec)
    response: ResponseSpecs = Field(default_factory=LogisticResponseSpec)  # type: ignore[valid-type]

    def build(self, x: np.ndarray, ids: np.ndarray, seed: int, feature_names: Sequence[str],
              actionable: tuple[str, ...], space: ScaledSpace,
              reported: ActionabilityProfiles | None = None,
              preference_seed: int | None = None,
              immutable: Sequence[str] | None = None,
              rankings: Mapping[str, Sequence[str]] | None = None,
              income: str | None = None, sensitive: Sequence[str] = ()) -> People:
        """The people behind rows ``x`` (ids ``ids``), every draw keyed by ``(seed, purpose,
        id)``.

        Args:
            x, ids: their features and person ids.
            seed: the replication's seed.
            feature_names, actionable: the world's features and its globally actionable ones.
            space: the replication's scaled space (a hidden ground truth is an approved point
                of its decision model), e.g. ``ScaledSpace.from_context(context)``.
            reported: use these reported profiles instead of drawing them from the population
                document (no group columns then).
            preference_seed: the stream of hidden preferences and answers (default: ``seed``).
            immutable: the world's immutable features (``world.roles.immutable``); needed by
                the ``all_mutable`` ground-truth search, which moves every other feature.
            rankings: the world's named ranking distributions (``world.roles.rankings``);
                needed by a population document naming one other than ``uniform``.
            income, sensitive: the world's income-like and sensitive features
                (``world.roles.income``, ``world.roles.sensitive``); read by the group rules.
        """
        from .people import People

        x = np.asarray(x, dtype=np.float64)
        ids = np.asarray(ids, dtype=np.int64)
        if reported is None:
            profiles, groups = self.population.draw(x, feature_names, actionable, ids, seed,
                                                    rankings, income, tuple(sensitive))
        else:
            profiles, groups = reported, {}
        return People.create(ids, x, tuple(feature_names), profiles, groups, seed, space,
                             self.users.settings(), build("response", self.response),
                             self.population.hidden_mismatch_probability, preference_seed,
                             None if immutable is None else tuple(immutable),
                             self.population.hidden_bound_factor)
