"""How simulated people hold and reveal their preferences: the settings, without torch.

:class:`UserSettings` is the one declaration of the ``users:`` section's parameters (the
document entry :class:`~simstudy.people.spec.UsersSpec` derives from it); a ground-truth
search is a :class:`TruthSearch`, named in :data:`GROUND_TRUTH_SEARCHES`, and its scale in
:data:`GROUND_TRUTH_SCALES` (see :mod:`simstudy.people.preferences`, which runs them).

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

from dataclasses import dataclass, field
from typing import Annotated, Literal

from annotated_types import Ge, Gt

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


@dataclass(frozen=True)
class UserSettings:
    """How the people hold and reveal their preferences (the document entry is
    :class:`~simstudy.people.spec.UsersSpec`, derived from these fields).

    Attributes:
        preference: ``ground_truth`` (prefer the recourse nearest a hidden ``r_gt``) or
            ``weights`` (prefer the smaller hidden weighted change).
        eps: the ground-truth perturbation norm (a document names it by ``scale``).
        weights: ``centres`` (HARE's hidden weights) or ``profile`` (the person's true cost
            weights).
        noise: the answer noise.
        accept_threshold: the hidden loss at or below which a person accepts a recourse;
            ``None`` derives it from the people's model (see
            :func:`~simstudy.people.preferences.derived_accept_threshold`).
        truth: how the hidden ground truth is searched for.

    References:
        "HARE: Human-in-the-Loop Algorithmic Recourse" (anonymous submission under double-blind
        review), Algorithms 1-4.

    Example:
        >>> from simstudy.people import UsersSpec
        >>> settings = UsersSpec(preference="weights").settings()
        >>> settings.preference, settings.noise.kind
        ('weights', 'none')
    """

    preference: Literal["ground_truth", "weights"] = "ground_truth"
    eps: Annotated[float, Gt(0)] = GROUND_TRUTH_SCALES["far"]
    weights: Literal["centres", "profile"] = "centres"
    noise: NoiseModel = field(default_factory=NoiseModel)
    accept_threshold: Annotated[float, Ge(0)] | None = None
    truth: TruthSearch = GROUND_TRUTH_SEARCHES["actionable"]
