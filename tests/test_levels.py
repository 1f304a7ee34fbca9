"""Features with levels: every policy's recourse sets them to codes, the oracle exactly."""

import dataclasses

import numpy as np
import pytest
import torch

from simstudy.checks import check_policy, check_profiles, example_spec
from simstudy.core.registry import kinds
from simstudy.core.rng import generator
from simstudy.metrics import evaluate_recourse
from simstudy.people import People, PeopleSpec
from simstudy.people.change_limits import ChangeSpec, draw_limits
from simstudy.policies.base import RecourseContext
from simstudy.policies.oracle import CausalOracle, enumerate_one_by_one
from simstudy.primitives.levels import level_columns, off_level, snap_values
from simstudy.primitives.limits import limit_violations
from simstudy.primitives.space import ScaledSpace
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.loan_roles import LOAN_ROLES

#: Loan with whole-number levels on two actionable features (codes every 2 months of
#: duration; income in whole units)
ROLES = dataclasses.replace(LOAN_ROLES, codebook={
    **LOAN_ROLES.codebook,
    "loan_duration": {k: f"{k} units" for k in range(-30, 61, 2)},
    "income": {k: f"{k}" for k in range(-20, 31)}})


class LeveledLoan(LoanSCM):
    roles = ROLES


def test_roles_name_the_levels_of_actionable_coded_features():
    assert set(ROLES.levels) == {"loan_duration", "income"}  # gender is coded but immutable
    assert ROLES.levels["loan_duration"][:2] == (-30.0, -28.0)


def test_snapping_picks_the_nearest_allowed_code():
    codes = {0: np.array([0.0, 1.0, 2.0, 3.0])}
    x = np.array([[1.0], [1.0], [1.0], [1.0]])
    values = np.array([[2.4], [1.2], [2.6], [0.5]])
    snapped, kept = snap_values(values, np.ones((4, 1), bool), x, codes,
                                low=np.array([[0.0], [0.0], [0.0], [1.0]]),
                                high=np.array([[3.0], [3.0], [2.2], [3.0]]))
    assert snapped[:, 0].tolist() == [2.0, 1.0, 2.0, 1.0]
    assert kept[:, 0].tolist() == [True, False, True, False]  # back at the factual: no action


@pytest.fixture(scope="module")
def leveled():
    world = LeveledLoan()
    data = sample_world_data(world, 600, generator(0, "levels-world"))
    model = train_decision_model(data, DecisionConfig(epochs=20), seed=0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)[:10]
    context = RecourseContext(world, model, data, 0)
    x, ids = data.x_test[idx].numpy(), idx.numpy()
    return context, x, ids, check_profiles(world.roles.actionable, ids)


def _spec(kind):
    if kind.startswith("hare/"):  # HARE over another kind, searching for everyone
        document = example_spec("policy", "hare").model_dump()
        document["base"] = _spec(kind.split("/")[1]).model_dump()
        document["search_without_base"] = True
        return type(example_spec("policy", "hare")).model_validate(document)
    if kind == "oracle":  # the checks' coarse grid finds no plausible recourse here
        return example_spec("policy", kind).model_validate({"kind": "oracle", "n_values": 25})
    if kind == "icarma":  # two epochs act for nobody; forty make the check meaningful
        return type(example_spec("policy", kind)).model_validate(
            {"kind": "icarma", "epochs": 40, "batch_size": 64, "cache": False})
    return example_spec("policy", kind)


def _extra(kind, context, x, ids, profiles):
    if not _spec(kind).policy().asks_questions:
        return None
    people = People.from_spec(
        PeopleSpec.model_validate({"users": {"preference": "weights"}}),
        x, ids, 0, context.feature_names, context.world.roles.actionable,
        ScaledSpace.from_context(context), reported=profiles,
        immutable=context.world.roles.immutable)
    return lambda rows: {"feedback": people.feedback()}


#: every policy kind, and HARE over every kind it can refine
CASES = kinds("policy") + [f"hare/{base}" for base in kinds("policy") if base != "hare"]


@pytest.mark.parametrize("kind", CASES)
def test_every_policy_sets_levels_and_keeps_limits(kind, leveled):
    context, x, ids, profiles = leveled
    changes = {f: ChangeSpec.model_validate({"direction": {"up": 0.4, "down": 0.3, "any": 0.3},
                                             "bound": {"share": [0.2, 0.8]}})
               for f in context.world.roles.actionable}
    limited = dataclasses.replace(profiles, limits=draw_limits(
        changes, context.world.roles.actionable, ids, seed=1))
    for people in (profiles, limited):
        extra = _extra(kind, context, x, ids, people)
        rec = _spec(kind).policy().fit(context).recommend(
            x, people, ids, 3, **({} if extra is None else extra(None)))
        acting = rec.intervened & rec.found[:, None]
        levels = level_columns(context.feature_names, context.world.roles.levels)
        assert int(off_level(rec.values, acting, levels).sum()) == 0
        assert acting[:, list(levels)].any()  # not vacuous: some recourse sets a level
        if people.limits is not None:
            cols = people.columns_in(context.feature_names)
            assert not limit_violations(people.limits, x, acting, rec.values,
                                        context.feature_range, cols).any()
        if "violations" in rec.extras:  # HARE counts forbidden features off the world's values
            assert int(rec.extras["violations"].sum()) == 0
        # the counterfactual follows from the snapped values
        if rec.counterfactual is not None:
            moved = np.where(acting, rec.values, x)
            assert np.array_equal(rec.counterfactual[acting], moved[acting])
        check_policy(_spec(kind).policy, context, x, ids, people, name=kind, seed=3,
                     recommend_kwargs=extra,
                     rtol=1e-4 if kind.startswith(("hare", "wachter")) else 1e-6)


def test_the_oracle_is_exact_on_levels(leveled):
    context, x, ids, _ = leveled
    two = check_profiles(context.world.roles.actionable, ids)
    # every person acts on at most two features, so that one-by-one enumeration stays quick
    keep = np.cumsum(two.actionable, axis=1) <= 2
    profiles = dataclasses.replace(two, scores=np.where(keep, two.scores, 0),
                                   weights=np.where(keep, two.weights, np.inf))
    oracle = CausalOracle(n_values=15).fit(context)
    rec = oracle.recommend(x, profiles, ids)
    inter, values, found, _ = enumerate_one_by_one(oracle, x, profiles)
    assert np.array_equal(rec.found, found) and rec.found.any()
    assert np.array_equal(rec.intervened & rec.found[:, None], inter)
    np.testing.assert_array_equal(np.where(inter, rec.values, np.nan), values)


def test_without_levels_the_values_are_off_level(leveled):
    # the same search on plain Loan sets income and duration to values between codes: the
    # checks above can fail
    context, x, ids, profiles = leveled
    plain = RecourseContext(LoanSCM(), context.model, context.data, 0)
    rec = _spec("wachter").policy().fit(plain).recommend(x, profiles, ids, 3)
    levels = level_columns(context.feature_names, ROLES.levels)
    assert off_level(rec.values, rec.intervened & rec.found[:, None], levels).any()


def test_icarma_shortens_to_a_point_on_levels_that_stays_approved(leveled):
    # a coded feature is snapped at every point judged: a shortened action rounded down past
    # the boundary would lose the validity the whole action had
    context, x, ids, profiles = leveled
    policy = _spec("icarma").policy().fit(context)
    short = policy.recommend(x, profiles, ids)
    policy.params = policy.params.model_copy(update={"shorten": "none"})
    whole = policy.recommend(x, profiles, ids)
    levels = level_columns(context.feature_names, context.world.roles.levels)
    acting = short.intervened & short.found[:, None]
    assert int(off_level(short.values, acting, levels).sum()) == 0
    judged = [evaluate_recourse(context.world, context.model, x, rec, profiles,
                                context.feature_range) for rec in (short, whole)]
    assert judged[0]["valid"][judged[1]["valid"]].all()
    changed = ~np.all(np.isclose(np.nan_to_num(short.values), np.nan_to_num(whole.values)),
                      axis=1)
    assert changed.any() and acting[:, list(levels)].any()  # not vacuous
