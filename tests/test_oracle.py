import numpy as np
import pytest

from simstudy.core.rng import entity_uniforms
from simstudy.metrics import evaluate_recourse
from simstudy.people.population import RankingSampler
from simstudy.policies.oracle import CausalOracle, enumerate_one_by_one, oracle_grid
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile


def _profiles(ids, n_actionable, shape="constant", features=None):
    features = features or ("loan_amount", "loan_duration", "income", "savings")
    scores, levels = RankingSampler("uniform", n_actionable).sample(
        features, entity_uniforms(11, "actionability", ids, 2))
    return ActionabilityProfiles(features, scores, levels,
                                 CostProfile(shape=shape, alpha=3.0).weights(scores, levels))


def test_grid_stays_inside_the_range_and_drops_repeats():
    x = np.array([[0.0], [9.0]])
    values, usable = oracle_grid(x, np.array([0.0]), np.array([10.0]), 25)
    assert values.min() >= 0 and values.max() <= 10
    kept = values[0, 0][usable[0, 0]]
    assert len(np.unique(kept)) == len(kept)
    # linspace(2 min - x, 2 max - x) = linspace(0, 20) clipped: values 0, 0.83, ..., 10
    assert kept[0] == 0 and kept[-1] == 10


def test_span_grid_spreads_the_values_over_the_training_range_for_everyone():
    x = np.array([[0.0], [9.0]])
    values, usable = oracle_grid(x, np.array([0.0]), np.array([10.0]), 25, grid="span")
    assert usable.all()
    np.testing.assert_allclose(values[0, 0], np.linspace(0.0, 10.0, 25))
    np.testing.assert_array_equal(values[0], values[1])
    # the published reading keeps about half its 25 values (the rest are clipped repeats)
    clipped, kept = oracle_grid(x, np.array([0.0]), np.array([10.0]), 25)
    assert (kept.sum(axis=2) < 25).all() and not np.array_equal(clipped[0], clipped[1])
    # CARMA's own grid is the published placement without the clipping
    carma, carma_ok = oracle_grid(x, np.array([0.0]), np.array([10.0]), 25, grid="around_x")
    assert carma_ok.all() and carma.min() < 0 and carma.max() > 10
    np.testing.assert_array_equal(np.clip(carma, 0.0, 10.0), clipped)
    with pytest.raises(ValueError, match="grid"):
        oracle_grid(x, np.array([0.0]), np.array([10.0]), 25, grid="range")


def test_the_grid_is_an_option_of_the_oracle_entry():
    from pydantic import ValidationError

    from simstudy.policies.params import OracleParams

    def grid(entry):
        return OracleParams.model_validate({"kind": "oracle", **entry}).build().params.grid

    assert grid({}) == "around_x_clipped" and grid({"grid": "span"}) == "span"
    with pytest.raises(ValidationError):
        OracleParams.model_validate({"kind": "oracle", "span": "range"})


@pytest.mark.parametrize("plausibility", [True, False])
def test_oracle_equals_one_by_one_enumeration(small_loan_context, rejected, plausibility):
    x, ids = rejected
    x, ids = x[:50], ids[:50]
    profiles = _profiles(ids, None, shape="linear")
    oracle = CausalOracle(n_values=5, plausibility=plausibility, chunk_size=7)
    oracle.fit(small_loan_context)
    fast = oracle.recommend(x, profiles, ids)
    inter, values, found, cost = enumerate_one_by_one(oracle, x, profiles)
    assert np.array_equal(fast.found, found)
    assert np.array_equal(fast.intervened, inter)
    np.testing.assert_array_equal(np.nan_to_num(fast.values, nan=-1e9),
                                  np.nan_to_num(values, nan=-1e9))
    ev = evaluate_recourse(small_loan_context.world, small_loan_context.model, x, fast,
                           profiles, small_loan_context.feature_range)
    np.testing.assert_array_equal(ev["cost"][found], cost[found])
    assert found.sum() >= 5  # the comparison covers real recourses, not only "no recourse"


def test_oracle_respects_hard_constraints_and_finds_valid_plausible_recourse(
        small_loan_context, rejected):
    x, ids = rejected
    profiles = _profiles(ids, 2)
    oracle = CausalOracle(n_values=9).fit(small_loan_context)
    rec = oracle.recommend(x, profiles, ids)
    ev = evaluate_recourse(small_loan_context.world, small_loan_context.model, x, rec, profiles,
                           small_loan_context.feature_range)
    assert not ev["violation"].any()
    assert (ev["valid"] == rec.found).all()
    assert ev["plausible"][rec.found].all()
    assert 0 < rec.found.mean() < 1


def test_people_without_actionable_features_get_no_recourse(small_loan_context, rejected):
    x, ids = rejected
    profiles = _profiles(ids[:5], 0)
    rec = CausalOracle(n_values=5).fit(small_loan_context).recommend(x[:5], profiles, ids[:5])
    assert not rec.found.any() and not rec.intervened.any()


def test_chunk_size_does_not_change_the_answer(small_loan_context, rejected):
    x, ids = rejected
    x, ids = x[:40], ids[:40]
    profiles = _profiles(ids, None, shape="convex")
    a = CausalOracle(n_values=7, chunk_size=3).fit(small_loan_context).recommend(x, profiles, ids)
    b = CausalOracle(n_values=7, chunk_size=64).fit(small_loan_context).recommend(x, profiles,
                                                                                   ids)
    assert np.array_equal(a.intervened, b.intervened)
    assert np.array_equal(np.nan_to_num(a.values), np.nan_to_num(b.values))


@pytest.mark.parametrize("placement", ["outside", "inside"])
def test_every_tier_and_block_of_the_pruned_search_stays_exact(small_loan_context, rejected,
                                                              monkeypatch, placement):
    # Small tiers and blocks of a few people exercise every step of the pruned partial sums
    # (threshold, candidates between two tiers, the last tier over everything).
    import dataclasses

    from simstudy.policies import oracle as oracle_module

    monkeypatch.setattr(oracle_module, "_TIERS", (2, 9, 40, 300))
    monkeypatch.setattr(oracle_module, "_BLOCK_NUMBERS", 500)
    x, ids = rejected
    x, ids = x[:30], ids[:30]
    profiles = dataclasses.replace(_profiles(ids, None, shape="convex"),
                                   cost_placement=placement)
    oracle = CausalOracle(n_values=6, chunk_size=11).fit(small_loan_context)
    fast = oracle.recommend(x, profiles, ids)
    inter, values, found, cost = enumerate_one_by_one(oracle, x, profiles)
    assert np.array_equal(fast.found, found) and found.sum() >= 5
    assert np.array_equal(fast.intervened, inter)
    np.testing.assert_array_equal(np.nan_to_num(fast.values, nan=-1e9),
                                  np.nan_to_num(values, nan=-1e9))
    # a person resolved in a later tier scored more candidates than the first tier holds
    assert fast.extras["candidates_evaluated"].max() > 2


@pytest.mark.parametrize("placement", ["outside", "inside"])
def test_pruned_partial_sums_match_every_combination_formed(placement):
    # Terms with ties, zeros and unusable options (inf), as a chunk of people has them; the
    # reference forms every combination's cost by broadcasting, in feature order.
    from simstudy.metrics import finish_cost
    from simstudy.policies.oracle import _candidates_between, _kth_smallest_cost

    rng = np.random.default_rng(5)
    p, m, n_opt = 6, 3, 5
    terms = [np.round(rng.uniform(0, 2, (p, n_opt)), 1) for _ in range(m)]
    for t in terms:
        t[:, 0] = 0.0
        t[rng.uniform(size=(p, n_opt)) < 0.15] = np.inf
        t[:, 0] = 0.0

    def finish(total):
        return finish_cost(total, 4, placement)

    total = terms[0].reshape(p, n_opt, 1, 1) + terms[1].reshape(p, 1, n_opt, 1)
    cost = finish((total + terms[2].reshape(p, 1, 1, n_opt)).reshape(p, -1))
    cost[:, 0] = np.inf
    lower = np.full(p, -np.inf)
    for size in (1, 4, 17, 60):
        upper = np.partition(cost, size - 1, axis=1)[:, size - 1]
        np.testing.assert_array_equal(_kth_smallest_cost(terms, size, finish), upper)
        person, index, got = _candidates_between(terms, lower, upper, size, finish)
        mask = (cost > lower[:, None]) & (cost <= upper[:, None]) & np.isfinite(cost)
        want_person, want_index = np.nonzero(mask)
        np.testing.assert_array_equal(person, want_person)
        np.testing.assert_array_equal(index, want_index)
        np.testing.assert_array_equal(got, cost[want_person, want_index])
        lower = upper
