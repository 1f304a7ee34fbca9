import numpy as np
import pytest
import torch
from pydantic import ValidationError

from simstudy.policies.space import action_mask
from simstudy.policies.wachter import WachterSpec


@pytest.mark.parametrize("distance", ["l1", "l2"])
def test_wachter_is_approved_and_respects_hard_constraints(lin_ctx, lin_people, distance):
    x, ids, profiles = lin_people
    rec = WachterSpec(distance=distance, steps=100).build().fit(lin_ctx).recommend(
        x, profiles, ids)
    can_act = profiles.actionable.any(axis=1)
    assert rec.found[can_act].mean() > 0.9
    with torch.no_grad():
        assert bool(lin_ctx.model(torch.from_numpy(rec.counterfactual[rec.found])).ge(0).all())
    mask = action_mask(lin_ctx.feature_names, profiles)
    assert np.array_equal(rec.counterfactual[~mask], x[~mask])


def test_spec_refuses_unknown_keys():
    with pytest.raises(ValidationError):
        WachterSpec.model_validate({"kind": "wachter", "lamda": 2})
