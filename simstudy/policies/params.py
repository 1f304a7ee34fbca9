"""The parameters of the built-in policies: each one pydantic model, torch-free.

A policy's parameters model is its scenario entry (``{kind: wachter, steps: 50}``) and the one
declaration of its parameters, their constraints and defaults; the runtime policy takes it
(``Wachter(params)``, or ``Wachter(steps=50)``, which makes the model). The runtime imports
this module; the kind's declaration (:mod:`simstudy.policies.kinds`) pairs the two and imports
the runtime only when an entry is built, so documents validate without torch. What each
parameter means is documented on the runtime class.

Example:
    >>> WachterParams().lambda_growth
    10.0
    >>> GrowingSpheresParams(n_samples=50).eta
    0.05
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, SerializeAsAny, field_validator, model_validator

from ..core.bounds import MAX_QUESTIONS, MAX_STEPS, LearningRate, Steps
from ..core.documents import StrictModel
from ..core.registry import build, entry_model, kinds

__all__ = ["PolicyParams", "WachterParams", "GrowingSpheresParams", "OracleParams",
           "HAREParams"]


class PolicyParams(StrictModel):
    """What every policy's parameters model has: ``name`` and the switch ``personalized``.

    A subclass adds ``kind: Literal[...]`` and the policy's parameters; :meth:`build` gives the
    runtime policy as configured, :meth:`policy` the one to run (made universal when not
    personalized).

    Example:
        >>> from simstudy.policies import PolicyParams, WachterParams
        >>> params = WachterParams(steps=10, personalized=False)
        >>> isinstance(params, PolicyParams), type(params.policy()).__name__
        (True, 'UniversalPolicy')
        >>> params.policy().kind
        'wachter'
    """

    # True for policies that follow the decision model's gradient; they refuse models that
    # give none (scikit-learn, ONNX) when the scenario is validated
    needs_gradients: ClassVar[bool] = False
    name: str | None = Field(None, description="name in results (default: the kind)")
    personalized: bool = Field(
        True, description="use each person's actionability profile; false: universal recourse "
                          "over the globally actionable features with unit costs")

    def build(self) -> Any:
        """The unfitted :class:`~simstudy.policies.base.RecoursePolicy` as configured."""
        return build("policy", self)

    def policy(self) -> Any:
        """The unfitted policy to run: :meth:`build`, made universal when not personalized."""
        return self.build().to_run()


class WachterParams(PolicyParams):
    """Parameters of :class:`~simstudy.policies.wachter.Wachter`.

    References:
        Wachter, Mittelstadt & Russell, "Counterfactual explanations without opening the black
        box: automated decisions and the GDPR", Harvard Journal of Law & Technology 31(2),
        2017, https://arxiv.org/abs/1711.00399.

    Example:
        >>> policy = WachterParams.model_validate({"kind": "wachter", "distance": "l1",
        ...                                        "steps": 50}).build()
        >>> policy.params.distance, policy.params.steps, policy.params.lam
        ('l1', 50, 1.0)
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient
    kind: Literal["wachter"] = "wachter"
    distance: Literal["l1", "l2"] = "l2"
    lam: float = Field(1.0, ge=0.0)
    lr: LearningRate = 0.01
    steps: Steps = 200
    rounds: int = Field(4, ge=1, le=100)
    # the weight grows (or stays) between rounds without a valid counterfactual
    lambda_growth: float = Field(10.0, ge=1.0)

    @classmethod
    def check_example(cls) -> dict:
        """A short search for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "wachter", "steps": 40, "rounds": 3}


class GrowingSpheresParams(PolicyParams):
    """Parameters of :class:`~simstudy.policies.growing_spheres.GrowingSpheres`.

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> policy = GrowingSpheresParams.model_validate({"kind": "growing_spheres",
        ...                                               "n_samples": 50}).build()
        >>> policy.params.n_samples, policy.params.eta
        (50, 0.05)
    """

    kind: Literal["growing_spheres"] = "growing_spheres"
    n_samples: int = Field(200, gt=0)
    eta: float = Field(0.05, gt=0)
    select_features: bool = True

    @classmethod
    def check_example(cls) -> dict:
        """Few samples per shell for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "growing_spheres", "n_samples": 50, "eta": 0.1}


class OracleParams(PolicyParams):
    """Parameters of :class:`~simstudy.policies.oracle.CausalOracle` (its progress display is
    not a parameter: it follows the run's ``--quiet``).

    References:
        Individual-actionability study (2026), App. C.2.3; Karimi et al. (NeurIPS 2020,
        https://arxiv.org/abs/2006.06831); CARMA (Majumdar & Valera, FAccT 2024).

    Example:
        >>> oracle = OracleParams(n_values=9).build()
        >>> type(oracle).__name__, oracle.params.n_values, oracle.params.plausibility
        ('CausalOracle', 9, True)
    """

    kind: Literal["oracle"] = "oracle"
    n_values: int = Field(25, ge=2, le=200)
    grid: Literal["around_x_clipped", "span", "around_x"] = "around_x_clipped"
    plausibility: bool = True
    chunk_size: int = Field(128, ge=1)

    @classmethod
    def check_example(cls) -> dict:
        """A coarse grid for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "oracle", "n_values": 8}


class HAREParams(PolicyParams):
    """Parameters of :class:`~simstudy.policies.hare.HARE`; ``iterations > 1`` is Multi-HARE.
    ``base`` is the base generator's own entry (any registered kind but HARE).

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> params = HAREParams.model_validate({"kind": "hare", "iterations": 5,
        ...     "base": {"kind": "growing_spheres", "n_samples": 50}})
        >>> hare = params.build()
        >>> type(hare.base).__name__, hare.params.budget, hare.params.iterations
        ('GrowingSpheres', 30, 5)
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient
    kind: Literal["hare"] = "hare"
    base: SerializeAsAny[PolicyParams] = Field(default_factory=WachterParams)
    budget: int = Field(30, gt=0, le=MAX_QUESTIONS)
    iterations: int = Field(1, gt=0, le=MAX_STEPS)
    gamma: float = Field(1.0, gt=0.0)
    lam: float = Field(10.0, ge=0.0)
    steps: int = Field(100, ge=0, le=MAX_STEPS)
    lr: LearningRate = 0.1
    tolerance: float = Field(1e-6, gt=0.0)
    early_stop: bool = True
    keep_best: bool = False
    search_without_base: bool = False
    same_box: bool = True

    @model_validator(mode="before")
    @classmethod
    def _users_moved(cls, data: Any) -> Any:
        if isinstance(data, dict) and "users" in data:
            raise ValueError("users: the people who answer are the scenario's people; give "
                             "their hidden preferences and answer noise in the scenario's (or a "
                             "condition's) `users:` section")
        return data

    @field_validator("base", mode="before")
    @classmethod
    def _base_entry(cls, value: Any) -> Any:
        # any registered generator can be the base (Wachter, Growing Spheres, the causal
        # oracle, iCARMA, ...), validated by its own model; HARE over HARE is refused
        if isinstance(value, PolicyParams):
            return value
        if not isinstance(value, dict):
            raise ValueError("base must be a policy entry with a kind")
        kind = value.get("kind")
        choices = [k for k in kinds("policy") if k != "hare"]
        if kind not in choices:
            raise ValueError(f"unknown base generator kind {kind!r}; choose from {choices}")
        return entry_model("policy", kind).model_validate(value)

    @classmethod
    def check_example(cls) -> dict:
        """A small budget for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "hare", "budget": 4, "iterations": 2, "steps": 5,
                "base": {"kind": "wachter", "steps": 20}}


