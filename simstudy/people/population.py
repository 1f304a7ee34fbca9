"""Applicants and their individual actionability.

Each applicant gets a profile over the world's globally actionable features: a score
``s in {1..S}`` per feature (1 = easiest / most preferred), or 0 for "not actionable for this
person" (a hard constraint). Scores become cost weights through a cost profile
(:class:`CostProfile`). Samplers follow Appendix B.2 of the individual-actionability study
("From Universal to Individualized Actionability", 2026):

* rankings: a permutation of the features drawn from a categorical distribution over all
  permutations, then a threshold ``t``: every rank ``>= t`` becomes non-actionable, so exactly
  ``t - 1`` features stay actionable (``t`` fixed, or uniform over ``{2..K+1}``);
* Likert scores: each feature scored uniformly in ``1..S``, optionally with a "not actionable"
  level 0 drawn like the others;
* group-correlated assignment of a privileged / non-privileged ranking distribution: at random,
  by income (top quarter privileged), or by a stylized race attribute (90% of one group, 5% of the
  other privileged; equal shares of every gender x race cell).

All draws are keyed by ``(seed, purpose, applicant id)`` (see :mod:`simstudy.core.rng`), so the same
applicant gets the same luck whatever the population's order or batching.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from annotated_types import Ge, Le
from pydantic import ConfigDict, Field

from ..core.documents import StrictModel
from ..core.rng import entity_uniforms

__all__ = [
    "PERMUTATION_BIASES",
    "BiasName",
    "permutation_distribution",
    "RankingSampler",
    "LikertSampler",
    "AllActionableSampler",
    "assign_groups",
    "GroupAssignment",
]

#: Names of the ranking distributions (Table 4 of the individual-actionability study):
#: ``uniform`` over all permutations, or uniform over the permutations whose top two features
#: are the pair the world names (:attr:`~simstudy.world.base.FeatureRoles.rankings`).
PERMUTATION_BIASES: tuple[str, ...] = ("uniform", "causal_order", "reverse_causal_order",
                                       "privileged", "non_privileged")
#: A ranking distribution named in a document: one of :data:`PERMUTATION_BIASES`.
BiasName = Literal[PERMUTATION_BIASES]  # type: ignore[valid-type]


def permutation_distribution(
    features: Sequence[str], bias: str | Sequence[float] = "uniform",
    rankings: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """All permutations of the features (in ``itertools`` order) and their probabilities.

    Args:
        features: the globally actionable features.
        bias: a name from :data:`PERMUTATION_BIASES`, or explicit probabilities, one per
            permutation in ``itertools.permutations`` order.
        rankings: the world's named distributions (``world.roles.rankings``): the two
            features each name ranks on top.

    Example:
        >>> perms, probs = permutation_distribution(["a", "b", "c"], "top",
        ...                                         {"top": ("b", "c")})
        >>> [p for p, q in zip(perms, probs) if q > 0]
        [(1, 2, 0), (2, 1, 0)]

    Returns:
        ``(perms, probs)``; ``perms[i][r]`` is the index of the feature ranked ``r + 1``.
    """
    perms = list(itertools.permutations(range(len(features))))
    if isinstance(bias, str):
        rankings = rankings or {}
        if bias != "uniform" and bias not in rankings:
            raise ValueError(f"unknown ranking distribution {bias!r}; the world names "
                             f"{sorted(['uniform', *rankings])}")
        if bias == "uniform":
            probs = np.ones(len(perms))
        else:
            top = frozenset(rankings[bias])
            missing = top - set(features)
            if missing:
                raise ValueError(f"ranking distribution {bias!r} needs features {sorted(missing)}")
            probs = np.array([{features[p[0]], features[p[1]]} == top for p in perms], float)
    else:
        probs = np.asarray(bias, dtype=np.float64)
        if probs.shape != (len(perms),) or (probs < 0).any() or probs.sum() <= 0:
            raise ValueError(f"explicit ranking probabilities need {len(perms)} non-negative "
                             "values with a positive sum")
    return perms, probs / probs.sum()


def _pick(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)


@dataclass(frozen=True)
class RankingSampler:
    """Rankings with a threshold (hard constraints plus preference order).

    Attributes:
        bias: ranking distribution (name of :data:`PERMUTATION_BIASES` or probabilities).
        rankings: the world's named distributions (``world.roles.rankings``).
        n_actionable: exactly this many top-ranked features stay actionable (the fixed
            threshold ``t = n_actionable + 1``); ``None`` draws ``t`` uniformly, so that how many
            and which features are actionable are both uniform.
    """

    bias: BiasName | tuple[Annotated[float, Ge(0)], ...] = "uniform"
    n_actionable: Annotated[int, Ge(0), Le(16)] | None = None
    rankings: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def sample(self, features: Sequence[str], uniforms: np.ndarray) -> tuple[np.ndarray, int]:
        """Scores from two uniforms per person (column 0: permutation, 1: threshold)."""
        k = len(features)
        perms, probs = permutation_distribution(features, self.bias, self.rankings)
        perm_idx = _pick(np.cumsum(probs), uniforms[:, 0])
        order = np.asarray(perms)[perm_idx]  # (n, k): feature index at each rank
        ranks = np.empty_like(order)
        rows = np.arange(order.shape[0])[:, None]
        ranks[rows, order] = np.arange(1, k + 1)[None, :]
        if self.n_actionable is None:
            n_act = 1 + np.minimum((uniforms[:, 1] * k).astype(int), k - 1)
        else:
            if not 0 <= self.n_actionable <= k:
                raise ValueError(f"n_actionable must be in 0..{k}, got {self.n_actionable}")
            n_act = np.full(order.shape[0], self.n_actionable)
        scores = np.where(ranks <= n_act[:, None], ranks, 0)
        return scores, k


class LikertSampler(StrictModel):
    """Independent Likert scores per feature, uniform over ``1..levels`` (or ``0..levels``).

    Attributes:
        levels: ``S``, number of score levels.
        allow_not_actionable: include the level 0 ("I cannot change this") among the draws.

    Example:
        >>> scores, levels = LikertSampler(levels=4).sample(("a", "b"), np.array([[0.1, 0.9]]))
        >>> scores.tolist(), levels
        ([[1, 4]], 4)
    """

    model_config = ConfigDict(frozen=True)

    levels: int = Field(4, ge=2, le=10)
    allow_not_actionable: bool = False

    def sample(self, features: Sequence[str], uniforms: np.ndarray) -> tuple[np.ndarray, int]:
        lowest = 0 if self.allow_not_actionable else 1
        span = self.levels - lowest + 1
        u = uniforms[:, : len(features)]
        return lowest + np.minimum((u * span).astype(int), span - 1), self.levels


@dataclass(frozen=True)
class AllActionableSampler:
    """No personalization: every globally actionable feature is actionable with score 1."""

    def sample(self, features: Sequence[str], uniforms: np.ndarray) -> tuple[np.ndarray, int]:
        return np.ones((uniforms.shape[0], len(features)), dtype=np.int64), 1


class GroupAssignment(StrictModel):
    """Which applicants get the privileged ranking distribution.

    Attributes:
        rule: ``random`` (share ``privileged_share``), ``income`` (top ``privileged_share`` of
            income), or ``attribute`` (a stylized binary attribute, e.g. race, with equal shares
            of every gender x attribute cell; ``privileged_if_majority`` of the majority group
            and ``privileged_if_minority`` of the minority group privileged).
        privileged_share: share for ``random`` and ``income``.
        attribute: name of the stylized attribute column (majority value 0 = white).
        privileged_if_majority, privileged_if_minority: shares for ``attribute``.
        income_feature: the feature the ``income`` rule ranks on (the world's
            :attr:`~simstudy.world.base.FeatureRoles.income` unless a document names one).
        gender_feature: the feature within whose levels the ``attribute`` rule balances its
            attribute (the world's first sensitive feature unless a document names one).

    Example:
        >>> rule = GroupAssignment(rule="income", privileged_share=0.5, income_feature="pay")
        >>> x = np.array([[1.0], [3.0], [2.0], [4.0]])
        >>> assign_groups(rule, x, ("pay",), np.arange(4), seed=0)["privileged"].tolist()
        [False, True, False, True]
    """

    model_config = ConfigDict(frozen=True)

    rule: Literal["random", "income", "attribute"] = "random"
    privileged_share: float = Field(0.25, gt=0, lt=1)
    attribute: str = "race"
    privileged_if_majority: float = Field(0.9, ge=0, le=1)
    privileged_if_minority: float = Field(0.05, ge=0, le=1)
    income_feature: str | None = None
    gender_feature: str | None = None


def assign_groups(
    rule: GroupAssignment, x: np.ndarray, feature_names: Sequence[str], ids: np.ndarray, seed: int
) -> dict[str, np.ndarray]:
    """Group columns for a population: always ``privileged``; ``race`` for the attribute rule.

    The stylized attribute affects nothing in the world: within each gender, exactly half of the
    people (the half with the smaller keyed draw) are in the minority group (value 1).
    """
    ids = np.asarray(ids)
    u = entity_uniforms(seed, "group-assignment", ids, 2)
    out: dict[str, np.ndarray] = {}
    if rule.rule == "random":
        privileged = u[:, 0] < rule.privileged_share
    elif rule.rule == "income":
        if rule.income_feature is None:
            raise ValueError("the income rule needs an income feature (the world names none)")
        income = x[:, list(feature_names).index(rule.income_feature)]
        cut = np.quantile(income, 1.0 - rule.privileged_share)
        privileged = income >= cut
    else:
        if rule.gender_feature is None:
            raise ValueError("the attribute rule needs a sensitive feature to balance within "
                             "(the world names none)")
        gender = x[:, list(feature_names).index(rule.gender_feature)]
        minority = np.zeros(len(ids), dtype=bool)
        for g in np.unique(gender):
            members = np.flatnonzero(gender == g)
            ranked = members[np.argsort(u[members, 1], kind="stable")]
            minority[ranked[: len(ranked) // 2]] = True
        out[rule.attribute] = minority.astype(np.int64)
        share = np.where(minority, rule.privileged_if_minority, rule.privileged_if_majority)
        privileged = u[:, 0] < share
    out["privileged"] = privileged
    return out
