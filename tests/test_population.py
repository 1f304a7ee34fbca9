import numpy as np
import pytest

from simstudy.core.rng import entity_uniforms
from simstudy.people.population import (
    GroupAssignment,
    LikertSampler,
    RankingSampler,
    assign_groups,
    permutation_distribution,
)
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.world.loan import LOAN_ROLES

FEATURES = ("loan_amount", "loan_duration", "income", "savings")


def test_fixed_threshold_gives_exactly_k_actionable_features():
    u = entity_uniforms(0, "a", np.arange(2000), 2)
    for k in range(5):
        scores, levels = RankingSampler("uniform", k).sample(FEATURES, u)
        assert levels == 4
        assert ((scores > 0).sum(axis=1) == k).all()
        # the actionable features hold ranks 1..k
        assert (np.sort(scores, axis=1)[:, 4 - k:] == np.arange(1, k + 1)).all()


def test_uniform_threshold_and_uniform_features():
    u = entity_uniforms(1, "a", np.arange(40000), 2)
    scores, _ = RankingSampler("uniform", None).sample(FEATURES, u)
    counts = np.bincount((scores > 0).sum(axis=1), minlength=5)[1:] / len(u)
    np.testing.assert_allclose(counts, 0.25, atol=0.01)
    np.testing.assert_allclose((scores == 1).mean(axis=0), 0.25, atol=0.01)


@pytest.mark.parametrize("bias,top", [("privileged", {"income", "savings"}),
                                      ("non_privileged", {"loan_amount", "loan_duration"}),
                                      ("causal_order", {"loan_amount", "income"}),
                                      ("reverse_causal_order", {"loan_duration", "savings"})])
def test_biased_rankings_put_their_features_on_top(bias, top):
    u = entity_uniforms(2, "a", np.arange(500), 2)
    scores, _ = RankingSampler(bias, 2, LOAN_ROLES.rankings).sample(FEATURES, u)
    for row in scores:
        assert {FEATURES[k] for k in np.flatnonzero(row > 0)} == top


def test_explicit_permutation_probabilities_are_checked():
    perms, probs = permutation_distribution(FEATURES, [1.0] + [0.0] * 23)
    assert probs[0] == 1.0 and len(perms) == 24
    with pytest.raises(ValueError):
        permutation_distribution(FEATURES, [1.0, 2.0])


def test_likert_scores_with_and_without_the_not_actionable_level():
    u = entity_uniforms(3, "a", np.arange(20000), 8)
    scores, levels = LikertSampler(levels=4, allow_not_actionable=False).sample(FEATURES, u)
    assert levels == 4 and scores.min() == 1 and scores.max() == 4
    scores, _ = LikertSampler(levels=4, allow_not_actionable=True).sample(FEATURES, u)
    np.testing.assert_allclose(np.bincount(scores.ravel()) / scores.size, 0.2, atol=0.01)


def test_cost_profiles_order_and_endpoints():
    scores = np.array([[1, 2, 3, 4]])
    w = {s: CostProfile(shape=s, alpha=3.0).weights(scores, 4)[0]
         for s in ("constant", "concave", "linear", "convex")}
    assert (w["constant"] == 1).all()
    for shape in ("concave", "linear", "convex"):
        assert w[shape][0] == 1 and w[shape][-1] == 4
    assert w["concave"][1] > w["linear"][1] > w["convex"][1]
    assert np.isinf(CostProfile(shape="linear").weights(np.array([[0, 1]]), 4)[0, 0])


def test_least_preferred_is_the_worst_actionable_score():
    scores = np.array([[1, 0, 2, 3], [0, 0, 1, 0]])
    prof = ActionabilityProfiles(FEATURES, scores, 4, CostProfile().weights(scores, 4))
    assert prof.least_preferred.tolist() == [[False, False, False, True],
                                             [False, False, True, False]]


def test_group_rules():
    rng = np.random.default_rng(0)
    n = 4000
    x = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n)])
    ids = np.arange(n)
    rule = GroupAssignment(rule="income", privileged_share=0.25, income_feature="f1",
                           gender_feature="f0")
    income = assign_groups(rule, x, ("f0", "f1"), ids, 0)
    assert income["privileged"].mean() == pytest.approx(0.25, abs=0.001)
    assert x[income["privileged"], 1].min() >= x[~income["privileged"], 1].max()
    race = assign_groups(GroupAssignment(rule="attribute", gender_feature="f0"), x, ("f0", "f1"),
                         ids, 0)
    for g in (0, 1):
        members = race["race"][x[:, 0] == g]
        assert abs(members.sum() - len(members) / 2) <= 0.5  # equal gender x race cells
    assert race["privileged"][race["race"] == 0].mean() == pytest.approx(0.9, abs=0.03)
    # the features come from the world (or the document); generic code names none
    with pytest.raises(ValueError, match="income feature"):
        assign_groups(GroupAssignment(rule="income"), x, ("f0", "f1"), ids, 0)
    with pytest.raises(ValueError, match="sensitive feature"):
        assign_groups(GroupAssignment(rule="attribute"), x, ("f0", "f1"), ids, 0)
    assert race["privileged"][race["race"] == 1].mean() == pytest.approx(0.05, abs=0.02)


def test_draws_depend_on_the_applicant_not_the_order():
    ids = np.arange(100)
    a = entity_uniforms(5, "x", ids, 3)
    b = entity_uniforms(5, "x", ids[::-1], 3)[::-1]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, entity_uniforms(6, "x", ids, 3))


def test_named_rankings_come_from_the_world():
    with pytest.raises(ValueError, match="the world names"):
        permutation_distribution(FEATURES, "privileged")
    with pytest.raises(ValueError, match="needs features"):
        permutation_distribution(FEATURES, "privileged", {"privileged": ("income", "zone")})
    perms, probs = permutation_distribution(FEATURES, "privileged", LOAN_ROLES.rankings)
    tops = {frozenset(FEATURES[i] for i in p[:2]) for p, q in zip(perms, probs, strict=True)
            if q > 0}
    assert tops == {frozenset({"income", "savings"})}


def test_profile_columns_sit_where_the_world_puts_the_features():
    u = entity_uniforms(4, "a", np.arange(5), 2)
    scores, levels = RankingSampler("uniform", 2).sample(FEATURES, u)
    profiles = ActionabilityProfiles(FEATURES, scores, levels, CostProfile().weights(scores,
                                                                                      levels))
    assert list(profiles.columns_in(LOAN_ROLES.names)) == LOAN_ROLES.actionable_index
