"""Simulated rating studies with the published design (Tominaga et al.).

Participants rejected for a loan each rate k recourses. A recourse is a real profile from a pool
of approved applicants: the participant is shown the pool profile as "your profile, changed".
As in the published design, the candidates are the approved pool profiles that respect the
monotone features (education, position, service years, ... can only go up; experience cannot
be lost), and each participant sees the sparsest candidate, the most proximate one, and k - 2
random others. Distances follow the published definitions: per feature,
delta_i = 1[x'_i != x_i] for categorical features and |x'_i - x_i| / M_i otherwise (M_i the
feature's range); sparsity = #{i: delta_i != 0}, proximity = sum_i delta_i.

The profile generator is self-contained: 12 features modelled on the study's profile items,
driven by a latent career factor, and approval by a simple linear scoring rule (a stand-in for
the study's income rule). Participants also name features they could not change; ratings of
recourses touching such a feature are excluded, as in the study (72 of 1,810 ratings).

The output is the long table a real study exports: ``uid,item,sparsity,proximity,accept,act``
plus group columns (``gender``, ``age_group``), so the same analysis reads both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ..metrics import published_proximity
from ..people.rating import RatingResponse

__all__ = [
    "Feature",
    "FEATURES",
    "sample_profiles",
    "approval_score",
    "ProfilePool",
    "distances",
    "choose_recourses",
    "simulate_study",
    "STUDY_COLUMNS",
]

#: The columns every study table starts with (the export of the published study), simulated
#: here or drawn from a scenario's people (:mod:`simstudy.study.from_scenario`).
STUDY_COLUMNS = ["uid", "item", "sparsity", "proximity", "accept", "act"]


@dataclass(frozen=True)
class Feature:
    """A profile feature with ordered levels 1..len(marginal) and their population shares."""

    name: str
    kind: str                   # "categorical" (0/1 distance) or "ordinal" (|change| / range)
    marginal: tuple[float, ...]  # share of the population at each level
    monotone: bool              # may only increase in a recourse
    weight: float               # contribution to the approval score per normalized unit
    career_loading: float       # correlation with the latent career factor

    @property
    def levels(self) -> int:
        return len(self.marginal)


# Shares are plausible for employed loan applicants; concentrated items (most people have no
# side job, no telework, no management career) are what make 1- and 2-feature recourses exist.
FEATURES: tuple[Feature, ...] = (
    Feature("prefecture", "categorical", (0.25, 0.75), False, 0.3, 0.1),
    Feature("residence", "categorical", (0.5, 0.5), False, 0.4, 0.3),
    Feature("education", "ordinal", (0.3, 0.1, 0.5, 0.08, 0.02), True, 0.8, 0.4),
    Feature("workplace", "categorical", (0.8, 0.2), False, 0.3, 0.1),
    Feature("position", "ordinal", (0.6, 0.12, 0.08, 0.06, 0.04, 0.04, 0.03, 0.01, 0.01, 0.01),
            True, 1.2, 0.8),
    Feature("service_years", "ordinal", (0.1, 0.15, 0.15, 0.2, 0.25, 0.15), True, 0.9, 0.7),
    Feature("management", "ordinal", (0.65, 0.05, 0.08, 0.07, 0.07, 0.05, 0.03), True, 0.8,
            0.7),
    Feature("work_hours", "ordinal", (0.02, 0.03, 0.1, 0.3, 0.45, 0.08, 0.02), False, 0.3, 0.2),
    Feature("telework_hours", "ordinal", (0.8, 0.08, 0.05, 0.04, 0.02, 0.005, 0.005), False,
            0.1, 0.0),
    Feature("side_jobs", "ordinal", (0.85, 0.1, 0.03, 0.01, 0.005, 0.005), False, 0.2, 0.0),
    Feature("job_change", "categorical", (0.5, 0.5), True, 0.1, 0.3),
    Feature("toeic", "ordinal", (0.6, 0.03, 0.05, 0.08, 0.08, 0.07, 0.06, 0.03), True, 0.5,
            0.4),
)

_RANGES = np.array([f.levels - 1 for f in FEATURES], dtype=float)
_CATEGORICAL = np.array([f.kind == "categorical" for f in FEATURES])
_MONOTONE = np.array([f.monotone for f in FEATURES])
# Features people commonly cannot change and how often they say so (about 4% of ratings).
_IMMUTABLE_RATE = np.array([0.06, 0.04, 0.0, 0.03, 0.0, 0.0, 0.0, 0.01, 0.01, 0.01, 0.0, 0.0])


def sample_profiles(n: int, generator: np.random.Generator) -> np.ndarray:
    """Draws ``n`` profiles (integer levels per feature), shape ``(n, 12)``: a Gaussian copula
    with one latent career factor, mapped onto each feature's marginal shares."""
    career = generator.standard_normal(n)
    cols = []
    for f in FEATURES:
        z = f.career_loading * career + np.sqrt(1.0 - f.career_loading**2) \
            * generator.standard_normal(n)
        cum = np.cumsum(f.marginal)[:-1] / np.sum(f.marginal)
        cols.append(1 + np.searchsorted(ndtri(cum), z))
    return np.column_stack(cols)


def approval_score(profiles: np.ndarray) -> np.ndarray:
    """The lender's score: weighted sum of normalized feature levels."""
    w = np.array([f.weight for f in FEATURES])
    return ((profiles - 1) / _RANGES) @ w


class ProfilePool:
    """A pool of profiles and the approval rule: profiles scoring at least the pool's
    ``approve_quantile`` quantile are approved; participants are drawn among the rejected."""

    def __init__(self, size: int = 4057, approve_quantile: float = 0.4):
        self.size = size
        self.approve_quantile = approve_quantile

    def fit(self, generator: np.random.Generator) -> ProfilePool:
        """Draws the pool and fixes the approval threshold."""
        self.profiles_ = sample_profiles(self.size, generator)
        score = approval_score(self.profiles_)
        self.threshold_ = float(np.quantile(score, self.approve_quantile))
        self.approved_ = self.profiles_[score >= self.threshold_]
        return self

    def sample_rejected(self, n: int, generator: np.random.Generator) -> np.ndarray:
        """Draws ``n`` participant profiles that the rule rejects."""
        out = []
        while sum(len(o) for o in out) < n:
            p = sample_profiles(2 * n + 10, generator)
            out.append(p[approval_score(p) < self.threshold_])
        return np.vstack(out)[:n]


def distances(person: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sparsity and proximity of each candidate profile relative to ``person``."""
    changed = candidates != person[None, :]
    return changed.sum(axis=1), published_proximity(changed, candidates, person[None, :],
                                                    _RANGES, _CATEGORICAL)


def choose_recourses(person: np.ndarray, approved: np.ndarray, k: int,
                     generator: np.random.Generator) -> np.ndarray:
    """Indices into ``approved`` of the k recourses shown: the sparsest, the most proximate and
    k - 2 random candidates, among those respecting the monotone features (ties at random)."""
    feasible = np.all((approved >= person[None, :]) | ~_MONOTONE[None, :], axis=1)
    feasible &= np.any(approved != person[None, :], axis=1)
    idx = np.flatnonzero(feasible)
    if idx.size == 0:
        return idx
    sp, pr = distances(person, approved[idx])
    tie = generator.random(idx.size)
    chosen = [idx[np.lexsort((tie, pr, sp))[0]]]
    by_prox = idx[np.lexsort((tie, pr))]
    nxt = next((i for i in by_prox if i not in chosen), None)
    if nxt is not None and k > 1:
        chosen.append(nxt)
    rest = np.setdiff1d(idx, chosen)
    n_random = min(max(k - len(chosen), 0), rest.size)
    chosen.extend(generator.choice(rest, size=n_random, replace=False).tolist())
    return np.asarray(chosen[:k], dtype=int)


def simulate_study(
    n_participants: int,
    response: RatingResponse,
    generator: np.random.Generator,
    items: int = 5,
    pool: ProfilePool | None = None,
    exclude_immutable: bool = True,
) -> pd.DataFrame:
    """Simulates one rating study of the published design.

    Args:
        n_participants: number of participants.
        response: the response model producing the ratings.
        generator: the study's random stream (e.g. ``rng.generator(seed, "study", r)``).
        items: recourses per participant.
        pool: the profile pool (drawn from ``generator`` if not given).
        exclude_immutable: drop ratings of recourses touching a feature the participant says
            they cannot change (otherwise keep them; action then bears ``blocked_penalty``).

    Returns:
        The long table ``uid,item,sparsity,proximity,accept,act,gender,age_group``.

    References:
        Tominaga, Yamashita & Kurashima, "Reassessing Evaluation Functions in Algorithmic
        Recourse: An Empirical Study from a Human-Centered Perspective" (the 362-participant
        study whose design and published fits this simulates).

    Example:
        >>> from simstudy.people.rating import published_model
        >>> from simstudy.core.rng import generator
        >>> table = simulate_study(4, published_model(), generator(0, "example"), items=3)
        >>> list(table.columns[:6]), table["uid"].nunique()
        (['uid', 'item', 'sparsity', 'proximity', 'accept', 'act'], 4)
    """
    if pool is None:
        pool = ProfilePool().fit(generator)
    people = pool.sample_rejected(n_participants, generator)
    immutable = generator.random(people.shape) < _IMMUTABLE_RATE[None, :]
    uid, item, sparsity, proximity, blocked = _shown_recourses(people, immutable, pool, items,
                                                               generator)
    effects = response.sample_people(n_participants, generator).take(uid)
    distance = sparsity if response.distance == "sparsity" else proximity
    accept, act = response.rate(distance, effects, generator, blocked=blocked)
    gender = generator.choice(np.array(["female", "male"]), size=n_participants)
    age = generator.choice(np.array(["20-34", "35-49", "50-64"]), size=n_participants)
    table = pd.DataFrame({
        "uid": uid, "item": item, "sparsity": sparsity,
        "proximity": np.round(proximity, 3), "accept": accept, "act": act,
        "gender": gender[uid], "age_group": age[uid],
    })
    if exclude_immutable:
        table = table[~blocked].reset_index(drop=True)
    return table


def _shown_recourses(people: np.ndarray, immutable: np.ndarray, pool: ProfilePool, items: int,
                     generator: np.random.Generator) -> tuple[np.ndarray, ...]:
    # Each participant's recourses (drawn in participant order from the study's stream): uid,
    # item, sparsity, proximity, and whether one touches a feature the participant cannot change.
    uid, item, sp_all, pr_all, blocked = [], [], [], [], []
    for i, person in enumerate(people):
        chosen = choose_recourses(person, pool.approved_, items, generator)
        cand = pool.approved_[chosen]
        sp, pr = distances(person, cand)
        touches = np.any((cand != person[None, :]) & immutable[i][None, :], axis=1)
        uid.append(np.full(len(chosen), i))
        item.append(np.arange(len(chosen)))
        sp_all.append(sp)
        pr_all.append(pr)
        blocked.append(touches)
    return (np.concatenate(uid), np.concatenate(item), np.concatenate(sp_all).astype(int),
            np.concatenate(pr_all), np.concatenate(blocked))
