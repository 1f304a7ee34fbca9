"""iCARMA's mask and action networks, and their save/load (state dict + JSON, hash-checked)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ...world.decision import load_module, save_module
from .config import ICARMAConfig

__all__ = ["ICARMANetworks", "save_networks", "load_networks"]


def _mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), nn.ReLU()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class ICARMANetworks(nn.Module):
    """The mask and action networks with the input scaling they were trained with.

    The mask network ``m_phi(x, a, w)`` gives, per globally actionable feature, the logit of
    acting on it; the action network ``theta_psi(x, a, w, m)`` how much. Both see the person's
    individual actionability ``a`` and cost weights ``w`` scaled to ``(w - 1) / alpha``.

    Args:
        feature_names: every world feature, in the world's order.
        actionable: the globally actionable features (the networks' outputs).
        mean, std: standardization of the features (training split).
        feature_range: training range ``r`` of every feature (action scale).
        config: hyperparameters (layer sizes, ``alpha``, which must be given: the cost
            profile's, see :meth:`ICARMAConfig.with_cost`).
        step_bounds: ``(lo, hi)`` for the latent action's step ``net(h, m)`` (in units of the
            noise's spread; see :func:`~simstudy.policies.icarma.objective.latent_step_bounds`);
            unbounded by default.

    Example:
        >>> import torch
        >>> config = ICARMAConfig(mask_hidden=(4,), action_hidden=(4,), alpha=3.0)
        >>> nets = ICARMANetworks(("a", "b"), ("b",), torch.zeros(2), torch.ones(2),
        ...                       torch.ones(2), config)
        >>> h = nets.encode(torch.zeros(3, 2), torch.ones(3, 1, dtype=torch.bool),
        ...                 torch.ones(3, 1))
        >>> nets.mask_logits(h).shape
        torch.Size([3, 1])
    """

    def __init__(self, feature_names: tuple[str, ...], actionable: tuple[str, ...],
                 mean: torch.Tensor, std: torch.Tensor, feature_range: torch.Tensor,
                 config: ICARMAConfig,
                 step_bounds: tuple[float, float] = (-math.inf, math.inf)) -> None:
        super().__init__()
        self.feature_names = tuple(feature_names)
        self.actionable = tuple(actionable)
        self.alpha = float(config.alpha)
        d, k = len(feature_names), len(actionable)
        self.register_buffer("act_index", torch.tensor(
            [self.feature_names.index(f) for f in actionable], dtype=torch.long))
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).clone())
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32).clone())
        self.register_buffer("range", torch.as_tensor(feature_range, dtype=torch.float32).clone())
        # the clamp on the latent action (CARMA's action network), in units of the noise's spread
        self.register_buffer("step_bounds", torch.tensor(step_bounds, dtype=torch.float64))
        self.clamp_gradient = config.clamp_gradient
        self.mask_net = _mlp(d + 2 * k, config.mask_hidden, k)
        self.action_net = _mlp(d + 3 * k, config.action_hidden, k)

    def encode(self, x: torch.Tensor, actionable: torch.Tensor,
               weights: torch.Tensor) -> torch.Tensor:
        """Network input: standardized ``x``, actionability ``a`` and scaled weights."""
        z = (x.to(torch.float32) - self.mean) / self.std
        a = actionable.to(torch.float32)
        w = torch.where(actionable, weights.to(torch.float32), 1.0)
        w_scaled = ((w - 1.0) / max(self.alpha, 1e-9)).clamp(0.0, 1.0) * a
        return torch.cat([z, a, w_scaled], dim=1)

    def profile_columns(self, profiles) -> tuple[torch.Tensor, torch.Tensor]:
        """``(actionable, weights)`` of the people of ``profiles``
        (:class:`~simstudy.primitives.profiles.ActionabilityProfiles`) in the networks' feature
        order: a feature the profiles leave out is not actionable (weight ``inf``)."""
        features = list(profiles.features)
        n, k = len(profiles.actionable), len(self.actionable)
        act = np.zeros((n, k), dtype=bool)
        w = np.full((n, k), np.inf)
        for j, feature in enumerate(self.actionable):
            if feature in features:
                col = features.index(feature)
                act[:, j] = profiles.actionable[:, col]
                w[:, j] = profiles.weights[:, col]
        return torch.from_numpy(act), torch.from_numpy(w)

    def mask_logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.mask_net(h)

    def actions(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Intervention values ``theta = x_A + r_A * net(h, m)`` on the actionable features."""
        step = self.action_net(torch.cat([h, mask.to(torch.float32)], dim=1))
        base = x[:, self.act_index]
        return base + step.to(x.dtype) * self.range[self.act_index].to(x.dtype)

    def latent_shift(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor,
                     noise_std: torch.Tensor) -> torch.Tensor:
        """CARMA's latent action ``m ⊙ σ_u ⊙ net(h, m)`` on every feature (zero where not
        acted on); the step ``net(h, m)`` is clamped to :attr:`step_bounds` (with
        ``clamp_gradient="straight_through"`` the gradient passes the clamp unchanged)."""
        step = self.action_net(torch.cat([h, mask.to(torch.float32)], dim=1)).to(x.dtype)
        lo, hi = self.step_bounds.tolist()
        if math.isfinite(lo) or math.isfinite(hi):
            clamped = step.clamp(lo, hi)
            step = (step + (clamped - step).detach() if self.clamp_gradient == "straight_through"
                    else clamped)
        shift = torch.zeros_like(x)
        shift[:, self.act_index] = mask.to(x.dtype) * step * noise_std[self.act_index]
        return shift

    def latent_actions(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor, world,
                       noise_std: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        """CARMA's latent action: the counterfactual ``x_cf = predict(u + m ⊙ σ_u ⊙ net(h, m))``
        with ``u = abduct(x)`` (given when already known); the acted-on features take the values
        they have in ``x_cf``. The step ``net(h, m)`` is clamped to :attr:`step_bounds`."""
        u = world.abduct(x) if u is None else u
        return world.predict(u + self.latent_shift(h, x, mask, noise_std))

    def metadata(self) -> dict:
        return {"feature_names": list(self.feature_names), "actionable": list(self.actionable),
                "alpha": self.alpha}


def save_networks(nets: ICARMANetworks, path_stem: str | Path, meta: dict) -> str:
    """Writes ``<stem>.pt`` (state dict) and ``<stem>.json`` (metadata); returns the hash.

    Example:
        >>> import tempfile, pathlib, torch
        >>> from simstudy.policies.icarma import ICARMAConfig, ICARMANetworks
        >>> from simstudy.policies.icarma import load_networks, save_networks
        >>> config = ICARMAConfig(mask_hidden=(4,), action_hidden=(4,), alpha=3.0)
        >>> nets = ICARMANetworks(("a", "b"), ("b",), torch.zeros(2), torch.ones(2), torch.ones(2),
        ...                       config)
        >>> stem = pathlib.Path(tempfile.mkdtemp()) / "nets"
        >>> digest = save_networks(nets, stem, {"seed": 0, "config": config.to_json()})
        >>> loaded, meta = load_networks(stem)
        >>> meta["seed"], loaded.actionable, len(digest)
        (0, ('b',), 64)
    """
    return save_module(nets, path_stem, {**meta, **nets.metadata()})


def _empty_networks(meta: dict) -> ICARMANetworks:
    raw = {k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()}
    if raw.get("alpha") is None:  # the networks record the alpha they were trained for
        raw["alpha"] = meta["alpha"]
    d = len(meta["feature_names"])
    return ICARMANetworks(tuple(meta["feature_names"]), tuple(meta["actionable"]),
                          torch.zeros(d), torch.ones(d), torch.ones(d), ICARMAConfig(**raw))


def load_networks(path_stem: str | Path) -> tuple[ICARMANetworks, dict]:
    """Loads networks saved by :func:`save_networks`, checking the state-dict hash.

    Example:
        Saved networks come back with the same weights (the metadata needs only the
        hyperparameters that differ from the defaults):

        >>> import tempfile, pathlib, torch
        >>> from simstudy.policies.icarma import ICARMAConfig, ICARMANetworks, save_networks
        >>> small = {"mask_hidden": [3], "action_hidden": [3]}
        >>> config = ICARMAConfig(mask_hidden=(3,), action_hidden=(3,), alpha=3.0)
        >>> nets = ICARMANetworks(("x", "y", "z"), ("y", "z"), torch.zeros(3), torch.ones(3),
        ...                       torch.ones(3), config)
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = save_networks(nets, folder / "small", {"config": small})
        >>> loaded, meta = load_networks(folder / "small")
        >>> pairs = zip(nets.state_dict().values(), loaded.state_dict().values())
        >>> all(torch.equal(a, b) for a, b in pairs), meta["config"]
        (True, {'mask_hidden': [3], 'action_hidden': [3]})
    """
    return load_module(path_stem, _empty_networks)
