import numpy as np
import pytest
from pydantic import ValidationError

from simstudy.core.registry import entries
from simstudy.people import LogisticResponse, RatingResponse
from simstudy.people.response_params import (
    PUBLISHED_ACCEPT,
    PUBLISHED_ACT,
    LogisticResponseParams,
    RatingModel,
    RatingResponseParams,
)


def test_the_response_kinds_are_rows_of_the_table():
    assert entries("response")["logistic"] is LogisticResponseParams
    assert entries("response")["rating"] is RatingResponseParams
    assert type(LogisticResponseParams().build()) is LogisticResponse
    assert type(RatingResponseParams().build()) is RatingResponse


def test_a_partial_rating_keeps_the_published_values_for_what_it_leaves_out():
    entry = RatingResponseParams.model_validate({"act": {"intercept": 3.0,
                                                         "effect": {"slope": 0.5}}})
    assert entry.act.intercept == 3.0 and entry.act.effect.slope == 0.5
    assert entry.act.model_copy(update={"intercept": PUBLISHED_ACT.intercept,
                                        "effect": PUBLISHED_ACT.effect}) == PUBLISHED_ACT
    assert entry.act.effect.threshold == PUBLISHED_ACT.effect.threshold
    assert entry.accept == PUBLISHED_ACCEPT
    # what the document stated stays told apart from what the published values filled in
    assert entry.model_fields_set == {"act"} and entry.act.model_fields_set == {"intercept",
                                                                                "effect"}
    assert entry.act.effect.model_fields_set == {"slope"}


def test_the_runtime_takes_its_parameters_and_refuses_what_the_document_refuses():
    model = RatingResponse(RatingResponseParams(distance="proximity"))
    assert model.distance == "proximity" and model.act == PUBLISHED_ACT
    assert RatingResponse(distance="proximity").params == model.params
    assert LogisticResponse(act_cost_slope=1.0).params == LogisticResponseParams(
        act_cost_slope=1.0)
    for bad in (lambda: LogisticResponse(act_cost_slope=-1.0),
                lambda: RatingResponse(threshold=9),
                lambda: RatingModel(sd_noise=0.0)):
        with pytest.raises(ValidationError):
            bad()


def test_the_parameters_are_frozen_where_they_are_shared():
    with pytest.raises(ValidationError):
        PUBLISHED_ACT.intercept = 0.0  # type: ignore[misc]
    rating = RatingModel()
    assert np.isclose(rating.noise_scale, rating.sd_noise)


SCOPES = """
name: scopes
world: {kind: loan, n_samples: 400}
policies: [{kind: oracle, name: a}, {kind: oracle, name: b, personalized: false}]
conditions:
  - {name: c, population: {}, response: {kind: rating, threshold: 4}}
  - {name: d, population: {}}
"""


def test_every_scope_states_its_response_with_the_one_entry_type(tmp_path):
    from simstudy.run.scenario import load_scenario

    def load(text):
        path = tmp_path / "s.yaml"
        path.write_text(SCOPES + text)
        return load_scenario(path)[0]

    scenario = load("response: {act_cost_slope: 1.0}\nstudy: {condition: c}\n")
    study = load("study: {condition: d, response: {kind: rating}}\n")
    stated = [scenario.conditions[0].response, scenario.response, study.study.response]
    assert [type(r) for r in stated] == [RatingResponseParams, LogisticResponseParams,
                                         RatingResponseParams]
    assert stated[0].threshold == 4 and stated[1] == LogisticResponseParams(act_cost_slope=1.0)
    with pytest.raises(Exception, match="state the response once"):
        load("response: {act_cost_slope: 1.0}\nstudy: {condition: d, response: {kind: rating}}\n")
