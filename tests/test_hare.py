import numpy as np
import pytest
import torch
from conftest import make_people
from pydantic import ValidationError

from simstudy.metrics import Recourse, evaluate_recourse
from simstudy.people.answers import NoiseModel
from simstudy.policies.base import RecoursePolicy
from simstudy.policies.growing_spheres import GrowingSpheres
from simstudy.policies.hare import (
    HARE,
    HAREParams,
    actionable_sampling,
    boundary_point_search,
    tournament,
)
from simstudy.policies.scaled import ScaledSpace, action_mask


def _truth(ctx, people, rec):
    """The people's truth columns of a recourse (evaluated like the run tables)."""
    ev = evaluate_recourse(ctx.world, ctx.model, people.x, rec, people.reported,
                           ctx.feature_range)
    return people.truth_columns(ev["x_cf"], ev["found"], rec.intervened & rec.found[:, None])


def test_projection_never_moves_a_non_actionable_feature(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    mask = torch.from_numpy(action_mask(lin_ctx.feature_names, profiles))
    init = torch.randn(len(ids), 4, x.shape[1], dtype=torch.float64,
                       generator=torch.Generator().manual_seed(0))
    p = actionable_sampling(space, space.scale(x), mask, init, steps=10)
    assert bool((p[~mask[:, None, :].expand_as(p)] == 0).all())
    can_act = mask.any(dim=1)
    np.testing.assert_allclose(p[can_act].norm(dim=2).numpy(), 1.0)
    # the diversity loss spreads the directions apart
    gram = p[can_act] @ p[can_act].transpose(1, 2)
    init_p = init * mask[:, None, :]
    init_p = init_p / init_p.norm(dim=2, keepdim=True).clamp_min(1e-12)
    init_gram = init_p[can_act] @ init_p[can_act].transpose(1, 2)
    off = ~torch.eye(4, dtype=torch.bool)
    assert gram[:, off].max(dim=1).values.mean() < init_gram[:, off].max(dim=1).values.mean()


def test_boundary_point_search_returns_approved_point_within_tolerance(lin_ctx, lin_people):
    x, _, _ = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    xs = space.scale(x)
    c = torch.ones(len(xs), 1, xs.shape[1], dtype=torch.float64) * xs[:, None, :]
    c[..., 6] = 1.0  # maximal savings: approved by the linear model
    c[..., 5] = 1.0
    end, ok = boundary_point_search(space, xs, c, 1e-6)
    assert bool(ok.all()) and bool(space.approves(end).all())
    back = (xs[:, None, :] - end) / (xs[:, None, :] - end).norm(dim=2, keepdim=True)
    assert not bool(space.approves(end + 1e-6 * back).any())
    # a candidate that is not approved is returned unchanged and flagged
    same, flagged = boundary_point_search(space, xs, xs[:, None, :].clone(), 1e-6)
    assert not bool(flagged.any()) and torch.equal(same[:, 0], xs)


def test_per_person_bisection_halves_as_often_as_their_own_longest_segment_needs(
        lin_ctx, lin_people):
    x, _, _ = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    xs = space.scale(x)[:2]
    c = xs[:, None, :].clone()
    c[..., 6] = 1.0
    c[..., 5] = 1.0
    c[1, :, 6] = 1000.0  # person 1's segment is far longer: more halvings
    approves = space.approves
    calls = []

    def counting(z):
        calls.append(z.shape[0])
        return approves(z)

    space.approves = counting
    try:
        alone = boundary_point_search(space, xs[:1], c[:1], 1e-6)
        halvings_alone = len(calls) - 1
        calls.clear()
        together = boundary_point_search(space, xs, c, 1e-6, per_person=True)
        halvings_together = len(calls) - 1
        batch = boundary_point_search(space, xs, c, 1e-6)
    finally:
        del space.approves
    assert bool(together[1].all())
    assert halvings_together > halvings_alone  # the other person needs more halvings
    assert torch.equal(together[0][:1], alone[0]) and torch.equal(together[1][:1], alone[1])
    # by default the batch's longest segment sets every person's halvings: person 0 moves
    assert not torch.equal(batch[0][:1], alone[0])
    assert torch.equal(batch[0][1:], together[0][1:])


def test_noiseless_tournament_ends_with_candidate_nearest_ground_truth():
    g = torch.Generator().manual_seed(0)
    n, k, d = 50, 7, 3
    target = torch.rand(n, d, dtype=torch.float64, generator=g)
    cands = torch.rand(n, k, d, dtype=torch.float64, generator=g)
    shown = torch.rand(n, k, generator=g) > 0.3
    shown[:, 0] = True
    order = torch.rand(n, k, generator=g).argsort(dim=1)
    queries = torch.zeros(n, dtype=torch.int64)

    def ask(a, b, asking):
        queries.add_(asking.to(torch.int64))
        return ((a - target).norm(dim=1) <= (b - target).norm(dim=1)) | ~asking

    win, _ = tournament(ask, cands, shown, order, torch.ones(n, dtype=torch.bool))
    dist = torch.where(shown, (cands - target[:, None]).norm(dim=2), torch.inf)
    best = cands[torch.arange(n), dist.argmin(dim=1)]
    assert torch.equal(win, best)
    assert (queries == shown.sum(dim=1) - 1).all()


def test_hare_gets_closer_to_the_hidden_truth_than_its_base(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far", n_samples=50)
    hare = HARE(GrowingSpheres(n_samples=50), budget=12, iterations=2, steps=30).fit(lin_ctx)
    rec = hare.recommend(x, profiles, ids, feedback=people.feedback())
    e = rec.extras
    assert (e["queries"] <= 12).all()
    mine, base = _truth(lin_ctx, people, rec), _truth(lin_ctx, people, rec.base)
    assert np.nanmean(mine["gtd"]) < np.nanmean(base["gtd"])
    assert np.nanmean(mine["gtp"]) < np.nanmean(base["gtp"])
    assert (e["violations"] == 0).all()
    with pytest.raises(ValueError, match="feedback"):
        hare.recommend(x, profiles, ids)
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert not (rec.intervened & ~mask).any()
    with torch.no_grad():
        assert bool(lin_ctx.model(torch.from_numpy(rec.counterfactual[rec.found])).ge(0).all())


def test_keep_best_never_ends_further_from_the_truth_than_its_first_iteration(
        lin_ctx, lin_people):
    # the first iteration of (B = 12, T = 3) is exactly (B = 4, T = 1): same keys, same k
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far", n_samples=50)

    def hidden_loss(budget, iterations, keep_best):
        hare = HARE(GrowingSpheres(n_samples=50), budget=budget, iterations=iterations,
                    steps=30, early_stop=False, keep_best=keep_best).fit(lin_ctx)
        rec = hare.recommend(x, profiles, ids, feedback=people.feedback())
        return people.loss(rec.counterfactual)

    first = hidden_loss(4, 1, False)
    kept = hidden_loss(12, 3, True)
    assert (kept <= first + 1e-12).all()
    # without the incumbent a later iteration can discard what the person preferred
    forgetful = hidden_loss(12, 3, False)
    assert (forgetful > first + 1e-9).any()
    with pytest.raises(ValidationError):
        HAREParams.model_validate({"kind": "hare", "keep_best": "sometimes"})
    assert HAREParams.model_validate({"kind": "hare", "keep_best": True}).build().params.keep_best


def test_spec_builds_multi_hare_and_refuses_bad_documents():
    spec = HAREParams.model_validate({"kind": "hare", "base": {"kind": "growing_spheres"},
                                    "iterations": 5})
    policy = spec.build()
    assert policy.params.iterations == 5 and isinstance(policy.base, GrowingSpheres)
    # the people who answer are the scenario's, not the policy's
    with pytest.raises(ValidationError, match="users"):
        HAREParams.model_validate({"kind": "hare", "users": {"scale": "near"}})
    with pytest.raises(ValidationError):
        HAREParams.model_validate({"kind": "hare", "budgett": 3})


class _RaiseIncome(RecoursePolicy):
    """A causal stand-in: intervene on income alone (where actionable), no point proposed."""

    def recommend(self, x, profiles, ids, seed=0, feedback=None):
        names = self.context_.feature_names
        mask = action_mask(names, profiles)
        intervened = np.zeros_like(mask)
        i = names.index("income")
        intervened[:, i] = mask[:, i]
        values = x.copy()
        values[:, i] = self.context_.upper[i]
        return Recourse(intervened, values, intervened.any(axis=1))


def test_hare_over_a_causal_base_treats_downstream_effects_as_effects(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="near", n_samples=50)
    hare = HARE(_RaiseIncome(), budget=6, iterations=2, steps=20).fit(lin_ctx)
    rec = hare.recommend(x, profiles, ids, feedback=people.feedback())
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert not (rec.intervened & ~mask).any()
    assert (rec.extras["violations"] == 0).all()
    # savings follows income in the Loan SCM: it moves for people who may not act on it
    savings = lin_ctx.feature_names.index("savings")
    moved = rec.found & (rec.counterfactual[:, savings] != x[:, savings]) & ~mask[:, savings]
    assert moved.any()


def test_hare_over_a_causal_base_shows_the_worlds_counterfactual_of_its_action(lin_ctx,
                                                                                lin_people):
    """Over a causal base HARE searches and bisects intervention values: every point shown is
    the world's counterfactual of the action behind it, for people beyond the training range
    too, and it lies on the decision boundary along its segment of actions."""
    from simstudy.checks import beyond_range
    from simstudy.primitives.consistency import world_counterfactual

    x, ids, profiles = lin_people
    mask = action_mask(lin_ctx.feature_names, profiles)
    x = beyond_range(x, mask, lin_ctx.lower, lin_ctx.upper)
    people = make_people(lin_ctx, x, ids, profiles, scale="far", n_samples=50)
    hare = HARE(_RaiseIncome(), budget=6, iterations=2, steps=20, early_stop=False).fit(lin_ctx)
    rec = hare.recommend(x, profiles, ids, feedback=people.feedback())
    found = rec.found
    assert found.sum() >= 5 and not (rec.intervened & ~mask).any()
    caused = world_counterfactual(lin_ctx.world, x, rec.intervened, rec.values)
    np.testing.assert_allclose(rec.counterfactual[found], caused[found], rtol=0, atol=1e-9)
    # the search moved beyond the base's lone income action for some people
    assert (rec.intervened[found].sum(axis=1) > 1).any()
    with torch.no_grad():
        assert bool(lin_ctx.model(torch.from_numpy(rec.counterfactual[found])).ge(0).all())
        # a recourse found by the search (not the base's, kept when no candidate was approved)
        # is on the boundary: a slightly smaller action (towards the factual) is rejected
        base = world_counterfactual(lin_ctx.world, x, rec.base.intervened, rec.base.values)
        # (people whom the move beyond the range made approved already are left out)
        rejected = lin_ctx.model(torch.from_numpy(x)).lt(0).numpy()
        searched = found & rejected & (np.abs(rec.counterfactual - base) > 1e-9).any(axis=1)
        assert searched.sum() >= 5
        back = np.where(rec.intervened, x + (1 - 1e-4) * (rec.values - x), np.nan)
        shy = world_counterfactual(lin_ctx.world, x, rec.intervened, back)
        assert not bool(lin_ctx.model(torch.from_numpy(shy[searched])).ge(0).any())


@pytest.mark.parametrize("weights", ["centres", "profile"])
def test_weighted_users_get_their_cheapest_candidate(lin_ctx, lin_people, weights):
    x, ids, profiles = lin_people

    people = make_people(lin_ctx, x, ids, profiles, preference="weights", weights=weights)

    def extras(noise):
        hare = HARE(GrowingSpheres(n_samples=50), budget=8, iterations=1, steps=20,
                    early_stop=False).fit(lin_ctx)
        rec = hare.recommend(x, profiles, ids, feedback=people.feedback(noise=noise))
        return {**rec.extras, "user_loss": people.loss(rec.counterfactual)}

    honest = extras(NoiseModel())
    random = extras(NoiseModel(kind="bernoulli", p=0.5))
    assert "gtd" not in _truth(lin_ctx, people, HARE(GrowingSpheres(n_samples=50), budget=2)
                               .fit(lin_ctx).recommend(x, profiles, ids,
                                                       feedback=people.feedback()))
    assert (honest["queries"] <= 7).all() and not honest["accepted"].any()
    # one iteration shows both the same candidates; an honest person picks the cheapest
    assert (honest["user_loss"] <= random["user_loss"] + 1e-12).all()
    assert honest["user_loss"].mean() < random["user_loss"].mean()


def test_hare_over_the_causal_oracle(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    spec = HAREParams.model_validate({"kind": "hare", "base": {"kind": "oracle", "n_values": 5},
                                    "budget": 4, "iterations": 2, "steps": 10})
    people = make_people(lin_ctx, x, ids, profiles, scale="near", n_samples=50)
    rec = spec.build().fit(lin_ctx).recommend(x, profiles, ids, feedback=people.feedback())
    assert (rec.extras["violations"] == 0).all()
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert not (rec.intervened & ~mask).any()
    assert rec.extras["base_found"].any()


class _FindsForHalf(RecoursePolicy):
    """A base generator that finds a recourse (the factual's savings set to the maximum) for
    every other person only."""

    def recommend(self, x, profiles, ids, seed=0):
        names = self.context_.feature_names
        j = names.index("savings")
        found = np.arange(len(x)) % 2 == 0
        intervened = np.zeros(x.shape, dtype=bool)
        intervened[found, j] = True
        values = np.where(intervened, self.context_.upper[j], np.nan)
        cf = np.where(intervened, values, x)
        return Recourse(intervened, values, found, counterfactual=cf)


def test_hare_keeps_the_base_success_rate(lin_ctx, lin_people):
    """As published, HARE refines the base: nobody the base failed is searched or helped."""
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far", n_samples=50)
    everyone = profiles.universal()  # savings actionable for all
    hare = HARE(_FindsForHalf(), budget=6, iterations=1, steps=10).fit(lin_ctx)
    rec = hare.recommend(x, everyone, ids, feedback=people.feedback())
    base_found = rec.extras["base_found"]
    assert base_found.any() and not base_found.all()
    np.testing.assert_array_equal(rec.found, base_found)
    assert (rec.extras["queries"][~base_found] == 0).all()
    assert (rec.extras["unapproved_candidates"] >= 0).all()
    # the earlier variant searches from the factual and can exceed the base
    loose = HARE(_FindsForHalf(), budget=6, iterations=1, steps=10,
                 search_without_base=True).fit(lin_ctx)
    rec2 = loose.recommend(x, everyone, ids, feedback=people.feedback())
    assert (rec2.extras["queries"][~base_found] > 0).any()
    assert HAREParams.model_validate({"kind": "hare", "search_without_base": True}).build(
    ).params.search_without_base


@pytest.mark.parametrize("threshold", [None, 0.3])
def test_noiseless_people_stop_exactly_when_within_their_threshold(lin_ctx, lin_people,
                                                                  threshold):
    """HARE's early stop follows the person's threshold: derived from their model (half the
    truth search's shell width) unless the scenario sets it."""
    x, ids, profiles = lin_people
    everyone = profiles.universal()
    people = make_people(lin_ctx, x, ids, everyone, scale="near", accept_threshold=threshold)
    tau = people.accept_threshold
    assert np.allclose(tau, 0.1 if threshold is None else threshold)
    hare = HARE(GrowingSpheres(n_samples=50), budget=12, iterations=3, steps=30).fit(lin_ctx)
    rec = hare.recommend(x, everyone, ids, feedback=people.feedback())
    asked = rec.extras["iterations_run"] > 0
    gtp = _truth(lin_ctx, people, rec)["gtp"]
    gtp = np.where(rec.found, gtp, np.linalg.norm(
        people.space.scale(x).numpy() - people.ground_truth[0].numpy(), axis=1))
    accepted = rec.extras["accepted"]
    # the last question asked was "is this satisfactory?" about the final recourse
    np.testing.assert_array_equal(accepted[asked], gtp[asked] <= tau[asked])
    assert accepted.any()
    stopped = accepted & (rec.extras["iterations_run"] < 3)
    assert (rec.extras["queries"][stopped] < 12).all()
