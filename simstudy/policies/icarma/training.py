"""Training iCARMA: the rejected training applicants, random profiles, a validity rule.

Validity is weighed by the configured rule (:mod:`.validity`; the default and CARMA's literal
rule are stated in :class:`~.config.ICARMAConfig`), with Adam's weight decay (5e-4) and the
clamp on the latent action of CARMA's Loan configuration. Model selection follows CARMA: the
model after the last epoch is deployed (``checkpoint="last"``); with ``checkpoint="best"`` the
best validation check is, and with ``patience > 0`` training also stops early. "Best" (over
all checks, and across training seeds, as the paper deploys the best of its 10 seeds on
validation) is the highest validation validity, ties within 0.005 broken by the lowest
validation objective without the validity term (the multiplier changes during training, so the
full Lagrangian does not compare across checks or seeds).
"""

from __future__ import annotations

import json
import math
import time

import torch
from torch import nn

from ...core.trainer import fit_minibatches, torch_generator
from ...world.decision import state_dict_hash
from ..base import RecourseContext
from .config import ICARMAConfig
from .feasibility import reachable_probability, subset_code
from .networks import ICARMANetworks
from .objective import Objective, latent_step_bounds, noise_scale, sample_training_profiles
from .validity import ValidityRule

__all__ = ["train_icarma", "best_check", "world_fingerprint"]

#: the validation figures kept per check
_CHECKED = ("primary", "hinge", "valid", "cost", "plausible", "plausibility_term")


def world_fingerprint(world) -> str:
    """A stable identity of a world for cache keys: the state-dict hash of a learned world, or
    the class name and public settings of a known SCM.

    Example:
        >>> from simstudy.policies.icarma import world_fingerprint
        >>> from simstudy.world import LoanSCM
        >>> world_fingerprint(LoanSCM()) == world_fingerprint(LoanSCM())
        True
        >>> world_fingerprint(LoanSCM()).split(":")[0]
        'LoanSCM'
    """
    if isinstance(world, nn.Module):
        return f"{type(world).__name__}:{state_dict_hash(world)}"
    settings = {k: v for k, v in vars(world).items() if not k.startswith("_")
                and isinstance(v, (bool, int, float, str))}
    return f"{type(world).__name__}:{json.dumps(settings, sort_keys=True)}"


def best_check(checks: list[dict], tolerance: float = 0.005) -> int:
    """Index of the best validation check: the highest validity, ties within ``tolerance``
    broken by the lowest objective without the validity term (``primary``).

    Example:
        >>> best_check([{"valid": 0.99, "primary": 2.0}, {"valid": 0.992, "primary": 1.0}])
        1
    """
    top = max(c["valid"] for c in checks)
    near = [i for i, c in enumerate(checks) if c["valid"] >= top - tolerance]
    return min(near, key=lambda i: (checks[i]["primary"], i))


def _rejected(context: RecourseContext) -> dict[str, torch.Tensor]:
    """The rejected training and validation applicants, their log-densities and their noise
    (fixed, so abducted once)."""
    data, model, world = context.data, context.model, context.world
    with torch.no_grad():
        x_tr = data.x_train[~model.approves(data.x_train)].to(torch.float64)
        x_va = data.x_val[~model.approves(data.x_val)].to(torch.float64)
        return {"x_tr": x_tr, "x_va": x_va, "logp_tr": world.log_prob(x_tr),
                "logp_va": world.log_prob(x_va), "u_tr": world.abduct(x_tr),
                "u_va": world.abduct(x_va)}


def _networks(context: RecourseContext, config: ICARMAConfig, seed: int) -> ICARMANetworks:
    data, world = context.data, context.world
    mean = data.x_train.mean(dim=0)
    std = data.x_train.std(dim=0).clamp_min(1e-6)
    bounds = (latent_step_bounds(context, config.clamp_features) if config.action_clamp
              and config.action_space == "latent" else (-math.inf, math.inf))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch_generator(seed, "icarma", "init").initial_seed()))
        return ICARMANetworks(world.roles.names, world.roles.actionable, mean, std,
                              data.feature_range, config, step_bounds=bounds)


class _Run:
    """The state one training carries between steps: the multiplier, profiles, checks."""

    def __init__(self, context: RecourseContext, config: ICARMAConfig, seed: int,
                 nets: ICARMANetworks, s: dict[str, torch.Tensor]) -> None:
        self.config, self.nets, self.s = config, nets, s
        self.objective = Objective(nets, context, config)
        self.k = len(context.world.roles.actionable)
        self.g_prof = torch_generator(seed, "icarma", "profiles")
        self.g_noise = torch_generator(seed, "icarma", "gumbel")
        self.val_act, self.val_w = sample_training_profiles(
            len(s["x_va"]), self.k, config, torch_generator(seed, "icarma", "val-profiles"))
        self.rule = ValidityRule(config.validity, len(s["x_tr"]), step=config.multiplier_step,
                                 damping=config.damping, bound=config.multiplier_bound,
                                 warmup_epochs=config.warmup_epochs)
        self.g, self.idx, self.epoch = None, None, 0
        self.reachable, self.excluded = None, [0, 0]
        if config.infeasible in ("reachable", "reachable_mask"):
            t0 = time.process_time()
            lo, hi = nets.step_bounds.tolist()
            self.reachable = reachable_probability(
                context.world, context.model, s["u_tr"], nets.act_index, noise_scale(context),
                (lo, hi)) >= 0.5
            self.screen_cpu_seconds = time.process_time() - t0
        self.best, self.best_state, self.stale = None, None, 0
        self.history: list[dict] = []
        self.states: list[dict[str, torch.Tensor]] = []

    def draw_profiles(self, epoch: int) -> None:
        self.epoch = epoch
        self.rule.start_epoch(epoch)
        self.act, self.w = sample_training_profiles(len(self.s["x_tr"]), self.k, self.config,
                                                    self.g_prof)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        s, cfg = self.s, self.config
        keep = (None if self.reachable is None
                else self.reachable[idx, subset_code(self.act[idx])])
        out = self.objective(s["x_tr"][idx], s["logp_tr"][idx], self.act[idx], self.w[idx],
                             self.g_noise if cfg.mask_noise == "gumbel" else None, self.rule,
                             s["u_tr"][idx], idx, keep)
        g = out["g"]
        if cfg.infeasible == "threshold":
            keep = out["prob"] >= cfg.infeasible_threshold
            g = torch.where(keep, g, 0.0)
        elif cfg.infeasible == "reachable_mask":  # the sampled mask's subset must reach 1/2
            hard = out["hard"][:, self.nets.act_index]
            keep = self.reachable[idx, subset_code(hard)]
            g = torch.where(keep, g, 0.0)
        if keep is not None:
            self.excluded[0] += int((~keep).sum())
        self.excluded[1] += len(idx)
        self.g, self.idx = g, idx
        return out["loss"]

    def update_multiplier(self) -> None:
        self.rule.update(self.g, self.idx, self.epoch)

    def check(self, epoch: int) -> bool:
        """Validation check; true when patience is exhausted."""
        s = self.s
        with torch.no_grad():
            val = self.objective(s["x_va"], s["logp_va"], self.val_act, self.val_w, None,
                                 None, s["u_va"])
        record = {"epoch": epoch, **self.rule.summary(),
                  **{k: float(val[k]) for k in _CHECKED}}
        self.history.append(record)
        if not self.config.keeps_best_check:
            self.best = record
            return False
        # every check's networks are kept (a few thousand weights each): the best is chosen
        # over all checks, since a later check can raise the top validity and so make an
        # earlier one the best (a running pairwise comparison with the tolerance would drift)
        self.states.append({n: t.detach().clone() for n, t in self.nets.state_dict().items()})
        best = best_check(self.history)
        self.best, self.best_state = self.history[best], self.states[best]
        self.stale = 0 if best == len(self.history) - 1 else self.stale + self.config.val_every
        return bool(self.config.patience) and self.stale >= self.config.patience


def train_icarma(context: RecourseContext, config: ICARMAConfig, seed: int,
                 progress: bool = False) -> tuple[ICARMANetworks, dict]:
    """Trains the networks on the rejected training applicants (see the module docstring).

    Network initialization, profile draws, Gumbel noise and batch order all come from streams
    keyed by ``seed`` (see :mod:`simstudy.core.rng`), so training is reproducible. The cost
    profile's ``alpha`` and placement the configuration leaves open are the context's
    (:attr:`RecourseContext.cost`, the population's).

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
        algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003.
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> from simstudy.policies.icarma import ICARMAConfig, train_icarma
        >>> config = ICARMAConfig(epochs=2, mask_hidden=(8,), action_hidden=(8,))
        >>> nets, meta = train_icarma(context, config, seed=0)
        >>> nets.actionable, sorted(meta)[:2]
        (('loan_amount', 'loan_duration', 'income', 'savings'), ['best_epoch', 'best_val_cost'])
    """
    t0, c0 = time.perf_counter(), time.process_time()
    config = config.with_cost(context.cost.alpha, context.cost.placement)
    s = _rejected(context)
    if len(s["x_tr"]) == 0:
        raise ValueError("the decision model rejects no training applicant; nothing to learn")
    nets = _networks(context, config, seed)
    run = _Run(context, config, seed, nets, s)
    fit_minibatches(nets, len(s["x_tr"]), run.loss, lr=config.lr, batch_size=config.batch_size,
                    weight_decay=config.weight_decay,
                    epochs=config.epochs, generator=torch_generator(seed, "icarma", "batches"),
                    before_epoch=run.draw_profiles, after_step=run.update_multiplier,
                    check=run.check, check_every=config.val_every,
                    desc=f"iCARMA seed {seed}", progress=progress)
    if run.best_state is not None:
        nets.load_state_dict(run.best_state)
    nets.eval()
    best, data = run.best, context.data
    meta = {"kind": "icarma", "config": config.to_json(), "seed": int(seed),
            "n_train_rejected": len(s["x_tr"]), "n_val_rejected": len(s["x_va"]),
            "best_epoch": best["epoch"], "epochs_run": run.history[-1]["epoch"],
            "deployed_check": best, "best_val_validity": best["valid"],
            "best_val_cost": best["cost"], "best_val_plausible": best["plausible"],
            "final_multiplier": run.rule.summary()["multiplier"],
            "final_multipliers": run.rule.summary(),
            "excluded_share": run.excluded[0] / max(run.excluded[1], 1),
            "screen_cpu_seconds": getattr(run, "screen_cpu_seconds", 0.0),
            "train_seconds": time.perf_counter() - t0,
            "train_cpu_seconds": time.process_time() - c0, "history": run.history,
            "world": world_fingerprint(context.world),
            "decision_model": state_dict_hash(context.model),
            "data_sha256": data.content_hash()}
    return nets, meta
