"""Run-table rows: the world's sensitive features and the population's groups as columns."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from conftest import make_people

from simstudy.run.tables import group_columns, recourse_table
from simstudy.world.loan import LOAN_ROLES


def test_group_columns_follow_the_world_then_the_population():
    people = SimpleNamespace(groups={"privileged": np.zeros(2), "race": np.ones(2)})
    assert group_columns(LOAN_ROLES, people) == ["gender", "race", "privileged"]
    other = replace(LOAN_ROLES, sensitive=("age",))
    assert group_columns(other, people) == ["age", "race", "privileged"]
    assert group_columns(replace(LOAN_ROLES, sensitive=()), SimpleNamespace(groups={})) == []


def test_the_sensitive_features_named_by_the_world_become_columns(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, np.asarray(x), ids, profiles)
    n, d = people.x.shape
    metrics = {"x_cf": people.x, "found": np.ones(n, bool)}
    args = (people, metrics, np.zeros((n, d), bool), np.full((n, d), np.nan), {}, {})
    assert "gender" not in recourse_table(*args).columns
    table = recourse_table(*args, sensitive=("gender", "age"))
    names = list(people.feature_names)
    for feature in ("gender", "age"):
        assert (table[feature] == people.x[:, names.index(feature)].astype(np.int64)).all()
