"""Kinds registered from user code are kinds like any other: a policy, a response model and a
world defined here validate and run from a scenario file, with no edit of the package."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd
import pytest

from simstudy import register
from simstudy.core.documents import StrictModel
from simstudy.core.registry import entry_model, kinds, unregister
from simstudy.core.rng import generator
from simstudy.metrics import Recourse
from simstudy.policies.base import RecoursePolicy
from simstudy.policies.params import PolicyParams
from simstudy.run.runner import run_scenario
from simstudy.run.scenario import load_scenario
from simstudy.world.additive import AdditiveNoiseSCM, Bernoulli, Equation, Normal, SCMTable
from simstudy.world.base import FeatureRoles
from simstudy.world.data import sample_world_data
from simstudy.world.decision import ModelCache
from simstudy.world.specs import WorldParams


class RaiseIncomeParams(PolicyParams):
    """The policy's parameters model: its document entry."""

    kind: Literal["raise_income"] = "raise_income"
    share: float = 0.5


class RaiseIncome(RecoursePolicy):
    """Raises income by ``share`` of its training range for whoever may change it."""

    kind = "raise_income"
    Params = RaiseIncomeParams

    def recommend(self, x, profiles, ids, seed=0, feedback=None):
        names = self.context_.feature_names
        column = names.index("income")
        allowed = profiles.actionable[:, list(profiles.features).index("income")]
        intervened = np.zeros(x.shape, bool)
        intervened[:, column] = allowed
        values = np.full(x.shape, np.nan)
        values[:, column] = x[:, column] + self.params.share * self.context_.feature_range[column]
        return Recourse(intervened, values, allowed)


class EveryoneActsParams(StrictModel):
    kind: Literal["everyone_acts"] = "everyone_acts"


class EveryoneActs:
    """Accepts and acts on every recourse (a response model of the test's own)."""

    scale = (0, 1)

    def __init__(self, params: EveryoneActsParams):
        self.params = params

    def probabilities(self, inputs):
        return np.ones(len(inputs)), np.ones(len(inputs))

    def ratings(self, inputs, uniforms):
        return np.ones(len(inputs), np.int64), np.ones(len(inputs), np.int64)


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
    # one line each: the parameters model and the runtime that takes it
    register("policy", RaiseIncomeParams, RaiseIncome)
    register("response", EveryoneActsParams, EveryoneActs)
    yield
    unregister("policy", "raise_income")
    unregister("response", "everyone_acts")


def test_own_kinds_validate_from_a_scenario_file(tmp_path, own_kinds):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO)
    scenario, _ = load_scenario(path)
    assert isinstance(scenario.policies[0], RaiseIncomeParams)
    assert scenario.policies[0].share == 0.8
    assert isinstance(scenario.response, EveryoneActsParams)


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


# A world of the test's own: two causes and an outcome, as a table of structural equations.
TOY_ROLES = FeatureRoles(names=("group", "skill", "savings"), immutable=("group",),
                         actionable=("skill", "savings"), sensitive=("group",),
                         parents={"group": (), "skill": ("group",), "savings": ("skill",)})
TOY_TABLE = SCMTable("toy", TOY_ROLES, (
    Equation("group", (), lambda: 0.0, Bernoulli(0.5)),
    Equation("skill", ("group",), lambda g: 0.5 * g, Normal(1.0)),
    Equation("savings", ("skill",), lambda s: 0.8 * s, Normal(1.0))),
    label_score=lambda x, u: x["skill"] + x["savings"] - 0.5)


class ToyWorldParams(WorldParams):
    kind: Literal["toy"] = "toy"
    labels: ClassVar[bool] = True
    n_samples: int = 1500

    def feature_names(self):
        return TOY_ROLES.names



def build_toy_world(params: ToyWorldParams, seed, cache=None, base_dir="."):
    # the world's runtime takes its validated entry first
    world = AdditiveNoiseSCM(TOY_TABLE)
    data = sample_world_data(world, params.n_samples, generator(seed, "world-sample"))
    return world, data, {"kind": params.kind, "data_sha256": data.content_hash()}


WORLD_SCENARIO = """
name: own-world
seed: 5
replications: 1
world: {kind: toy, n_samples: 1500}
decision_model: {epochs: 20}
applicants: {max_applicants: 40}
policies:
  - {kind: oracle, n_values: 9}
conditions:
  - name: all
    population: {actionability: {kind: ranking, n_actionable: 2}}
"""


def test_a_world_of_ones_own_runs_from_a_scenario_file(tmp_path):
    register("world", ToyWorldParams, build_toy_world)
    try:
        path = tmp_path / "world.yaml"
        path.write_text(WORLD_SCENARIO)
        run_scenario(path, tmp_path / "run", progress=False, cache=ModelCache(tmp_path))
    finally:
        unregister("world", "toy")
    recourse = pd.read_parquet(tmp_path / "run" / "recourse.parquet")
    assert {"x_group", "x_skill", "x_savings"} <= set(recourse.columns)
    found = recourse[recourse["found"]]
    assert len(found) > 0 and found["valid"].mean() > 0.5
    # the immutable group is never acted on, and the world's own equation moves savings when
    # only skill is acted on: savings' change is 0.8 times skill's
    assert (found["xcf_group"] == found["x_group"]).all()
    skill_only = found[found["act_skill"] & ~found["act_savings"]]
    assert len(skill_only) > 0
    assert np.allclose(skill_only["xcf_savings"] - skill_only["x_savings"],
                       0.8 * (skill_only["xcf_skill"] - skill_only["x_skill"]), atol=1e-5)


def test_the_table_holds_every_family_of_kinds():
    # found through the entry points, with nothing imported first
    from simstudy.core.registry import FAMILIES, kinds

    assert all(kinds(family) for family in FAMILIES)
    assert {"oracle", "wachter", "growing_spheres", "hare", "icarma"} <= set(kinds("policy"))
    assert {"loan", "causal_flow", "chain_linear"} <= set(kinds("world"))
    assert {"logistic", "rating"} <= set(kinds("response"))
    assert kinds("family") == ["binomial", "gaussian", "ocat"]
    assert kinds("executor") == ["local", "ray"]
    assert kinds("model") == ["onnx", "sklearn", "torchscript"]


@pytest.mark.parametrize("family", ["policy", "world", "response", "family", "executor",
                                    "model"])
def test_every_built_in_kind_is_a_parameters_model_and_a_runtime(family):
    from simstudy.core.registry import KINDS, kinds, runtime_of

    for name in kinds(family):
        kind = KINDS[family][name]
        assert kind.runtime is not None, name
        runtime = runtime_of(family, name)
        assert callable(runtime)
        if family == "policy":
            params = kind.params.model_validate({"kind": name})
            assert runtime.Params is kind.params and type(params.build()) is runtime


def test_a_model_naming_several_kinds_is_registered_under_each():
    class TwinWorldParams(ToyWorldParams):
        kind: Literal["twin_a", "twin_b"]

    register("world", TwinWorldParams, build_toy_world)
    try:
        assert entry_model("world", "twin_a") is entry_model("world", "twin_b") is TwinWorldParams
        assert TwinWorldParams(kind="twin_b", n_samples=100).build(0)[2]["kind"] == "twin_b"
    finally:
        unregister("world", "twin_a")
        unregister("world", "twin_b")
    assert not {"twin_a", "twin_b"} & set(kinds("world"))


class _EntryPoint:
    """An installed entry point, as importlib.metadata gives it."""

    def __init__(self, name, value, dist, loaded=None):
        self.name, self.value, self.loaded = name, value, loaded
        self.dist = type("Dist", (), {"name": dist})()

    def load(self):
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


def _installed(monkeypatch, entry_points):
    import importlib.metadata

    from simstudy.core import registry

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: entry_points)
    monkeypatch.setattr(registry, "_discovered", False)


def test_missing_entry_points_say_in_one_line_to_reinstall(monkeypatch):
    from simstudy.core.registry import KindsNotInstalled, discover

    _installed(monkeypatch, [])
    with pytest.raises(KindsNotInstalled, match=r"^simstudy's kinds cannot be found: no entry "
                                                r"points .* reinstall .*pip install") as info:
        discover()
    assert "\n" not in str(info.value)


def test_stale_entry_points_are_named_and_say_to_reinstall(monkeypatch):
    from simstudy.core import registry

    if registry._source_tree() is None:
        pytest.skip("an installed package: no pyproject.toml to compare with")
    declared = registry.declared_entry_points(registry._source_tree())
    old = [_EntryPoint(n, v, "simstudy") for n, v in declared.items() if n != "worlds"]
    old.append(_EntryPoint("worlds", "simstudy.world.specs", "simstudy"))
    _installed(monkeypatch, old)
    with pytest.raises(registry.KindsNotInstalled, match="differ from .*pyproject.toml .*worlds "
                                                         "= simstudy.world.specs.*reinstall"):
        registry.discover()


def test_an_entry_point_may_name_kinds_and_a_broken_plugin_is_named(monkeypatch):
    from simstudy.core import registry

    class EchoParams(StrictModel):
        kind: Literal["echo"] = "echo"

    own = [_EntryPoint(n, v, "simstudy") for n, v in
           (registry.declared_entry_points(registry._source_tree()).items()
            if registry._source_tree() else [])]
    echo = registry.Kind("response", "echo", EchoParams, lambda params: "echo")
    _installed(monkeypatch, own + [_EntryPoint("echo", "echo_plugin:KINDS", "echo-plugin",
                                               [echo])])
    try:
        registry.discover()
        assert registry.build("response", EchoParams()) == "echo"
    finally:
        registry.KINDS["response"].pop("echo", None)
    _installed(monkeypatch, own + [_EntryPoint("broken", "broken_plugin", "broken-plugin",
                                               ModuleNotFoundError("No module named 'torchx'"))])
    with pytest.raises(registry.KindsNotInstalled, match="the kinds of broken-plugin cannot be "
                                                         "imported: entry point broken = "
                                                         "broken_plugin .*torchx"):
        registry.discover()
