"""The simulated people: one :class:`People` per replication x condition.

* :class:`People` — ids, features, groups, reported and true actionability, hidden preferences,
  answering, response dispositions; :meth:`People.feedback` answers a policy's questions and
  :meth:`People.truth_columns` measures any recourse against the hidden truth;
* :class:`PeopleSpec` — builds them from the population document and the ``users:`` and
  ``response:`` sections;
* the response-model protocol (:class:`ResponseModel`, registered kinds ``logistic`` and
  ``rating``) and the calibrated rating model (:mod:`simstudy.people.rating`).
"""

from ..core.lazy import lazy_exports
from . import spec as _spec  # noqa: F401 - registers the response kinds (torch-free)

_EXPORTS = {
    "People": "people",
    "PeopleSpec": "spec",
    "PopulationSpec": "spec",
    "ActionabilitySpec": "spec",
    "CostSpec": "spec",
    "GroupsSpec": "spec",
    "UsersSpec": "spec",
    "NoiseSpec": "spec",
    "NoiseModel": "noise",
    "PeopleFeedback": "answers",
    "UserSettings": "people",
    "TRUTH_COLUMNS": "people",
    "ResponseModel": "response",
    "ResponseInputs": "response",
    "ResponseSpecs": "spec",
    "LogisticResponse": "response",
    "LogisticResponseSpec": "response",
    "RatingResponse": "rating",
    "RatingResponseSpec": "rating",
    "published_model": "rating",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
