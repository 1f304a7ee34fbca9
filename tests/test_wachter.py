import numpy as np
import pytest
import torch
from pydantic import ValidationError

from simstudy.policies.scaled import action_mask
from simstudy.policies.wachter import WachterParams


@pytest.mark.parametrize("distance", ["l1", "l2"])
def test_wachter_is_approved_and_respects_hard_constraints(lin_ctx, lin_people, distance):
    x, ids, profiles = lin_people
    rec = WachterParams(distance=distance, steps=100).build().fit(lin_ctx).recommend(
        x, profiles, ids)
    can_act = profiles.actionable.any(axis=1)
    assert rec.found[can_act].mean() > 0.9
    with torch.no_grad():
        assert bool(lin_ctx.model(torch.from_numpy(rec.counterfactual[rec.found])).ge(0).all())
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert np.array_equal(rec.counterfactual[~mask], x[~mask])


def test_spec_refuses_unknown_keys():
    with pytest.raises(ValidationError):
        WachterParams.model_validate({"kind": "wachter", "lamda": 2})


def test_a_value_outside_the_training_range_stays_where_it_is(lin_ctx, lin_people):
    """Clamping to the training range must not move a feature the person cannot act on."""
    x, ids, profiles = lin_people
    mask = action_mask(lin_ctx.feature_names, profiles)
    x = x.copy()
    far = lin_ctx.upper + 0.3 * (lin_ctx.upper - lin_ctx.lower)
    x[~mask] = np.broadcast_to(far, x.shape)[~mask]  # every forbidden value out of range
    rec = WachterParams(steps=50).build().fit(lin_ctx).recommend(x, profiles, ids)
    assert np.array_equal(rec.counterfactual[~mask], x[~mask])
    assert not rec.intervened[~mask].any()


def test_clip_to_box_keeps_the_factual_inside_the_box():
    from simstudy.policies.scaled import clip_to_box

    points = torch.tensor([[1.5, -0.4, 2.0, 1.5]])
    factual = torch.tensor([[1.2, 0.3, 2.0, 0.9]])
    movable = torch.tensor([[True, True, False, True]])
    out = clip_to_box(points, factual, movable)
    # movable: into [min(0, x), max(1, x)]; not movable: left as it is, even outside [0, 1]
    assert torch.equal(out, torch.tensor([[1.2, 0.0, 2.0, 1.0]]))
