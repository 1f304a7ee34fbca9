"""The response-model protocol: every registered kind, and the calibrated rating model's
published shape."""

from __future__ import annotations

import numpy as np
import pytest

from simstudy.core.normal_draws import entity_normals
from simstudy.core.registry import entries
from simstudy.core.rng import entity_uniforms
from simstudy.people import ResponseInputs, ResponseModel


def _inputs(n=400, sparsity=None, seed=0, blocked=None):
    z = entity_normals(seed, "test-people", np.arange(n), 4)
    sparsity = np.full(n, 2.0) if sparsity is None else np.asarray(sparsity, float)
    cost = 0.1 * sparsity
    return ResponseInputs(cost=cost, cost_unweighted=cost, sparsity=sparsity,
                          proximity_l1=0.2 * sparsity, accept_effect=z[:, 0],
                          act_effect=z[:, 1], accept_slope_effect=z[:, 2],
                          act_slope_effect=z[:, 3], blocked=blocked)


def test_rating_and_logistic_are_registered():
    assert {"logistic", "rating"} <= set(entries("response"))


@pytest.mark.parametrize("kind", sorted(entries("response")))
def test_probabilities_and_ratings_of_every_kind(kind):
    model = entries("response")[kind]().build()
    assert isinstance(model, ResponseModel)
    inputs = _inputs(sparsity=np.tile([1, 2, 3, 4, 5], 80))
    p_accept, p_act = model.probabilities(inputs)
    for p in (p_accept, p_act):
        assert p.shape == (400,) and np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()
    u = entity_uniforms(0, "test-ratings", np.arange(400), 2)
    accept, act = model.ratings(inputs, u)
    low, high = model.scale
    for r in (accept, act):
        assert r.dtype.kind == "i" and r.min() >= low and r.max() <= high
    # keyed: the same uniforms give the same answers, row by row
    again, _ = model.ratings(_inputs(sparsity=np.tile([1, 2, 3, 4, 5], 80)), u)
    np.testing.assert_array_equal(accept, again)
    # a rating at or above the threshold is as likely as the probability says
    yes = (accept >= (model.threshold if kind == "rating" else 1)).mean()
    assert abs(yes - p_accept.mean()) < 4 * np.sqrt(0.25 / 400)


def test_rating_model_acceptance_ignores_distance_and_action_falls_with_sparsity():
    model = entries("response")["rating"]().build()
    n = 2000
    by_sparsity = {}
    for s in (1, 2, 3, 4, 6):
        by_sparsity[s] = [p.mean() for p in model.probabilities(_inputs(n, np.full(n, s)))]
    accept = np.array([v[0] for v in by_sparsity.values()])
    act = np.array([v[1] for v in by_sparsity.values()])
    # as published: acceptance shows no relation to distance ...
    assert np.ptp(accept) < 0.02
    # ... and the willingness to act falls from one to four changed features, flat beyond
    assert (np.diff(act[:4]) < 0).all() and act[0] - act[3] > 0.1
    assert abs(act[4] - act[3]) < 0.02
    # a recourse needing a feature the person truly cannot change is acted on less often
    _, free = model.probabilities(_inputs(n))
    _, blocked = model.probabilities(_inputs(n, blocked=np.ones(n, bool)))
    assert blocked.mean() < free.mean() - 0.2


def test_rating_model_persons_differ_and_keep_their_disposition():
    model = entries("response")["rating"]().build()
    p, _ = model.probabilities(_inputs())
    assert p.std() > 0.1  # large person effects, as in the published study
    keen = np.argmax(p)
    assert _inputs().accept_effect[keen] == _inputs().accept_effect.max()
