"""The simulated people: one :class:`People` per replication x condition.

* :class:`People` — ids, features, groups, reported and true actionability, hidden preferences,
  answering, response dispositions; :meth:`People.feedback` answers a policy's questions and
  :meth:`People.truth_columns` measures any recourse against the hidden truth;
* :class:`PeopleSpec` — builds them from the population document and the ``users:`` and
  ``response:`` sections;
* the response-model protocol (:class:`ResponseModel`, registered kinds ``logistic`` and
  ``rating`` with their parameters in :mod:`simstudy.people.response_params`) and the
  calibrated rating model (:mod:`simstudy.people.rating`).
"""

from ..core.lazy import lazy_exports

_EXPORTS = {
    "People": "people",
    "PeopleSpec": "spec",
    "PopulationSpec": "population_spec",
    "ActionabilitySpec": "population_spec",
    "GroupsSpec": "population_spec",
    "UserSettings": "settings",
    "NoiseModel": "noise",
    "PeopleFeedback": "answers",
    "TRUTH_COLUMNS": "people",
    "ResponseModel": "response",
    "ResponseInputs": "response",
    "ResponseSpecs": "response_params",
    "LogisticResponse": "response",
    "LogisticResponseParams": "response_params",
    "RatingResponse": "rating",
    "RatingResponseParams": "response_params",
    "RatingModel": "response_params",
    "DistanceEffect": "response_params",
    "published_model": "rating",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
