"""Kinds of one's own, found by simstudy through the entry-point group ``simstudy.kinds``:

* policy ``raise_income``: raises income by ``share`` of its range for whoever may change it;
* response model ``everyone_acts``: everyone accepts and acts on every recourse;
* world ``toy``: two causes and an outcome, as a table of structural equations.

Each kind is one declaration, ``register(family, parameters model, runtime)``. The same module,
saved beside a scenario as ``my_kinds.py``, is found through the scenario's ``imports:``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np

from simstudy import register
from simstudy.core.documents import StrictModel
from simstudy.core.rng import generator
from simstudy.policies.base import RecoursePolicy
from simstudy.policies.params import PolicyParams
from simstudy.primitives.recourse import Recourse
from simstudy.world.additive import AdditiveNoiseSCM, Bernoulli, Equation, Normal, SCMTable
from simstudy.world.base import FeatureRoles
from simstudy.world.data import sample_world_data
from simstudy.world.specs import WorldParams

__all__ = ["RaiseIncomeParams", "RaiseIncome", "EveryoneActsParams", "EveryoneActs",
           "ToyWorldParams", "build_toy_world"]


class RaiseIncomeParams(PolicyParams):
    """The policy's parameters model: its document entry."""

    kind: Literal["raise_income"] = "raise_income"
    share: float = 0.5


class RaiseIncome(RecoursePolicy):
    """Raises the feature ``income`` (or else the last actionable feature) by ``share`` of its
    training range for whoever may change it."""

    kind = "raise_income"
    Params = RaiseIncomeParams

    def recommend(self, x, profiles, ids, seed=0, feedback=None):
        names = list(self.context_.feature_names)
        feature = "income" if "income" in names else list(profiles.features)[-1]
        column = names.index(feature)
        allowed = profiles.actionable[:, list(profiles.features).index(feature)]
        intervened = np.zeros(x.shape, bool)
        intervened[:, column] = allowed
        values = np.full(x.shape, np.nan)
        values[:, column] = x[:, column] + self.params.share * self.context_.feature_range[column]
        return Recourse(intervened, values, allowed)


class EveryoneActsParams(StrictModel):
    """The response model's parameters model (none but its kind)."""

    kind: Literal["everyone_acts"] = "everyone_acts"


class EveryoneActs:
    """Accepts and acts on every recourse."""

    scale = (0, 1)

    def __init__(self, params: EveryoneActsParams):
        self.params = params

    def probabilities(self, inputs):
        return np.ones(len(inputs)), np.ones(len(inputs))

    def ratings(self, inputs, uniforms):
        return np.ones(len(inputs), np.int64), np.ones(len(inputs), np.int64)


TOY_ROLES = FeatureRoles(names=("group", "skill", "savings"), immutable=("group",),
                         actionable=("skill", "savings"), sensitive=("group",),
                         parents={"group": (), "skill": ("group",), "savings": ("skill",)},
                         rankings={"privileged": ("skill", "savings"),
                                   "non_privileged": ("savings", "skill")})
TOY_TABLE = SCMTable("toy", TOY_ROLES, (
    Equation("group", (), lambda: 0.0, Bernoulli(0.5)),
    Equation("skill", ("group",), lambda g: 0.5 * g, Normal(1.0)),
    Equation("savings", ("skill",), lambda s: 0.8 * s, Normal(1.0))),
    label_score=lambda x, u: x["skill"] + x["savings"] - 0.5)


class ToyWorldParams(WorldParams):
    """The world's parameters model: how many draws."""

    kind: Literal["toy"] = "toy"
    labels: ClassVar[bool] = True
    n_samples: int = 1500

    def feature_names(self):
        return TOY_ROLES.names

    def roles(self):
        return TOY_ROLES


def build_toy_world(params: ToyWorldParams, seed, cache=None, base_dir="."):
    """The world, its data and its record: the runtime takes its validated entry first."""
    world = AdditiveNoiseSCM(TOY_TABLE)
    data = sample_world_data(world, params.n_samples, generator(seed, "world-sample"))
    return world, data, {"kind": params.kind, "data_sha256": data.content_hash()}


register("policy", RaiseIncomeParams, RaiseIncome)
register("response", EveryoneActsParams, EveryoneActs)
register("world", ToyWorldParams, build_toy_world)
