import numpy as np

from simstudy.core.rng import generator
from simstudy.people.rating import published_model
from simstudy.study.simulated import (
    _MONOTONE,
    STUDY_COLUMNS,
    ProfilePool,
    approval_score,
    choose_recourses,
    distances,
    simulate_study,
)


def test_distances_follow_published_definitions():
    person = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    cand = person.copy()
    cand[0] = 2      # categorical: counts 1
    cand[4] = 10     # position 1 -> 10 of 10 levels: full range, counts 1
    sp, pr = distances(person, cand[None, :])
    assert sp[0] == 2
    np.testing.assert_allclose(pr[0], 2.0)


def test_recourses_respect_monotone_features_and_are_approved():
    gen = generator(0, "pool")
    pool = ProfilePool(size=1500).fit(gen)
    person = pool.sample_rejected(1, gen)[0]
    assert approval_score(person[None, :])[0] < pool.threshold_
    chosen = choose_recourses(person, pool.approved_, 5, gen)
    assert len(chosen) == 5 and len(set(chosen.tolist())) == 5
    cand = pool.approved_[chosen]
    assert np.all(cand[:, _MONOTONE] >= person[_MONOTONE])
    sp, pr = distances(person, pool.approved_)
    feasible = np.all((pool.approved_ >= person) | ~_MONOTONE, axis=1)
    assert sp[chosen[0]] == sp[feasible & (sp > 0)].min()
    # The most proximate candidate is shown (the next one if it is also the sparsest).
    assert np.isclose(pr[chosen[:2]].min(), pr[feasible & (sp > 0)].min())


def test_study_table_schema_and_exclusions():
    def run():
        gen = generator(3, "study", 0)
        return simulate_study(40, published_model(), gen, pool=ProfilePool(size=1200).fit(gen))

    table = run()
    assert list(table.columns[:6]) == STUDY_COLUMNS
    assert {"gender", "age_group"} <= set(table.columns)
    assert table["uid"].nunique() <= 40 and len(table) <= 200
    assert table["accept"].between(1, 7).all() and table["act"].between(1, 7).all()
    assert (table["sparsity"] >= 1).all()
    assert run().equals(table)  # keyed stream: same seed and key, same study
