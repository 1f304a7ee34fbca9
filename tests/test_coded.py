"""A causal flow over coded features: codes in, codes out, descendants rounded in order."""

import numpy as np
import torch

from simstudy.core.rng import generator
from simstudy.world import FeatureRoles, FlowConfig, fit_causal_flow
from simstudy.world.coded import CodedFlow, coded_features, dequantized

#: a -> b -> c, with b coded 0..4 and strongly driven by a, c continuous
ROLES = FeatureRoles(("a", "b", "c"), (), ("a", "b"), (), {"a": (), "b": ("a",), "c": ("b",)},
                     codebook={"b": {k: f"level {k}" for k in range(5)}})


def _world():
    g = generator(0, "coded-world")
    a = g.standard_normal(1500)
    b = np.clip(np.round(2 + 1.5 * a + 0.3 * g.standard_normal(1500)), 0, 4)
    c = b + 0.5 * g.standard_normal(1500)
    x = torch.from_numpy(np.stack([a, b, c], axis=1))
    xd = dequantized(x, ROLES, generator(0, "dequantize"))
    assert torch.equal(xd[:, [0, 2]], x[:, [0, 2]])
    assert ((xd[:, 1] - x[:, 1]).abs() <= 0.5).all() and (xd[:, 1] != x[:, 1]).all()
    flow, _ = fit_causal_flow(ROLES, xd[:1200], xd[1200:], FlowConfig(hidden=(32,), epochs=40))
    return CodedFlow(flow), x[1200:]


def test_coded_features_and_rounding_in_causal_order():
    world, x = _world()
    assert coded_features(ROLES) == ["b"]
    back = world.predict(world.abduct(x))
    assert torch.equal(back[:, 1], x[:, 1])
    intervened = torch.zeros(x.shape, dtype=torch.bool)
    intervened[:, 0] = True
    values = torch.full(x.shape, 2.0, dtype=torch.float64)
    with torch.no_grad():
        cf = world.counterfactual(x, intervened, values)
        raw = world.flow.counterfactual(x, intervened, values)
    # b is the nearest code of the flow's own counterfactual of b (the lower one on a tie)
    codes = np.arange(5.0)
    expected_b = codes[np.abs(raw[:, 1].numpy()[:, None] - codes).argmin(axis=1)]
    np.testing.assert_array_equal(cf[:, 1].numpy(), expected_b)
    assert (cf[:, 1] != x[:, 1]).float().mean() > 0.5  # a = 2 raises most people's b
    # c follows the *code* of b, not the flow's unrounded b: intervening on b at that code
    # gives the same c
    fixed = intervened.clone()
    fixed[:, 1] = True
    at_code = values.clone()
    at_code[:, 1] = cf[:, 1]
    with torch.no_grad():
        again = world.flow.counterfactual(x, fixed, at_code)
    torch.testing.assert_close(cf[:, 2], again[:, 2], rtol=1e-9, atol=1e-9)
    assert not torch.allclose(cf[:, 2], raw[:, 2], atol=1e-3)
    # a feature no intervention reaches stays exactly (none here above a); gradients pass
    values.requires_grad_(True)
    out = world.counterfactual(x, intervened, values)
    out[:, 2].sum().backward()
    assert values.grad[:, 0].abs().sum() > 0
