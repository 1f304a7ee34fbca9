"""The policy interface: universal (non-personalized) recourse from any policy entry."""

import numpy as np

from simstudy.core.registry import entries
from simstudy.metrics import evaluate_recourse
from simstudy.policies import CausalOracle, UniversalPolicy


def test_every_policy_entry_has_the_personalized_switch():
    for kind, spec_cls in entries("policy").items():
        assert "personalized" in spec_cls.model_fields, kind
        assert spec_cls.model_fields["personalized"].default is True, kind


def test_personalized_false_wraps_the_policy():
    spec = entries("policy")["oracle"].model_validate({"kind": "oracle", "personalized": False})
    assert isinstance(spec.policy(), UniversalPolicy)
    spec = entries("policy")["oracle"].model_validate({"kind": "oracle"})
    assert isinstance(spec.policy(), CausalOracle)


def test_universal_oracle_ignores_profiles_and_can_violate_them(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    universal = UniversalPolicy(CausalOracle()).fit(lin_ctx)
    rec = universal.recommend(x, profiles, ids)
    # the same answer as the oracle given everyone the all-actionable, unit-cost profile
    ref = CausalOracle().fit(lin_ctx).recommend(x, profiles.universal(), ids)
    np.testing.assert_array_equal(rec.intervened, ref.intervened)
    np.testing.assert_array_equal(rec.found, ref.found)
    # judged against each person's own profile, some universal recourses act on a feature
    # the person cannot change, which the personalized oracle never does
    ev = evaluate_recourse(lin_ctx.world, lin_ctx.model, x, rec, profiles, lin_ctx.feature_range)
    assert ev["violation"].any()
    own = CausalOracle().fit(lin_ctx).recommend(x, profiles, ids)
    ev_own = evaluate_recourse(lin_ctx.world, lin_ctx.model, x, own, profiles,
                               lin_ctx.feature_range)
    assert not ev_own["violation"].any()
    assert universal.recommend(x, profiles, ids).found.sum() >= own.found.sum()
