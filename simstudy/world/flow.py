"""Causal normalizing flows: a causal world learned from data and a causal graph.

A causal normalizing flow (Javaloy, Sánchez-Martín & Valera, NeurIPS 2023) is an autoregressive
flow ``z = T(x)`` whose masks follow the causal graph, so that ``T`` is triangular in causal order
and each ``z_j`` depends only on ``x_j`` and its ancestors. Under causal sufficiency its latent
space plays the role of the exogenous noise: ``T`` abducts, ``T^{-1}`` predicts, and replacing
``z_I`` by interventions gives Pearl's do-operator. The 2026 individual-actionability study uses
it (masked autoregressive flow, hidden width 64, ELU) for iCARMA and for densities.

Here the flow over the continuous features is ``standardize -> element-wise spline ->
L x causal masked affine (zuko's MaskedAutoregressiveTransform with the graph as adjacency) ->
element-wise spline -> N(0, I)``. The element-wise splines depend on nothing but the feature
itself, so they keep the graph; they let an affine causal layer model non-Gaussian noise and
bounded features. Discrete root features (such as a binary gender) are modelled by their empirical
frequencies and enter the causal layers as context, restricted to their children by the
adjacency, so ``log p(x) = log P(x_disc) + log p(x_cont | x_disc)``.

A counterfactual under ``do(X_I := theta)`` solves ``x_I = theta`` and ``T(x)_j = u_j`` for
``j`` not in ``I`` by the fixed point ``x <- where(I, theta, T^{-1}(where(I, T(x), u)))``. Because
``T`` is triangular, each sweep settles one more topological generation of the graph, so
``diameter + 1`` sweeps give the exact answer; each sweep is differentiable in ``theta``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from zuko.flows import ElementWiseTransform, MaskedAutoregressiveTransform
from zuko.transforms import ComposedTransform, MonotonicRQSTransform

from ..core.trainer import fit_minibatches
from .base import FeatureRoles, causal_order_check
from .config import FlowConfig
from .data import tensor_hash
from .decision import ModelCache, load_module, save_module, state_dict_hash

__all__ = [
    "FlowConfig",
    "CausalFlow",
    "fit_causal_flow",
    "cached_causal_flow",
    "discrete_roots",
    "graph_generations",
]


def graph_generations(adjacency: torch.Tensor | np.ndarray) -> int:
    """Number of topological generations (longest directed path + 1) of a DAG.

    ``adjacency[i, j]`` is true when ``j`` is a parent of ``i``; raises on cycles.
    """
    adj = torch.as_tensor(adjacency).clone().bool()
    adj.fill_diagonal_(False)
    indegree = adj.sum(dim=1).tolist()
    frontier = [i for i, k in enumerate(indegree) if k == 0]
    generations, seen = 0, 0
    while frontier:
        generations += 1
        seen += len(frontier)
        nxt = []
        for node in frontier:
            for child in adj[:, node].nonzero().flatten().tolist():
                indegree[child] -= 1
                if indegree[child] == 0:
                    nxt.append(child)
        frontier = nxt
    if seen != adj.shape[0]:
        raise ValueError("the causal graph has a cycle")
    return generations


def discrete_roots(roles: FeatureRoles, x: torch.Tensor, max_levels: int = 2) -> list[str]:
    """Root features taking at most ``max_levels`` distinct values in ``x`` (e.g. a binary
    gender); a continuous density is meaningless for them."""
    out = []
    for j, name in enumerate(roles.names):
        if not roles.parents.get(name) and torch.unique(x[:, j]).numel() <= max_levels:
            out.append(name)
    return out


class CausalFlow(nn.Module):
    """A learned causal world; implements :class:`~simstudy.world.CausalWorld`.

    Args:
        roles: feature names (causal order), roles and the causal graph.
        mean, std: standardization of the continuous features (from the training data).
        discrete: for each discrete root feature, its observed levels and their frequencies.
        config: architecture.

    References:
        Javaloy, Sánchez-Martín & Valera, "Causal normalizing flows: from theory to practice",
        NeurIPS 2023, https://arxiv.org/abs/2306.05415.

    Example:
        >>> import torch
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import FlowConfig, LoanSCM, fit_causal_flow, sample_world_data
        >>> data = sample_world_data(LoanSCM(), 300, generator(0, "example"))
        >>> flow, _ = fit_causal_flow(data.roles, data.x_train, data.x_val, FlowConfig(epochs=2))
        >>> x = data.x_test[:4]
        >>> bool(torch.allclose(flow.predict(flow.abduct(x)), x, atol=1e-4)), flow.log_prob(x).shape
        (True, torch.Size([4]))
    """

    name = "causal_flow"

    def __init__(self, roles: FeatureRoles, mean: torch.Tensor, std: torch.Tensor,
                 discrete: dict[str, tuple[list[float], list[float]]],
                 config: FlowConfig = FlowConfig()) -> None:
        super().__init__()
        causal_order_check(roles)
        self.roles = roles
        self.config = config
        self.discrete = {k: (list(map(float, v[0])), list(map(float, v[1])))
                         for k, v in discrete.items()}
        names = roles.names
        for name in self.discrete:
            if roles.parents.get(name):
                raise ValueError(f"discrete feature {name!r} must be a root of the graph")
        disc = [i for i, n in enumerate(names) if n in self.discrete]
        cont = [i for i, n in enumerate(names) if n not in self.discrete]
        self.register_buffer("disc_idx", torch.tensor(disc, dtype=torch.long))
        self.register_buffer("cont_idx", torch.tensor(cont, dtype=torch.long))
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float64).clone())
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float64).clone())
        adj = torch.from_numpy(roles.adjacency())
        self.generations = graph_generations(adj)
        n_c, n_d = len(cont), len(disc)
        adj_cc = adj[cont][:, cont] | torch.eye(n_c, dtype=torch.bool)
        adj_cd = adj[cont][:, disc]
        blocks: list[nn.Module] = []
        spline = dict(univariate=MonotonicRQSTransform,
                      shapes=[(config.spline_bins,), (config.spline_bins,),
                              (config.spline_bins - 1,)])
        if config.spline_bins:
            blocks.append(ElementWiseTransform(n_c, 0, **spline))
        for _ in range(config.layers):
            blocks.append(MaskedAutoregressiveTransform(
                n_c, n_d, adjacency=torch.cat([adj_cc, adj_cd], dim=1),
                hidden_features=tuple(config.hidden), activation=nn.ELU))
        if config.spline_bins:
            blocks.append(ElementWiseTransform(n_c, 0, **spline))
        self.blocks = nn.ModuleList(blocks)
        self.double()

    # -- the transform x_cont -> z given the discrete roots -------------------------------------
    def _transform(self, c: torch.Tensor) -> ComposedTransform:
        parts = []
        for block in self.blocks:
            if isinstance(block, MaskedAutoregressiveTransform):
                parts.append(block(c if c.shape[1] else None))
            else:
                parts.append(block())
        return ComposedTransform(*parts)

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.to(torch.float64)
        return x[:, self.disc_idx], (x[:, self.cont_idx] - self.mean) / self.std

    def _join(self, c: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty(y.shape[0], self.roles.dim, dtype=torch.float64)
        out = out.index_copy(1, self.disc_idx, c) if c.shape[1] else out
        return out.index_copy(1, self.cont_idx, y * self.std + self.mean)

    # -- protocol ---------------------------------------------------------------------------
    def abduct(self, x: torch.Tensor) -> torch.Tensor:
        """Latent noise: the discrete roots themselves and ``z = T(x_cont)``."""
        c, y = self._split(x)
        u = torch.empty(x.shape[0], self.roles.dim, dtype=torch.float64)
        if c.shape[1]:
            u = u.index_copy(1, self.disc_idx, c)
        return u.index_copy(1, self.cont_idx, self._transform(c)(y))

    def predict(self, u: torch.Tensor) -> torch.Tensor:
        u = u.to(torch.float64)
        c, z = u[:, self.disc_idx], u[:, self.cont_idx]
        return self._join(c, self._transform(c).inv(z))

    def sample(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        u = np.empty((n, self.roles.dim))
        for name, (levels, probs) in self.discrete.items():
            pick = np.searchsorted(np.cumsum(probs), generator.random(n), side="right")
            u[:, self.roles.index(name)] = np.asarray(levels)[np.minimum(pick, len(levels) - 1)]
        cont = self.cont_idx.numpy()
        u[:, cont] = generator.standard_normal((n, len(cont)))
        with torch.no_grad():
            return self.predict(torch.from_numpy(u))

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        c, y = self._split(x)
        z, ladj = self._transform(c).call_and_ladj(y)
        lp = (-0.5 * z**2 - 0.5 * math.log(2 * math.pi)).sum(dim=1) + ladj
        lp = lp - torch.log(self.std).sum()
        for j, idx in enumerate(self.disc_idx.tolist()):
            levels, probs = self.discrete[self.roles.names[idx]]
            col = c[:, j]
            mass = torch.zeros_like(col)
            for level, p in zip(levels, probs, strict=True):
                mass = mass + torch.where(col == level, p, 0.0)
            lp = lp + torch.log(mass)
        return lp

    def counterfactual(self, x: torch.Tensor, intervened: torch.Tensor,
                       values: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)
        values = values.to(torch.float64)
        intervened = intervened.bool()
        c0, y0 = self._split(x)
        z_fact = self._transform(c0)(y0)
        x_now = torch.where(intervened, values, x)
        c, y_theta = self._split(x_now)
        hit = intervened[:, self.cont_idx]
        t = self._transform(c)
        y = y_theta
        for _ in range(self.generations):
            z = torch.where(hit, t(y), z_fact)
            y = torch.where(hit, y_theta, t.inv(z))
        return self._join(c, y)

    # -- persistence ------------------------------------------------------------------------
    def metadata(self) -> dict:
        r = self.roles
        return {"kind": "causal_flow", "names": list(r.names), "immutable": list(r.immutable),
                "actionable": list(r.actionable), "sensitive": list(r.sensitive),
                "parents": {k: list(v) for k, v in r.parents.items()},
                "rankings": {k: list(v) for k, v in r.rankings.items()},
                "income": r.income,
                "codebook": {k: {str(c): lab for c, lab in v.items()}
                             for k, v in r.codebook.items()},
                "reference_levels": dict(r.reference_levels),
                "scales": dict(r.scales),
                "discrete": {k: [v[0], v[1]] for k, v in self.discrete.items()},
                "config": self.config.to_json()}

    def save(self, path_stem: str | Path, extra: dict | None = None) -> str:
        """Writes ``<stem>.pt`` (state dict) and ``<stem>.json`` (metadata); returns the hash."""
        return save_module(self, path_stem, {**self.metadata(), **(extra or {})})

    @classmethod
    def load(cls, path_stem: str | Path) -> tuple[CausalFlow, dict]:
        return load_module(path_stem, cls._empty)

    @classmethod
    def _empty(cls, meta: dict) -> CausalFlow:
        # the untrained flow that the saved weights fill in
        roles = FeatureRoles(tuple(meta["names"]), tuple(meta["immutable"]),
                             tuple(meta["actionable"]), tuple(meta["sensitive"]),
                             {k: tuple(v) for k, v in meta["parents"].items()},
                             {k: tuple(v) for k, v in meta.get("rankings", {}).items()},
                             meta.get("income"),
                             {k: {int(c): lab for c, lab in v.items()}
                              for k, v in meta.get("codebook", {}).items()},
                             dict(meta.get("reference_levels", {})),
                             dict(meta.get("scales", {})))
        cfg = dict(meta["config"])
        cfg["hidden"] = tuple(cfg["hidden"])
        n_c = len(roles.names) - len(meta["discrete"])
        return cls(roles, torch.zeros(n_c), torch.ones(n_c),
                   {k: (v[0], v[1]) for k, v in meta["discrete"].items()}, FlowConfig(**cfg))


def fit_causal_flow(roles: FeatureRoles, x_train: torch.Tensor, x_val: torch.Tensor,
                    config: FlowConfig = FlowConfig(), seed: int = 0,
                    progress: bool = False) -> tuple[CausalFlow, dict]:
    """Fits a causal flow by maximum likelihood; keeps the best state on validation NLL.

    Initialization and batch order come from ``seed``.

    References:
        Javaloy, Sánchez-Martín & Valera, "Causal normalizing flows: from theory to practice",
        NeurIPS 2023, https://arxiv.org/abs/2306.05415.

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import FlowConfig, LoanSCM, fit_causal_flow, sample_world_data
        >>> data = sample_world_data(LoanSCM(), 300, generator(0, "example"))
        >>> flow, info = fit_causal_flow(data.roles, data.x_train, data.x_val, FlowConfig(epochs=3))
        >>> sorted(info)[:3], tuple(flow.sample(5, generator(1, "draw")).shape)
        (['best_epoch', 'data_sha256', 'seed'], (5, 7))
    """
    t0 = time.perf_counter()
    x_train = torch.as_tensor(x_train, dtype=torch.float64)
    x_val = torch.as_tensor(x_val, dtype=torch.float64)
    discrete = {}
    for name in discrete_roots(roles, x_train):
        col = x_train[:, roles.index(name)]
        levels, counts = torch.unique(col, return_counts=True)
        discrete[name] = (levels.tolist(), (counts / counts.sum()).tolist())
    cont = [i for i, n in enumerate(roles.names) if n not in discrete]
    mean = x_train[:, cont].mean(dim=0)
    std = x_train[:, cont].std(dim=0).clamp_min(1e-9)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        flow = CausalFlow(roles, mean, std, discrete, config)
    best = {"nll": math.inf, "state": None, "epoch": 0, "stale": 0}

    def check(epochs_done: int) -> bool:
        # keeps the best state on validation NLL; true when patience is exhausted
        with torch.no_grad():
            val = float(-flow.log_prob(x_val).mean())
        if val < best["nll"] - 1e-4:
            best.update(nll=val, epoch=epochs_done, stale=0,
                        state={k: v.detach().clone() for k, v in flow.state_dict().items()})
            return False
        best["stale"] += 1
        return bool(config.patience) and best["stale"] >= config.patience

    fit_minibatches(flow, len(x_train), lambda idx: -flow.log_prob(x_train[idx]).mean(),
                    lr=config.lr, weight_decay=config.weight_decay,
                    batch_size=config.batch_size, epochs=config.epochs,
                    generator=torch.Generator().manual_seed(int(seed)), check=check,
                    desc="causal flow", progress=progress)
    best_state, best_epoch = best["state"], best["epoch"]
    flow.load_state_dict(best_state)
    flow.eval()
    meta = {"seed": int(seed), "best_epoch": best_epoch, "val_nll": best["nll"],
            "train_seconds": time.perf_counter() - t0,
            "data_sha256": tensor_hash(x_train, x_val)}
    return flow, meta


def cached_causal_flow(cache: ModelCache | None, roles: FeatureRoles, x_train: torch.Tensor,
                       x_val: torch.Tensor, config: FlowConfig = FlowConfig(), seed: int = 0,
                       progress: bool = False) -> tuple[CausalFlow, dict]:
    """:func:`fit_causal_flow`, stored under a content-hash key (state dict + JSON).

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world.decision import ModelCache
        >>> from simstudy.world import FlowConfig, LoanSCM, cached_causal_flow, sample_world_data
        >>> data = sample_world_data(LoanSCM(), 300, generator(0, "example"))
        >>> cache = ModelCache("flow-cache")
        >>> def fit():
        ...     return cached_causal_flow(cache, data.roles, data.x_train, data.x_val,
        ...                               FlowConfig(epochs=2))
        >>> (_, trained), (_, reused) = fit(), fit()
        >>> trained["state_dict_sha256"] == reused["state_dict_sha256"]
        True
    """
    if cache is None:
        flow, meta = fit_causal_flow(roles, x_train, x_val, config, seed, progress)
        return flow, {**meta, "state_dict_sha256": state_dict_hash(flow), "cached": False}
    graph = {"names": list(roles.names), "parents": {k: list(v) for k, v in
                                                     roles.parents.items()}}
    key = ModelCache.key("causal_flow", data=tensor_hash(x_train, x_val), graph=graph,
                         config=config.to_json(), seed=int(seed),
                         torch=torch.__version__.split("+")[0])

    def train_and_save(stem: Path) -> tuple[CausalFlow, dict]:
        flow, meta = fit_causal_flow(roles, x_train, x_val, config, seed, progress)
        return flow, {**meta, "state_dict_sha256": flow.save(stem, meta)}

    flow, meta = cache.get_or_train(key, CausalFlow.load, train_and_save)
    # The key fixes names and graph; the declared roles (income feature, codebook) hold even
    # over a file saved before they were recorded in its metadata.
    flow.roles = roles
    return flow, meta
