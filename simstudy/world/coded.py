"""A causal flow over coded features: the codes are dequantized to fit, and rounded back.

A coded feature (a checking-account status, a savings bracket, a housing type) takes only the
codes of its codebook, but a normalizing flow models continuous densities. As in CARMA's
German-credit flow, the flow is fitted to the codes *dequantized* by uniform noise, and every
value the world produces is mapped back to a code. Here the noise is centred,
``x_j + e, e ~ U(-1/2, 1/2)``, so a code is the centre of its cell and the flow's abduction of a
code is the noise of that centre; the world's structural equation of a coded feature ``j`` is
then

    ``x_j = c(f_j(pa_j, u_j))``,  ``c(v) = argmin_{code} |code - v|`` (ties: the lower code),

with ``f_j`` the flow's equation, applied in causal order so that the children of a coded
feature see its code. A counterfactual ``do(X_I := theta)`` recomputes the coded descendants
one after another (each fixed at its code before its own descendants are computed) and keeps
every feature that is not a descendant of ``I`` at its factual value exactly. The rounding
passes gradients straight through (``v + (c(v) - v).detach()``), so amortized solvers still
train through the counterfactual. Densities are the flow's, evaluated at the codes (the
dequantized density at the cell's centre).

References:
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024 (code: ayanmaj92/carma-recourse, German credit
    dataset and preparator: uniform dequantization of the coded columns, floored back);
    Theis, van den Oord & Bethge, "A note on the evaluation of generative models", ICLR 2016
    (uniform dequantization).

Example:
    >>> import torch
    >>> from simstudy.core.rng import generator
    >>> from simstudy.world import FeatureRoles, FlowConfig, fit_causal_flow
    >>> roles = FeatureRoles(("a", "b"), (), ("a", "b"), (), {"a": (), "b": ("a",)},
    ...                      codebook={"b": {0: "low", 1: "mid", 2: "high"}})
    >>> g = generator(0, "example")
    >>> a = g.standard_normal(400)
    >>> x = torch.from_numpy(np.stack([a, np.clip(np.round(a + 1), 0, 2)], axis=1))
    >>> xd = dequantized(x, roles, generator(0, "dequantize"))
    >>> flow, _ = fit_causal_flow(roles, xd[:300], xd[300:], FlowConfig(epochs=2))
    >>> world = CodedFlow(flow)
    >>> cf = world.counterfactual(x[:5], torch.tensor([[True, False]] * 5),
    ...                           torch.full((5, 2), 1.5, dtype=torch.float64))
    >>> sorted(set(cf[:, 1].tolist()) - {0.0, 1.0, 2.0})
    []
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .base import FeatureRoles
from .flow import CausalFlow, discrete_roots

__all__ = ["CodedFlow", "coded_features", "dequantized"]


def coded_features(roles: FeatureRoles, discrete: set[str] | frozenset[str] = frozenset()
                   ) -> list[str]:
    """The features a flow sees as continuous although they take codes: the features with a
    codebook, except the discrete roots the flow models by their frequencies."""
    return [f for f in roles.names if f in roles.codebook and f not in discrete]


def dequantized(x: torch.Tensor, roles: FeatureRoles, generator: np.random.Generator
                ) -> torch.Tensor:
    """``x`` with centred uniform noise ``U(-1/2, 1/2)`` added to its coded features (see
    :func:`coded_features`; discrete roots, such as a binary sex, stay as they are)."""
    x = torch.as_tensor(x, dtype=torch.float64).clone()
    skip = set(discrete_roots(roles, x))
    for name in coded_features(roles, skip):
        j = roles.index(name)
        x[:, j] += torch.from_numpy(generator.uniform(-0.5, 0.5, len(x)))
    return x


class CodedFlow(nn.Module):
    """A causal flow whose coded features take only their codes; implements
    :class:`~simstudy.world.CausalWorld` (see the module docstring).

    Args:
        flow: a causal flow fitted to dequantized codes (:func:`dequantized`).

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import FeatureRoles, FlowConfig, fit_causal_flow
        >>> roles = FeatureRoles(("a", "b"), (), ("a",), (), {"a": (), "b": ("a",)},
        ...                      codebook={"b": {0: "no", 1: "yes"}})
        >>> a = generator(0, "a").standard_normal(200)
        >>> x = torch.from_numpy(np.stack([a, (a > 0).astype(float)], axis=1))
        >>> xd = dequantized(x, roles, generator(0, "noise"))
        >>> world = CodedFlow(fit_causal_flow(roles, xd[:150], xd[150:], FlowConfig(epochs=2))[0])
        >>> set(world.sample(50, generator(1, "draw"))[:, 1].tolist()) <= {0.0, 1.0}
        True
    """

    name = "causal_flow"

    def __init__(self, flow: CausalFlow) -> None:
        super().__init__()
        self.flow = flow
        names = flow.roles.names
        coded = coded_features(flow.roles, set(flow.discrete))
        self.coded = [names.index(f) for f in coded]
        self.codes = {j: torch.tensor(sorted(float(c) for c in flow.roles.codebook[names[j]]),
                                      dtype=torch.float64) for j in self.coded}
        reach = torch.eye(len(names), dtype=torch.bool)
        for i, f in enumerate(names):
            for g in flow.roles.descendants(f):
                reach[i, names.index(g)] = True
        self.register_buffer("reach", reach)

    @property
    def roles(self) -> FeatureRoles:
        return self.flow.roles

    @roles.setter
    def roles(self, roles: FeatureRoles) -> None:
        self.flow.roles = roles

    def _code(self, j: int, v: torch.Tensor) -> torch.Tensor:
        # nearest code (the lower on a tie), gradients passed straight through
        codes = self.codes[j]
        nearest = codes[(v[:, None] - codes).abs().argmin(dim=1)]
        return v + (nearest - v).detach()

    def _settle(self, x: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor,
                reached: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The flow's counterfactual with every coded feature not intervened on fixed at its
        code, one after another in causal order; returns it with the fixed mask and values.
        ``reached``: ``(n, d)``, the features an intervention reaches (default: all); a coded
        feature no row reaches needs no pass of its own."""
        fixed, target = intervened.clone(), values.clone()
        for j in self.coded:
            free = ~intervened[:, j]
            if reached is not None:
                free = free & reached[:, j]
            if not bool(free.any()):
                continue
            cf = self.flow.counterfactual(x, fixed, target)
            target = target.clone()
            target[:, j] = torch.where(free, self._code(j, cf[:, j]), values[:, j])
            fixed = fixed.clone()
            fixed[:, j] = True
        cf = self.flow.counterfactual(x, fixed, target)
        return torch.where(fixed, target, cf), fixed, target

    # -- protocol ---------------------------------------------------------------------------
    def abduct(self, x: torch.Tensor) -> torch.Tensor:
        return self.flow.abduct(x)

    def predict(self, u: torch.Tensor) -> torch.Tensor:
        x0 = self.flow.predict(u)
        none = torch.zeros(x0.shape, dtype=torch.bool)
        return self._settle(x0, none, torch.zeros_like(x0))[0]

    def sample(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        x0 = self.flow.sample(n, generator)
        none = torch.zeros(x0.shape, dtype=torch.bool)
        with torch.no_grad():
            return self._settle(x0, none, torch.zeros_like(x0))[0]

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        return self.flow.log_prob(x)

    def counterfactual(self, x: torch.Tensor, intervened: torch.Tensor,
                       values: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)
        intervened = intervened.bool()
        values = torch.where(intervened, values.to(torch.float64), x)
        affected = (intervened.to(torch.float64) @ self.reach.to(torch.float64)) > 0
        cf, _, _ = self._settle(x, intervened, values, affected)
        # a feature no intervention reaches keeps its factual value exactly
        return torch.where(affected, cf, x)
