import numpy as np
import pytest
import torch

from simstudy.users.feedback import NoiseModel, SimulatedUsers


def _users(noise=None, budget=5, ids=None):
    noise = NoiseModel() if noise is None else noise
    ids = np.arange(4) if ids is None else ids
    x = torch.zeros(len(ids), 2, dtype=torch.float64)
    target = torch.ones(len(ids), 2, dtype=torch.float64)
    return SimulatedUsers(ids, x, seed=1, budget=budget, noise=noise, target=target,
                          accept_threshold=0.5)


def test_noiseless_user_prefers_the_candidate_nearer_its_ground_truth():
    users = _users()
    near = torch.full((4, 2), 0.9, dtype=torch.float64)
    far = torch.full((4, 2), 0.2, dtype=torch.float64)
    asking = torch.tensor([True, True, True, False])
    assert bool(users.compare(near, far, asking).all())
    assert not bool(users.compare(far, near, asking)[:3].any())
    assert users.queries.tolist() == [2, 2, 2, 0]
    assert users.accept(near, asking).tolist() == [True, True, True, False]
    assert not bool(users.accept(far, asking).any())


def test_bernoulli_flips_with_probability_one_always_flip():
    users = _users(NoiseModel("bernoulli", p=1.0))
    near = torch.full((4, 2), 0.9, dtype=torch.float64)
    far = torch.full((4, 2), 0.2, dtype=torch.float64)
    assert not bool(users.compare(near, far, torch.ones(4, dtype=torch.bool)).any())


def test_noise_probabilities():
    gap = torch.tensor([0.3, -0.3], dtype=torch.float64)
    sep = torch.tensor([0.0, 0.0], dtype=torch.float64)
    logistic = NoiseModel("logistic").probability(gap, sep)
    flip = 1 - torch.sigmoid(torch.tensor(2.0, dtype=torch.float64))
    np.testing.assert_allclose(logistic.numpy(), [1 - flip, flip])
    bt = NoiseModel("bradley_terry", temperature=0.1).probability(gap, sep)
    np.testing.assert_allclose(bt.numpy(), torch.sigmoid(gap / 0.1).numpy())
    with pytest.raises(ValueError):
        NoiseModel("bernoulli", p=1.5)


def test_budget_is_enforced():
    users = _users(budget=1)
    a = torch.zeros(4, 2, dtype=torch.float64)
    users.compare(a, a, torch.ones(4, dtype=torch.bool))
    with pytest.raises(RuntimeError):
        users.compare(a, a, torch.ones(4, dtype=torch.bool))


def test_answers_are_keyed_by_person_not_batch():
    noise = NoiseModel("bernoulli", p=0.5)
    a = torch.zeros(8, 2, dtype=torch.float64)
    b = torch.ones(8, 2, dtype=torch.float64)
    whole = _users(noise, budget=3, ids=np.arange(8))
    answers = [whole.compare(a, b, torch.ones(8, dtype=torch.bool)) for _ in range(3)]
    part = _users(noise, budget=3, ids=np.arange(4, 8))
    for q in range(3):
        got = part.compare(a[:4], b[:4], torch.ones(4, dtype=torch.bool))
        assert got.tolist() == answers[q][4:].tolist()
