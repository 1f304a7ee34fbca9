"""Batched numerical work for the event world, chunked by a size cap.

The lender answers everything that arrived in a window at once. A cap on rows per call bounds
memory; because every computation here is row-wise and every random draw is keyed by applicant,
the answers (and so the event log) are the same whatever the cap.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from ..metrics import Recourse, evaluate_recourse
from ..policies.base import RecoursePolicy
from ..primitives.feedback import Feedback
from ..primitives.profiles import ActionabilityProfiles
from ..world.base import CausalWorld

__all__ = ["chunks", "decide", "recommend", "evaluate", "counterfactual"]


def chunks(n: int, size: int | None) -> Iterator[slice]:
    """Consecutive slices of ``range(n)`` of at most ``size`` rows (one slice when ``None``)."""
    if n == 0:
        return
    step = n if size is None else int(size)
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


@torch.no_grad()
def decide(model: torch.nn.Module, x: np.ndarray, size: int | None) -> np.ndarray:
    """Approval (logit >= 0) of every row, ``(n,)`` bool."""
    out = np.zeros(x.shape[0], dtype=bool)
    for s in chunks(x.shape[0], size):
        out[s] = (model(torch.from_numpy(np.ascontiguousarray(x[s]))) >= 0).numpy()
    return out


def recommend(policy: RecoursePolicy, x: np.ndarray, profiles: ActionabilityProfiles,
              ids: np.ndarray, seed: int, size: int | None,
              feedback: Feedback | None = None) -> Recourse:
    """The policy's recourse for every row, asked in chunks of at most ``size`` rows
    (``feedback`` is passed on to a policy that asks questions)."""
    extra = {} if feedback is None else {"feedback": feedback}
    parts = [policy.recommend(x[s], profiles.subset(s), ids[s], seed, **extra)
             for s in chunks(x.shape[0], size)]
    return Recourse.concat(parts)


def evaluate(world: CausalWorld, model: torch.nn.Module, x: np.ndarray, rec: Recourse,
             profiles: ActionabilityProfiles, feature_range: np.ndarray,
             size: int | None) -> dict[str, np.ndarray]:
    """:func:`simstudy.metrics.evaluate_recourse` in chunks, concatenated."""
    parts = [evaluate_recourse(world, model, x[s], rec.subset(s), profiles.subset(s),
                               feature_range) for s in chunks(x.shape[0], size)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


@torch.no_grad()
def counterfactual(world: CausalWorld, x: np.ndarray, intervened: np.ndarray,
                   values: np.ndarray, size: int | None) -> np.ndarray:
    """The world's counterfactual of every row under its own intervention, in chunks."""
    out = np.empty_like(x)
    for s in chunks(x.shape[0], size):
        vals = np.where(intervened[s], values[s], x[s])
        out[s] = world.counterfactual(torch.from_numpy(x[s]), torch.from_numpy(intervened[s]),
                                      torch.from_numpy(vals)).numpy()
    return out
