"""The simulated people: one :class:`People` per replication x condition.

* :class:`People` — ids, features, groups, reported and true actionability, hidden preferences,
  answering, response dispositions; :meth:`People.feedback` answers a policy's questions and
  :meth:`People.truth_columns` measures any recourse against the hidden truth;
* :class:`PeopleSpec` — builds them from the population document and the ``users:`` and
  ``response:`` sections;
* the response-model protocol (:class:`ResponseModel`, registered kinds ``logistic`` and
  ``rating``) and the calibrated rating model (:mod:`simstudy.people.rating`).
"""

from .feedback import NoiseModel, PeopleFeedback
from .people import TRUTH_COLUMNS, People, UserSettings
from .rating import RatingResponse, RatingResponseSpec, published_model
from .response import LogisticResponse, LogisticResponseSpec, ResponseInputs, ResponseModel
from .spec import (
    ActionabilitySpec,
    CostSpec,
    GroupsSpec,
    NoiseSpec,
    PeopleSpec,
    PopulationSpec,
    ResponseSpecs,
    UsersSpec,
)

__all__ = [
    "People",
    "PeopleSpec",
    "PopulationSpec",
    "ActionabilitySpec",
    "CostSpec",
    "GroupsSpec",
    "UsersSpec",
    "NoiseSpec",
    "NoiseModel",
    "PeopleFeedback",
    "UserSettings",
    "TRUTH_COLUMNS",
    "ResponseModel",
    "ResponseInputs",
    "ResponseSpecs",
    "LogisticResponse",
    "LogisticResponseSpec",
    "RatingResponse",
    "RatingResponseSpec",
    "published_model",
]
