"""The simulated people of one replication x condition.

:class:`People` is the single home of everything about the simulated participants: ids,
features and group attributes; the actionability profile they *report* and the one that is
*true* (hidden); their hidden preferences (a ground-truth recourse or weights); how they answer
questions (noise, satisfaction threshold); and their response dispositions (to accept, to act,
effort capacity, answering speed, patience). Policies see only the reported profile and, through
:meth:`People.feedback`, answers; the run tables, the event world and the simulated studies read
the hidden parts.

Every draw is keyed by ``(seed, purpose, person id)`` (:mod:`simstudy.core.rng`), so every policy
of a replication faces the same people with the same luck, and any subset or order of people
sees the same numbers. The hidden ground truth is found lazily (the first time it is needed)
with the sphere search of :mod:`simstudy.primitives.spheres`; being keyed per person, it does
not depend on when or for whom it is first computed.

Example:
    >>> import numpy as np
    >>> from simstudy.people import PeopleSpec
    >>> from simstudy.world.loan import LOAN_ROLES
    >>> spec = PeopleSpec.model_validate({"population": {"actionability": {"kind": "all"}}})
    >>> spec.population.group_columns()
    []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ..core.normal_draws import entity_normals
from ..core.registry import build
from ..core.rng import entity_uniforms
from ..primitives.limits import ChangeLimits, limit_violations
from ..primitives.profiles import ActionabilityProfiles
from ..primitives.space import ScaledSpace, action_mask
from .answers import NoiseModel, PeopleFeedback
from .preferences import (
    centred_weights,
    derived_accept_threshold,
    ground_truth_recourse,
    profile_weights,
)
from .response import ResponseInputs, ResponseModel
from .settings import UserSettings
from .spec import PeopleSpec
from .truth import ground_truth_dissimilarity, ground_truth_proximity

__all__ = ["People", "UserSettings", "TRUTH_COLUMNS"]

#: Columns of :meth:`People.truth_columns` (the ``gtp`` / ``gtd`` pair only for ground-truth
#: preferences).
TRUTH_COLUMNS = ("blocked", "user_loss", "has_ground_truth", "gtp", "gtd")


@dataclass(eq=False)
class People:
    """The simulated people of one replication x condition (see the module docstring).

    Build with :meth:`People.from_spec` (from a :class:`~simstudy.people.PeopleSpec`).

    Attributes:
        ids: ``(n,)`` person ids (keys of every draw).
        x: ``(n, d)`` factual features.
        feature_names: the world's features.
        groups: group columns (``privileged``, a stylized attribute, ...), each ``(n,)``.
        reported: the actionability profile people tell policies.
        true_actionable: ``(n, K)`` bool over the profile's features: what they truly can change.
        misreported: ``(n,)`` bool, people reporting a feature they truly cannot change.
        seed: the stream of the profile, hidden-mismatch and disposition draws.
        preference_seed: the stream of the hidden preferences (ground truth, weights) and of the
            answers' luck (default: ``seed``; the run tables use the replication's policy
            stream, ``derive_seed(seed, "policies")``).
        space: the replication's scaled space (hidden truth lives in it).
        users: hidden-preference and answering settings.
        response: how they accept and act on a recourse.
        dispositions: ``(n, 6)`` standard normals: accept, act, effort capacity, answering
            speed, accept slope, act slope.
        patience_draw: ``(n,)`` uniforms behind each person's patience.
        immutable: the world's immutable features (an ``all_mutable`` ground-truth search moves
            every other feature).

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context, small_people
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> people = small_people(context, ids, x, profiles)
        >>> len(people), people.true_mask.shape, sorted(people.groups)
        (3, (3, 7), [])
    """

    ids: np.ndarray
    x: np.ndarray
    feature_names: tuple[str, ...]
    groups: dict[str, np.ndarray]
    reported: ActionabilityProfiles
    true_actionable: np.ndarray
    misreported: np.ndarray
    seed: int
    space: ScaledSpace
    users: UserSettings
    response: ResponseModel
    dispositions: np.ndarray
    patience_draw: np.ndarray
    preference_seed: int
    immutable: tuple[str, ...] | None = None
    hidden_bound_factor: float = 1.0

    @classmethod
    def from_spec(cls, spec: PeopleSpec, x: np.ndarray, ids: np.ndarray, seed: int,
                  feature_names: Sequence[str], actionable: tuple[str, ...], space: ScaledSpace,
                  reported: ActionabilityProfiles | None = None,
                  preference_seed: int | None = None,
                  immutable: Sequence[str] | None = None,
                  rankings: Mapping[str, Sequence[str]] | None = None,
                  income: str | None = None, sensitive: Sequence[str] = ()) -> People:
        """The people a :class:`~simstudy.people.PeopleSpec` describes behind rows ``x`` (ids
        ``ids``), every draw keyed by ``(seed, purpose, id)``.

        Args:
            spec: the population, ``users:`` and ``response:`` sections.
            x, ids: their features and person ids.
            seed: the replication's seed.
            feature_names, actionable: the world's features and its globally actionable ones.
            space: the replication's scaled space (a hidden ground truth is an approved point
                of its decision model), e.g. ``ScaledSpace.from_context(context)``.
            reported: use these reported profiles instead of drawing them from the population
                document (no group columns then).
            preference_seed: the stream of hidden preferences and answers (default: ``seed``).
            immutable: the world's immutable features (``world.roles.immutable``); needed by
                the ``all_mutable`` ground-truth search, which moves every other feature.
            rankings: the world's named ranking distributions (``world.roles.rankings``);
                needed by a population document naming one other than ``uniform``.
            income, sensitive: the world's income-like and sensitive features
                (``world.roles.income``, ``world.roles.sensitive``); read by the group rules.
        """
        x = np.asarray(x, dtype=np.float64)
        ids = np.asarray(ids, dtype=np.int64)
        if reported is None:
            profiles, groups = spec.population.draw(x, feature_names, actionable, ids, seed,
                                                    rankings, income, tuple(sensitive))
        else:
            profiles, groups = reported, {}
        return cls.create(ids, x, tuple(feature_names), profiles, groups, seed, space,
                          spec.users, build("response", spec.response),
                          spec.population.hidden_mismatch_probability, preference_seed,
                          None if immutable is None else tuple(immutable),
                          spec.population.hidden_bound_factor)

    @classmethod
    def create(cls, ids: np.ndarray, x: np.ndarray, feature_names: tuple[str, ...],
               reported: ActionabilityProfiles, groups: dict[str, np.ndarray], seed: int,
               space: ScaledSpace, users: UserSettings, response: ResponseModel,
               hidden_mismatch_probability: float = 0.0,
               preference_seed: int | None = None,
               immutable: tuple[str, ...] | None = None,
               hidden_bound_factor: float = 1.0) -> People:
        """Draws the hidden profile and the dispositions of people with a reported profile."""
        ids = np.asarray(ids, dtype=np.int64)
        true = reported.actionable.copy()
        u = entity_uniforms(seed, "hidden-mismatch", ids, 2)
        n_act = true.sum(axis=1)
        mismatch = (u[:, 0] < hidden_mismatch_probability) & (n_act > 0)
        # The j-th of the person's reported-actionable features is truly not actionable.
        j = np.minimum((u[:, 1] * n_act).astype(np.int64), np.maximum(n_act - 1, 0))
        rank = np.cumsum(true, axis=1) - 1
        true[mismatch[:, None] & true & (rank == j[:, None])] = False
        dispositions = np.concatenate([entity_normals(seed, "person-effects", ids, 4),
                                       entity_normals(seed, "rating-slopes", ids, 2)], axis=1)
        patience = entity_uniforms(seed, "patience", ids)[:, 0]
        x = np.array(x, dtype=np.float64)  # a copy: the people's factuals never change
        for array in (ids, true, mismatch, dispositions, patience):
            array.setflags(write=False)
        return cls(ids, x, tuple(feature_names),
                   {k: np.asarray(v) for k, v in groups.items()}, reported, true, mismatch,
                   int(seed), space, users, response, dispositions, patience,
                   int(seed if preference_seed is None else preference_seed),
                   None if immutable is None else tuple(immutable), float(hidden_bound_factor))

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def _order(self) -> np.ndarray:
        return np.argsort(self.ids, kind="stable")

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Row positions of person ids (every id must be one of :attr:`ids`)."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.ids[self._order], ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        rows = self._order[pos]
        if len(ids) and not np.array_equal(self.ids[rows], ids):
            raise KeyError("some ids are not among these people")
        return rows

    # -- hidden actionability ---------------------------------------------------------------
    @cached_property
    def true_profile(self) -> ActionabilityProfiles:
        """The reported profile with every truly non-actionable feature made non-actionable and,
        for people with a hidden mismatch, each bound on the change shrunk to
        ``hidden_bound_factor`` of the reported one."""
        p = self.reported
        limits = p.limits
        if limits is not None and self.hidden_bound_factor != 1.0:
            shrink = np.where(self.misreported[:, None], self.hidden_bound_factor, 1.0)
            limits = ChangeLimits(limits.features, limits.direction, limits.bound * shrink,
                                  limits.share)
        return ActionabilityProfiles(p.features, np.where(self.true_actionable, p.scores, 0),
                                     p.levels, np.where(self.true_actionable, p.weights, np.inf),
                                     p.kind, p.cost_placement, limits)

    @cached_property
    def true_mask(self) -> np.ndarray:
        """``(n, d)`` bool over every feature: the person can truly change it."""
        return action_mask(self.feature_names, self.true_profile)

    def blocked(self, intervened: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``(m,)`` bool: the action ``intervened`` ``(m, d)`` needs a feature the person truly
        cannot change."""
        mask = self.true_mask if rows is None else self.true_mask[rows]
        return (np.asarray(intervened, dtype=bool) & ~mask).any(axis=1)

    def beyond_limits(self, x_cf: np.ndarray, intervened: np.ndarray,
                      rows: np.ndarray | None = None) -> np.ndarray:
        """``(m,)`` bool: the action sets a feature (to its value in ``x_cf``) against the
        person's true direction or beyond their true bound (false without limits)."""
        limits = self.true_profile.limits
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        if limits is None:
            return np.zeros(len(rows), dtype=bool)
        columns = self.reported.columns_in(self.feature_names)
        return limit_violations(limits.subset(rows), self.x[rows], np.asarray(intervened, bool),
                                np.asarray(x_cf, dtype=np.float64),
                                self.space.feature_range.numpy(), columns)

    @cached_property
    def mutable_mask(self) -> np.ndarray:
        """``(n, d)`` bool over every feature: not one of the world's immutable features."""
        if self.immutable is None:
            raise ValueError("these people were built without the world's immutable features; "
                             "pass immutable=world.roles.immutable to People.from_spec")
        row = np.array([f not in self.immutable for f in self.feature_names])
        return np.repeat(row[None, :], len(self), axis=0)

    # -- hidden preferences -----------------------------------------------------------------
    @cached_property
    def ground_truth(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Scaled hidden ground-truth recourses ``(n, d)`` and ``(n,)`` bool (found), or
        ``None`` for weighted-change preferences. The search
        (:class:`~simstudy.people.preferences.TruthSearch`) moves the world's mutable features
        or each person's truly actionable ones."""
        if self.users.preference != "ground_truth":
            return None
        truth = self.users.truth
        mask = self.true_mask if truth.features == "actionable" else self.mutable_mask
        return ground_truth_recourse(self.space, self.space.scale(self.x), mask, self.ids,
                                     self.preference_seed, self.users.eps, truth)

    @cached_property
    def preference_weights(self) -> np.ndarray | None:
        """Hidden per-feature weights ``(n, d)`` (``inf`` where the person cannot act), or
        ``None`` for ground-truth preferences."""
        if self.users.preference != "weights":
            return None
        if self.users.weights == "profile":
            return profile_weights(self.feature_names, self.true_profile)
        return np.where(self.true_mask,
                        centred_weights(self.ids, self.preference_seed,
                                        len(self.feature_names)), np.inf)

    def loss(self, points: np.ndarray, rows: np.ndarray | None = None,
             x: np.ndarray | None = None) -> np.ndarray:
        """Hidden loss of recourse points (original units) for the people at ``rows``.

        Ground truth: ``||s(r) - r_gt||_2``; weights: ``sum_j w_j |s(r)_j - s(x)_j|`` over moved
        coordinates, from the current features ``x`` (default: the factuals).
        """
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        r = self.space.scale(np.asarray(points, dtype=np.float64))
        if self.users.preference == "ground_truth":
            return (r - self.ground_truth[0][rows]).norm(dim=-1).numpy()
        xs = self.space.scale(self.x[rows] if x is None else x)
        moved = (r - xs).abs()
        w = torch.from_numpy(self.preference_weights[rows])
        return torch.where(moved > 0, w * moved, 0.0).sum(dim=-1).numpy()

    @property
    def noise(self) -> NoiseModel:
        return self.users.noise

    @cached_property
    def accept_threshold(self) -> np.ndarray:
        """``(n,)`` the hidden loss at or below which each person calls a recourse satisfactory:
        the ``users:`` setting, or derived from the people's model
        (:func:`~simstudy.people.preferences.derived_accept_threshold`)."""
        if self.users.accept_threshold is not None:
            return np.full(len(self), float(self.users.accept_threshold))
        return derived_accept_threshold(self.users.truth, self.users.preference,
                                        self.preference_weights, len(self))

    def feedback(self, x: np.ndarray | None = None,
                 noise: NoiseModel | None = None) -> PeopleFeedback:
        """A question session with these people for a policy that asks (one per request).

        Args:
            x: ``(n, d)`` the people's current features (default: the factuals).
            noise: replaces the people's answer noise (a sensitivity analysis).
        """
        return PeopleFeedback(self, x, noise)

    # -- ground truth of any recourse --------------------------------------------------------
    def truth_columns(self, x_cf: np.ndarray, found: np.ndarray, intervened: np.ndarray,
                      rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Any policy's recourse measured against the hidden truth (NaN where none found).

        Returns ``blocked`` (needs a feature the person truly cannot change, or a change against
        their true direction or beyond their true bound), ``user_loss``
        (:meth:`loss`), and for ground-truth preferences ``has_ground_truth``, ``gtp`` and
        ``gtd`` (:mod:`simstudy.people.truth`).
        """
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        found = np.asarray(found, dtype=bool)
        x_cf = np.where(found[:, None], np.asarray(x_cf, dtype=np.float64), self.x[rows])
        nan = np.full(len(rows), np.nan)
        blocked = self.blocked(intervened, rows) | self.beyond_limits(x_cf, intervened, rows)
        out = {"blocked": found & blocked,
               "user_loss": np.where(found, self.loss(x_cf, rows), nan)}
        if self.ground_truth is not None:
            gt, has = self.ground_truth[0][rows], self.ground_truth[1][rows].numpy()
            r, xs = self.space.scale(x_cf), self.space.scale(self.x[rows])
            ok = found & has
            out["has_ground_truth"] = has
            out["gtp"] = np.where(ok, ground_truth_proximity(r, gt).numpy(), nan)
            out["gtd"] = np.where(ok, ground_truth_dissimilarity(xs, r, gt).numpy(), nan)
        return out

    # -- responses ---------------------------------------------------------------------------
    def response_inputs(self, rows: np.ndarray, cost: np.ndarray, cost_unweighted: np.ndarray,
                        sparsity: np.ndarray, proximity_l1: np.ndarray,
                        blocked: np.ndarray | None = None) -> ResponseInputs:
        """What :attr:`response` sees of recourses shown to the people at ``rows``."""
        z = self.dispositions[np.asarray(rows)]
        return ResponseInputs(cost=np.asarray(cost, dtype=np.float64),
                              cost_unweighted=np.asarray(cost_unweighted, dtype=np.float64),
                              sparsity=np.asarray(sparsity, dtype=np.float64),
                              proximity_l1=np.asarray(proximity_l1, dtype=np.float64),
                              accept_effect=z[:, 0], act_effect=z[:, 1],
                              accept_slope_effect=z[:, 4], act_slope_effect=z[:, 5],
                              blocked=blocked)

    def capacity(self, sd: float) -> np.ndarray:
        """Effort capacity ``exp(sd z)`` (lognormal; 1 is the typical person)."""
        return np.exp(sd * self.dispositions[:, 2])

    def question_time(self, mean_days: float, sd: float) -> np.ndarray:
        """Time to answer one question: ``mean_days exp(sd z)``."""
        return mean_days * np.exp(sd * self.dispositions[:, 3])

    def patience(self, mean_questions: float | None) -> np.ndarray:
        """Questions a person answers before abandoning (exponential; ``inf`` if ``None``)."""
        if mean_questions is None:
            return np.full(len(self), np.inf)
        return -np.log(self.patience_draw) * mean_questions
