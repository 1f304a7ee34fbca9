"""Policies computed for many participants at once, each answer the one they get alone.

A burst of participants reaching their recourse page at once would each run a refining
policy's base search and HARE's first candidates (for HARE over Wachter, a few hundred gradient
steps on one row, then tens more for the candidates: about 90 ms of CPU, nearly all of it
per-step overhead that a batch of rows shares). Computed for all waiting participants in one
batch, they cost about as much as for one.

A batch must not change anyone's answer, or a participant's recourse would depend on who
happened to be waiting with them, and an export after a restart would differ from an
uninterrupted one. Losses summed over people keep each person's search their own, but the
floating-point arithmetic does not: a matrix product of a batch is computed by other kernels
than that of one row, and vectorized elementwise functions (``log1p``, ``softplus``, even
``float32`` ``sqrt``) round differently in the vector body and in the scalar tail of a
tensor. So the kernels a row meets depend on the batch's size and on the row's place in it.
Here every computation is a batch of ``slots`` rows, and the participant with index ``i``
always sits in row ``i mod slots``; the other rows hold other waiting participants or copies
of a participant (rows never mix, so their values do not matter). The same participant
therefore gets the same bits alone, in any batch, in any process, before and after a restart
(``tests/test_live_slots.py`` checks it by value). That needs a policy whose rows keep to
themselves in every operation (:attr:`~simstudy.policies.base.RecoursePolicy.row_local`, as
Wachter's masked search); one that gathers some rows' candidates together (the causal
oracle's grid search) is computed for each participant alone, in the same fixed shape.
:class:`SlottedBase` does this for a refining policy's base, :class:`SlottedHARE` for HARE's
first iteration's candidates (everything before HARE's first question).

Answers are remembered (keyed by every input), so replaying a participant's questions does
not recompute them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..policies.hare import HARE, _Search, _Start
from ..policies.hare_steps import Questions
from ..primitives.profiles import ActionabilityProfiles
from ..primitives.recourse import Recourse

__all__ = ["SLOTS", "BaseCall", "SlottedBase", "SlottedHARE", "slot_batches"]

#: Rows of every batch. A search on tiny tensors costs about the same for one row as for 64
#: (HARE's Wachter base on the Loan world: 62 ms and 68 ms), while fewer slots put more of a
#: burst's participants in the same slot, each such clash costing another batch.
SLOTS = 64

#: One person's base call: ``(x (1, d), profiles (1 row), ids (1,), seed)``.
BaseCall = tuple[np.ndarray, ActionabilityProfiles, np.ndarray, int]


class _Remembered(OrderedDict):
    """Answers by key, the least recently used forgotten beyond ``size``; safe across the
    threads of a compute process (its question sessions)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()
        # one computation at a time: a batch's answers are stored before anyone looks for them
        self.computing = threading.Lock()

    def missing(self, keyed: dict) -> dict:
        """The entries of ``keyed`` whose key is not remembered."""
        with self.lock:
            return {key: item for key, item in keyed.items() if key not in self}

    def store(self, pairs: Sequence[tuple[Any, Any]]) -> None:
        with self.lock:
            for key, value in pairs:
                self[key] = value
                self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)

    def take(self, keys: Sequence[Any]) -> list:
        with self.lock:
            for key in keys:
                self.move_to_end(key)
            return [self[key] for key in keys]


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

    def __init__(self, policy: Any, slots: int = SLOTS, size: int = 4096) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.policy, self.slots = policy, slots
        self._memo = _Remembered(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def prefill(self, calls: Sequence[BaseCall]) -> None:
        """Computes (in as few batches as the slots allow) and remembers the calls not
        remembered yet."""
        with self._memo.computing:
            todo = self._memo.missing({_key(*call): call for call in calls})
            for batch in self._batches(todo):
                self._compute(batch)

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0) -> Recourse:
        """The base policy's recourse for ``x`` ``(n, d)``, each row computed in its slot."""
        rows = [(x[i:i + 1], profiles.subset(slice(i, i + 1)), ids[i:i + 1], int(seed))
                for i in range(len(x))]
        self.prefill(rows)
        return Recourse.concat(self._memo.take([_key(*row) for row in rows]))

    def _batches(self, todo: dict[tuple, BaseCall]) -> list[list[tuple[tuple, BaseCall]]]:
        return slot_batches({key: (int(call[2][0]), call[3], call) for key, call in todo.items()},
                            self.slots)

    def _compute(self, batch: list[tuple[tuple, BaseCall]]) -> None:
        by_slot = {int(call[2][0]) % self.slots: call for _, call in batch}
        filler = batch[0][1]
        # a free slot holds a copy of a waiting participant: rows never mix, and a copy
        # searches exactly as long as that participant, so it adds no work of its own
        rows = [by_slot.get(s, filler) for s in range(self.slots)]
        rec = self.policy.recommend(
            np.concatenate([r[0] for r in rows]), ActionabilityProfiles.concat(
                [r[1] for r in rows]), np.concatenate([r[2] for r in rows]), filler[3])
        self._memo.store([(key, rec.subset(slice(slot, slot + 1)))
                          for key, call in batch
                          for slot in [int(call[2][0]) % self.slots]])


def slot_batches(todo: dict[Any, tuple[int, int, Any]], slots: int
                 ) -> list[list[tuple[Any, Any]]]:
    """``{key: (id, seed, item)}`` grouped into batches of ``(key, item)``: one seed per batch,
    and in each batch at most one item per slot (``id mod slots``)."""
    batches: list[tuple[int, dict[int, tuple[Any, Any]]]] = []
    for key, (pid, seed, item) in todo.items():
        slot = pid % slots
        for batch_seed, taken in batches:
            if batch_seed == seed and slot not in taken:
                taken[slot] = (key, item)
                break
        else:
            batches.append((seed, {slot: (key, item)}))
    return [list(taken.values()) for _, taken in batches]


class SlottedHARE(HARE):
    """HARE whose first iteration's candidates are computed in slotted batches and remembered.

    A participant's first HARE page needs their first iteration's candidates (ActionableSampling
    and BoundaryPointSearch: tens of gradient steps, most of the page's CPU); everything before
    the first question depends on the participant alone. :meth:`prefill_candidates` computes
    them for every waiting participant at once, each in their slot as in :class:`SlottedBase`;
    a search that finds its candidates missing (a replay after a restart, a participant who
    was not waiting with others) computes them in the same slotted way, alone. So the first
    question is the same bits whoever waited with the participant. Later iterations, which
    depend on the participant's answers, run as in :class:`~simstudy.policies.hare.HARE`.

    Over a causal base (candidates realised through the world) every iteration runs as in
    HARE.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> from simstudy.policies import HARE, Wachter
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> hare = SlottedHARE.of(HARE(Wachter(steps=30), budget=4, steps=5).fit(context), 4)
        >>> calls = [(x[i:i + 1], profiles.subset(slice(i, i + 1)), ids[i:i + 1], 0)
        ...          for i in range(len(ids))]
        >>> hare.prefill_candidates(calls), hare.prefill_candidates(calls)  # then remembered
        (3, 0)
    """

    slots: int = SLOTS
    # a person's boundary points must not depend on who shares their batch (the same as
    # HARE's for a batch of one person)
    halvings_per_person = True

    @classmethod
    def of(cls, fitted: HARE, slots: int = SLOTS, size: int = 4096) -> SlottedHARE:
        """The fitted HARE ``fitted`` as a :class:`SlottedHARE` (same parameters and fit)."""
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        slotted = cls.__new__(cls)
        slotted.__dict__.update(fitted.__dict__)
        slotted.slots, slotted._memo = slots, _Remembered(size)
        return slotted

    def prefill_candidates(self, calls: Sequence[BaseCall]) -> int:
        """Computes and remembers the first candidates of the calls' people (one each) who
        will be searched; returns how many were computed."""
        rows = []
        for x, profiles, ids, seed in calls:
            state, _, _ = self._begin(np.asarray(x, dtype=np.float64), profiles,
                                      np.asarray(ids), int(seed), None)
            if state.realise is None and bool(state.searching[0]):
                rows.append((state, 0, int(seed)))
        return self._fill(rows)

    def _candidates(self, state: Any, idx: torch.Tensor, t: int, seed: int) -> tuple:
        if t != 0 or state.realise is not None:
            return super()._candidates(state, idx, t, seed)
        rows = [(state, int(i), int(seed)) for i in idx]
        self._fill(rows)
        parts = self._memo.take([_row_key(*row) for row in rows])
        c, z, acts, shown = (torch.cat([p[j] for p in parts]) for j in range(4))
        state.unapproved[idx] += (~shown).sum(dim=1)
        return c, z, acts, shown

    def _fill(self, rows: list[tuple[Any, int, int]]) -> int:
        with self._memo.computing:
            todo = self._memo.missing({_row_key(*row): row for row in rows})
            for batch in slot_batches({key: (int(row[0].ids[row[1]]), row[2], row)
                                       for key, row in todo.items()}, self.slots):
                self._compute(batch)
        return len(todo)

    def _compute(self, batch: list[tuple[tuple, tuple[Any, int, int]]]) -> None:
        by_slot = {int(state.ids[i]) % self.slots: (state, i) for _, (state, i, _) in batch}
        seed = batch[0][1][2]
        # free slots hold copies of a waiting participant (rows never mix)
        filler = next(iter(by_slot.values()))
        rows = [by_slot.get(s, filler) for s in range(self.slots)]

        def stack(name: str) -> torch.Tensor:
            return torch.cat([getattr(st, name)[i:i + 1] for st, i in rows])

        ids = np.concatenate([st.ids[i:i + 1] for st, i in rows])
        start = _Start(stack("r"), stack("z"), stack("acts"), stack("searching"), False)
        state = _Search(ids, stack("xs"), stack("mask"), start, Questions(None, self.space_, ids))
        if rows[0][0].box is not None:
            state.box = (torch.cat([st.box[0][i:i + 1] for st, i in rows]),
                         torch.cat([st.box[1][i:i + 1] for st, i in rows]))
        state.searching = stack("searching")
        out = super()._candidates(state, torch.arange(self.slots), 0, seed)
        self._memo.store([(key, tuple(v[slot:slot + 1].clone() for v in out))
                          for key, (st, i, _) in batch
                          for slot in [int(st.ids[i]) % self.slots]])


def _row_key(state: Any, i: int, seed: int) -> tuple:
    """Everything a person's first candidates depend on."""
    parts = [state.xs[i], state.mask[i], state.r[i], state.z[i], state.acts[i]]
    if state.box is not None:
        parts += [state.box[0][i], state.box[1][i]]
    return (b"".join(p.numpy().tobytes() for p in parts), int(state.ids[i]), int(seed))
