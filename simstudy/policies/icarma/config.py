"""iCARMA's hyperparameters, declared once (torch-free): the policy's document entry is made of
them (:mod:`.spec`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ...core.bounds import MAX_STEPS, Epochs, LayerWidth, LearningRate
from ...core.documents import StrictModel

__all__ = ["ICARMAConfig", "CostShapeName", "SCORE_BASED"]

#: training fields recorded (and keyed) only when they differ from their default
_RECORDED_WHEN_SET = ("mask_noise", "train_shortened", "clamp_gradient")

#: the cost profiles a model can be trained on
#: (see :class:`simstudy.primitives.profiles.CostProfile`)
CostShapeName = Literal["constant", "concave", "linear", "convex"]

#: the paper's score-based (Likert) set: the values that differ from the rank-based defaults
SCORE_BASED: dict[str, Any] = {"epochs": 900, "lr": 0.001, "margin": 0.004, "tau": 0.49,
                               "cost_weight": 1.3, "kl_weight": 0.9,
                               "plausibility_weight": 0.125, "feasibility_weight": 0.1}


class ICARMAConfig(StrictModel):
    """Hyperparameters of iCARMA.

    Defaults are the rank-based set of the paper's App. C (batch 128, 450 epochs, lr 0.005,
    hinge margin 0.013, Gumbel temperature 0.36, weights 1.1 cost / 0.225 plausibility /
    0.1 feasibility / 1.5 KL) with CARMA's validity multiplier (damping 10) fed by the rows
    not all but rejected in the step and capped at 30, Adam weight decay 5e-4 and the
    latent-action clamp of CARMA's Loan configuration (see :mod:`.validity` for why this rule
    is the default; ``validity: multiplier, infeasible: keep`` is CARMA's literal rule);
    :meth:`score_based` gives the Likert-score set. The hidden-layer sizes did not survive the
    paper's text extraction; two layers of 64 are used.

    Attributes:
        preferences: ``ranking`` (ranks 1..k of the actionable features) or ``likert`` (scores
            1..levels) drawn at training time; in both, how many and which features are
            actionable is uniform. ``likert`` starts from the score-based set
            (:data:`SCORE_BASED`); values given explicitly replace the set's.
        cost_shapes: cost profiles drawn (uniformly) at training time.
        alpha: the cost-profile ``alpha`` the networks are trained for (weights range over
            ``1..1 + alpha``). ``None`` (default): that of the population served, read from
            the context's cost profile when the policy is fitted
            (:attr:`~simstudy.policies.base.RecourseContext.cost`); a document cannot set it.
        levels: Likert levels for ``likert`` preferences.
        prior_high, prior_low: mask prior for the cheapest and the dearest weight.
        checkpoint: which validation check's networks are deployed: ``last`` (the last epoch's,
            as CARMA does) or ``best`` (the best check, as the paper selects among seeds: the
            highest validation validity, ties within 0.005 broken by the lowest objective without
            the validity term; see :func:`~.training.best_check`). ``patience > 0`` implies
            ``best``.
        patience: epochs without validation improvement before stopping early (0: never); the
            best check is then deployed.
        val_every: epochs between validation checks.
        validity: how validity is weighed (:mod:`.validity`): ``multiplier`` (CARMA's
            Lagrange multiplier on the batch hinge, step 1, damping 10, never decreasing),
            ``penalty`` (the hinge with a fixed weight of 1), ``bounded`` (default: CARMA's
            multiplier capped at ``multiplier_bound``), ``warmup`` (the fixed weight for
            ``warmup_epochs``, then CARMA's multiplier from zero), ``per_person`` (one
            multiplier per training person) or ``augmented`` (an augmented Lagrangian of the
            per-person constraints, ``rho = multiplier_step``).
        multiplier_step: the multiplier's step size (CARMA: 1).
        multiplier_bound: the cap of ``validity: bounded`` (30: the one-seed frontier's point
            that kept validity, see :mod:`.validity`).
        warmup_epochs: the fixed-weight epochs of ``validity: warmup`` (5: the first
            validation check, by which CARMA's multiplier has absorbed the untrained network's
            hinge).
        damping: CARMA's damping factor of the multiplier.
        weight_decay: Adam's L2 weight decay (CARMA's Loan configuration: 5e-4; 0: none).
        action_clamp: clamp the latent action as CARMA's action network does (its Loan
            configuration): every latent shift, in units of the noise's spread, is held within
            ``[floor(min z), ceil(max z)]`` of the standardized noise ``z`` of the training
            split (``action_space: latent`` only). Without it the default rule met every target
            of the one-seed frontier, but its training lost validity on other seeds and worlds
            (``benchmarks/ICARMA_RESULTS.md``, "The clamp, measured afterwards").
        clamp_gradient: what the clamp passes back (``action_clamp``): ``zero`` (default, as
            CARMA's ``torch.clamp``: a step on the bound gets no gradient) or
            ``straight_through`` (the same clamped forward pass, the gradient passed as if
            unclamped); measured in ``benchmarks/ICARMA_RESULTS.md`` ("How the clamp keeps the
            least-preferred feature in").
        infeasible: how a training person-profile that no action inside the clamp can make
            valid is treated (:mod:`.feasibility`): ``keep`` (CARMA: its hinge feeds the
            validity term and the multiplier), ``threshold`` (default: a row whose counterfactual's
            approval probability in the current step is below ``infeasible_threshold`` does not
            feed the multiplier's update; it stays in the loss) or ``reachable`` (the best
            probability reachable inside the clamp by the profile's actionable features is
            found once before training; a row below 1/2 is left out of the validity term and
            the multiplier's update) or ``reachable_mask`` (as ``reachable``, and the
            multiplier's update also leaves out a row whose *sampled* mask selects features
            that cannot reach 1/2: the multiplier then grows only where the action, not the
            Gumbel mask's draw, falls short). ``reachable`` and ``reachable_mask`` search the
            latent action's clamp, so they need ``action_space: latent``.
        infeasible_threshold: the probability below which ``infeasible: threshold`` leaves a
            row out of the multiplier's update.
        clamp_features: the features whose standardized training noise sets the clamp
            (``action_clamp``): ``all`` (CARMA: every feature's, for Loan set by age's
            skewed noise, an immutable feature) or ``actionable`` (the acted-on features').
        hinge_on: ``probability`` (default; the hinge on ``2p - 1``) or ``logit``.
        cost_placement: ``outside`` (weight times squared change) or ``inside``; ``None``
            (default): the population's, as ``alpha``.
        cost_scale: ``standardized`` (CARMA: ``Δ^2 / (σ r)``) or ``range`` (``Δ^2 / r^2``).
        action_space: ``latent`` (default, as published: the action network gives
            intervention *magnitudes* in the causal latent space, ``u_cf = u + m ⊙ σ_u ⊙ net``
            and ``x_cf = predict(u_cf)``, App. A.5 and CARMA's ``downstream_for_recourse``;
            a child acted on together with its parent moves with it, and the cost counts the
            acted-on features' whole change) or ``value`` (the network gives intervention
            values ``θ = x + r ⊙ net``, a hard intervention that cuts the acted-on features
            off their parents).
        mask_noise: ``gumbel`` (default, as published: every training step draws the mask
            from the binary Gumbel-softmax) or ``none`` (the deterministic deployment mask
            ``logit > 0`` in training too, straight-through on ``sigmoid(logit)``); measured
            in ``benchmarks/ICARMA_RESULTS.md`` ("Why iCARMA goes past the boundary").
        train_shortened: every training step judges the action shortened to the point where
            the validity constraint is first met (the share of the latent shift found by
            bisection, held without gradient), the action deployed with ``shorten:
            boundary``, so cost and plausibility are learnt for it (``action_space: latent``).
        plausibility_form: ``hinge`` (default; ``max(0, log p(x) - log p(x_cf))``, zero once
            the counterfactual is as likely as the factual) or ``difference``
            (``log p(x) - log p(x_cf)``: the counterfactual's negative log-likelihood up to a
            constant, which keeps pulling towards denser regions).

    Example:
        >>> ICARMAConfig().epochs, ICARMAConfig.score_based().epochs
        (450, 900)
    """

    preferences: Literal["ranking", "likert"] = "ranking"
    mask_hidden: tuple[LayerWidth, ...] = (64, 64)
    action_hidden: tuple[LayerWidth, ...] = (64, 64)
    batch_size: int = Field(128, gt=0, le=MAX_STEPS)
    epochs: Epochs = 450
    lr: LearningRate = 0.005
    margin: float = Field(0.013, ge=0)
    tau: float = Field(0.36, gt=0)
    cost_weight: float = Field(1.1, ge=0)
    plausibility_weight: float = Field(0.225, ge=0)
    feasibility_weight: float = Field(0.1, ge=0)
    kl_weight: float = Field(1.5, ge=0)
    prior_high: float = Field(0.5, ge=0, le=1)
    prior_low: float = Field(0.05, ge=0, le=1)
    cost_shapes: tuple[CostShapeName, ...] = ("constant", "concave", "linear", "convex")
    alpha: float | None = Field(None, gt=0)
    levels: int = Field(4, ge=2)
    checkpoint: Literal["last", "best"] = "last"
    patience: int = Field(0, ge=0)
    val_every: int = Field(5, gt=0, le=MAX_STEPS)
    validity: Literal["multiplier", "penalty", "bounded", "warmup", "per_person",
                      "augmented"] = "bounded"
    multiplier_step: float = Field(1.0, gt=0)
    multiplier_bound: float = Field(30.0, gt=0)
    warmup_epochs: int = Field(5, ge=0)
    damping: float = Field(10.0, ge=0)
    weight_decay: float = Field(5e-4, ge=0)
    action_clamp: bool = True
    clamp_gradient: Literal["zero", "straight_through"] = "zero"
    infeasible: Literal["keep", "threshold", "reachable", "reachable_mask"] = "threshold"
    infeasible_threshold: float = Field(1e-3, gt=0, lt=0.5)
    clamp_features: Literal["all", "actionable"] = "all"
    hinge_on: Literal["probability", "logit"] = "probability"
    cost_placement: Literal["outside", "inside"] | None = None
    cost_scale: Literal["standardized", "range"] = "standardized"
    action_space: Literal["value", "latent"] = "latent"
    plausibility_form: Literal["hinge", "difference"] = "hinge"
    mask_noise: Literal["gumbel", "none"] = "gumbel"
    train_shortened: bool = False

    @model_validator(mode="before")
    @classmethod
    def _preference_set(cls, data: Any) -> Any:
        # a Likert entry starts from the paper's score-based set
        if isinstance(data, dict) and data.get("preferences") == "likert":
            return {**SCORE_BASED, **data}
        return data

    @model_validator(mode="after")
    def _screen_searches_the_latent_action(self) -> ICARMAConfig:
        # the reachable screen searches the clamped latent shift: a value-space action would
        # be judged by a search of another map
        if self.infeasible in ("reachable", "reachable_mask") and self.action_space != "latent":
            raise ValueError(f"infeasible: {self.infeasible} searches the latent action; it "
                             "needs action_space: latent (or infeasible: threshold / keep)")
        if self.train_shortened and self.action_space != "latent":
            raise ValueError("train_shortened shortens the latent action; it needs "
                             "action_space: latent")
        return self

    @classmethod
    def score_based(cls, **overrides: Any) -> ICARMAConfig:
        """The paper's score-based (Likert) set: 900 epochs, lr 0.001, margin 0.004, ..."""
        return cls(**{"preferences": "likert", **overrides})

    def with_cost(self, alpha: float, placement: str) -> ICARMAConfig:
        """This configuration with the cost profile's ``alpha`` and ``placement`` where it
        leaves them to the population (``None``)."""
        return self.model_copy(update={
            "alpha": alpha if self.alpha is None else self.alpha,
            "cost_placement": placement if self.cost_placement is None else self.cost_placement})

    def training_config(self) -> ICARMAConfig:
        """The hyperparameters alone (an entry that extends this model drops its other
        fields: name, seeds, ...); its values were validated already."""
        return ICARMAConfig.model_construct(**{k: getattr(self, k)
                                               for k in ICARMAConfig.model_fields})

    def to_json(self) -> dict:
        values = self.training_config().model_dump(mode="json")
        # a field added after models were stored is left out at its default, so those models
        # keep their cache keys
        for field in _RECORDED_WHEN_SET:
            if values[field] == ICARMAConfig.model_fields[field].default:
                del values[field]
        # a model kept at its best check was recorded by its patience alone before the field
        # existed, and a last-epoch model by patience 0: only "best" with patience 0 is new
        if values["checkpoint"] == "last" or values["patience"] > 0:
            del values["checkpoint"]
        return values

    @property
    def keeps_best_check(self) -> bool:
        """The best validation check is deployed (``checkpoint: best`` or ``patience > 0``)."""
        return self.checkpoint == "best" or self.patience > 0
