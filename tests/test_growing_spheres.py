import numpy as np
import torch

from simstudy.policies.growing_spheres import GrowingSpheres, GrowingSpheresParams, sample_shell
from simstudy.policies.scaled import action_mask


def test_sample_shell_stays_in_shell_and_subspace():
    center = torch.full((3, 4), 0.5, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    pts = sample_shell(center, mask, torch.full((3,), 0.1, dtype=torch.float64),
                       torch.full((3,), 0.2, dtype=torch.float64), np.arange(3), 0, "t", 50)
    radius = (pts - center[:, None]).norm(dim=2)
    assert bool(((radius >= 0.1 - 1e-12) & (radius <= 0.2 + 1e-12)).all())
    assert bool(((pts - center[:, None]).abs()[~mask[:, None, :].expand_as(pts)] == 0).all())


def test_recourse_is_approved_and_respects_hard_constraints(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    rec = GrowingSpheresParams(n_samples=100).build().fit(lin_ctx).recommend(x, profiles, ids)
    assert rec.found.mean() > 0.9
    with torch.no_grad():
        assert bool(lin_ctx.model(torch.from_numpy(rec.counterfactual[rec.found])).ge(0).all())
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert not (rec.intervened & ~mask).any()
    assert np.array_equal(rec.counterfactual[~mask], x[~mask])


def test_answers_do_not_depend_on_batching(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    gs = GrowingSpheres(n_samples=50).fit(lin_ctx)
    whole = gs.recommend(x, profiles, ids, seed=3)
    part = gs.recommend(x[5:9], profiles.subset(slice(5, 9)), ids[5:9], seed=3)
    np.testing.assert_allclose(part.counterfactual, whole.counterfactual[5:9])
