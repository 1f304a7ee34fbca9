"""iCARMA's training objective on one batch, and the random profiles it is trained on.

Each step minimizes (App. A.5-B.1; CARMA's ``recourse_model/loss.py``)

    L = lambda_c * cost + lambda_kl * KL + lambda_p * R_plaus + lambda_f * R_feas + V(g)

with ``g_i = eps - (2 p_i - 1)`` every person's validity constraint (``p`` the approval
probability of the counterfactual, ``eps`` the margin) and ``V`` the validity term of the
configured rule (:mod:`.validity`; CARMA's ``(mu - damping * hinge) * hinge`` with
``hinge = mean max(0, g)`` by default), and:

* ``cost = (1/K) sum_k m_k w_k (Δ_k / s_k)^2`` over the acted-on features only (Eq. 10), with
  ``s_k^2 = σ_k r_k`` (CARMA's squared change of standardized features over their standardized
  range; ``cost_scale="range"``: ``s_k = r_k``), or with ``cost_placement="inside"``
  ``sqrt(sum_k (m_k w_k Δ_k / s_k)^2)``;
* ``KL = sum_k a_k KL(Bernoulli(pi_k) || Bernoulli(rho_k))``: mask probabilities against an
  individual prior ``rho_k = rho_hi - (rho_hi - rho_lo) (w_k - 1) / alpha`` (Eq. 13-14);
* ``R_plaus = mean max(0, log p(x) - log p(x_cf))`` (Eq. 15; ``plausibility_form``);
* ``R_feas = mean sum_j (max(0, lo_j - x_cf_j) + max(0, x_cf_j - hi_j)) / r_j`` (Eq. 16).

The mask is a binary Gumbel-softmax (relaxed Bernoulli, temperature ``tau``; Jang et al. 2017)
with a straight-through hard sample, multiplied by ``a`` so that a person's non-actionable
features are never acted on. With ``action_space="value"`` the step intervenes on every
individually actionable feature with the relaxed value ``v_k = m_k theta_k + (1 - m_k) n_k``,
``n_k`` the value under the hard action: the forward pass equals the hard counterfactual and
``dL/dm_k`` follows ``theta_k - n_k``.

References:
    Majumdar & Valera, "CARMA: a practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024. "From Universal to Individualized
    Actionability: Revisiting Personalization in Algorithmic Recourse", 2026 (App. A-B).
"""

from __future__ import annotations

import math

import torch

from ...primitives.profiles import COST_SHAPES, cost_weight
from ..base import RecourseContext
from .config import ICARMAConfig
from .networks import ICARMANetworks
from .validity import ValidityRule

__all__ = ["Objective", "sample_training_profiles", "noise_scale", "latent_step_bounds",
           "mask_prior"]


def sample_training_profiles(
    n: int, k: int, config: ICARMAConfig, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random individual actionability for data augmentation (App. B.2).

    How many features are actionable is uniform over ``1..k`` and which ones uniform given the
    count; the actionable ones get ranks ``1..count`` in random order (``ranking``) or uniform
    Likert scores (``likert``); the cost profile is drawn uniformly from ``config.cost_shapes``.

    Returns:
        ``(actionable (n, k) bool, weights (n, k) float64 with inf where not actionable)``.

    Example:
        >>> config = ICARMAConfig().with_cost(alpha=3.0, placement="outside")
        >>> act, w = sample_training_profiles(5, 4, config, torch.Generator())
        >>> bool(act.any(dim=1).all()), bool(torch.isinf(w[~act]).all())
        (True, True)
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
                          cost_weight(rel, config.alpha, torch.nan_to_num(exps, nan=1.0)))
    return actionable, torch.where(actionable, weights, torch.inf)


def noise_scale(context: RecourseContext) -> torch.Tensor:
    """Spread of the abducted noise of the training split, per feature (latent action scale).

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
        algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003.

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> from simstudy.policies.icarma import noise_scale
        >>> scale = noise_scale(context)
        >>> tuple(scale.shape), bool((scale > 0).all())
        ((7,), True)
    """
    with torch.no_grad():
        u = context.world.abduct(context.data.x_train.to(torch.float64))
    return u.std(dim=0).clamp_min(1e-6)


def latent_step_bounds(context: RecourseContext,
                       features: str = "all") -> tuple[float, float]:
    """CARMA's clamp of the latent action, in units of the noise's spread: ``(floor(min z),
    ceil(max z))`` over every feature (``features="all"``) or the globally actionable ones
    (``"actionable"``) of the standardized training noise ``z = (u - mean u) / sd u`` (CARMA
    clamps its action network's latent output to the floor and ceiling of the training
    latents' minimum and maximum; its flow's latents are standardized).

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
        algorithmic recourse at scale", FAccT 2024; code: ``main.py`` and
        ``recourse_model/model.py`` of github.com/ayanmaj92/carma-recourse.

    Example:
        >>> from simstudy.examples import small_context
        >>> lo, hi = latent_step_bounds(small_context())
        >>> lo < 0 < hi, lo == int(lo), hi == int(hi)
        (True, True, True)
    """
    with torch.no_grad():
        u = context.world.abduct(context.data.x_train.to(torch.float64))
        z = (u - u.mean(dim=0)) / u.std(dim=0).clamp_min(1e-6)
    if features == "actionable":
        z = z[:, context.world.roles.actionable_index]
    return float(math.floor(z.min())), float(math.ceil(z.max()))


def mask_prior(actionable: torch.Tensor, weights: torch.Tensor,
               config: ICARMAConfig) -> torch.Tensor:
    """The individual prior of acting on each feature (Eq. 14),
    ``rho_k = rho_hi - (rho_hi - rho_lo) (w_k - 1) / alpha`` (``(w_k - 1) / alpha`` held within
    ``[0, 1]``; ``rho_hi`` where the feature is not actionable, where it is never acted on).

    Example:
        >>> config = ICARMAConfig(alpha=3.0)
        >>> act = torch.tensor([[True, True, False]])
        >>> w = torch.tensor([[1.0, 4.0, float("inf")]], dtype=torch.float64)
        >>> mask_prior(act, w, config).round(decimals=3).tolist()
        [[0.5, 0.05, 0.5]]
    """
    rel = torch.where(actionable, (weights - 1.0) / max(config.alpha, 1e-9), 0.0).clamp(0, 1)
    return config.prior_high - (config.prior_high - config.prior_low) * rel


def _bernoulli_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    eps = 1e-6
    p, q = p.clamp(eps, 1 - eps), q.clamp(eps, 1 - eps)
    return p * (p / q).log() + (1 - p) * ((1 - p) / (1 - q)).log()


def _sample_mask(logits: torch.Tensor, actionable: torch.Tensor, tau: float,
                 generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(m, hard)``: the straight-through mask (zero where not actionable) and its hard value.
    Without a generator (validation) the deterministic deployment mask ``logit > 0``."""
    if generator is None:
        soft = torch.sigmoid(logits)
        hard = (logits > 0).to(logits.dtype)
    else:
        g = torch.rand(logits.shape, generator=generator).clamp(1e-6, 1 - 1e-6)
        soft = torch.sigmoid((logits + g.log() - (-g).log1p()) / tau)
        hard = (soft > 0.5).to(soft.dtype)
    a = actionable.to(logits.dtype)
    return (hard + soft - soft.detach()) * a, (hard * a) > 0


class Objective:
    """The iCARMA loss on one batch; holds what every batch shares (world, model, ranges).

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
        algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003.
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> data = context.data
        >>> from simstudy.policies.icarma import ICARMAConfig, Objective, train_icarma
        >>> from simstudy.policies.icarma import sample_training_profiles
        >>> config = ICARMAConfig(epochs=1, mask_hidden=(8,), action_hidden=(8,))
        >>> config = config.with_cost(context.cost.alpha, context.cost.placement)
        >>> nets, _ = train_icarma(context, config, seed=0)
        >>> x = data.x_train[:5]
        >>> act, w = sample_training_profiles(5, 4, config, torch.Generator().manual_seed(0))
        >>> out = Objective(nets, context, config)(x, context.world.log_prob(x), act, w, None)
        >>> out["loss"].shape, tuple(out["x_cf"].shape)
        (torch.Size([]), (5, 7))
    """

    def __init__(self, nets: ICARMANetworks, context: RecourseContext, config: ICARMAConfig):
        self.nets, self.context, self.config = nets, context, config
        self.world, self.model = context.world, context.model
        self.lower = torch.as_tensor(context.lower, dtype=torch.float64)
        self.upper = torch.as_tensor(context.upper, dtype=torch.float64)
        self.range = torch.as_tensor(context.feature_range, dtype=torch.float64)
        idx = nets.act_index
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

    def _intervene(self, x: torch.Tensor, u: torch.Tensor | None, intervened: torch.Tensor,
                   values: torch.Tensor, with_log_prob: bool):
        """``(x_cf, log p(x_cf) or None)``. A world that can act on abducted noise
        (``intervene_with_log_prob``) reuses ``u = abduct(x)``, fixed for a training applicant,
        and gives the log-density in the same pass; any other world abducts ``x`` again."""
        if u is not None and hasattr(self.world, "intervene_with_log_prob"):
            return self.world.intervene_with_log_prob(u, intervened, values,
                                                      log_prob=with_log_prob)
        x_cf = self.world.counterfactual(x, intervened, values)
        return x_cf, (self.world.log_prob(x_cf) if with_log_prob else None)

    def counterfactual(self, h, x, m, m64, hard_full, hard, actionable, u):
        """``(theta, theta_full, x_cf, log p(x_cf))`` of the masked action (``m64``: the
        mask in the features' precision)."""
        nets, idx = self.nets, self.nets.act_index
        if self.config.action_space == "latent":
            u = self.world.abduct(x) if u is None else u
            shift = nets.latent_shift(h, x, m, self.noise_std)
            if self.config.train_shortened:
                shift = self._boundary_share(u, shift) * shift
            x_cf = self.world.predict(u + shift)
            theta = x_cf[:, idx]
            return theta, self._scatter(theta.detach(), x), x_cf, self.world.log_prob(x_cf)
        theta = nets.actions(h, x, m)
        theta_full = self._scatter(theta, x)
        x_hard, _ = self._intervene(x, u, hard_full, theta_full, False)
        natural = torch.where(hard, x[:, idx], x_hard[:, idx])
        relaxed = self._scatter(m64 * theta + (1 - m64) * natural, x)
        act_full = self._scatter(actionable, torch.zeros_like(hard_full))
        x_cf, logp_cf = self._intervene(x, u, act_full, relaxed, True)
        return theta, theta_full, x_cf, logp_cf

    def constraint(self, logit: torch.Tensor) -> torch.Tensor:
        """The validity constraint of every person, ``g <= 0`` (its violation is the hinge):
        ``eps - (2 p - 1)``, or ``eps - logit`` with ``hinge_on: logit``."""
        return self.config.margin - (logit if self.config.hinge_on == "logit"
                                     else 2 * torch.sigmoid(logit) - 1)

    def _boundary_share(self, u: torch.Tensor, shift: torch.Tensor,
                        halvings: int = 8) -> torch.Tensor:
        """``(n, 1)``: the share ``t`` of each latent shift at which the validity constraint
        ``g <= 0`` is first met, by bisection (``1`` where the whole shift does not meet it);
        held fixed (no gradient), so the step's terms are those of the shortened action.

        Not :func:`~.shortening.first_approved`: that judges deployed points one by one on a
        grid, on the features' levels; here every training step needs the share of the latent
        shift, so eight halvings (nine passes) replace fifty points."""
        def meets(share: torch.Tensor) -> torch.Tensor:
            logit = self.model(self.world.predict(u + share * shift)).to(torch.float64)
            return self.constraint(logit).reshape(-1, 1) <= 0

        with torch.no_grad():
            shift = shift.detach()
            lo = torch.zeros(len(u), 1, dtype=u.dtype)
            hi = torch.ones(len(u), 1, dtype=u.dtype)
            for _ in range(halvings):
                mid = (lo + hi) / 2
                ok = meets(mid)
                hi, lo = torch.where(ok, mid, hi), torch.where(ok, lo, mid)
            return torch.where(meets(torch.ones_like(hi)), hi, torch.ones_like(hi))

    def terms(self, x, logp, actionable, weights, logits, m64, theta, x_cf, logp_cf):
        """Per-person cost, KL, plausibility and feasibility terms, validity constraint ``g``
        (``eps - (2p - 1)``, or ``eps - logit``) and ``p``."""
        cfg, idx = self.config, self.nets.act_index
        logit = self.model(x_cf).to(torch.float64)
        prob = torch.sigmoid(logit)
        g = self.constraint(logit)
        w = torch.where(actionable, weights, 0.0).to(x.dtype)
        delta = (theta - x[:, idx]) / self.cost_scale
        if cfg.cost_placement == "outside":
            cost = (m64 * w * delta**2).sum(dim=1) / len(idx)
        else:
            cost = torch.sqrt(((m64 * w * delta) ** 2).sum(dim=1) + 1e-10)
        prior = mask_prior(actionable, weights, cfg)
        a = actionable.to(x.dtype)
        kl = (_bernoulli_kl(torch.sigmoid(logits).to(x.dtype), prior) * a).sum(1)
        gap = logp - logp_cf
        plaus = torch.relu(gap) if cfg.plausibility_form == "hinge" else gap
        feas = ((torch.relu(self.lower - x_cf) + torch.relu(x_cf - self.upper))
                / self.range).sum(dim=1)
        return {"cost": cost, "kl": kl, "plaus": plaus, "feas": feas, "g": g, "prob": prob}

    def __call__(self, x: torch.Tensor, logp: torch.Tensor, actionable: torch.Tensor,
                 weights: torch.Tensor, generator: torch.Generator | None,
                 rule: ValidityRule | None = None, u: torch.Tensor | None = None,
                 idx: torch.Tensor | None = None, keep: torch.Tensor | None = None) -> dict:
        """The loss and the batch's figures; ``generator`` draws the Gumbel noise (``None``:
        the deterministic deployment mask), ``rule`` weighs validity (``None``: the hinge with
        weight 1) for the training people ``idx``, ``u`` is ``abduct(x)`` when already known;
        rows where ``keep`` is false are left out of the validity term (their ``g`` counts as
        0)."""
        cfg = self.config
        h = self.nets.encode(x, actionable, weights)
        logits = self.nets.mask_logits(h)
        m, hard = _sample_mask(logits, actionable, cfg.tau, generator)
        hard_full = self._scatter(hard, torch.zeros_like(x, dtype=torch.bool))
        m64 = m.to(x.dtype)  # made here: the order of the graph's nodes fixes its sums' order
        theta, theta_full, x_cf, logp_cf = self.counterfactual(
            h, x, m, m64, hard_full, hard, actionable, u)
        logp_cf = torch.nan_to_num(logp_cf, nan=-1e6, neginf=-1e6)
        t = self.terms(x, logp, actionable, weights, logits, m64, theta, x_cf, logp_cf)
        primary = (cfg.cost_weight * t["cost"] + cfg.kl_weight * t["kl"]
                   + cfg.plausibility_weight * t["plaus"]
                   + cfg.feasibility_weight * t["feas"]).mean()
        g = t["g"] if keep is None else torch.where(keep, t["g"], 0.0)
        validity = torch.relu(g).mean() if rule is None else rule.term(g, idx)
        with torch.no_grad():
            valid = (t["prob"] >= 0.5).to(torch.float64)
        return {"loss": primary + validity, "primary": primary.detach(),
                "hinge": torch.relu(t["g"]).mean().detach(), "g": g.detach(),
                "prob": t["prob"].detach(),
                "valid": valid.mean(), "cost": t["cost"].mean(),
                "plausible": (logp_cf >= logp).to(torch.float64).mean(),
                "plausibility_term": t["plaus"].mean().detach(),
                "hard": hard_full, "values": theta_full.detach(), "x_cf": x_cf.detach()}
