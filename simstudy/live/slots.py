"""A base policy computed for many participants at once, each answer the one they get alone.

A burst of participants reaching their recourse page at once would each run a refining
policy's base search (for HARE over Wachter, a few hundred gradient steps on one row: tens of
ms of CPU, nearly all of it per-step overhead that a batch of rows shares). Computing the
waiting participants' bases in one batch costs about as much as one of them.

A batch must not change anyone's answer, or a participant's recourse would depend on who
happened to be waiting with them, and an export after a restart would differ from an
uninterrupted one. Losses summed over people keep each person's search their own, but the
floating-point arithmetic does not: a matrix product of a batch is computed by other kernels
than that of one row, and vectorized elementwise functions (``log1p``, ``softplus``, even
``float32`` ``sqrt``) round differently in the vector body and in the scalar tail of a
tensor. So the kernels a row meets depend on the batch's size and on the row's place in it.
:class:`SlottedBase` fixes both: every computation is a batch of ``slots`` rows, and the
participant with index ``i`` always sits in row ``i mod slots``; the other rows hold other
waiting participants or copies of a participant (rows never mix, so their values do not
matter). The same participant therefore gets the same bits alone, in any batch, in any
process, before and after a restart (``tests/test_live_slots.py`` checks it by value).

Answers are remembered (keyed by every input), so replaying a participant's questions does
not recompute their deterministic base.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..primitives.profiles import ActionabilityProfiles
from ..primitives.recourse import Recourse

__all__ = ["BaseCall", "SlottedBase"]

#: One person's base call: ``(x (1, d), profiles (1 row), ids (1,), seed)``.
BaseCall = tuple[np.ndarray, ActionabilityProfiles, np.ndarray, int]


def _key(x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray, seed: int) -> tuple:
    return (np.asarray(x, dtype=np.float64).tobytes(), profiles.scores.tobytes(),
            profiles.weights.tobytes(), np.asarray(ids, dtype=np.int64).tobytes(), int(seed))


class SlottedBase:
    """A fitted base policy computed in fixed ``slots``-row batches (see the module docstring),
    its answers remembered.

    Args:
        policy: the fitted base policy.
        slots: rows of every batch; a participant with id ``i`` sits in row ``i mod slots``.
        size: answers remembered (least recently used forgotten first).

    Example:
        >>> class Counting:
        ...     calls, rows = 0, []
        ...     def recommend(self, x, profiles, ids, seed=0):
        ...         Counting.calls += 1
        ...         Counting.rows.append(ids.tolist())
        ...         return Recourse(np.zeros(x.shape, bool), np.full(x.shape, np.nan),
        ...                         x[:, 0] > 0)
        >>> profiles = ActionabilityProfiles(("a",), np.ones((1, 1)), 1, np.ones((1, 1)))
        >>> base, x = SlottedBase(Counting(), slots=4), np.ones((1, 1))
        >>> base.prefill([(x, profiles, np.array([5]), 0), (-x, profiles, np.array([6]), 0)])
        >>> [base.recommend(x, profiles, np.array([5])).found.tolist() for _ in range(2)]
        [[True], [True]]
        >>> Counting.calls, Counting.rows
        (1, [[5, 5, 6, 5]])
    """

    def __init__(self, policy: Any, slots: int = 16, size: int = 4096) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.policy, self.slots, self.size = policy, slots, size
        self._memo: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        # one batch at a time: a batch's answers are stored before anyone looks for them
        self._computing = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def prefill(self, calls: Sequence[BaseCall]) -> None:
        """Computes (in as few batches as the slots allow) and remembers the calls not
        remembered yet."""
        with self._computing:
            with self._lock:
                todo: dict[tuple, BaseCall] = {}
                for call in calls:
                    key = _key(*call)
                    if key not in self._memo:
                        todo[key] = call
            for batch in self._batches(todo):
                self._compute(batch)

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0) -> Recourse:
        """The base policy's recourse for ``x`` ``(n, d)``, each row computed in its slot."""
        rows = [(x[i:i + 1], profiles.subset(slice(i, i + 1)), ids[i:i + 1], int(seed))
                for i in range(len(x))]
        self.prefill(rows)
        with self._lock:
            parts = []
            for row in rows:
                key = _key(*row)
                self._memo.move_to_end(key)
                parts.append(self._memo[key])
        return parts[0] if len(parts) == 1 else _concat(parts)

    def _batches(self, todo: dict[tuple, BaseCall]) -> list[list[tuple[tuple, BaseCall]]]:
        """The calls grouped into batches, each slot used once per batch and every batch of
        one seed."""
        batches: list[tuple[int, dict[int, tuple[tuple, BaseCall]]]] = []
        for key, call in todo.items():
            slot, seed = int(call[2][0]) % self.slots, call[3]
            for batch_seed, taken in batches:
                if batch_seed == seed and slot not in taken:
                    taken[slot] = (key, call)
                    break
            else:
                batches.append((seed, {slot: (key, call)}))
        return [list(taken.values()) for _, taken in batches]

    def _compute(self, batch: list[tuple[tuple, BaseCall]]) -> None:
        by_slot = {int(call[2][0]) % self.slots: call for _, call in batch}
        filler = batch[0][1]
        # a free slot holds a copy of a waiting participant: rows never mix, and a copy
        # searches exactly as long as that participant, so it adds no work of its own
        rows = [by_slot.get(s, filler) for s in range(self.slots)]
        rec = self.policy.recommend(
            np.concatenate([r[0] for r in rows]), ActionabilityProfiles.concat(
                [r[1] for r in rows]), np.concatenate([r[2] for r in rows]), filler[3])
        with self._lock:
            for key, call in batch:
                slot = int(call[2][0]) % self.slots
                self._memo[key] = rec.subset(slice(slot, slot + 1))
                self._memo.move_to_end(key)
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)


def _concat(parts: list[Recourse]) -> Recourse:
    """The recourses of ``parts`` one after another (the extras every part has)."""
    keys = set.intersection(*(set(p.extras) for p in parts))
    cfs = [p.counterfactual for p in parts]
    bases = [p.base for p in parts]
    return Recourse(np.concatenate([p.intervened for p in parts]),
                    np.concatenate([p.values for p in parts]),
                    np.concatenate([p.found for p in parts]),
                    {k: np.concatenate([np.asarray(p.extras[k]) for p in parts])
                     for k in sorted(keys)},
                    None if any(c is None for c in cfs) else np.concatenate(cfs),
                    None if any(b is None for b in bases) else _concat(bases))
