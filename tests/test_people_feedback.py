import numpy as np
import pytest
import torch
from conftest import make_people

from simstudy.people.answers import NoiseModel, answer_probability
from simstudy.primitives.feedback import Feedback


@pytest.fixture
def people(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    return make_people(lin_ctx, x, ids, profiles, scale="near", n_samples=50,
                       accept_threshold=0.05)


def _near_far(people):
    gt, has = people.ground_truth
    rows = np.flatnonzero(has.numpy())
    near = people.space.unscale(gt[rows]).numpy()
    return rows, near, people.x[rows]


def test_noiseless_people_prefer_the_point_nearer_their_ground_truth(people):
    session = people.feedback()
    assert isinstance(session, Feedback)
    rows, near, far = _near_far(people)
    ids = people.ids[rows]
    assert session.prefer(ids, near, far).all()
    assert not session.prefer(ids, far, near).any()
    assert session.accept(ids, near).all()
    assert not session.accept(ids, far).any()
    assert (session.queries[rows] == 4).all()
    assert session.queries.sum() == 4 * len(rows)


def test_bernoulli_flips_with_probability_one_always_flip(people):
    rows, near, far = _near_far(people)
    session = people.feedback(noise=NoiseModel(kind="bernoulli", p=1.0))
    assert not session.prefer(people.ids[rows], near, far).any()


def test_noise_probabilities():
    gap = torch.tensor([0.3, -0.3], dtype=torch.float64)
    sep = torch.tensor([0.0, 0.0], dtype=torch.float64)
    logistic = answer_probability(NoiseModel(kind="logistic"), gap, sep)
    flip = 1 - torch.sigmoid(torch.tensor(2.0, dtype=torch.float64))
    np.testing.assert_allclose(logistic.numpy(), [1 - flip, flip])
    bt = answer_probability(NoiseModel(kind="bradley_terry", temperature=0.1), gap, sep)
    np.testing.assert_allclose(bt.numpy(), torch.sigmoid(gap / 0.1).numpy())
    with pytest.raises(ValueError):
        NoiseModel(kind="bernoulli", p=1.5)


def test_answers_are_keyed_by_person_not_batch(people):
    rows, near, far = _near_far(people)
    noisy = NoiseModel(kind="bernoulli", p=0.5)
    whole = people.feedback(noise=noisy)
    answers = [whole.prefer(people.ids[rows], near, far) for _ in range(3)]
    half = len(rows) // 2
    part = people.feedback(noise=noisy)
    for q in range(3):
        got = part.prefer(people.ids[rows[half:]], near[half:], far[half:])
        assert got.tolist() == answers[q][half:].tolist()
    # asking in another order gives each person the same answer
    rev = people.feedback(noise=noisy).prefer(people.ids[rows[::-1]], near[::-1], far[::-1])
    assert rev[::-1].tolist() == answers[0].tolist()


def test_unknown_people_are_refused(people):
    with pytest.raises(KeyError):
        people.feedback().accept(np.array([10**9]), people.x[:1])
