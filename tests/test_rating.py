import numpy as np

from simstudy.core.rng import generator
from simstudy.people.rating import RatingResponse, category_probabilities, published_model
from simstudy.people.response_params import DistanceEffect, RatingModel


def test_effect_shapes():
    d = np.arange(1.0, 9.0)
    plateau = DistanceEffect(kind="plateau", slope=0.5, threshold=4.0)(d)
    np.testing.assert_allclose(plateau, -0.5 * (np.minimum(d, 4) - 1))
    np.testing.assert_allclose(DistanceEffect(kind="linear", slope=0.2)(d), -0.2 * (d - 1))
    assert np.all(DistanceEffect(kind="none")(d) == 0)
    dip = DistanceEffect(kind="none", dip=0.4, dip_below=1.0)(d)
    assert dip[0] == -0.4 and np.all(dip[1:] == 0)


def test_probabilities_match_sampled_ratings():
    model = published_model()
    gen = generator(0, "test")
    n = 40000
    effects = model.sample_people(n, gen)
    d = np.full(n, 2.0)
    acc, act = model.rate(d, effects, gen)
    assert acc.min() >= 1 and acc.max() <= 7
    p_acc, p_act = model.rating_probabilities(d, effects)
    np.testing.assert_allclose(np.mean(acc >= 5), p_acc.mean(), atol=0.01)
    np.testing.assert_allclose(np.mean(act >= 5), p_act.mean(), atol=0.01)


def test_blocked_features_and_logit_noise_lower_action():
    model = published_model()
    gen = generator(1, "test")
    eff = model.sample_people(5000, gen)
    d = np.full(5000, 3.0)
    _, free = model.rating_probabilities(d, eff)
    _, blocked = model.rating_probabilities(d, eff, blocked=np.ones(5000, bool))
    assert blocked.mean() < free.mean() - 0.2
    logit = RatingModel(intercept=4.0, sd_intercept=0.0, noise="logistic")
    probs = category_probabilities(logit, np.array([4.0]))
    np.testing.assert_allclose(probs.sum(), 1.0)
    assert probs[0].argmax() == 3
    rm = RatingResponse(act=logit)
    linear = DistanceEffect(kind="linear", slope=1.0)
    assert rm.with_effect("act", linear).act.effect.kind == "linear"
