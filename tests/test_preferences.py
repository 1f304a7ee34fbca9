from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import make_people

from simstudy.people import People, PeopleSpec
from simstudy.people.preferences import (
    GROUND_TRUTH_SEARCHES,
    centred_weights,
    derived_accept_threshold,
    ground_truth_recourse,
    profile_weights,
)
from simstudy.primitives.space import ScaledSpace, action_mask
from simstudy.primitives.spheres import growing_spheres, sample_shell
from simstudy.world.loan import LOAN_ROLES

MUTABLE = [f not in LOAN_ROLES.immutable for f in LOAN_ROLES.names]


def test_ground_truth_is_approved_and_only_moves_actionable_features(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    mask = action_mask(lin_ctx.feature_names, profiles)
    xs = space.scale(x)
    search = replace(GROUND_TRUTH_SEARCHES["actionable"], n_samples=100)
    near, found = ground_truth_recourse(space, xs, mask, ids, 0, "near", search)
    far, _ = ground_truth_recourse(space, xs, mask, ids, 0, "far", search)
    assert found.float().mean() > 0.9
    assert bool(space.approves(near[found]).all())
    assert bool((near[torch.from_numpy(~mask)] == xs[torch.from_numpy(~mask)]).all())
    # farther perturbations put the hidden truth farther from the factual on average
    assert (far - xs).norm(dim=1).mean() > (near - xs).norm(dim=1).mean()


def test_hidden_weights():
    w = centred_weights(np.arange(500), 0, 4)
    assert w.shape == (500, 4) and w.min() >= 0.1 and w.max() <= 5.0
    assert np.array_equal(w[10:20], centred_weights(np.arange(10, 20), 0, 4))


def test_profile_weights_are_infinite_where_not_actionable(lin_people, lin_ctx):
    _, _, profiles = lin_people
    w = profile_weights(lin_ctx.feature_names, profiles)
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert np.isinf(w[~mask]).all() and np.isfinite(w[mask]).all()


def test_default_ground_truth_moves_only_what_the_person_can_change(lin_ctx, lin_people):
    """As HARE's evaluation: the truth is drawn from the changes the person can actually make
    (their truly actionable features; never education, which no action reaches), by CARLA's
    Growing Spheres without a sparsifying step."""
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far")
    carla = GROUND_TRUTH_SEARCHES["actionable"]
    assert people.users.truth == carla and carla.features == "actionable"
    assert (carla.shell_width, carla.n_samples, carla.select_features) == (0.2, 1000, False)
    gt, found = people.ground_truth
    xs = people.space.scale(people.x)
    assert found.float().mean() > 0.9
    assert bool(people.space.approves(gt[found]).all())
    moved = (gt != xs).numpy()[found.numpy()]
    act = people.true_mask[found.numpy()]
    assert not (moved & ~act).any()  # nothing the person cannot change
    assert moved[act].all()  # everything they can (no feature selection)
    assert not moved[:, LOAN_ROLES.names.index("education")].any()


def test_all_mutable_ground_truth_is_a_named_option(lin_ctx, lin_people):
    """``all_mutable``: the same search over every mutable feature of the world, including the
    ones a person cannot act on (the earlier default)."""
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far", ground_truth="all_mutable")
    carla = GROUND_TRUTH_SEARCHES["all_mutable"]
    assert people.users.truth == carla and carla.features == "mutable"
    assert (carla.shell_width, carla.n_samples, carla.select_features) == (0.2, 1000, False)
    gt, found = people.ground_truth
    xs = people.space.scale(people.x)
    assert found.float().mean() > 0.9
    assert bool(people.space.approves(gt[found]).all())
    moved = (gt != xs).numpy()[found.numpy()]
    mutable = np.array(MUTABLE)
    assert not moved[:, ~mutable].any()  # immutable features stay
    assert moved[:, mutable].all()
    # including the mutable features a person cannot act on (education, and the ones outside
    # their own actionable set)
    act = action_mask(people.feature_names, profiles)[found.numpy()]
    assert (moved & ~act).any(axis=1).all()
    # a feature-selection step would have reverted features for some people
    mask = people.mutable_mask
    sparse, _ = ground_truth_recourse(people.space, xs, mask, ids, people.preference_seed,
                                      "far", replace(carla, select_features=True))
    assert (sparse != gt).any(dim=1).float().mean() > 0.3


def test_the_earlier_ground_truth_is_a_named_option(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far",
                         ground_truth="actionable_sparse")
    gt, found = people.ground_truth
    xs = people.space.scale(people.x)
    moved = (gt != xs).numpy()[found.numpy()]
    assert not (moved & ~people.true_mask[found.numpy()]).any()
    # its feature-selection step reverts features the search had moved
    search = people.users.truth
    assert search == GROUND_TRUTH_SEARCHES["actionable_sparse"] and search.select_features
    dense, _ = ground_truth_recourse(people.space, xs, people.true_mask, ids,
                                     people.preference_seed, "far",
                                     replace(search, select_features=False))
    assert (dense != gt).any(dim=1).any()


def test_carla_search_starts_at_the_factual_with_shells_of_its_width(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    xs = space.scale(x)
    mask = torch.tensor(MUTABLE).expand(len(ids), -1)
    r, found = growing_spheres(space, xs, mask, ids, 0, "t", 1000, 0.2, select_features=False,
                               halving=False, radius="length")
    dist = (r - xs).norm(dim=1)[found]
    # the first shell is the ball B(x, 0.2) (no halving phase first), so people near the
    # boundary find their point in it
    assert bool(space.approves(r[found]).all())
    assert bool((dist < 0.2).any())


def test_length_radii_are_uniform_in_length():
    center = torch.zeros(1, 4, dtype=torch.float64)
    mask = torch.ones(1, 4, dtype=torch.bool)
    inner, outer = torch.tensor([0.0]), torch.tensor([0.2])
    args = (center + 0.5, mask, inner, outer, np.array([3]), 0, "r", 4000)
    length = (sample_shell(*args, radius="length") - 0.5).norm(dim=2)
    volume = (sample_shell(*args) - 0.5).norm(dim=2)
    assert abs(float(length.mean()) - 0.1) < 0.005  # mean of U(0, 0.2)
    assert abs(float(volume.mean()) - 0.16) < 0.005  # 4/5 of the radius in 4 dimensions


def test_accept_threshold_is_derived_from_the_truth_search_and_settable(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    default = make_people(lin_ctx, x, ids, profiles)
    np.testing.assert_allclose(default.accept_threshold,
                               GROUND_TRUTH_SEARCHES["actionable"].shell_width / 2)
    earlier = make_people(lin_ctx, x, ids, profiles, ground_truth="actionable_sparse")
    np.testing.assert_allclose(earlier.accept_threshold, 0.05 / 2)
    wider = make_people(lin_ctx, x, ids, profiles, eta=0.5)
    np.testing.assert_allclose(wider.accept_threshold, 0.25)
    weighted = make_people(lin_ctx, x, ids, profiles, preference="weights")
    w = np.where(np.isfinite(weighted.preference_weights), weighted.preference_weights, np.inf)
    can = np.isfinite(w).any(axis=1)
    np.testing.assert_allclose(weighted.accept_threshold[can], 0.1 * w[can].min(axis=1))
    assert (weighted.accept_threshold[~can] == 0).all()
    set_ = make_people(lin_ctx, x, ids, profiles, accept_threshold=0.3)
    np.testing.assert_allclose(set_.accept_threshold, 0.3)
    with pytest.raises(ValueError):
        PeopleSpec.model_validate({"users": {"accept_threshold": -1}})


def test_a_noiseless_person_accepts_exactly_within_the_derived_threshold(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles)
    gt, has = people.ground_truth
    rows = np.flatnonzero(has.numpy())
    tau = people.accept_threshold[rows]
    step = torch.zeros_like(gt[rows])
    step[:, people.feature_names.index("income")] = 1.0
    inside = people.space.unscale(gt[rows] + step * torch.from_numpy(0.9 * tau)[:, None])
    outside = people.space.unscale(gt[rows] + step * torch.from_numpy(1.1 * tau)[:, None])
    session = people.feedback()
    assert session.accept(people.ids[rows], inside.numpy()).all()
    assert not session.accept(people.ids[rows], outside.numpy()).any()


def test_derived_threshold_formula():
    search = GROUND_TRUTH_SEARCHES["actionable"]
    np.testing.assert_allclose(derived_accept_threshold(search, "ground_truth", n=3), [0.1] * 3)
    w = np.array([[2.0, np.inf, 0.5], [np.inf, np.inf, np.inf]])
    np.testing.assert_allclose(derived_accept_threshold(search, "weights", w), [0.05, 0.0])


def test_people_without_the_world_roles_cannot_search_mutable_truth(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = People.from_spec(
        PeopleSpec.model_validate({"users": {"ground_truth": "all_mutable"}}),
        x, ids, 0, lin_ctx.feature_names, lin_ctx.world.roles.actionable,
        ScaledSpace.from_context(lin_ctx), reported=profiles)
    with pytest.raises(ValueError, match="immutable"):
        _ = people.ground_truth


def test_a_ground_truth_is_searched_once_for_the_same_people_and_model(lin_ctx, lin_people,
                                                                       monkeypatch):
    import simstudy.people.preferences as preferences

    x, ids, profiles = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    mask = action_mask(lin_ctx.feature_names, profiles)
    search = replace(GROUND_TRUTH_SEARCHES["actionable"], n_samples=50)
    monkeypatch.setattr(preferences, "_TRUTHS", {})
    searches = []
    monkeypatch.setattr(preferences, "growing_spheres",
                        lambda *a, **k: searches.append(a) or growing_spheres(*a, **k))
    first, found = ground_truth_recourse(space, space.scale(x), mask, ids, 0, "near", search)
    first[:] = -1.0  # a caller's change must not reach the next caller
    again, found_again = ground_truth_recourse(space, space.scale(x), mask, ids, 0, "near",
                                               search)
    assert len(searches) == 1
    # anything the truth depends on is part of the key: another seed or model searches anew
    ground_truth_recourse(space, space.scale(x), mask, ids, 1, "near", search)
    other = ScaledSpace(torch.nn.Linear(space.lower.shape[0], 1).double(), space.lower,
                        space.feature_range)
    ground_truth_recourse(other, space.scale(x), mask, ids, 0, "near", search)
    assert len(searches) == 3
    monkeypatch.setattr(preferences, "_TRUTHS", {})
    fresh, fresh_found = ground_truth_recourse(space, space.scale(x), mask, ids, 0, "near",
                                               search)
    assert torch.equal(again, fresh) and torch.equal(found_again, fresh_found)
    assert not bool((again == -1.0).all())
