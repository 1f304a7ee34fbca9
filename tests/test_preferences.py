import numpy as np
import torch

from simstudy.people.preferences import centred_weights, ground_truth_recourse, profile_weights
from simstudy.primitives.space import ScaledSpace, action_mask


def test_ground_truth_is_approved_and_only_moves_actionable_features(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    space = ScaledSpace.from_context(lin_ctx)
    mask = action_mask(lin_ctx.feature_names, profiles)
    xs = space.scale(x)
    near, found = ground_truth_recourse(space, xs, mask, ids, 0, "near", n_samples=100)
    far, _ = ground_truth_recourse(space, xs, mask, ids, 0, "far", n_samples=100)
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
