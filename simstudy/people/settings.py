"""How simulated people hold and reveal their preferences: the settings, without torch.

:class:`UserSettings` is the one declaration of the ``users:`` section (it is the document
entry); a ground-truth search is a :class:`TruthSearch`, named in
:data:`GROUND_TRUTH_SEARCHES`, and its scale in :data:`GROUND_TRUTH_SCALES` (see
:mod:`simstudy.people.preferences`, which runs them).

References:
    "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission), section 4.1,
    "Simulating Ground-Truth Recourses" (the named scales and the ``actionable`` search).

Example:
    >>> UserSettings().truth == GROUND_TRUTH_SEARCHES["actionable"]
    True
    >>> GROUND_TRUTH_SCALES["far"] == UserSettings().eps
    True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from ..core.documents import StrictModel
from .noise import NoiseModel

__all__ = ["GROUND_TRUTH_SCALES", "GROUND_TRUTH_SEARCHES", "TruthSearch", "UserSettings"]

#: Perturbation norm of each named ground-truth scale (HARE's near / intermediate / far).
GROUND_TRUTH_SCALES: dict[str, float] = {"near": 0.2, "intermediate": 0.8, "far": 1.5}

@dataclass(frozen=True)
class TruthSearch:
    """How a person's hidden ground-truth recourse is searched for
    (:func:`~simstudy.primitives.spheres.growing_spheres`).

    Attributes:
        features: ``mutable`` (every feature of the world that is not immutable) or
            ``actionable`` (the person's truly actionable features): the coordinates perturbed
            and searched.
        shell_width: the search's shell width ``eta`` (scaled units).
        n_samples: samples per shell.
        halving: the radius-halving phase before the shells.
        select_features: the feature-selection (sparsifying) step after the search.
        radius: ``length`` (CARLA) or ``volume`` radii in a shell.
    """

    features: Literal["mutable", "actionable"]
    shell_width: float
    n_samples: int
    halving: bool
    select_features: bool
    radius: Literal["length", "volume"]


#: The named ground-truth searches. ``actionable`` is HARE's evaluation (CARLA's Growing Spheres)
#: over the changes the person can actually make, their truly actionable features: in HARE's
#: datasets every mutable feature is actionable for everyone, so that is where HARE draws the
#: truth, and a feature no action reaches (education in Loan) never enters it.
#: ``all_mutable`` runs the same search over every mutable feature of the world, whether or not
#: the person can act on it; ``actionable_sparse`` is the earlier variant (the person's
#: actionable features, the project's Growing Spheres with radius halving from 0.05, 200
#: samples and feature selection).
GROUND_TRUTH_SEARCHES: dict[str, TruthSearch] = {
    "actionable": TruthSearch("actionable", 0.2, 1000, halving=False, select_features=False,
                              radius="length"),
    "all_mutable": TruthSearch("mutable", 0.2, 1000, halving=False, select_features=False,
                               radius="length"),
    "actionable_sparse": TruthSearch("actionable", 0.05, 200, halving=True,
                                     select_features=True, radius="volume"),
}


class UserSettings(StrictModel):
    """How the people hold and reveal their preferences: the ``users:`` section of a scenario
    (or of a condition).

    Attributes:
        preference: ``ground_truth`` (prefer the recourse nearest a hidden ``r_gt``) or
            ``weights`` (prefer the smaller hidden weighted change).
        weights: ``centres`` (HARE's hidden weights) or ``profile`` (the person's true cost
            weights).
        noise: the answer noise.
        accept_threshold: the hidden loss at or below which a person accepts a recourse;
            ``None`` derives it from the people's model (see
            :func:`~simstudy.people.preferences.derived_accept_threshold`).
        scale: ground-truth perturbation norm or a name of :data:`GROUND_TRUTH_SCALES`
            (resolved by :attr:`eps`).
        ground_truth: how ``r_gt`` is searched for, a name of :data:`GROUND_TRUTH_SEARCHES`:
            ``actionable`` (the default, HARE's evaluation: CARLA's Growing Spheres over the
            changes the person can actually make, their truly actionable features),
            ``all_mutable`` (the same search over every mutable feature of the world, including
            ones the person cannot act on and ones no action reaches) or ``actionable_sparse``
            (the earlier variant: the person's actionable features, the project's Growing
            Spheres with its feature-selection step); resolved by :attr:`truth`.
        n_samples, eta: replace the ground-truth search's samples per shell and shell width.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.people import UserSettings
        >>> settings = UserSettings.model_validate({"scale": "near", "preference": "weights",
        ...                                         "noise": {"kind": "logistic"}})
        >>> settings.eps, settings.preference, settings.noise.kind
        (0.2, 'weights', 'logistic')
    """

    model_config = ConfigDict(frozen=True)

    preference: Literal["ground_truth", "weights"] = "ground_truth"
    weights: Literal["centres", "profile"] = "centres"
    noise: NoiseModel = NoiseModel()
    accept_threshold: float | None = Field(None, ge=0.0)
    scale: Literal["near", "intermediate", "far"] | Annotated[float, Field(gt=0.0)] = "far"
    ground_truth: Literal["actionable", "all_mutable", "actionable_sparse"] = "actionable"
    n_samples: int | None = Field(None, gt=0)
    eta: float | None = Field(None, gt=0.0)

    @property
    def eps(self) -> float:
        """The ground-truth perturbation norm (:attr:`scale`, a name resolved)."""
        return float(GROUND_TRUTH_SCALES[self.scale] if isinstance(self.scale, str)
                     else self.scale)

    @property
    def truth(self) -> TruthSearch:
        """How the hidden ground truth is searched for (:attr:`ground_truth` with
        :attr:`n_samples` and :attr:`eta` applied)."""
        truth = GROUND_TRUTH_SEARCHES[self.ground_truth]
        if self.n_samples is not None:
            truth = replace(truth, n_samples=self.n_samples)
        if self.eta is not None:
            truth = replace(truth, shell_width=self.eta)
        return truth
