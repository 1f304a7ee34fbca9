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
(:meth:`People.from_spec <simstudy.people.people.People.from_spec>` builds the people from it).
"""

from __future__ import annotations

from pydantic import Field

from ..core.documents import StrictModel
from .population_spec import (
    ActionabilitySpec,
    GroupsSpec,
    PopulationSpec,
    population_problems,
)
from .response_params import LogisticResponseParams, ResponseSpecs
from .settings import UserSettings

__all__ = ["ActionabilitySpec", "GroupsSpec", "PopulationSpec", "UserSettings", "ResponseSpecs",
           "PeopleSpec", "population_problems"]


class PeopleSpec(StrictModel):
    """Everything that describes the simulated people of one condition; the people themselves
    are :meth:`People.from_spec(spec, ...) <simstudy.people.people.People.from_spec>`.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> from simstudy.people import People, PeopleSpec
        >>> from simstudy.primitives import ScaledSpace
        >>> roles = context.world.roles
        >>> people = People.from_spec(PeopleSpec(), x, ids, 0, context.feature_names,
        ...                           roles.actionable, ScaledSpace.from_context(context),
        ...                           reported=profiles, immutable=roles.immutable)
        >>> len(people), type(people.response).__name__
        (3, 'LogisticResponse')
    """

    population: PopulationSpec = Field(default_factory=PopulationSpec)
    users: UserSettings = UserSettings()
    response: ResponseSpecs = Field(  # type: ignore[valid-type]
        default_factory=LogisticResponseParams)
