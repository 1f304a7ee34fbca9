
import numpy as np
import pytest
import torch

from simstudy.core.documents import DocumentError, validate_data
from simstudy.core.registry import entries
from simstudy.core.rng import generator
from simstudy.resources import resource_path
from simstudy.world import LOAN_ROLES, LoanSCM, sample_world_data
from simstudy.world.decision import ModelCache
from simstudy.world.flow import (
    CausalFlow,
    FlowConfig,
    cached_causal_flow,
    discrete_roots,
    fit_causal_flow,
    graph_generations,
)
from simstudy.world.learned import CausalFlowWorldSpec, load_csv_data

torch.set_num_threads(1)

GERMAN = resource_path("data", "german_credit.csv")


def untrained_flow(seed: int = 0) -> tuple[CausalFlow, torch.Tensor]:
    x = LoanSCM().sample(300, generator(seed, "x"))
    torch.manual_seed(seed)
    flow = CausalFlow(LOAN_ROLES, x[:, 1:].mean(0), x[:, 1:].std(0),
                      {"gender": ([0.0, 1.0], [0.5, 0.5])})
    # perturb the conditioners so that the test exercises non-trivial dependencies
    with torch.no_grad():
        for p in flow.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return flow, x


def test_graph_generations():
    assert graph_generations(LOAN_ROLES.adjacency()) == 4  # A -> E -> I -> S
    cyc = torch.tensor([[False, True], [True, False]])
    with pytest.raises(ValueError):
        graph_generations(cyc)


def test_discrete_roots_found_from_data():
    x = LoanSCM().sample(500, generator(0, "x"))
    assert discrete_roots(LOAN_ROLES, x) == ["gender"]


def test_abduction_inverts_prediction_and_density_is_finite():
    flow, x = untrained_flow()
    with torch.no_grad():
        u = flow.abduct(x)
        assert torch.allclose(flow.predict(u), x, atol=1e-9)
        assert torch.equal(u[:, 0], x[:, 0])
        assert torch.isfinite(flow.log_prob(x)).all()


def test_flow_respects_the_graph():
    """Changing a feature moves only its descendants' latent-consistent values, and the
    latent of a feature depends only on it and its ancestors."""
    flow, x = untrained_flow(1)
    names = LOAN_ROLES.names
    j = names.index("loan_amount")
    x2 = x.clone()
    x2[:, j] += 1.0
    with torch.no_grad():
        du = (flow.abduct(x2) - flow.abduct(x)).abs().max(dim=0).values
    changed = {names[i] for i in range(len(names)) if du[i] > 1e-9}
    assert changed <= {"loan_amount"} | LOAN_ROLES.descendants("loan_amount")
    assert "income" not in changed and "savings" not in changed


def test_counterfactual_is_exact_and_differentiable():
    flow, x = untrained_flow(2)
    names = LOAN_ROLES.names
    i = names.index("income")
    intervened = torch.zeros_like(x, dtype=torch.bool)
    intervened[:, i] = True
    values = (x + 1.5).requires_grad_(True)
    cf = flow.counterfactual(x, intervened, values)
    assert torch.allclose(cf[:, i], values[:, i])
    # non-descendants unchanged; the descendant keeps the factual latent
    keep = [names.index(n) for n in ("gender", "age", "education", "loan_amount",
                                     "loan_duration")]
    assert torch.allclose(cf[:, keep], x[:, keep], atol=1e-9)
    with torch.no_grad():
        s = names.index("savings")
        assert torch.allclose(flow.abduct(cf)[:, s], flow.abduct(x)[:, s], atol=1e-7)
        assert not torch.allclose(cf[:, s], x[:, s])
        nothing = flow.counterfactual(x, torch.zeros_like(intervened), values)
        assert torch.allclose(nothing, x, atol=1e-9)
    cf[:, s].sum().backward()
    assert values.grad[:, i].abs().sum() > 0


def fidelity(flow, world, data, seed=1):
    """Log-density correlation and the median counterfactual error on affected features."""
    x = data.x_test
    rng = np.random.default_rng(seed)
    names = world.roles.names
    act = world.roles.actionable_index
    j = rng.choice(act, len(x))
    intervened = torch.zeros_like(x, dtype=torch.bool)
    intervened[torch.arange(len(x)), torch.from_numpy(j)] = True
    lo, hi = data.lower.numpy(), data.upper.numpy()
    values = torch.from_numpy(lo + rng.random(x.shape) * (hi - lo))
    with torch.no_grad():
        r = np.corrcoef(world.log_prob(x).numpy(), flow.log_prob(x).numpy())[0, 1]
        err = ((world.counterfactual(x, intervened, values)
                - flow.counterfactual(x, intervened, values)).abs() / data.feature_range)
    affected = torch.zeros_like(intervened)
    for a in act:
        for name in world.roles.descendants(names[a]):
            affected[torch.from_numpy(j == a), names.index(name)] = True
    rows = affected.any(dim=1)
    worst = torch.where(affected, err, torch.zeros_like(err)).max(dim=1).values[rows]
    return r, float(worst.median())


@pytest.mark.slow
def test_flow_fitted_on_loan_agrees_with_the_true_scm():
    world = LoanSCM()
    data = sample_world_data(world, 8000, generator(0, "world"))
    config = FlowConfig(epochs=60, batch_size=128, lr=5e-3, patience=10)
    flow, meta = fit_causal_flow(world.roles, data.x_train, data.x_val, config, seed=0)
    r, err = fidelity(flow, world, data)
    assert r >= 0.95, r
    assert err < 0.05, err


def test_flow_cache_roundtrip(tmp_path):
    world = LoanSCM()
    data = sample_world_data(world, 600, generator(0, "world"))
    config = FlowConfig(epochs=2, patience=0)
    cache = ModelCache(tmp_path)
    a, meta_a = cached_causal_flow(cache, world.roles, data.x_train, data.x_val, config, 0)
    b, meta_b = cached_causal_flow(cache, world.roles, data.x_train, data.x_val, config, 0)
    assert not meta_a["cached"] and meta_b["cached"]
    assert meta_a["state_dict_sha256"] == meta_b["state_dict_sha256"]
    with torch.no_grad():
        assert torch.allclose(a.log_prob(data.x_test), b.log_prob(data.x_test))


def german_spec(**flow) -> dict:
    return {
        "kind": "causal_flow", "source": "csv",
        "csv": {
            "path": str(GERMAN),
            "features": [
                {"name": "gender", "column": "personal_status_and_sex", "startswith": "male"},
                {"name": "age", "column": "age_in_years"},
                {"name": "credit_amount", "parents": ["gender", "age"]},
                {"name": "duration", "column": "duration_in_month",
                 "parents": ["gender", "age", "credit_amount"]},
            ],
            "label": "creditability", "positive": "good",
            "immutable": ["gender", "age"], "actionable": ["credit_amount", "duration"],
            "sensitive": ["gender"],
        },
        "flow": {"epochs": 3, **flow},
    }


def test_csv_world_is_learned_from_a_file_and_a_graph(tmp_path):
    spec = validate_data(german_spec(), CausalFlowWorldSpec, "w.yaml")
    assert entries("world")["causal_flow"] is CausalFlowWorldSpec
    flow, data, info = spec.build(seed=0, cache=ModelCache(tmp_path))
    assert data.x_train.shape == (500, 4) and data.x_test.shape == (250, 4)
    assert set(torch.unique(data.x_train[:, 0]).tolist()) == {0.0, 1.0}
    assert 0.6 < data.y_train.double().mean() < 0.8  # 70% good credit
    assert list(flow.discrete) == ["gender"]
    with torch.no_grad():
        assert torch.isfinite(flow.log_prob(data.x_test)).all()
        assert torch.allclose(flow.predict(flow.abduct(data.x_test)), data.x_test, atol=1e-6)
    assert info["flow"]["state_dict_sha256"]
    again = load_csv_data(spec.csv, 0)
    assert torch.equal(again.x_train, data.x_train)


def test_csv_world_spec_refuses_bad_graphs():
    bad = german_spec()
    bad["csv"]["features"][2]["parents"] = ["duration"]  # a child listed before its parent
    with pytest.raises(DocumentError):
        validate_data(bad, CausalFlowWorldSpec, "w.yaml")
    unknown = german_spec()
    unknown["csv"]["actionable"] = ["income"]
    with pytest.raises(DocumentError) as err:
        validate_data(unknown, CausalFlowWorldSpec, "w.yaml")
    assert "unknown features" in str(err.value)
    with pytest.raises(DocumentError):
        validate_data({"kind": "causal_flow", "source": "csv"}, CausalFlowWorldSpec, "w.yaml")
