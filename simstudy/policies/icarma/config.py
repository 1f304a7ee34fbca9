"""iCARMA's hyperparameters: one frozen declaration, from which the scenario entry is derived."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Interval, Le

from ...core.bounds import MAX_STEPS, Epochs, LayerWidth, LearningRate, Seed

__all__ = ["ICARMAConfig", "CostShapeName", "ICARMAParams"]

#: the cost profiles a model can be trained on
#: (see :class:`simstudy.primitives.profiles.CostProfile`)
CostShapeName = Literal["constant", "concave", "linear", "convex"]
_Positive = Annotated[int, Gt(0), Le(MAX_STEPS)]
_Weight = Annotated[float, Ge(0)]
_Probability = Annotated[float, Interval(ge=0, le=1)]


@dataclass(frozen=True)
class ICARMAConfig:
    """Hyperparameters of iCARMA.

    Defaults are the rank-based set of the paper's App. C (batch 128, 450 epochs, lr 0.005,
    hinge margin 0.013, Gumbel temperature 0.36, weights 1.1 cost / 0.225 plausibility /
    0.1 feasibility / 1.5 KL) with CARMA's validity multiplier (damping 10), Adam weight decay
    5e-4 and the latent-action clamp of CARMA's Loan configuration (see :mod:`.validity` for
    why this rule is the default);
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
        validity: how validity is weighed (:mod:`.validity`): ``multiplier`` (default: CARMA's
            Lagrange multiplier on the batch hinge, step 1, damping 10, never decreasing),
            ``penalty`` (the hinge with a fixed weight of 1), ``bounded`` (CARMA's multiplier
            capped at ``multiplier_bound``), ``warmup`` (the fixed weight for
            ``warmup_epochs``, then CARMA's multiplier from zero), ``per_person`` (one
            multiplier per training person) or ``augmented`` (an augmented Lagrangian of the
            per-person constraints, ``rho = multiplier_step``).
        multiplier_step: the multiplier's step size (CARMA: 1).
        multiplier_bound: the cap of ``validity: bounded``.
        warmup_epochs: the fixed-weight epochs of ``validity: warmup`` (5: the first
            validation check, by which CARMA's multiplier has absorbed the untrained network's
            hinge).
        damping: CARMA's damping factor of the multiplier.
        weight_decay: Adam's L2 weight decay (CARMA's Loan configuration: 5e-4; 0: none).
        action_clamp: clamp the latent action as CARMA's action network does: every latent
            shift, in units of the noise's spread, is held within ``[floor(min z), ceil(max z)]``
            of the standardized noise ``z`` of the training split (``action_space: latent``
            only).
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

    Example:
        >>> ICARMAConfig().epochs, ICARMAConfig.score_based().epochs
        (450, 900)
    """

    preferences: Literal["ranking", "likert"] = "ranking"
    mask_hidden: tuple[LayerWidth, ...] = (64, 64)
    action_hidden: tuple[LayerWidth, ...] = (64, 64)
    batch_size: _Positive = 128
    epochs: Epochs = 450
    lr: LearningRate = 0.005
    margin: _Weight = 0.013
    tau: Annotated[float, Gt(0)] = 0.36
    cost_weight: _Weight = 1.1
    plausibility_weight: _Weight = 0.225
    feasibility_weight: _Weight = 0.1
    kl_weight: _Weight = 1.5
    prior_high: _Probability = 0.5
    prior_low: _Probability = 0.05
    cost_shapes: tuple[CostShapeName, ...] = ("constant", "concave", "linear", "convex")
    alpha: Annotated[float, Gt(0)] = 3.0
    levels: Annotated[int, Ge(2)] = 4
    patience: Annotated[int, Ge(0)] = 0
    val_every: _Positive = 5
    validity: Literal["multiplier", "penalty", "bounded", "warmup", "per_person",
                      "augmented"] = "multiplier"
    multiplier_step: Annotated[float, Gt(0)] = 1.0
    multiplier_bound: Annotated[float, Gt(0)] = 10.0
    warmup_epochs: Annotated[int, Ge(0)] = 5
    damping: _Weight = 10.0
    weight_decay: _Weight = 5e-4
    action_clamp: bool = True
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

    @classmethod
    def for_preferences(cls, preferences: str, **overrides) -> ICARMAConfig:
        """The paper's set for ``ranking`` or ``likert`` preferences, with ``overrides``."""
        base = cls() if preferences == "ranking" else cls.score_based()
        return replace(base, **overrides)

    def to_json(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d


@dataclass(eq=False)
class ICARMAParams:
    """Parameters of :class:`~simstudy.policies.icarma.policy.ICARMA` (which inherits its
    constructor from here; its scenario entry derives from the same declaration without
    importing torch). What each parameter means is documented on the policy.

    Example:
        >>> ICARMAParams().config.epochs, ICARMAParams().cache
        (450, True)
    """

    config: ICARMAConfig = ICARMAConfig()
    seeds: list[Seed] | None = None
    # ``True``, ``False`` or a :class:`~simstudy.world.decision.ModelCache` (not named here:
    # its module imports torch)
    cache: Any = True
    progress: bool = True
