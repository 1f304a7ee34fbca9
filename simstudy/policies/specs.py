"""Scenario entries of the built-in policies, derived from their parameter declarations.

Every entry derives from :class:`PolicySpec` (``name`` and the switch ``personalized``); its
other fields and defaults come from the policy's parameter dataclass in
:mod:`simstudy.policies.params` (:func:`simstudy.core.schema.derive_spec`), and ``build()`` imports
the runtime policy only then. This module does not import torch, so ``simstudy validate`` reads
scenarios quickly; iCARMA's entry (:mod:`simstudy.policies.icarma.spec`, also torch-free) is
registered by module and imported when a document names it.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from pydantic import Field, SerializeAsAny, field_validator, model_validator

from ..core.documents import StrictModel
from ..core.registry import entry_model, kinds, register
from ..core.schema import derive_spec, resolve_runtime
from .params import GrowingSpheresParams, HAREParams, OracleParams, WachterParams

__all__ = ["PolicySpec", "WachterSpec", "GrowingSpheresSpec", "OracleSpec", "HARESpec"]


class PolicySpec(StrictModel):
    """Base of every policy's scenario entry (subclasses add ``kind`` and their parameters).

    A subclass implements :meth:`build` (the policy as configured); callers use :meth:`policy`,
    which also honours ``personalized``.

    Example:
        >>> from simstudy.policies import PolicySpec, WachterSpec
        >>> spec = WachterSpec(steps=10, personalized=False)
        >>> isinstance(spec, PolicySpec), type(spec.policy()).__name__, spec.policy().kind
        (True, 'UniversalPolicy', 'wachter')
    """

    # True for policies that follow the decision model's gradient; they refuse models that
    # give none (scikit-learn, ONNX) when the scenario is validated
    needs_gradients: ClassVar[bool] = False
    name: str | None = Field(None, description="name in results (default: the kind)")
    personalized: bool = Field(
        True, description="use each person's actionability profile; false: universal recourse "
                          "over the globally actionable features with unit costs")

    @abstractmethod  # pydantic's model metaclass is an ABCMeta: entries without it cannot be made
    def build(self):
        """The unfitted :class:`~simstudy.policies.base.RecoursePolicy` as configured."""

    def policy(self):
        """The unfitted policy to run: :meth:`build`, made universal when not personalized."""
        from .base import UniversalPolicy

        built = self.build()
        return built if self.personalized else UniversalPolicy(built)


@lambda entry: register("policy", entry)
class WachterSpec(derive_spec(WachterParams, runtime="simstudy.policies.wachter:Wachter",
                              kind="wachter", base=PolicySpec, name="WachterSpec")):
    """Scenario entry of :class:`~simstudy.policies.wachter.Wachter` (fields and defaults are
    :class:`~simstudy.policies.params.WachterParams`').

    References:
        Wachter, Mittelstadt & Russell, "Counterfactual explanations without opening the black
        box: automated decisions and the GDPR", Harvard Journal of Law & Technology 31(2),
        2017, https://arxiv.org/abs/1711.00399.

    Example:
        >>> from simstudy.policies import WachterSpec
        >>> spec = WachterSpec.model_validate({"kind": "wachter", "distance": "l1", "steps": 50})
        >>> policy = spec.build()
        >>> policy.distance, policy.steps, policy.lam
        ('l1', 50, 1.0)
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient

    @classmethod
    def check_example(cls) -> dict:
        """A short search for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "wachter", "steps": 40, "rounds": 3}


@lambda entry: register("policy", entry)
class GrowingSpheresSpec(derive_spec(
        GrowingSpheresParams, runtime="simstudy.policies.growing_spheres:GrowingSpheres",
        kind="growing_spheres", base=PolicySpec, name="GrowingSpheresSpec")):
    """Scenario entry of :class:`~simstudy.policies.growing_spheres.GrowingSpheres`.

    References:
        Laugel, Lesot, Marsala, Renard & Detyniecki, "Comparison-based inverse classification
        for interpretability in machine learning", IPMU 2018, https://arxiv.org/abs/1712.08443.

    Example:
        >>> from simstudy.policies import GrowingSpheresSpec
        >>> spec = GrowingSpheresSpec.model_validate({"kind": "growing_spheres", "n_samples": 50})
        >>> spec.build().n_samples, spec.build().eta
        (50, 0.05)
    """

    @classmethod
    def check_example(cls) -> dict:
        """Few samples per shell for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "growing_spheres", "n_samples": 50, "eta": 0.1}


@lambda entry: register("policy", entry)
class OracleSpec(derive_spec(OracleParams, runtime="simstudy.policies.oracle:CausalOracle",
                             kind="oracle", base=PolicySpec, exclude=("progress",),
                             name="OracleSpec")):
    """Scenario entry of :class:`~simstudy.policies.oracle.CausalOracle` (the progress display
    follows the run's ``--quiet``).

    References:
        Individual-actionability study (2026), App. C.2.3; Karimi et al. (NeurIPS 2020,
        https://arxiv.org/abs/2006.06831); CARMA (Majumdar & Valera, FAccT 2024).

    Example:
        >>> from simstudy.policies import OracleSpec
        >>> oracle = OracleSpec(n_values=9).build()
        >>> type(oracle).__name__, oracle.n_values, oracle.plausibility
        ('CausalOracle', 9, True)
    """

    @classmethod
    def check_example(cls) -> dict:
        """A coarse grid for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "oracle", "n_values": 8}


@lambda entry: register("policy", entry)
class HARESpec(derive_spec(HAREParams, runtime="simstudy.policies.hare:HARE", kind="hare",
                           base=PolicySpec, name="HARESpec", replace={
        "base": (SerializeAsAny[StrictModel], Field(default_factory=WachterSpec))})):
    """Scenario entry of :class:`~simstudy.policies.hare.HARE`; ``iterations > 1`` is
    Multi-HARE. ``base`` is the base generator's own entry.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.policies import HARESpec
        >>> spec = HARESpec.model_validate({"kind": "hare", "iterations": 5,
        ...                                 "base": {"kind": "growing_spheres", "n_samples": 50}})
        >>> hare = spec.build()
        >>> type(hare.base).__name__, hare.budget, hare.iterations
        ('GrowingSpheres', 30, 5)
    """

    needs_gradients: ClassVar[bool] = True  # follows the decision model's gradient

    @model_validator(mode="before")
    @classmethod
    def _users_moved(cls, data):
        if isinstance(data, dict) and "users" in data:
            raise ValueError("users: the people who answer are the scenario's people; give "
                             "their hidden preferences and answer noise in the scenario's (or a "
                             "condition's) `users:` section")
        return data

    @classmethod
    def check_example(cls) -> dict:
        """A small budget for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "hare", "budget": 4, "iterations": 2, "steps": 5,
                "base": {"kind": "wachter", "steps": 20}}

    @field_validator("base", mode="before")
    @classmethod
    def _base_spec(cls, value):
        # any registered generator can be the base (Wachter, Growing Spheres, the causal
        # oracle, iCARMA, ...), validated by its own spec; HARE over HARE is refused
        if isinstance(value, StrictModel):
            return value
        if not isinstance(value, dict):
            raise ValueError("base must be a policy entry with a kind")
        kind = value.get("kind")
        choices = [k for k in kinds("policy") if k != "hare"]
        if kind not in choices:
            raise ValueError(f"unknown base generator kind {kind!r}; choose from {choices}")
        return entry_model("policy", kind).model_validate(value)

    def build(self):
        return resolve_runtime(self.runtime)(**{**self.arguments(), "base": self.base.build()})

