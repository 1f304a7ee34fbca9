"""The iCARMA policy: trained (or loaded from the run's model cache) once, then one forward pass
per batch of people (its scenario entry is :mod:`.spec`)."""

from __future__ import annotations

import numpy as np
import torch

from ...metrics import Recourse
from ...primitives.levels import snap_values
from ...primitives.profiles import ActionabilityProfiles
from ...world.decision import ModelCache, state_dict_hash
from ..base import RecourseContext, RecoursePolicy
from .config import ICARMAConfig
from .networks import ICARMANetworks, load_networks, save_networks
from .objective import Objective, mask_prior, noise_scale
from .shortening import first_approved
from .spec import ICARMAParams
from .training import best_check, train_icarma, world_fingerprint

__all__ = ["ICARMA"]



class ICARMA(RecoursePolicy):
    """Amortized individualized causal recourse.

    Takes :class:`~simstudy.policies.icarma.spec.ICARMAParams` (or an :class:`ICARMAConfig`
    and the other fields as keywords). The networks are trained for the cost profile of the
    context it is fitted on (:attr:`RecourseContext.cost`, the population's).

    Args:
        params: the parameters (hyperparameters, ``seeds``, ``cache``).
        seeds: training seeds. With several, one model is trained per seed (each cached) and the
            best on validation (see :func:`best_check`) is deployed, as the paper reports the
            best of its training runs. ``None``: the context's seed.
        cache: ``True``: trained models are stored in the run's model cache (the context's;
            the default cache folder when the context has none); ``False``: no caching; or
            (given as a keyword, not in a document) a :class:`ModelCache` to use.
        progress: show a progress bar while training (silenced by ``--quiet``).

    Attributes:
        config_: the hyperparameters trained with (the context's cost profile filled in).
        networks_: the deployed :class:`ICARMANetworks`.
        meta_: metadata of the deployed model (seed, validation figures, hash, timing).
        runs_: metadata of every trained seed.
        objective_: the training objective's per-person terms for the deployed networks (they
            judge each subset's action with ``mask_choice: exact``).

    References:
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
        algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003.
        "From Universal to Individualized Actionability: Revisiting Personalization in
        Algorithmic Recourse", 2026, arXiv (submitted 9 April 2026).

    Example:
        >>> from simstudy.policies.icarma import ICARMA, ICARMAConfig
        >>> ICARMA(ICARMAConfig(epochs=2), seeds=[0, 1], cache=False).params.seeds
        [0, 1]
    """

    kind = "icarma"
    Params = ICARMAParams

    def __init__(self, params: ICARMAParams | ICARMAConfig | None = None, /, *,
                 cache: bool | ModelCache | None = None, progress: bool = True,
                 **values) -> None:
        if isinstance(params, ICARMAConfig) and not isinstance(params, ICARMAParams):
            params, values = None, {**params.training_config().model_dump(
                exclude={"alpha", "cost_placement"}), **values}
        if params is None and isinstance(cache, bool):
            values["cache"] = cache
        super().__init__(params, **values)
        # a ModelCache is a runtime object, not a parameter; otherwise the entry's switch
        self.cache = cache if isinstance(cache, ModelCache) else self.params.cache
        self.progress = progress

    # -- training -------------------------------------------------------------------------
    def fit(self, context: RecourseContext) -> ICARMA:
        self.context_ = context
        self.config_ = self.params.training_config().with_cost(context.cost.alpha,
                                                              context.cost.placement)
        if self.config_.action_space == "latent":
            self.noise_std_ = noise_scale(context)
        seeds = list(self.params.seeds) if self.params.seeds else [int(context.seed)]
        runs = [self._fit_one(context, s) for s in seeds]
        best = best_check([meta["deployed_check"] for _, meta in runs])
        self.networks_, self.meta_ = runs[best]
        self.runs_ = [meta for _, meta in runs]
        # the objective's per-person terms judge each subset's action (mask_choice: exact)
        self.objective_ = Objective(self.networks_, context, self.config_)
        return self

    def _model_cache(self, context: RecourseContext) -> ModelCache | None:
        if isinstance(self.cache, ModelCache):
            return self.cache
        if not self.cache:
            return None
        return context.cache if context.cache is not None else ModelCache()

    def _cache_key(self, context: RecourseContext, seed: int) -> str:
        return ModelCache.key(
            "icarma", config=self.config_.to_json(), seed=int(seed),
            world=world_fingerprint(context.world), model=state_dict_hash(context.model),
            data=context.data.content_hash(), torch=torch.__version__.split("+")[0])

    def _fit_one(self, context: RecourseContext, seed: int) -> tuple[ICARMANetworks, dict]:
        key, cache = self._cache_key(context, seed), self._model_cache(context)

        def train() -> tuple[ICARMANetworks, dict]:
            return train_icarma(context, self.config_, seed, progress=self.progress)

        if cache is None:
            nets, meta = train()
            return nets, {**meta, "cache_key": key, "state_dict_sha256": state_dict_hash(nets),
                          "cached": False}

        def train_and_save(stem) -> tuple[ICARMANetworks, dict]:
            nets, meta = train()
            meta = {**meta, "cache_key": key}
            return nets, {**meta, "state_dict_sha256": save_networks(nets, stem, meta)}

        return cache.get_or_train(key, load_networks, train_and_save)

    # -- deployment -----------------------------------------------------------------------
    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        """Recourse in one forward pass; ``seed`` is unused (the deployed mask is deterministic).

        With ``mask_choice: network`` the mask is ``logit > 0`` restricted to the person's
        actionable features, exactly as in validation; a person for whom it selects nothing
        gets no recourse (``found`` false). With ``mask_choice: exact`` it is
        :meth:`exact_masks`' choice.
        """
        nets = self.networks_
        x = np.asarray(x)
        xt = torch.as_tensor(x, dtype=torch.float64)
        act_t, w_t = nets.profile_columns(profiles)
        with torch.no_grad():
            h = nets.encode(xt, act_t, w_t)
            mask = (nets.mask_logits(h) > 0) & act_t  # never act on a non-actionable feature
        if self.params.mask_choice == "exact":
            mask = self.exact_masks(x, h, act_t, w_t, mask, profiles)
        theta_np, mask_np = self._deployed(x, h, mask, profiles)
        intervened = np.zeros((len(xt), len(nets.feature_names)), dtype=bool)
        values = np.full(intervened.shape, np.nan)
        idx = nets.act_index.numpy()
        intervened[:, idx] = mask_np
        values[:, idx] = np.where(mask_np, theta_np, np.nan)
        return Recourse(intervened, values, intervened.any(axis=1))

    def _deployed(self, x: np.ndarray, h: torch.Tensor, mask: torch.Tensor,
                  profiles: ActionabilityProfiles,
                  shorten: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(values, acted)`` on the actionable features: the action network's action for
        ``mask``, within the person's limits, on levels, shortened when configured (and
        ``shorten``)."""
        nets = self.networks_
        xt = torch.as_tensor(x, dtype=torch.float64)
        with torch.no_grad():
            if self.config_.action_space == "latent":
                x_cf = nets.latent_actions(h, xt, mask, self.context_.world, self.noise_std_)
                theta = x_cf[:, nets.act_index]
            else:
                theta = nets.actions(h, xt, mask.to(torch.float32))
        idx = nets.act_index.numpy()
        theta_np, mask_np = self._within_limits(x[:, idx], theta.numpy(), mask.numpy(),
                                                profiles)
        theta_np, mask_np = self._on_levels(x[:, idx], theta_np, mask_np, profiles)
        if shorten and self.params.shorten == "boundary":
            theta_np, mask_np = self._shortened(x, theta_np, mask_np, profiles)
        return theta_np, mask_np

    def exact_masks(self, x: np.ndarray, h: torch.Tensor, actionable: torch.Tensor,
                    weights: torch.Tensor, network_mask: torch.Tensor,
                    profiles: ActionabilityProfiles) -> torch.Tensor:
        """Each person's mask solved exactly instead of read off the mask network
        (``mask_choice: exact``): among the non-empty subsets ``S`` of the person's actionable
        features whose action the decision model approves, the one minimizing

            L(S) - lambda_kl * log rho(S),
            L(S) = lambda_c cost + lambda_p R_plaus + lambda_f R_feas,
            rho(S) = prod_{k in S} rho_k * prod_{k not in S} (1 - rho_k)

        (the objective's terms of the action network's action for that mask, as training
        judges it: within the person's limits and on levels, not shortened; ``rho_k`` the
        person's mask prior, :func:`~.objective.mask_prior`); where no subset is approved, the
        network's mask. The chosen mask's action is then deployed as any other (shortened with
        ``shorten: boundary``).

        Over every distribution ``q`` of masks, ``E_q[L] + lambda_kl KL(q || rho)`` (the mask's
        part of the training objective, validity held as the constraint) is smallest at
        ``q*(S) ∝ rho(S) exp(-L(S) / lambda_kl)``; this is its mode. The mask network
        amortizes ``q`` as independent Bernoullis, and its logits for the features whose
        choice decides plausibility sit near even odds (``benchmarks/ICARMA_RESULTS.md``,
        "The mask's choice, measured"). It judges ``2^k - 1`` subsets for ``k`` globally
        actionable features, every person's together.

        References:
            Donsker & Varadhan, "Asymptotic evaluation of certain Markov process expectations
            for large time", Comm. Pure Appl. Math. 28 (1975) (the variational formula);
            Catoni, "PAC-Bayesian supervised classification", IMS Lecture Notes 56 (2007),
            Sec. 1.2 (its minimizer, the Gibbs distribution).
        """
        nets, config = self.networks_, self.config_
        k = len(nets.actionable)
        subsets = torch.tensor([[(bits >> j) & 1 for j in range(k)] for bits in range(1, 2 ** k)],
                               dtype=torch.bool)
        xt = torch.as_tensor(x, dtype=torch.float64)
        with torch.no_grad():
            logp = self.context_.world.log_prob(xt)
            prior = mask_prior(actionable, weights, config).clamp(1e-6, 1 - 1e-6)
        # every subset each person may act on, person by person and each person's subsets in
        # order: the rows are judged alone, so judging them together changes no verdict and
        # costs one counterfactual per block instead of one per subset
        allowed = ~(subsets[None, :, :] & ~actionable[:, None, :]).any(dim=2)
        person, which = np.nonzero(allowed.numpy())
        scores = np.full(allowed.shape, np.inf)
        for block in range(0, len(person), self._EXACT_BLOCK):
            p, w = person[block:block + self._EXACT_BLOCK], which[block:block + self._EXACT_BLOCK]
            scores[p, w] = self._subset_scores(x, xt, h, logp, prior, actionable, weights,
                                               subsets[w], p, profiles)
        # the first subset (in the order above) with the least score: ties keep the smaller
        first_best = scores.argmin(axis=1)
        found = np.isfinite(scores[np.arange(len(x)), first_best])
        chosen = network_mask.clone()
        chosen[torch.from_numpy(found)] = subsets[torch.from_numpy(first_best[found])]
        return chosen

    #: (person, subset) pairs judged together by :meth:`exact_masks`: bounds its memory only
    #: (each pair is judged alone).
    _EXACT_BLOCK = 1 << 15

    def _subset_scores(self, x: np.ndarray, xt: torch.Tensor, h: torch.Tensor,
                       logp: torch.Tensor, prior: torch.Tensor, actionable: torch.Tensor,
                       weights: torch.Tensor, mask: torch.Tensor, rows: np.ndarray,
                       profiles: ActionabilityProfiles) -> np.ndarray:
        """:meth:`exact_masks`' score of person ``rows[i]`` acting on ``mask[i]``; ``inf``
        where the action is not approved, acts on nothing, or has no score."""
        nets, config, idx = self.networks_, self.config_, self.networks_.act_index.numpy()
        xr = np.asarray(x[rows], dtype=np.float64)
        rows_t = torch.from_numpy(rows)
        # judged as the training objective judges it: the network's action, unshortened
        theta, acted = self._deployed(xr, h[rows_t], mask, profiles.subset(rows), shorten=False)
        full = np.zeros(xr.shape, dtype=bool)
        full[:, idx] = acted
        values = xr.copy()
        values[:, idx] = np.where(acted, theta, xr[:, idx])
        with torch.no_grad():
            x_cf = self.context_.world.counterfactual(xt[rows_t], torch.from_numpy(full),
                                                      torch.from_numpy(values))
            logp_cf = torch.nan_to_num(self.context_.world.log_prob(x_cf), nan=-1e6,
                                       neginf=-1e6)
            acted_t = torch.from_numpy(acted)
            terms = self.objective_.terms(xt[rows_t], logp[rows_t], actionable[rows_t],
                                          weights[rows_t], torch.zeros(len(rows), mask.shape[1]),
                                          acted_t.to(torch.float64), x_cf[:, nets.act_index],
                                          x_cf, logp_cf)
            log_prior = torch.where(acted_t, prior[rows_t].log(), (1 - prior[rows_t]).log())
            log_prior = torch.where(actionable[rows_t], log_prior, 0.0).sum(dim=1)
            score = (config.cost_weight * terms["cost"]
                     + config.plausibility_weight * terms["plaus"]
                     + config.feasibility_weight * terms["feas"]
                     - config.kl_weight * log_prior)
            approved = self.context_.model.approves(x_cf).reshape(-1)
        ok = acted_t.any(dim=1) & approved & ~torch.isnan(score)
        return torch.where(ok, score, torch.inf).numpy()

    def _shortened(self, x: np.ndarray, theta: np.ndarray, mask: np.ndarray,
                   profiles: ActionabilityProfiles) -> tuple[np.ndarray, np.ndarray]:
        """Each action shortened to its first approved point (:func:`.first_approved`, in the
        world the policy acts in), a coded feature's value put on its levels at every point
        judged, so the point judged is the one recommended. ``theta`` is already within the
        person's limits and on levels, so every point between it and ``x_A`` is within the
        limits too."""
        idx = self.networks_.act_index.numpy()
        x = np.asarray(x, dtype=np.float64)
        acted = np.zeros(x.shape, dtype=bool)
        acted[:, idx] = mask
        target = x.copy()
        target[:, idx] = np.where(mask, theta, x[:, idx])

        def on_levels(values: np.ndarray, acted: np.ndarray,
                      rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            values[:, idx], acted[:, idx] = self._on_levels(
                x[rows][:, idx], values[:, idx], acted[:, idx], profiles.subset(rows))
            return values, acted

        values, acted, _ = first_approved(self.context_.world, self.context_.model, x, acted,
                                          target, self.params.shorten_steps, on_levels)
        return values[:, idx], acted[:, idx]

    def _on_levels(self, x: np.ndarray, theta: np.ndarray, mask: np.ndarray,
                   profiles: ActionabilityProfiles) -> tuple[np.ndarray, np.ndarray]:
        """The actions on features with levels snapped to the nearest code the person allows
        (:func:`~simstudy.primitives.levels.snap_values`); the counterfactual follows from the
        snapped values."""
        levels = self.context_.world.roles.levels
        if not levels:
            return theta, mask
        actionable = list(self.networks_.actionable)
        columns = {actionable.index(f): np.asarray(c) for f, c in levels.items()
                   if f in actionable}
        low = high = None
        if profiles.limits is not None:
            names = self.context_.feature_names
            lo, hi = profiles.limits.interval(self.context_.feature_range[
                [names.index(f) for f in profiles.limits.features]])
            order = [list(profiles.limits.features).index(f) for f in actionable]
            low, high = x + lo[:, order], x + hi[:, order]
        return snap_values(theta, mask, x, columns, low, high)

    def _within_limits(self, x: np.ndarray, theta: np.ndarray, mask: np.ndarray,
                       profiles: ActionabilityProfiles) -> tuple[np.ndarray, np.ndarray]:
        """The actions clamped to the changes each person allows (their direction and bound);
        a feature the clamp returns to its factual value is masked out (no action). The
        counterfactual follows from the clamped values."""
        limits = profiles.limits
        if limits is None:
            return theta, mask
        names = self.context_.feature_names
        lo, hi = limits.interval(self.context_.feature_range[
            [names.index(f) for f in limits.features]])
        columns = [list(limits.features).index(f) for f in self.networks_.actionable]
        lo, hi = lo[:, columns], hi[:, columns]
        clamped = np.clip(theta, x + lo, x + hi)
        return clamped, mask & (clamped != x)

    def model_hashes(self) -> dict[str, str]:
        hashes = {f"icarma_seed{m['seed']}": m["state_dict_sha256"] for m in self.runs_}
        return {**hashes, "icarma_deployed": self.meta_["state_dict_sha256"]}
