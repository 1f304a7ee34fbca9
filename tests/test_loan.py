import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from simstudy.core.rng import generator
from simstudy.world import LOAN_ROLES, LoanSCM, causal_order_check, loan_label_probability


def test_abduction_inverts_the_forward_map(loan_world):
    u = loan_world.sample_noise(2000, generator(0, "u"))
    x = loan_world.predict(u)
    assert torch.allclose(loan_world.abduct(x), u, atol=1e-9)
    assert torch.allclose(loan_world.predict(loan_world.abduct(x)), x, atol=1e-9)


def test_graph_is_in_causal_order_and_matches_the_reference():
    causal_order_check(LOAN_ROLES)
    assert LOAN_ROLES.parents["savings"] == ("income",)
    assert LOAN_ROLES.descendants("income") == {"savings"}
    assert LOAN_ROLES.descendants("loan_amount") == {"loan_duration"}
    assert LOAN_ROLES.adjacency().sum() == 11


@pytest.mark.parametrize("feature", ["loan_amount", "loan_duration", "income", "savings"])
def test_intervention_changes_only_the_feature_and_its_descendants(loan_world, feature):
    x = loan_world.sample(500, generator(1, "x"))
    j = LOAN_ROLES.index(feature)
    inter = torch.zeros_like(x, dtype=torch.bool)
    inter[:, j] = True
    values = x.clone()
    values[:, j] = x[:, j] + 3.0
    x_cf = loan_world.counterfactual(x, inter, values)
    changed = {LOAN_ROLES.names[k] for k in range(7) if not torch.allclose(x_cf[:, k], x[:, k])}
    affected = {feature} | LOAN_ROLES.descendants(feature)
    assert changed <= affected
    assert feature in changed
    assert torch.allclose(x_cf[:, j], values[:, j])


def test_counterfactual_propagates_income_to_savings(loan_world):
    x = torch.tensor([[1.0, 0.0, 0.1, 1.0, 2.0, 1.0, 3.0]], dtype=torch.float64)
    inter = torch.zeros(1, 7, dtype=torch.bool)
    inter[0, 5] = True
    x_cf = loan_world.counterfactual(x, inter, torch.full((1, 7), 4.0, dtype=torch.float64))
    # S = -4 + 1.5 * 1[I > 0] * I + U_S: raising income from 1 to 4 adds 1.5 * 3 to savings
    assert x_cf[0, 6].item() == pytest.approx(3.0 + 4.5)


def test_per_row_intervention_sets(loan_world):
    x = loan_world.sample(3, generator(2, "x"))
    inter = torch.tensor([[0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1], [0] * 7], dtype=torch.bool)
    x_cf = loan_world.counterfactual(x, inter, torch.zeros_like(x))
    assert x_cf[0, 3] == 0 and x_cf[1, 6] == 0
    assert torch.allclose(x_cf[2], x[2])


def test_log_density_matches_an_independent_computation(loan_world):
    x = loan_world.sample(200, generator(3, "x")).numpy()
    g, a, e, l_, d, i, s = x.T
    ref = (np.log(0.5) + stats.gamma(10, scale=3.5).logpdf(a + 35)
           + stats.norm(0, 0.5).logpdf(np.log((e + .5) / (.5 - e)) + 1 - .5 * g
                                       - 1 / (1 + np.exp(-.1 * a)))
           - np.log((e + .5) * (.5 - e))
           + stats.norm(0, 2).logpdf(l_ - 1 - .01 * (a - 5) * (5 - a) - (1 - g))
           + stats.norm(0, 3).logpdf(d + 1 - .1 * a - 2 * (1 - g) - l_)
           + stats.norm(0, 2).logpdf(i + 4 - .1 * (a + 35) - 2 * g - g * e)
           + stats.norm(0, 5).logpdf(s + 4 - 1.5 * (i > 0) * i))
    got = loan_world.log_prob(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-8)


def test_log_density_integrates_to_one_over_the_continuous_part(loan_world):
    # Fix gender and age; the density of (E, L, D, I, S) given them must integrate to one.
    # Integrate education numerically on a grid and the Gaussian rest analytically: for a fixed
    # E the remaining noises are additive with unit Jacobian, so we check the E marginal.
    g, a = 1.0, 0.0

    def density_e(e):
        x = torch.tensor([[g, a, e, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
        lp = loan_world.log_prob(x).item()
        u = loan_world.abduct(x)[0]
        # remove the Gaussian terms of L, D, I, S (at their own noise) and the G, A terms
        rest = sum(stats.norm(0, sd).logpdf(u[k].item())
                   for k, sd in ((3, 2.0), (4, 3.0), (5, 2.0), (6, 5.0)))
        return math.exp(lp - rest - math.log(0.5) - stats.gamma(10, scale=3.5).logpdf(a + 35))

    total, _ = integrate.quad(density_e, -0.5 + 1e-12, 0.5 - 1e-12, limit=200)
    assert total == pytest.approx(1.0, abs=1e-6)


def test_log_density_is_minus_infinity_outside_the_support(loan_world):
    x = torch.tensor([[1.0, 0.0, 0.7, 0, 0, 0, 0], [0.5, 0.0, 0.1, 0, 0, 0, 0]],
                     dtype=torch.float64)
    assert torch.isinf(loan_world.log_prob(x)).all()


def test_label_rule():
    x = torch.zeros(4, 7, dtype=torch.float64)
    x[0, 5], x[0, 6] = 1.0, 1.0     # I, S >= 0: score = I + S + I*S = 3 > 0 -> approved
    x[1, 5], x[1, 6] = -1.0, 1.0    # sgn = -1: score = -1 + 1 + 1 = 1 > 0 -> approved
    x[2, 3], x[2, 4] = 2.0, 2.0     # -L - D = -4 -> rejected
    x[3, 5], x[3, 6] = -2.0, -2.0   # -2 - 2 - 4 = -8 -> rejected
    p = loan_label_probability(x)
    assert p[0] == pytest.approx(1 / (1 + math.exp(-0.9)))
    assert (LoanSCM().label(x) == torch.tensor([1, 1, 0, 0])).all()


def test_stochastic_label_needs_a_generator():
    with pytest.raises(ValueError, match="generator"):
        LoanSCM(stochastic_label=True).label(torch.zeros(2, 7, dtype=torch.float64))
