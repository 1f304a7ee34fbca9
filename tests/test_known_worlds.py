"""CARMA's known worlds against their structural equations, written out again here."""

import itertools

import numpy as np
import pytest
import torch
from scipy import special, stats

from simstudy.checks import check_policy, check_profiles, check_world, example_spec
from simstudy.core.registry import kinds
from simstudy.core.rng import generator
from simstudy.people import People, PeopleSpec
from simstudy.policies.base import RecourseContext
from simstudy.policies.oracle import CausalOracle
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.primitives.space import ScaledSpace
from simstudy.world import AdditiveNoiseSCM, LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.known import KNOWN_TABLES, LOAN_TABLE, known_world

KINDS = sorted(KNOWN_TABLES)
sig = special.expit


# -- the equations, independently: noise -> features, features -> noise, label score -----------
def forward(kind, u):
    s, u1, u2, u3 = u.T
    if kind == "chain_linear":
        x1 = s + u1
        x2 = s + 0.5 * x1 + u2
        x3 = 0.25 * s + 0.5 * x2 + u3
    elif kind == "chain_non_linear":
        x1 = s + u1
        x2 = s + 3 / (1 + np.exp(-2 * x1)) + u2
        x3 = 0.25 * s + x2**2 + u3
    elif kind == "collider_linear":
        x1 = s + u1
        x2 = 0.5 * s + u2
        x3 = 0.05 * s + 0.25 * x1 + 0.25 * x2 + u3
    elif kind == "collider_non_linear":
        x1 = 0.5 * s + u1
        x2 = 0.5 * s + u2
        x3 = 0.25 * s + 0.25 * x1**2 + 0.25 * x2**2 + u3
    elif kind == "triangle_linear":
        x1 = s + u1
        x2 = x1 + u2
        x3 = s + 0.25 * x1 + 0.5 * x2 + u3
    else:
        x1 = s + u1
        x2 = -1 + 3 / (1 + np.exp(-2 * x1)) + u2
        x3 = s + 0.25 * x1**2 + 0.5 * x2 + u3
    return np.stack([s, x1, x2, x3], axis=1)


def inverse(kind, x):
    s, x1, x2, x3 = x.T
    u1 = x1 - (0.5 * s if kind == "collider_non_linear" else s)
    if kind == "chain_linear":
        u2, u3 = x2 - s - 0.5 * x1, x3 - 0.25 * s - 0.5 * x2
    elif kind == "chain_non_linear":
        u2, u3 = x2 - s - 3 * sig(2 * x1), x3 - 0.25 * s - x2**2
    elif kind == "collider_linear":
        u2, u3 = x2 - 0.5 * s, x3 - 0.05 * s - 0.25 * x1 - 0.25 * x2
    elif kind == "collider_non_linear":
        u2, u3 = x2 - 0.5 * s, x3 - 0.25 * s - 0.25 * x1**2 - 0.25 * x2**2
    elif kind == "triangle_linear":
        u2, u3 = x2 - x1, x3 - s - 0.25 * x1 - 0.5 * x2
    else:
        u2, u3 = x2 + 1 - 3 * sig(2 * x1), x3 - s - 0.25 * x1**2 - 0.5 * x2
    return np.stack([s, u1, u2, u3], axis=1)


def score(kind, x):
    s, x1, x2, x3 = x.T
    u1 = inverse(kind, x)[:, 1]
    if kind.endswith("_linear") and not kind.endswith("non_linear"):
        return x1 + 0.5 * x2 + x3 + 0.5 * u1
    if kind == "chain_non_linear":
        return x1**3 + x2 + 0.75 * np.exp(x3) + 0.5 * u1 - 50
    if kind == "collider_non_linear":
        return x1**3 + x2 + 3 * x3 + 0.5 * u1
    return -1 + 2**x1 + 0.75 * x2**-3.0 + 0.1 * x3**2 + 0.5 * u1


def u2_sd(kind):
    return np.sqrt(0.1) if kind in ("collider_non_linear", "triangle_non_linear") else 1.0


def mixture_logpdf(u):
    return np.logaddexp(np.log(0.5) + stats.norm(-2, np.sqrt(1.5)).logpdf(u),
                        np.log(0.5) + stats.norm(1.5, 1).logpdf(u))


def log_density(kind, x):
    u = inverse(kind, x)
    sex_ok = np.isin(u[:, 0], (0.0, 1.0))
    lp = (np.log(0.5) + mixture_logpdf(u[:, 1]) + stats.norm(0, u2_sd(kind)).logpdf(u[:, 2])
          + stats.norm(0, 1).logpdf(u[:, 3]))
    return np.where(sex_ok, lp, -np.inf)


def natural_value(kind, j, x, u):
    """Feature ``j`` from its parents' values (columns of ``x``) and its noise ``u``."""
    s, x1, x2 = x[:, 0], x[:, 1], x[:, 2]
    if j == 0:
        return u
    if j == 1:
        return (0.5 * s if kind == "collider_non_linear" else s) + u
    if j == 2:
        return {"chain_linear": s + 0.5 * x1, "chain_non_linear": s + 3 * sig(2 * x1),
                "collider_linear": 0.5 * s, "collider_non_linear": 0.5 * s,
                "triangle_linear": x1, "triangle_non_linear": -1 + 3 * sig(2 * x1)}[kind] + u
    return {"chain_linear": 0.25 * s + 0.5 * x2, "chain_non_linear": 0.25 * s + x2**2,
            "collider_linear": 0.05 * s + 0.25 * x1 + 0.25 * x2,
            "collider_non_linear": 0.25 * s + 0.25 * x1**2 + 0.25 * x2**2,
            "triangle_linear": s + 0.25 * x1 + 0.5 * x2,
            "triangle_non_linear": s + 0.25 * x1**2 + 0.5 * x2}[kind] + u


def counterfactual_np(kind, x, intervened, values):
    u = inverse(kind, x)
    out = np.zeros_like(x)
    for j in range(4):
        out[:, j] = np.where(intervened[:, j], values[:, j], natural_value(kind, j, out, u[:, j]))
    return out


# -- the worlds against the equations ----------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_forward_and_abduction_follow_the_equations(kind):
    world = known_world(kind)
    u = world.sample_noise(3000, generator(0, kind))
    x = world.predict(u).numpy()
    np.testing.assert_allclose(x, forward(kind, u.numpy()), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(world.abduct(torch.from_numpy(x)).numpy(), inverse(kind, x),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(world.abduct(torch.from_numpy(x)).numpy(), u.numpy(), atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_log_density_and_label_follow_the_equations(kind):
    world = known_world(kind)
    x = world.sample(3000, generator(1, kind))
    np.testing.assert_allclose(world.log_prob(x).numpy(), log_density(kind, x.numpy()),
                               rtol=1e-10, atol=1e-10)
    expected = (sig(score(kind, x.numpy())) >= 0.5).astype(np.int64)
    assert np.array_equal(world.label(x).numpy(), expected)
    assert 0.05 < expected.mean() < 0.95  # both labels occur
    off = x.clone()
    off[:, 0] = 0.5  # the sensitive attribute is binary: no density in between
    assert torch.isinf(world.log_prob(off)).all()


@pytest.mark.parametrize("kind", KINDS)
def test_counterfactuals_follow_the_equations(kind):
    world = known_world(kind)
    x = world.sample(500, generator(2, kind))
    rng = np.random.default_rng(0)
    intervened = rng.random((500, 4)) < 0.5
    intervened[:, 0] = False
    values = x.numpy() + rng.normal(0, 1, (500, 4))
    got = world.counterfactual(x, torch.from_numpy(intervened), torch.from_numpy(values))
    np.testing.assert_allclose(got.numpy(), counterfactual_np(kind, x.numpy(), intervened, values),
                               rtol=1e-10, atol=1e-10)
    cf, lp = world.intervene_with_log_prob(world.abduct(x), torch.from_numpy(intervened),
                                           torch.from_numpy(values))
    np.testing.assert_allclose(lp.numpy(), log_density(kind, cf.numpy()), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_noise_has_the_stated_distributions(kind):
    u = known_world(kind).sample_noise(20000, generator(3, kind)).numpy()
    assert np.isin(u[:, 0], (0, 1)).all() and abs(u[:, 0].mean() - 0.5) < 0.02

    def mixture_cdf(v):
        return 0.5 * stats.norm(-2, np.sqrt(1.5)).cdf(v) + 0.5 * stats.norm(1.5, 1).cdf(v)

    assert stats.kstest(u[:, 1], mixture_cdf).pvalue > 1e-3
    assert stats.kstest(u[:, 2], stats.norm(0, u2_sd(kind)).cdf).pvalue > 1e-3
    assert stats.kstest(u[:, 3], stats.norm(0, 1).cdf).pvalue > 1e-3


def test_the_loan_table_is_the_loan_world():
    table, loan = AdditiveNoiseSCM(LOAN_TABLE), LoanSCM()
    x = table.sample(2000, generator(4, "loan"))
    assert torch.equal(x, loan.sample(2000, generator(4, "loan")))
    torch.testing.assert_close(table.abduct(x), loan.abduct(x), rtol=1e-12, atol=1e-12)
    # LoanSCM keeps its gender mass log(0.5) in float32 (a constant 1.9e-9 lower)
    torch.testing.assert_close(table.log_prob(x), loan.log_prob(x), rtol=0, atol=3e-9)
    assert torch.equal(table.label(x), loan.label(x))
    inter = torch.zeros_like(x, dtype=torch.bool)
    inter[:, 5] = True
    torch.testing.assert_close(table.counterfactual(x, inter, x + 2.0),
                               loan.counterfactual(x, inter, x + 2.0), rtol=1e-12, atol=1e-12)


def test_the_equations_can_fail():
    # a world whose x3 equation drops a term is caught by the independent equations
    world = known_world("triangle_linear")
    u = world.sample_noise(50, generator(5, "x")).numpy()
    assert not np.allclose(forward("chain_linear", u), forward("triangle_linear", u))


# -- exact oracle against an independent brute force ---------------------------------------------
def small_context(kind, n=600, epochs=15):
    world = known_world(kind)
    data = sample_world_data(world, n, generator(0, f"known-{kind}"))
    model = train_decision_model(data, DecisionConfig(hidden=(8,), epochs=epochs), seed=0)
    return RecourseContext(world, model, data, 0)


def brute_force(kind, context, x, actionable, n_values):
    """Every action of every person, one at a time, with the equations and density above."""
    lower, upper, span = context.lower, context.upper, context.feature_range
    out = []
    for i in range(len(x)):
        options = []
        for j in range(1, 4):
            if not actionable[i, j - 1]:
                options.append([None])
                continue
            grid = np.clip(np.linspace(2 * lower[j] - x[i, j], 2 * upper[j] - x[i, j], n_values),
                           lower[j], upper[j])
            keep = np.r_[True, grid[1:] != grid[:-1]]
            options.append([None, *grid[keep]])
        lp_factual = log_density(kind, x[i:i + 1])[0]
        best = (np.inf, None)
        for combo in itertools.product(*options):
            if all(v is None for v in combo):
                continue
            inter = np.array([[False] + [v is not None for v in combo]])
            vals = np.array([[0.0] + [0.0 if v is None else v for v in combo]])
            cf = counterfactual_np(kind, x[i:i + 1], inter, vals)
            if log_density(kind, cf)[0] < lp_factual:
                continue
            with torch.no_grad():
                if context.model(torch.from_numpy(cf)).item() < 0:
                    continue
            delta = np.where(inter[0, 1:], (vals[0, 1:] - x[i, 1:]) / span[1:], 0.0)
            cost = float(np.sum(delta**2) / 3)
            if cost < best[0]:
                best = (cost, (inter[0], vals[0]))
        out.append(best)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_oracle_equals_brute_force(kind):
    context = small_context(kind)
    with torch.no_grad():
        rejected = np.flatnonzero(~context.model.approves(context.data.x_test).numpy())[:12]
    assert len(rejected) >= 4
    x = context.data.x_test.numpy()[rejected]
    rng = np.random.default_rng(0)
    actionable = rng.random((len(x), 3)) < 0.7
    actionable[0] = True
    features = context.world.roles.actionable
    profiles = ActionabilityProfiles(features, actionable.astype(int), 1,
                                     np.where(actionable, 1.0, np.inf))
    rec = CausalOracle(n_values=7).fit(context).recommend(x, profiles, rejected)
    expected = brute_force(kind, context, x, actionable, 7)
    assert rec.found.tolist() == [a is not None for _, a in expected]
    assert rec.found.any()
    for i, (_, action) in enumerate(expected):
        if action is None:
            continue
        assert rec.intervened[i].tolist() == action[0].tolist()
        # the grid's values agree to the last bits (np.linspace rounds its own way)
        np.testing.assert_allclose(rec.values[i][action[0]], action[1][action[0]], rtol=1e-12)


# -- the contract checks on every world and policy -----------------------------------------------
@pytest.fixture(scope="module", params=KINDS)
def known_context(request):
    kind = request.param
    world, data, _ = example_spec("world", kind).build(0)
    model = train_decision_model(data, DecisionConfig(hidden=(8,), epochs=5), seed=0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)[:8]
    return kind, RecourseContext(world, model, data, 0), data.x_test[idx].numpy(), idx.numpy()


def test_every_known_world_keeps_the_world_contract(known_context):
    kind, context, _, _ = known_context
    check_world(context.world, context.data.x_test[:100], name=kind, needs_label=True)


#: tolerance of HARE's values across batch shapes on these worlds (measured drift: 1.1e-5)
HARE_BATCH_RTOL = 1e-4


@pytest.mark.parametrize("policy", kinds("policy"))
def test_every_policy_keeps_its_contract_on_every_known_world(known_context, policy):
    kind, context, x, ids = known_context
    assert len(ids) >= 4
    spec = example_spec("policy", policy)
    profiles = check_profiles(context.world.roles.actionable, ids)
    extra = None
    if spec.policy().asks_questions:
        people = People.from_spec(
            PeopleSpec.model_validate({"users": {"preference": "weights"}}),
            x, ids, 0, context.feature_names, context.world.roles.actionable,
            ScaledSpace.from_context(context), reported=profiles,
            immutable=context.world.roles.immutable)

        def extra(rows):
            return {"feedback": people.feedback()}
    # HARE's values move by up to 1.1e-5 (relative) with the batch's size on the non-linear
    # chain, also with a float64 decision model (Wachter and Growing Spheres: exactly 0 there);
    # who gets recourse and which features it changes stay identical (see HARE_BATCH_RTOL)
    rtol = HARE_BATCH_RTOL if policy == "hare" else 1e-6
    check_policy(spec.policy, context, x, ids, profiles, name=f"{policy} on {kind}", seed=3,
                 recommend_kwargs=extra, rtol=rtol)


def test_a_known_world_whose_graph_and_equations_disagree_is_refused_where_declared():
    from simstudy.world.known_specs import KNOWN_WORLDS, KnownWorld

    chain = KNOWN_WORLDS["chain_linear"]
    # a graph naming a feature x4 without an equation
    with pytest.raises(ValueError, match=r"the features \['x4'\] have no equation"):
        KnownWorld("chain_x4", {**chain.graph, "x4": ("x3",)}, chain.means, chain.label_score)
    # an equation whose arguments are not the feature's parents
    with pytest.raises(ValueError, match="the equation of 'x3' takes"):
        KnownWorld("chain_bad", chain.graph, {**chain.means, "x3": lambda x1: x1},
                   chain.label_score)
    # an equation of a feature the graph lacks
    with pytest.raises(ValueError, match="which the graph lacks"):
        KnownWorld("chain_more", chain.graph, {**chain.means, "x9": lambda x3: x3},
                   chain.label_score)


def test_every_declared_known_world_is_a_kind_with_its_declared_roles():
    from simstudy.world.known import KNOWN_TABLES
    from simstudy.world.known_specs import KNOWN_WORLDS

    assert set(KNOWN_WORLDS) == set(KNOWN_TABLES) <= set(kinds("world"))
    for name, world in KNOWN_WORLDS.items():
        assert KNOWN_TABLES[name].roles == world.roles
        assert {eq.name: eq.parents for eq in KNOWN_TABLES[name].equations} == dict(world.graph)
