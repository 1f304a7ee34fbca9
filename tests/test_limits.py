"""Per-person directions and bounds of change: drawn by the population, honoured by every
policy (checked by value), for people inside and beyond the training range."""

import numpy as np
import pytest
import torch

from simstudy.checks import beyond_range, check_policy, check_profiles, example_spec
from simstudy.core.registry import kinds
from simstudy.core.rng import generator
from simstudy.people import People, PeopleSpec, PopulationSpec
from simstudy.people.change_limits import ChangeSpec, draw_limits
from simstudy.policies.base import RecourseContext
from simstudy.primitives.limits import ChangeLimits, limit_violations
from simstudy.primitives.space import ScaledSpace
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model

POLICIES = kinds("policy")


def test_directions_and_bounds_are_drawn_as_documented():
    spec = ChangeSpec.model_validate({"direction": {"up": 0.7, "down": 0.1, "any": 0.2},
                                      "bound": {"share": [0.1, 0.3]}})
    limits = draw_limits({"b": spec}, ("a", "b"), np.arange(20000), seed=0)
    d = limits.direction[:, 1]
    assert abs((d == 1).mean() - 0.7) < 0.02 and abs((d == -1).mean() - 0.1) < 0.01
    assert (limits.direction[:, 0] == 0).all() and np.isinf(limits.bound[:, 0]).all()
    b = limits.bound[:, 1]
    assert b.min() >= 0.1 and b.max() <= 0.3 and abs(b.mean() - 0.2) < 0.005
    assert limits.share[:, 1].all()
    # keyed by person id: a subset of the people gets the same draws
    again = draw_limits({"b": spec}, ("a", "b"), np.arange(100, 200), seed=0)
    assert np.array_equal(again.bound, limits.bound[100:200])


def test_the_interval_follows_direction_and_bound():
    limits = ChangeLimits(("a",), [[1], [-1], [0], [1]], [[2.0], [0.5], [np.inf], [0.25]],
                          [[False], [False], [False], [True]])
    lo, hi = limits.interval(np.array([4.0]))
    assert lo[:, 0].tolist() == [0.0, -0.5, -np.inf, 0.0]
    assert hi[:, 0].tolist() == [2.0, 0.0, np.inf, 1.0]
    x = np.zeros((4, 1))
    bad = limit_violations(limits, x, np.ones((4, 1), bool), np.array([[1.0], [0.2], [9.0],
                                                                       [1.1]]),
                           np.array([4.0]), np.array([0]))
    assert bad.tolist() == [False, True, False, True]


def test_population_documents_draw_group_correlated_limits():
    spec = PopulationSpec.model_validate({
        "changes": {"income": {"direction": "up", "bound": {"share": 0.2}}},
        "groups": {"rule": "random", "privileged_share": 0.5,
                   "privileged": {"bias": "privileged"},
                   "non_privileged": {"bias": "non_privileged", "changes": {
                       "income": {"direction": "up", "bound": {"share": 0.05}},
                       "savings": {"direction": "down"}}}}})
    roles = LoanSCM.roles
    x = LoanSCM().sample(400, generator(0, "x")).numpy()
    profiles, groups = spec.draw(x, roles.names, roles.actionable, np.arange(400), 0,
                                 roles.rankings)
    limits, privileged = profiles.limits, groups["privileged"]
    k_income, k_savings = roles.actionable.index("income"), roles.actionable.index("savings")
    assert (limits.bound[privileged, k_income] == 0.2).all()
    assert (limits.bound[~privileged, k_income] == 0.05).all()
    assert (limits.direction[~privileged, k_savings] == -1).all()
    assert (limits.direction[privileged, k_savings] == 0).all()
    assert 0 < privileged.sum() < 400
    # a subset of the profiles keeps each person's limits
    assert np.array_equal(profiles.subset(slice(5, 9)).limits.bound, limits.bound[5:9])
    assert profiles.universal().limits is None


def test_a_feature_outside_the_actionable_ones_is_refused():
    spec = PopulationSpec.model_validate({"changes": {"age": {"direction": "up"}}})
    problems = spec.change_problems(LoanSCM.roles.actionable)
    assert problems and problems[0][0] == "changes.age"


# -- every policy honours them ----------------------------------------------------------------
@pytest.fixture(scope="module")
def limited_people():
    """A small Loan world, rejected people (some beyond the training range on a feature they
    may change) and tight, mixed directions and bounds."""
    world = LoanSCM()
    data = sample_world_data(world, 600, generator(0, "limits-world"))
    model = train_decision_model(data, DecisionConfig(epochs=20), seed=0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)[:12]
    context = RecourseContext(world, model, data, 0)
    x, ids = data.x_test[idx].numpy().copy(), idx.numpy()
    names = world.roles.names
    # every third person lies beyond the training range on income, which they may change
    j = names.index("income")
    x[::3, j] = context.upper[j] + 0.2 * context.feature_range[j]
    base = check_profiles(world.roles.actionable, ids)
    changes = {f: ChangeSpec.model_validate(
        {"direction": {"up": 0.4, "down": 0.3, "any": 0.3},
         "bound": {"share": [0.1, 0.6]}}) for f in world.roles.actionable}
    limits = draw_limits(changes, world.roles.actionable, ids, seed=1)
    profiles = type(base)(base.features, base.scores, base.levels, base.weights,
                          base.kind, base.cost_placement, limits)
    return context, x, ids, profiles


def _spec(kind):
    # iCARMA trained for two epochs acts for nobody; forty make the check meaningful
    if kind == "icarma":
        return type(example_spec("policy", kind)).model_validate(
            {"kind": "icarma", "epochs": 40, "batch_size": 64, "cache": False})
    return example_spec("policy", kind)


#: Wachter's and HARE's values move by up to 1.03e-5 (relative) with the batch's size once a
#: person's box binds; with a float64 decision model the drift is 3e-13 (Wachter) and 0 (HARE),
#: so it is the float32 network's batch-shaped round-off (measured). Who gets recourse and which
#: features it changes stay identical.
GRADIENT_RTOL = 1e-4


def _recourse(kind, context, x, ids, profiles):
    policy = _spec(kind).policy().fit(context)
    extra = {}
    if policy.asks_questions:
        people = People.from_spec(
            PeopleSpec.model_validate({"users": {"preference": "weights"}}),
            x, ids, 0, context.feature_names, context.world.roles.actionable,
            ScaledSpace.from_context(context), reported=profiles,
            immutable=context.world.roles.immutable)
        extra = {"feedback": people.feedback()}
    return policy.recommend(x, profiles, ids, 3, **extra)


@pytest.mark.parametrize("kind", POLICIES)
def test_no_policy_moves_a_feature_against_direction_or_beyond_bound(kind, limited_people):
    context, x, ids, profiles = limited_people
    names = context.feature_names
    cols = profiles.columns_in(names)
    allowed = np.zeros(x.shape, dtype=bool)
    allowed[:, cols] = profiles.actionable
    x_out = beyond_range(x, allowed, context.lower, context.upper)
    rec = _recourse(kind, context, x_out, ids, profiles)
    intervened = rec.intervened & rec.found[:, None]
    bad = limit_violations(profiles.limits, x_out, intervened, rec.values,
                           context.feature_range, cols)
    assert int(bad.sum()) == 0
    assert intervened.any(axis=1).sum() >= 2  # not vacuous: recourse acts within the limits
    # and the whole contract, limits included, with people beyond the training range
    extra = None
    if _spec(kind).policy().asks_questions:
        people = People.from_spec(
            PeopleSpec.model_validate({"users": {"preference": "weights"}}),
            x, ids, 0, names, context.world.roles.actionable, ScaledSpace.from_context(context),
            reported=profiles, immutable=context.world.roles.immutable)

        def extra(rows):
            return {"feedback": people.feedback()}
    check_policy(_spec(kind).policy, context, x, ids, profiles, name=kind, seed=3,
                 recommend_kwargs=extra,
                 rtol=GRADIENT_RTOL if kind in ("hare", "wachter") else 1e-6)


def test_the_limits_bind(limited_people):
    # without the limits, the oracle's recourse breaks them for some people: the test above
    # can fail
    context, x, ids, profiles = limited_people
    free = type(profiles)(profiles.features, profiles.scores, profiles.levels, profiles.weights)
    rec = _recourse("oracle", context, x, ids, free)
    cols = profiles.columns_in(context.feature_names)
    bad = limit_violations(profiles.limits, x, rec.intervened & rec.found[:, None], rec.values,
                           context.feature_range, cols)
    assert bad.sum() > 0
    limited = _recourse("oracle", context, x, ids, profiles)
    assert limited.found.sum() > 0


def test_true_bounds_judge_the_recourse(limited_people):
    # with a hidden mismatch, the true bound is a share of the reported one: a change at the
    # reported bound is blocked in truth, half of it is not
    context, x, ids, profiles = limited_people
    population = PopulationSpec.model_validate({"hidden_mismatch_probability": 1.0,
                                                "hidden_bound_factor": 0.5})
    people = People.from_spec(
        PeopleSpec(population=population),
        x, ids, 0, context.feature_names, context.world.roles.actionable,
        ScaledSpace.from_context(context), reported=profiles,
        immutable=context.world.roles.immutable)
    names = context.feature_names
    cols = profiles.columns_in(names)
    lo, hi = profiles.limits.interval(context.feature_range[cols])
    # act on a feature the person truly can change, in the allowed direction
    rows = np.flatnonzero(people.true_actionable.any(axis=1))
    assert len(rows) >= 3
    k = np.argmax(people.true_actionable[rows], axis=1)
    step = np.where(hi[rows, k] > 0, hi[rows, k], lo[rows, k])
    x = x[rows]
    assert np.isfinite(step).all() and (step != 0).all()
    for share, blocked in ((1.0, True), (0.4, False)):
        x_cf = x.copy()
        x_cf[np.arange(len(x)), cols[k]] += share * step
        intervened = np.zeros(x.shape, dtype=bool)
        intervened[np.arange(len(x)), cols[k]] = True
        out = people.truth_columns(x_cf, np.ones(len(x), bool), intervened, rows)
        assert out["blocked"].all() == blocked and out["blocked"].any() == blocked
