"""How people read a world's features: mappings invert, ranges stay readable, no float noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simstudy.world.german_credit import GERMAN_CREDIT_PRESENTATION, german_credit_source
from simstudy.world.loan_roles import LOAN_PRESENTATION, LOAN_ROLES
from simstudy.world.presentation import FeatureView, default_view, format_number, parse_number


def test_every_world_feature_has_a_view_and_the_codes_match_the_codebook():
    assert set(LOAN_PRESENTATION) == set(LOAN_ROLES.names)
    roles = german_credit_source().roles()
    assert set(GERMAN_CREDIT_PRESENTATION) == set(roles.names)
    for name, codes in roles.codebook.items():
        assert set(GERMAN_CREDIT_PRESENTATION[name].levels) == set(codes)
    units = {v.unit for v in GERMAN_CREDIT_PRESENTATION.values()}
    assert {"DM", "months", "years"} <= units


@pytest.mark.parametrize("name", ["age", "education", "loan_amount", "loan_duration", "income",
                                  "savings"])
def test_loan_values_map_back_and_stay_in_their_declared_range(name):
    from simstudy.core.rng import generator
    from simstudy.world.loan import LoanSCM

    view = LOAN_PRESENTATION[name]
    j = LOAN_ROLES.index(name)
    x = LoanSCM().sample(20000, generator(0, "presentation")).numpy()[:, j]
    lo, hi = view.bounds(float(x.min()), float(x.max()))
    inside = x[(x >= view.model(lo)) & (x <= view.model(hi))]
    assert len(inside) > 0.9 * len(x)
    shown = np.array([view.display(v) for v in inside])
    assert view.minimum is None or shown.min() >= view.minimum
    assert view.maximum is None or shown.max() <= view.maximum
    back = np.array([view.model(v) for v in shown])
    assert np.allclose(back, inside, rtol=0, atol=1e-9)


def test_no_float_noise_and_no_negative_zero():
    view = default_view("x", -9.77, 8.1)
    assert view.text(5.551e-17) == "0.00" and view.text(-1e-9) == "0.00"
    assert format_number(-0.4, 0) == "0"
    assert LOAN_PRESENTATION["age"].bounds(-26.24, 40.69) == (18.0, 75.0)


def test_numbers_as_people_type_them():
    assert parse_number("12,500") == 12500.0 and parse_number("12.500", ".", ",") == 12500.0
    for bad in ("", "abc", "1/2", "0x10"):
        with pytest.raises(ValueError):
            parse_number(bad)
    assert math.isinf(parse_number("1e400"))


def test_a_view_refuses_mappings_that_do_not_invert():
    with pytest.raises(ValueError):
        FeatureView("x", scale=0.0)
    with pytest.raises(ValueError):
        FeatureView("x", mapping="exp", offset=0.0)
