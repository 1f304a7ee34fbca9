"""iCARMA: amortized individualized causal recourse (mask network + action network).

iCARMA ("From Universal to Individualized Actionability", 2026, Sec. 4.3 and App. B) extends
CARMA (Majumdar & Valera, FAccT 2024). A *mask network* ``m_phi(x, a, w)`` gives, per globally
actionable feature, the logit of intervening on it; an *action network* ``theta_psi(x, a, w, m)``
gives how much. Both see the applicant's individual actionability ``a`` (0/1 per feature) and
normalized cost weights ``w``, so one trained model serves any profile. They are trained jointly
without supervision on the applicants the decision model ``h`` rejects. As in CARMA, validity is
a *constraint* handled by a Lagrange multiplier (App. A.5, Eq. 6; CARMA's public code,
``recourse_model/loss.py`` and ``main.py``): each step minimizes

    L = lambda_c * cost + lambda_kl * KL + lambda_p * R_plaus + lambda_f * R_feas
        + (mu - damping * hinge) * hinge

where ``hinge`` is the batch mean of ``max(0, eps - (2 p(x_cf) - 1))`` (``p`` the approval
probability, ``eps`` the margin), ``mu`` the multiplier and the damping factor multiplies a
detached copy of ``hinge``. ``mu`` starts at 0 and after every step grows by the batch's hinge,
``mu <- max(0, mu + hinge)``, so it rises while validity is violated and stays put once it holds.
The counterfactual ``x_cf = CF(x, do(X_I := theta_I))`` comes from the world's differentiable
do-operator (known SCM or learned causal flow), and:

* ``cost`` is the paper's weighted squared L2 over acted-on features only (their causal
  descendants change for free; App. B.1, Eq. 10): ``(1/K) sum_k m_k w_k (Δ_k / s_k)^2`` with
  ``s_k^2 = σ_k r_k`` (CARMA's squared change of standardized features over their standardized
  range; ``cost_scale="range"`` uses ``s_k = r_k``, as :func:`simstudy.metrics.weighted_cost`),
  or with ``cost_placement="inside"`` the older ``sqrt(sum_k (m_k w_k Δ_k / s_k)^2)``;
* ``KL = sum_k a_k KL(Bernoulli(pi_k) || Bernoulli(rho_k))``: mask probabilities against an
  individual prior ``rho_k = rho_hi - (rho_hi - rho_lo) (w_k - 1) / alpha`` that falls with the
  cost weight, aligning priors with weights (Eq. 13-14);
* ``R_plaus = mean max(0, log p(x) - log p(x_cf))`` (Eq. 15);
* ``R_feas = mean sum_j (max(0, lo_j - x_cf_j) + max(0, x_cf_j - hi_j)) / r_j`` (Eq. 16).

The mask is a binary Gumbel-softmax (relaxed Bernoulli, temperature ``tau``; Jang et al. 2017)
with a straight-through hard sample, multiplied by ``a`` so that a person's non-actionable
features are never acted on: this is a hard guarantee, at training and at deployment. Preference
profiles (how many and which features, their ranks or Likert scores, the cost profile) are drawn
afresh at every epoch as data augmentation.

Named alternatives to the published objective: ``validity="penalty"`` weights the hinge by a fixed
1 instead of the multiplier, and ``hinge_on="logit"`` puts the hinge on the decision logit,
``max(0, eps - h(x_cf))``.

Model selection follows CARMA: the model after the last epoch is deployed (``patience=0``).
With ``patience > 0`` training stops early and keeps the best validation check. "Best" (also
across training seeds) is the highest validation validity, ties within 0.005 broken by the
lowest validation objective without the validity term (the multiplier changes during training,
so the full Lagrangian does not compare across checks or seeds).

The action is a shift of the acted-on features' causal latent noise (``action_space="latent"``,
as CARMA's code and App. A.5 have it; see :class:`ICARMAConfig`). With the named alternative
``action_space="value"``, counterfactuals go through the world's protocol
``counterfactual(x, intervened, values)``, which takes a boolean intervention set; to pass a
gradient to the mask, the training step intervenes on
every individually actionable feature with the relaxed value
``v_k = m_k theta_k + (1 - m_k) n_k``, where ``n_k`` is the value the feature takes under the hard
action (the factual value for the acted-on features). With the straight-through mask the forward
pass equals the hard counterfactual exactly, and ``dL/dm_k`` follows ``theta_k - n_k``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import torch
from torch import nn

from ..metrics import Recourse
from ..population import COST_SHAPES, ActionabilityProfiles
from ..progress import track
from ..registry import register_policy_spec
from ..rng import torch_generator
from ..world.decision import ModelCache, save_module, state_dict_hash
from .base import PolicySpec, RecourseContext, RecoursePolicy

__all__ = [
    "ICARMAConfig",
    "ICARMANetworks",
    "ICARMA",
    "ICARMASpec",
    "sample_training_profiles",
    "world_fingerprint",
]


@dataclass(frozen=True)
class ICARMAConfig:
    """Hyperparameters of iCARMA.

    Defaults are the rank-based set of the paper's App. C (batch 128, 450 epochs, lr 0.005,
    hinge margin 0.013, Gumbel temperature 0.36, weights 1.1 cost / 0.225 plausibility /
    0.1 feasibility / 1.5 KL) with CARMA's validity multiplier (damping 10);
    :meth:`score_based` gives the Likert-score set. The hidden-layer sizes did not survive the
    paper's text extraction; two layers of 64 are used.

    Attributes:
        preferences: ``ranking`` (ranks 1..k of the actionable features) or ``likert`` (scores
            1..levels) drawn at training time; in both, how many and which features are
            actionable is uniform.
        cost_shapes: cost profiles drawn (uniformly) at training time.
        alpha: the cost-profile ``alpha`` (weights range over ``1..1 + alpha``).
        levels: Likert levels for ``likert`` preferences.
        prior_high, prior_low: mask prior for the cheapest and the dearest weight.
        patience: epochs without validation improvement before stopping early (0: never; the
            last epoch's model is deployed, as CARMA does).
        val_every: epochs between validation checks.
        validity: ``multiplier`` (CARMA's adaptive Lagrange multiplier; default) or ``penalty``
            (the hinge with a fixed weight of 1).
        damping: CARMA's damping factor of the multiplier.
        hinge_on: ``probability`` (default; the hinge on ``2p - 1``) or ``logit``.
        cost_placement: ``outside`` (default; weight times squared change) or ``inside``.
        cost_scale: ``standardized`` (CARMA: ``Δ^2 / (σ r)``) or ``range`` (``Δ^2 / r^2``).
        action_space: ``latent`` (default, as published: the action network gives
            intervention *magnitudes* in the causal latent space, ``u_cf = u + m ⊙ σ_u ⊙ net``
            and ``x_cf = predict(u_cf)``, App. A.5 and CARMA's ``downstream_for_recourse``;
            a child acted on together with its parent moves with it, and the cost counts the
            acted-on features' whole change) or ``value`` (the network gives intervention
            values ``θ = x + r ⊙ net``, a hard intervention that cuts the acted-on features
            off their parents).
        plausibility_form: ``hinge`` (default; ``max(0, log p(x) - log p(x_cf))``, zero once
            the counterfactual is as likely as the factual) or ``difference``
            (``log p(x) - log p(x_cf)``: the counterfactual's negative log-likelihood up to a
            constant, which keeps pulling towards denser regions).
    """

    preferences: Literal["ranking", "likert"] = "ranking"
    mask_hidden: tuple[int, ...] = (64, 64)
    action_hidden: tuple[int, ...] = (64, 64)
    batch_size: int = 128
    epochs: int = 450
    lr: float = 0.005
    margin: float = 0.013
    tau: float = 0.36
    cost_weight: float = 1.1
    plausibility_weight: float = 0.225
    feasibility_weight: float = 0.1
    kl_weight: float = 1.5
    prior_high: float = 0.5
    prior_low: float = 0.05
    cost_shapes: tuple[str, ...] = ("constant", "concave", "linear", "convex")
    alpha: float = 3.0
    levels: int = 4
    patience: int = 0
    val_every: int = 5
    validity: Literal["multiplier", "penalty"] = "multiplier"
    damping: float = 10.0
    hinge_on: Literal["probability", "logit"] = "probability"
    cost_placement: Literal["outside", "inside"] = "outside"
    cost_scale: Literal["standardized", "range"] = "standardized"
    action_space: Literal["value", "latent"] = "latent"
    plausibility_form: Literal["hinge", "difference"] = "hinge"

    @classmethod
    def score_based(cls, **overrides) -> ICARMAConfig:
        """The paper's score-based (Likert) set: 900 epochs, lr 0.001, margin 0.004, ..."""
        base = cls(preferences="likert", epochs=900, lr=0.001, margin=0.004, tau=0.49,
                   cost_weight=1.3, kl_weight=0.9, plausibility_weight=0.125,
                   feasibility_weight=0.1)
        return replace(base, **overrides)

    def to_json(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d


def _mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), nn.ReLU()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class ICARMANetworks(nn.Module):
    """The mask and action networks with the input scaling they were trained with.

    Args:
        feature_names: every world feature, in the world's order.
        actionable: the globally actionable features (the networks' outputs).
        mean, std: standardization of the features (training split).
        feature_range: training range ``r`` of every feature (action scale).
        config: hyperparameters (layer sizes, ``alpha``).
    """

    def __init__(self, feature_names: tuple[str, ...], actionable: tuple[str, ...],
                 mean: torch.Tensor, std: torch.Tensor, feature_range: torch.Tensor,
                 config: ICARMAConfig) -> None:
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

    def mask_logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.mask_net(h)

    def actions(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Intervention values ``theta = x_A + r_A * net(h, m)`` on the actionable features."""
        step = self.action_net(torch.cat([h, mask.to(torch.float32)], dim=1))
        base = x[:, self.act_index]
        return base + step.to(x.dtype) * self.range[self.act_index].to(x.dtype)

    def latent_actions(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor, world,
                       noise_std: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        """CARMA's latent action: the counterfactual ``x_cf = predict(u + m ⊙ σ_u ⊙ net(h, m))``
        with ``u = abduct(x)``; the acted-on features take the values they have in ``x_cf``."""
        step = self.action_net(torch.cat([h, mask.to(torch.float32)], dim=1)).to(x.dtype)
        u = world.abduct(x) if u is None else u
        shift = torch.zeros_like(u)
        shift[:, self.act_index] = mask.to(x.dtype) * step * noise_std[self.act_index]
        return world.predict(u + shift)

    def metadata(self) -> dict:
        return {"feature_names": list(self.feature_names), "actionable": list(self.actionable),
                "alpha": self.alpha}


def world_fingerprint(world) -> str:
    """A stable identity of a world for cache keys: the state-dict hash of a learned world, or
    the class name and public settings of a known SCM."""
    if isinstance(world, nn.Module):
        return f"{type(world).__name__}:{state_dict_hash(world)}"
    settings = {k: v for k, v in vars(world).items() if not k.startswith("_")
                and isinstance(v, (bool, int, float, str))}
    return f"{type(world).__name__}:{json.dumps(settings, sort_keys=True)}"


def sample_training_profiles(
    n: int, k: int, config: ICARMAConfig, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random individual actionability for data augmentation (App. B.2).

    How many features are actionable is uniform over ``1..k`` and which ones uniform given the
    count; the actionable ones get ranks ``1..count`` in random order (``ranking``) or uniform
    Likert scores (``likert``); the cost profile is drawn uniformly from ``config.cost_shapes``.

    Returns:
        ``(actionable (n, k) bool, weights (n, k) float64 with inf where not actionable)``.
    """
    order = torch.rand(n, k, generator=generator).argsort(dim=1)
    rank = order.argsort(dim=1)  # 0-based rank of each feature in a uniform permutation
    count = torch.randint(1, k + 1, (n, 1), generator=generator)
    actionable = rank < count
    if config.preferences == "ranking":
        scores, levels = (rank + 1).to(torch.float64), k
    else:
        scores = torch.randint(1, config.levels + 1, (n, k), generator=generator).double()
        levels = config.levels
    shapes = torch.randint(0, len(config.cost_shapes), (n, 1), generator=generator)
    exps = torch.tensor([COST_SHAPES[s] if COST_SHAPES[s] is not None else math.nan
                         for s in config.cost_shapes], dtype=torch.float64)[shapes]
    rel = ((scores - 1) / max(levels - 1, 1)).clamp(0.0, 1.0)
    weights = torch.where(torch.isnan(exps), torch.ones_like(rel),
                          1.0 + config.alpha * rel ** torch.nan_to_num(exps, nan=1.0))
    return actionable, torch.where(actionable, weights, torch.inf)


def noise_scale(context: RecourseContext) -> torch.Tensor:
    """Spread of the abducted noise of the training split, per feature (latent action scale)."""
    with torch.no_grad():
        u = context.world.abduct(context.data.x_train.to(torch.float64))
    return u.std(dim=0).clamp_min(1e-6)


def _bernoulli_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    eps = 1e-6
    p, q = p.clamp(eps, 1 - eps), q.clamp(eps, 1 - eps)
    return p * (p / q).log() + (1 - p) * ((1 - p) / (1 - q)).log()


class _Objective:
    """The iCARMA loss on one batch; holds what every batch shares (world, model, ranges)."""

    def __init__(self, nets: ICARMANetworks, context: RecourseContext, config: ICARMAConfig):
        self.nets, self.context, self.config = nets, context, config
        self.world, self.model = context.world, context.model
        self.lower = torch.as_tensor(context.lower, dtype=torch.float64)
        self.upper = torch.as_tensor(context.upper, dtype=torch.float64)
        self.range = torch.as_tensor(context.feature_range, dtype=torch.float64)
        self.d = len(context.feature_names)
        idx = nets.act_index
        with torch.no_grad():
            self.noise_std = noise_scale(context)
        if config.cost_scale == "standardized":
            std = nets.std.to(torch.float64)[idx]
            self.cost_scale = torch.sqrt(std * self.range[idx])
        else:
            self.cost_scale = self.range[idx]

    def _scatter(self, rows: torch.Tensor, fill: torch.Tensor) -> torch.Tensor:
        """Places ``(n, k)`` actionable-feature columns into an ``(n, d)`` tensor."""
        out = fill.clone()
        out[:, self.nets.act_index] = rows.to(out.dtype)
        return out

    def _counterfactual(self, x: torch.Tensor, u: torch.Tensor | None, intervened: torch.Tensor,
                        values: torch.Tensor, with_log_prob: bool):
        """``(x_cf, log p(x_cf) or None)``. A world that can act on abducted noise
        (``intervene_with_log_prob``) reuses ``u = abduct(x)``, fixed for a training applicant,
        and gives the log-density in the same pass; any other world abducts ``x`` again."""
        if u is not None and hasattr(self.world, "intervene_with_log_prob"):
            return self.world.intervene_with_log_prob(u, intervened, values,
                                                      log_prob=with_log_prob)
        x_cf = self.world.counterfactual(x, intervened, values)
        return x_cf, (self.world.log_prob(x_cf) if with_log_prob else None)

    def __call__(self, x: torch.Tensor, logp: torch.Tensor, actionable: torch.Tensor,
                 weights: torch.Tensor, generator: torch.Generator | None,
                 multiplier: float = 0.0, u: torch.Tensor | None = None) -> dict:
        cfg, nets = self.config, self.nets
        h = nets.encode(x, actionable, weights)
        logits = nets.mask_logits(h)
        if generator is None:  # validation: the deterministic deployment mask
            soft = torch.sigmoid(logits)
            hard = (logits > 0).to(logits.dtype)
        else:
            g = torch.rand(logits.shape, generator=generator).clamp(1e-6, 1 - 1e-6)
            soft = torch.sigmoid((logits + g.log() - (-g).log1p()) / cfg.tau)
            hard = (soft > 0.5).to(soft.dtype)
        a = actionable.to(logits.dtype)
        m = (hard + soft - soft.detach()) * a  # straight-through, zero where not actionable
        hard_bool = (hard * a) > 0
        zeros = torch.zeros_like(x, dtype=torch.bool)
        hard_full = self._scatter(hard_bool, zeros)
        idx = nets.act_index
        m64 = m.to(x.dtype)
        if cfg.action_space == "latent":
            x_cf = nets.latent_actions(h, x, m, self.world, self.noise_std, u)
            theta = x_cf[:, idx]
            theta_full = self._scatter(theta.detach(), x)
            logp_cf = self.world.log_prob(x_cf)
        else:
            theta = nets.actions(h, x, m)
            act_full = self._scatter(actionable, zeros)
            theta_full = self._scatter(theta, x)
            x_hard, _ = self._counterfactual(x, u, hard_full, theta_full, False)
            natural = torch.where(hard_bool, x[:, idx], x_hard[:, idx])
            relaxed = self._scatter(m64 * theta + (1 - m64) * natural, x)
            x_cf, logp_cf = self._counterfactual(x, u, act_full, relaxed, True)

        logit = self.model(x_cf).to(torch.float64)
        prob = torch.sigmoid(logit)
        if cfg.hinge_on == "logit":
            hinge = torch.relu(cfg.margin - logit).mean()
        else:
            hinge = torch.relu(cfg.margin - (2 * prob - 1)).mean()
        w = torch.where(actionable, weights, 0.0).to(x.dtype)
        delta = (theta - x[:, idx]) / self.cost_scale
        if cfg.cost_placement == "outside":
            cost = (m64 * w * delta**2).sum(dim=1) / len(idx)
        else:
            cost = torch.sqrt(((m64 * w * delta) ** 2).sum(dim=1) + 1e-10)
        rel = torch.where(actionable, (weights - 1.0) / max(cfg.alpha, 1e-9), 0.0).clamp(0, 1)
        prior = cfg.prior_high - (cfg.prior_high - cfg.prior_low) * rel
        kl = (_bernoulli_kl(torch.sigmoid(logits).to(x.dtype), prior) * a.to(x.dtype)).sum(1)
        logp_cf = torch.nan_to_num(logp_cf, nan=-1e6, neginf=-1e6)
        gap = logp - logp_cf
        plaus = torch.relu(gap) if cfg.plausibility_form == "hinge" else gap
        feas = ((torch.relu(self.lower - x_cf) + torch.relu(x_cf - self.upper))
                / self.range).sum(dim=1)
        primary = (cfg.cost_weight * cost + cfg.kl_weight * kl
                   + cfg.plausibility_weight * plaus + cfg.feasibility_weight * feas).mean()
        if cfg.validity == "multiplier":
            coef = multiplier - cfg.damping * hinge.detach()
        else:
            coef = 1.0
        loss = primary + coef * hinge
        with torch.no_grad():
            valid = (prob >= 0.5).to(torch.float64)
        return {"loss": loss, "primary": primary.detach(), "hinge": hinge.detach(),
                "valid": valid.mean(), "cost": cost.mean(),
                "plausible": (logp_cf >= logp).to(torch.float64).mean(),
                "plausibility_term": plaus.mean().detach(),
                "hard": hard_full, "values": theta_full.detach(), "x_cf": x_cf.detach()}


class ICARMA(RecoursePolicy):
    """Amortized individualized causal recourse.

    Args:
        config: hyperparameters (:class:`ICARMAConfig`).
        seeds: training seeds. With several, one model is trained per seed (each cached) and the
            best on validation (see the module docstring) is deployed, as the paper reports the
            best of its training runs. ``None``: the context's seed.
        cache: where trained models are stored (``None``: no caching).
        progress: show a progress bar while training.

    Attributes:
        networks_: the deployed :class:`ICARMANetworks`.
        meta_: metadata of the deployed model (seed, validation figures, hash, timing).
        runs_: metadata of every trained seed.
    """

    kind = "icarma"

    def __init__(self, config: ICARMAConfig = ICARMAConfig(), seeds: list[int] | None = None,
                 cache: ModelCache | None = None, progress: bool = True) -> None:
        self.config = config
        self.seeds = seeds
        self.cache = cache
        self.progress = progress

    # -- training -----------------------------------------------------------------------------
    def fit(self, context: RecourseContext) -> ICARMA:
        self.context_ = context
        if self.config.action_space == "latent":
            self.noise_std_ = noise_scale(context)
        seeds = list(self.seeds) if self.seeds else [int(context.seed)]
        runs = [self._fit_one(context, s) for s in seeds]
        best = best_check([meta["deployed_check"] for _, meta in runs])
        self.networks_, self.meta_ = runs[best]
        self.runs_ = [meta for _, meta in runs]
        return self

    def _cache_key(self, context: RecourseContext, seed: int) -> str:
        return ModelCache.key(
            "icarma", config=self.config.to_json(), seed=int(seed),
            world=world_fingerprint(context.world), model=state_dict_hash(context.model),
            data=context.data.content_hash(), torch=torch.__version__.split("+")[0])

    def _fit_one(self, context: RecourseContext, seed: int) -> tuple[ICARMANetworks, dict]:
        key = self._cache_key(context, seed)
        if self.cache is None:
            nets, meta = train_icarma(context, self.config, seed, progress=self.progress)
            return nets, {**meta, "cache_key": key, "state_dict_sha256": state_dict_hash(nets),
                          "cached": False}
        # Under the entry's lock: concurrent units of one replication train it once.
        with self.cache.exclusive(key) as stem:
            cached = self.cache.reuse(stem, load_networks)
            if cached is not None:
                nets, meta = cached
                return nets, {**meta, "cache_key": key, "cached": True}
            nets, meta = train_icarma(context, self.config, seed, progress=self.progress)
            meta = {**meta, "cache_key": key}
            meta["state_dict_sha256"] = save_networks(nets, stem, meta)
            return nets, {**meta, "cached": False}

    # -- deployment -----------------------------------------------------------------------------
    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        """Recourse in one forward pass; ``seed`` is unused (the deployed mask is deterministic).

        The mask is ``logit > 0`` restricted to the person's actionable features, exactly as in
        validation; a person for whom it selects nothing gets no recourse (``found`` false).
        """
        nets = self.networks_
        names = nets.feature_names
        xt = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        order = [list(profiles.features).index(f) if f in profiles.features else -1
                 for f in nets.actionable]
        act = np.zeros((len(xt), len(order)), dtype=bool)
        w = np.full((len(xt), len(order)), np.inf)
        for j, col in enumerate(order):
            if col >= 0:
                act[:, j] = profiles.actionable[:, col]
                w[:, j] = profiles.weights[:, col]
        act_t, w_t = torch.from_numpy(act), torch.from_numpy(w)
        with torch.no_grad():
            h = nets.encode(xt, act_t, w_t)
            logits = nets.mask_logits(h)
            mask = (logits > 0) & act_t  # the hard guarantee: never act on a non-actionable one
            if self.config.action_space == "latent":
                x_cf = nets.latent_actions(h, xt, mask, self.context_.world, self.noise_std_)
                theta = x_cf[:, nets.act_index]
            else:
                theta = nets.actions(h, xt, mask.to(torch.float32))
        d = len(names)
        intervened = np.zeros((len(xt), d), dtype=bool)
        values = np.full((len(xt), d), np.nan)
        idx = nets.act_index.numpy()
        intervened[:, idx] = mask.numpy()
        values[:, idx] = np.where(mask.numpy(), theta.numpy(), np.nan)
        return Recourse(intervened, values, intervened.any(axis=1))

    def model_hashes(self) -> dict[str, str]:
        hashes = {f"icarma_seed{m['seed']}": m["state_dict_sha256"] for m in self.runs_}
        return {**hashes, "icarma_deployed": self.meta_["state_dict_sha256"]}


def train_icarma(context: RecourseContext, config: ICARMAConfig, seed: int,
                 progress: bool = False) -> tuple[ICARMANetworks, dict]:
    """Trains the networks on the rejected training applicants; early stopping on validation.

    Network initialization, profile draws, Gumbel noise and batch order all come from streams
    keyed by ``seed`` (see :mod:`simstudy.rng`), so training is reproducible.
    """
    t0 = time.perf_counter()
    data, model, world = context.data, context.model, context.world
    with torch.no_grad():
        x_tr = data.x_train[~model.approves(data.x_train)].to(torch.float64)
        x_va = data.x_val[~model.approves(data.x_val)].to(torch.float64)
        logp_tr = world.log_prob(x_tr)
        logp_va = world.log_prob(x_va)
        # the applicants are fixed, so their abducted noise is computed once
        u_tr, u_va = world.abduct(x_tr), world.abduct(x_va)
    if len(x_tr) == 0:
        raise ValueError("the decision model rejects no training applicant; nothing to learn")
    mean = data.x_train.mean(dim=0)
    std = data.x_train.std(dim=0).clamp_min(1e-6)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch_generator(seed, "icarma", "init").initial_seed()))
        nets = ICARMANetworks(world.roles.names, world.roles.actionable, mean, std,
                              data.feature_range, config)
    k = len(world.roles.actionable)
    objective = _Objective(nets, context, config)
    # foreach: one kernel per step for all parameters (same arithmetic as the per-tensor loop)
    opt = torch.optim.Adam(nets.parameters(), lr=config.lr, foreach=True)
    g_batch = torch_generator(seed, "icarma", "batches")
    g_prof = torch_generator(seed, "icarma", "profiles")
    g_noise = torch_generator(seed, "icarma", "gumbel")
    val_act, val_w = sample_training_profiles(len(x_va), k, config,
                                              torch_generator(seed, "icarma", "val-profiles"))
    best, best_state, stale, multiplier = None, None, 0, 0.0
    history: list[dict] = []
    epochs = range(config.epochs)
    epochs = track(epochs, desc=f"iCARMA seed {seed}", unit="epoch", leave=False,
                   enabled=progress)
    for epoch in epochs:
        nets.train()
        act, w = sample_training_profiles(len(x_tr), k, config, g_prof)
        order = torch.randperm(len(x_tr), generator=g_batch)
        for start in range(0, len(x_tr), config.batch_size):
            idx = order[start:start + config.batch_size]
            out = objective(x_tr[idx], logp_tr[idx], act[idx], w[idx], g_noise, multiplier,
                            u_tr[idx])
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            opt.step()
            # CARMA's multiplier update: grows by the batch's hinge, never below zero
            multiplier = max(0.0, multiplier + float(out["hinge"]))
        last = epoch + 1 == config.epochs
        if (epoch + 1) % config.val_every and not last:
            continue
        nets.eval()
        with torch.no_grad():
            val = objective(x_va, logp_va, val_act, val_w, None, multiplier, u_va)
        record = {"epoch": epoch + 1, "multiplier": multiplier,
                  **{k2: float(val[k2]) for k2 in ("primary", "hinge", "valid", "cost",
                                                   "plausible", "plausibility_term")}}
        history.append(record)
        if config.patience == 0:
            best, best_state = record, None
            continue
        if best is None or best_check([best, record]) == 1:
            best, stale = record, 0
            best_state = {n: t.detach().clone() for n, t in nets.state_dict().items()}
        else:
            stale += config.val_every
            if stale >= config.patience:
                break
    if best_state is not None:
        nets.load_state_dict(best_state)
    nets.eval()
    meta = {"kind": "icarma", "config": config.to_json(), "seed": int(seed),
            "n_train_rejected": len(x_tr), "n_val_rejected": len(x_va),
            "best_epoch": best["epoch"], "epochs_run": history[-1]["epoch"],
            "deployed_check": best, "best_val_validity": best["valid"],
            "best_val_cost": best["cost"], "best_val_plausible": best["plausible"],
            "final_multiplier": multiplier,
            "train_seconds": time.perf_counter() - t0, "history": history,
            "world": world_fingerprint(world), "decision_model": state_dict_hash(model),
            "data_sha256": data.content_hash()}
    return nets, meta


def best_check(checks: list[dict], tolerance: float = 0.005) -> int:
    """Index of the best validation check: the highest validity, ties within ``tolerance``
    broken by the lowest objective without the validity term (``primary``)."""
    top = max(c["valid"] for c in checks)
    near = [i for i, c in enumerate(checks) if c["valid"] >= top - tolerance]
    return min(near, key=lambda i: (checks[i]["primary"], i))


def save_networks(nets: ICARMANetworks, path_stem: str | Path, meta: dict) -> str:
    """Writes ``<stem>.pt`` (state dict) and ``<stem>.json`` (metadata); returns the hash."""
    return save_module(nets, path_stem, {**meta, **nets.metadata()})


def load_networks(path_stem: str | Path) -> tuple[ICARMANetworks, dict]:
    """Loads networks saved by :func:`save_networks`, checking the state-dict hash."""
    path_stem = Path(path_stem)
    meta = json.loads(path_stem.with_suffix(".json").read_text())
    raw = dict(meta["config"])
    config = ICARMAConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
    state = torch.load(path_stem.with_suffix(".pt"), weights_only=True)
    d = len(meta["feature_names"])
    nets = ICARMANetworks(tuple(meta["feature_names"]), tuple(meta["actionable"]),
                          torch.zeros(d), torch.ones(d), torch.ones(d), config)
    nets.load_state_dict(state)
    if state_dict_hash(nets) != meta["state_dict_sha256"]:
        raise ValueError(f"{path_stem}.pt does not match the hash in its metadata")
    nets.eval()
    return nets, meta


@register_policy_spec
class ICARMASpec(PolicySpec):
    """Scenario entry of iCARMA.

    ``preferences`` picks the paper's rank-based or score-based hyperparameter set; any field
    left out keeps that set's value. Train with the ``alpha`` and ``cost_placement`` of the
    population it will serve (the network sees weights scaled by ``alpha``). ``seeds`` trains
    one model per seed and deploys the best on validation.
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient

    kind: Literal["icarma"]
    preferences: Literal["ranking", "likert"] = "ranking"
    seeds: list[int] | None = None
    batch_size: int | None = None
    epochs: int | None = None
    lr: float | None = None
    margin: float | None = None
    tau: float | None = None
    cost_weight: float | None = None
    plausibility_weight: float | None = None
    feasibility_weight: float | None = None
    kl_weight: float | None = None
    patience: int | None = None
    mask_hidden: list[int] | None = None
    action_hidden: list[int] | None = None
    cost_shapes: list[Literal["constant", "concave", "linear", "convex"]] | None = None
    alpha: float | None = None
    validity: Literal["multiplier", "penalty"] | None = None
    damping: float | None = None
    hinge_on: Literal["probability", "logit"] | None = None
    cost_placement: Literal["outside", "inside"] | None = None
    cost_scale: Literal["standardized", "range"] | None = None
    action_space: Literal["value", "latent"] | None = None
    plausibility_form: Literal["hinge", "difference"] | None = None
    cache: bool = True

    @classmethod
    def check_example(cls) -> dict:
        """Brief training for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "icarma", "epochs": 2, "batch_size": 64, "cache": False}

    def config(self) -> ICARMAConfig:
        base = ICARMAConfig() if self.preferences == "ranking" else ICARMAConfig.score_based()
        fields = ("batch_size", "epochs", "lr", "margin", "tau", "cost_weight",
                  "plausibility_weight", "feasibility_weight", "kl_weight", "patience",
                  "mask_hidden", "action_hidden", "cost_shapes", "alpha", "validity", "damping",
                  "hinge_on", "cost_placement", "cost_scale", "action_space",
                  "plausibility_form")
        overrides = {f: getattr(self, f) for f in fields if getattr(self, f) is not None}
        overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
        return replace(base, **overrides)

    def build(self) -> ICARMA:
        return ICARMA(self.config(), seeds=self.seeds,
                      cache=ModelCache() if self.cache else None)
