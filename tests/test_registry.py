"""Kinds registered from user code are kinds like any other: a policy and a response model
defined here validate and run from a scenario file, with no edit of the package."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import pytest

from simstudy import register
from simstudy.core.documents import StrictModel
from simstudy.core.registry import POLICY_SPECS, RESPONSE_SPECS
from simstudy.metrics import Recourse
from simstudy.policies.base import RecoursePolicy
from simstudy.policies.specs import PolicySpec
from simstudy.run.runner import run_scenario
from simstudy.run.scenario import load_scenario
from simstudy.world.decision import ModelCache


class RaiseIncome(RecoursePolicy):
    """Raises income by ``share`` of its training range for whoever may change it."""

    kind = "raise_income"

    def __init__(self, share: float = 0.5):
        self.share = share

    def recommend(self, x, profiles, ids, seed=0, feedback=None):
        names = self.context_.feature_names
        column = names.index("income")
        allowed = profiles.actionable[:, list(profiles.features).index("income")]
        intervened = np.zeros(x.shape, bool)
        intervened[:, column] = allowed
        values = np.full(x.shape, np.nan)
        values[:, column] = x[:, column] + self.share * self.context_.feature_range[column]
        return Recourse(intervened, values, allowed)


class RaiseIncomeSpec(PolicySpec):
    kind: Literal["raise_income"] = "raise_income"
    share: float = 0.5

    def build(self):
        return RaiseIncome(self.share)


class EveryoneActs:
    """Accepts and acts on every recourse (a response model of the test's own)."""

    scale = (0, 1)

    def probabilities(self, inputs):
        return np.ones(len(inputs)), np.ones(len(inputs))

    def ratings(self, inputs, uniforms):
        return np.ones(len(inputs), np.int64), np.ones(len(inputs), np.int64)


class EveryoneActsSpec(StrictModel):
    kind: Literal["everyone_acts"] = "everyone_acts"

    def build(self):
        return EveryoneActs()


SCENARIO = """
name: own-kinds
seed: 3
replications: 1
world: {kind: loan, n_samples: 1500}
decision_model: {epochs: 20}
applicants: {max_applicants: 60}
policies:
  - {kind: raise_income, share: 0.8}
conditions:
  - name: all
    population:
      actionability: {kind: ranking, n_actionable: 4}
      groups: {rule: random, privileged_share: 0.5}
response: {kind: everyone_acts}
simulation:
  horizon_days: 30
  arrivals: {kind: poisson, rate_per_day: 3}
  request_probability: 1.0
  action: {base_days: 1, per_unit_cost_days: 0, capacity_sd: 0.0, partial_probability: 0.0}
"""


@pytest.fixture
def own_kinds():
    register("policy", RaiseIncomeSpec)
    register("response", EveryoneActsSpec)
    yield
    del POLICY_SPECS["raise_income"], RESPONSE_SPECS["everyone_acts"]


def test_own_kinds_validate_from_a_scenario_file(tmp_path, own_kinds):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO)
    scenario, _ = load_scenario(path)
    assert isinstance(scenario.policies[0], RaiseIncomeSpec)
    assert scenario.policies[0].share == 0.8
    assert isinstance(scenario.response, EveryoneActsSpec)


def test_an_unregistered_kind_is_refused_by_name(tmp_path):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO)
    with pytest.raises(Exception, match="everyone_acts|raise_income"):
        load_scenario(path)


def test_own_kinds_run_from_a_scenario_file(tmp_path, own_kinds):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO)
    result = run_scenario(path, tmp_path / "run", progress=False, cache=ModelCache(tmp_path))
    recourse = pd.read_parquet(tmp_path / "run" / "recourse.parquet")
    assert set(recourse["policy"]) == {"raise_income"}
    moved = recourse.loc[recourse["found"], ["x_income", "xcf_income"]].to_numpy()
    assert len(moved) > 0 and (moved[:, 1] > moved[:, 0]).all()
    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    kinds = set(events["event"])
    # the test's response model is the one the event world asked: nobody declines or idles
    assert "recourse_given" in kinds and not {"declined", "no_action"} & kinds
    assert result is not None
