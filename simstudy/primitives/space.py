"""The [0, 1]-scaled feature space shared by the non-causal generators, HARE and the people.

Wachter, Growing Spheres and HARE measure distances after min-max scaling every feature by the
training range, ``s = (x - lower) / (upper - lower)``, as in their published evaluations. This
module holds that map, the decision model seen from scaled space, and the per-person mask of the
coordinates a person may move (globally actionable *and* actionable for that person).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .levels import level_columns, snap_values
from .profiles import ActionabilityProfiles
from .recourse import Recourse

__all__ = ["ScaledSpace", "action_mask", "points_to_recourse", "clip_to_box", "person_box",
           "snap_points"]


@dataclass
class ScaledSpace:
    """Min-max scaling plus the decision model evaluated on scaled points.

    Attributes:
        model: the decision model (approval logit on original units).
        lower, feature_range: ``(d,)`` float64 tensors from the training split.
        levels: ``{column: ascending codes}`` of the features with levels (the world's
            :attr:`~simstudy.world.base.FeatureRoles.levels`; see :func:`snap_points`).

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> data = context.data
        >>> from simstudy.primitives import ScaledSpace
        >>> space = ScaledSpace.from_context(context)
        >>> s = space.scale(data.x_test[:3])
        >>> bool(torch.allclose(space.unscale(s), data.x_test[:3])), space.approves(s).dtype
        (True, torch.bool)
    """

    model: torch.nn.Module
    lower: torch.Tensor
    feature_range: torch.Tensor
    levels: dict[int, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_context(cls, context) -> ScaledSpace:
        """The space of a recourse context (anything with ``model``, ``lower`` and
        ``feature_range``)."""
        roles = getattr(getattr(context, "world", None), "roles", None)
        levels = {} if roles is None else level_columns(roles.names, roles.levels)
        return cls(context.model, torch.as_tensor(context.lower, dtype=torch.float64),
                   torch.as_tensor(context.feature_range, dtype=torch.float64), levels)

    def scale(self, x: np.ndarray | torch.Tensor) -> torch.Tensor:
        if isinstance(x, np.ndarray):
            x = np.ascontiguousarray(x)
        return (torch.as_tensor(x, dtype=torch.float64) - self.lower) / self.feature_range

    def unscale(self, s: torch.Tensor) -> torch.Tensor:
        return self.lower + s.to(torch.float64) * self.feature_range

    def logit(self, s: torch.Tensor) -> torch.Tensor:
        """Approval logit of scaled points of any leading shape ``(..., d)`` (differentiable)."""
        return self.model(self.unscale(s).reshape(-1, s.shape[-1])).reshape(s.shape[:-1])

    @torch.no_grad()
    def approves(self, s: torch.Tensor) -> torch.Tensor:
        """The model's decision (logit >= 0, i.e. approval probability >= 0.5)."""
        return self.logit(s) >= 0


def clip_to_box(points: torch.Tensor, factual: torch.Tensor, mask: torch.Tensor,
                box: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Points kept in the feasible box on the coordinates the person may move; every other
    coordinate is left exactly as it is (a search never moves it: it is the factual's value, or
    a causal consequence carried by a causal base's counterfactual).

    The box is the training range ``[0, 1]`` widened, per person and feature, to contain the
    factual value, so that not acting is always feasible: a person whose value lies outside the
    training range is never moved back into it on a feature they cannot change (clamping every
    coordinate to ``[0, 1]`` would), nor forced to move on one they can.

    Args:
        points: ``(..., d)`` scaled points.
        factual: the scaled factuals, broadcastable to ``points``.
        mask: the movable coordinates (bool), broadcastable to ``points``.
        box: ``(low, high)`` scaled bounds broadcastable to ``points`` that replace the
            widened training range (each person's own, :func:`person_box`).

    Example:
        >>> clip_to_box(torch.tensor([[1.4, 1.4]]), torch.tensor([[1.2, 1.2]]),
        ...             torch.tensor([[True, False]]))
        tensor([[1.2000, 1.4000]])
    """
    if box is None:
        factual = factual.to(points.dtype)
        low = torch.clamp(factual, max=0.0)
        high = torch.clamp(factual, min=1.0)
    else:
        low, high = (b.to(points.dtype) for b in box)
    inside = torch.minimum(torch.maximum(points, low), high)
    return torch.where(mask.to(torch.bool), inside, points)


def person_box(space: ScaledSpace, factual: torch.Tensor, feature_names: Sequence[str],
               profiles: ActionabilityProfiles) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Each person's feasible box in scaled space, ``(low, high)`` each ``(n, d)``: the
    training range widened to contain the factual (:func:`clip_to_box`), narrowed on each
    globally actionable feature to the changes the person allows (their direction and bound,
    :class:`~simstudy.people.change_limits.ChangeLimits`); ``None`` when the profiles set no limits.
    The box always contains the factual, so not acting stays feasible.

    Example:
        >>> import numpy as np
        >>> from simstudy.primitives.limits import ChangeLimits
        >>> from simstudy.primitives.profiles import ActionabilityProfiles
        >>> space = ScaledSpace(None, torch.zeros(2, dtype=torch.float64),
        ...                     torch.full((2,), 10.0, dtype=torch.float64))
        >>> limits = ChangeLimits(("b",), [[1]], [[0.2]], [[True]])
        >>> profiles = ActionabilityProfiles(("b",), np.ones((1, 1), int), 1, np.ones((1, 1)),
        ...                                  limits=limits)
        >>> low, high = person_box(space, torch.tensor([[0.5, 0.5]]), ("a", "b"), profiles)
        >>> low.tolist(), high.tolist()
        ([[0.0, 0.5]], [[1.0, 0.7]])
    """
    if profiles.limits is None:
        return None
    factual = factual.to(torch.float64)
    low, high = torch.clamp(factual, max=0.0), torch.clamp(factual, min=1.0)
    cols = torch.from_numpy(profiles.columns_in(feature_names))
    scale = space.feature_range[cols]
    lo, hi = profiles.limits.interval(scale.numpy())
    low[:, cols] = torch.maximum(low[:, cols], factual[:, cols] + torch.from_numpy(lo) / scale)
    high[:, cols] = torch.minimum(high[:, cols], factual[:, cols] + torch.from_numpy(hi) / scale)
    return low, high


def snap_points(space: ScaledSpace, factual: torch.Tensor, points: torch.Tensor,
                box: tuple[torch.Tensor, torch.Tensor] | None = None,
                outward: bool = False) -> torch.Tensor:
    """Scaled points ``(n, d)`` whose moved coordinates of features with levels are snapped to
    the nearest code inside the person's box (:func:`~simstudy.primitives.levels.snap_values`;
    ``box`` defaults to the widened training range of :func:`clip_to_box`). Unchanged without
    levels. Points and box may have any leading shape ``(..., d)`` that ``factual``
    broadcasts to; ``outward``: snap away from the factual (see
    :mod:`~simstudy.primitives.levels`).

    Example:
        >>> space = ScaledSpace(None, torch.zeros(2, dtype=torch.float64),
        ...                     torch.full((2,), 4.0, dtype=torch.float64),
        ...                     {1: np.array([0.0, 1.0, 2.0, 3.0, 4.0])})
        >>> points = torch.tensor([[0.3, 0.3]], dtype=torch.float64)  # 0.3 of 4: 1.2, nearest 1
        >>> snap_points(space, torch.zeros(1, 2), points).tolist()
        [[0.3, 0.25]]
    """
    if not space.levels:
        return points
    shape = points.shape
    d = shape[-1]
    factual = factual.to(torch.float64).expand(shape).reshape(-1, d)
    flat = points.to(torch.float64).reshape(-1, d)
    if box is None:
        box = (torch.clamp(factual, max=0.0), torch.clamp(factual, min=1.0))
    else:
        box = tuple(b.to(torch.float64).expand(shape).reshape(-1, d) for b in box)
    x = space.unscale(factual).numpy()
    values, intervened = snap_values(space.unscale(flat).numpy(), (flat != factual).numpy(),
                                     x, space.levels, space.unscale(box[0]).numpy(),
                                     space.unscale(box[1]).numpy(), outward)
    cols = list(space.levels)
    snapped = flat.clone()
    snapped[:, cols] = torch.where(torch.from_numpy(intervened[:, cols]),
                                   space.scale(values)[:, cols], factual[:, cols])
    return snapped.reshape(shape)


def action_mask(feature_names: Sequence[str], profiles: ActionabilityProfiles) -> np.ndarray:
    """``(n, d)`` bool over all features: true where the person can act on the feature.

    Immutable, non-actionable (education in Loan) and individually non-actionable features are
    false, so multiplying a step by this mask is the projection onto the person's actionable
    subspace.

    Example:
        >>> import numpy as np
        >>> from simstudy.primitives.profiles import ActionabilityProfiles
        >>> from simstudy.primitives import action_mask
        >>> from simstudy.world import LoanSCM
        >>> features = LoanSCM.roles.actionable
        >>> scores = np.array([[1, 0, 0, 2]])
        >>> profiles = ActionabilityProfiles(features, scores, 2, np.where(scores > 0, 1.0, np.inf))
        >>> features, action_mask(LoanSCM.roles.names, profiles).astype(int).tolist()
        (('loan_amount', 'loan_duration', 'income', 'savings'), [[0, 0, 0, 1, 0, 0, 1]])
    """
    names = list(feature_names)
    mask = np.zeros((len(profiles), len(names)), dtype=bool)
    for k, feature in enumerate(profiles.features):
        mask[:, names.index(feature)] = profiles.actionable[:, k]
    return mask


def points_to_recourse(
    space: ScaledSpace, x: np.ndarray, r: torch.Tensor, found: torch.Tensor,
    extras: dict[str, np.ndarray] | None = None, acted: np.ndarray | None = None,
) -> Recourse:
    """Wraps scaled counterfactual points as a :class:`~simstudy.metrics.Recourse`.

    A feature counts as intervened when its scaled value moved (and, when ``acted`` is given,
    the person acted on it rather than it following from a causal base's action); unmoved
    features keep the factual's exact value, so scaling round-off never shows up as an action.

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> data = context.data
        >>> from simstudy.primitives import ScaledSpace, points_to_recourse
        >>> space = ScaledSpace.from_context(context)
        >>> x = data.x_test[:2].numpy()
        >>> r = space.scale(x).clone()
        >>> r[0, 5] += 0.1
        >>> recourse = points_to_recourse(space, x, r, torch.tensor([True, False]))
        >>> recourse.intervened.astype(int).tolist(), recourse.found.tolist()
        ([[0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0]], [True, False])
    """
    x = np.asarray(x, dtype=np.float64)
    changed = ((r - space.scale(x)) != 0).numpy() & found.numpy()[:, None]
    cf = np.where(changed, space.unscale(r).numpy(), x)
    for j, codes in space.levels.items():
        # a snapped point holds a code up to the scaling's round-off: restore the code itself
        nearest = codes[np.abs(cf[:, j, None] - codes).argmin(axis=1)]
        cf[:, j] = np.where(changed[:, j], nearest, cf[:, j])
    intervened = changed if acted is None else changed & acted
    return Recourse(intervened, cf, found.numpy(), extras=dict(extras or {}), counterfactual=cf)
