"""Slotted batches of a refining policy's base: one participant's bits, whoever waits with them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _live_support import prepared_engine

from simstudy.live.slots import SlottedBase, SlottedHARE
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.primitives.recourse import Recourse


def _bits(rec: Recourse) -> bytes:
    parts = [rec.intervened, rec.values, rec.found]
    if rec.counterfactual is not None:
        parts.append(rec.counterfactual)
    return b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def _calls(engine, rows, first_index=500):
    people = engine.people()
    return [(people.x[r][None, :].astype(np.float64),
             engine.profiles(people.reported.scores[r]),
             np.array([first_index + r], dtype=np.int64), engine.policy_seed_) for r in rows]


def _alone(policy, calls, slots):
    out = []
    for call in calls:
        base = SlottedBase(policy, slots)
        out.append(_bits(base.recommend(*call)))
    return out


def _batched(policy, calls, order, slots, chunks):
    base = SlottedBase(policy, slots)
    for part in np.array_split(np.asarray(order), chunks):
        base.prefill([calls[i] for i in part])
    return [_bits(base.recommend(*call)) for call in calls]


def test_a_participant_gets_the_same_base_alone_and_in_any_batch():
    engine = prepared_engine()
    policy = engine.fitted_["hare"].base_.policy
    calls = _calls(engine, range(12))
    alone = _alone(policy, calls, slots=4)
    rng = np.random.default_rng(0)
    for chunks in (1, 2, 3):
        order = rng.permutation(len(calls))
        assert _batched(policy, calls, order, 4, chunks) == alone
    # the batches above put several participants in one computation
    assert len({int(c[2][0]) % 4 for c in calls}) == 4


class _RowsMix:
    """A policy whose rows depend on each other (the batch mean moves every answer)."""

    def recommend(self, x, profiles, ids, seed=0):
        shift = x.mean(axis=0, keepdims=True)
        return Recourse(np.ones(x.shape, bool), x + shift, np.ones(len(x), bool))


def test_the_comparison_catches_a_policy_whose_rows_mix():
    profiles = ActionabilityProfiles(("a", "b"), np.ones((1, 2)), 1, np.ones((1, 2)))
    calls = [(np.array([[float(i), 1.0]]), profiles, np.array([i]), 0) for i in range(6)]
    alone = _alone(_RowsMix(), calls, slots=8)
    assert _batched(_RowsMix(), calls, np.arange(6), 8, 1) != alone


def test_batches_use_each_slot_once_and_one_seed():
    profiles = ActionabilityProfiles(("a",), np.ones((1, 1)), 1, np.ones((1, 1)))
    base = SlottedBase(_RowsMix(), slots=4)
    calls = {(str(i), s): (np.array([[float(i)]]), profiles, np.array([i]), s)
             for i in (1, 5, 2, 9) for s in (0, 1)}
    batches = base._batches(calls)
    for batch in batches:
        slots = [int(call[2][0]) % 4 for _, call in batch]
        assert len(slots) == len(set(slots))
        assert len({call[3] for _, call in batch}) == 1
    assert sorted(key for batch in batches for key, _ in batch) == sorted(calls)
    # ids 1, 5 and 9 share slot 1: three batches per seed
    assert len(batches) == 6


def test_slots_must_be_positive():
    with pytest.raises(ValueError, match="slots"):
        SlottedBase(_RowsMix(), slots=0)


def test_first_steps_after_a_prefill_are_the_steps_computed_alone():
    engine = prepared_engine()
    people = engine.people()
    steps = [(700 + r, "hare", people.x[r].tolist(), people.reported.scores[r].tolist(), [])
             for r in range(8)]
    hare = engine.fitted_["hare"]
    assert isinstance(hare, SlottedHARE)

    def forget():
        hare.base_._memo.clear()
        hare._memo.clear()

    forget()
    alone = []
    for step in steps:
        alone.append(json.dumps(engine.recourse_step(*step)))
        forget()
    assert engine.refines("hare") and not engine.refines("oracle")
    assert engine.prefill(steps[::2]) == 4 and engine.prefill(steps[1::2]) == 4
    assert engine.prefill([(1, "oracle", steps[0][2], steps[0][3], [])]) == 0
    assert [json.dumps(engine.recourse_step(*step)) for step in steps] == alone
    # the first questions came from the batches: nothing was computed again
    assert hare.prefill_candidates([]) == 0 and len(hare._memo) >= 1


def test_first_candidates_alone_and_in_any_batch_are_the_same_bits():
    engine = prepared_engine()
    hare = engine.fitted_["hare"]
    calls = _calls(engine, range(10), first_index=900)
    hare.base_.prefill(calls)

    def candidates(batches):
        fresh = SlottedHARE.of(hare, hare.slots)
        for part in batches:
            fresh.prefill_candidates([calls[i] for i in part])
        return {k: b"".join(t.numpy().tobytes() for t in v) for k, v in fresh._memo.items()}

    alone = {}
    for i in range(len(calls)):
        alone.update(candidates([[i]]))
    assert len(alone) >= 5
    order = np.random.default_rng(1).permutation(len(calls))
    assert candidates([order[:4], order[4:]]) == alone
    assert candidates([order]) == alone


class _SlottedHAREPolicy:
    """An unfitted SlottedHARE over Wachter, for the policy contract checks."""

    def fit(self, context):
        from simstudy.policies import HARE, Wachter

        hare = HARE(Wachter(steps=40, rounds=3), budget=4, iterations=2, steps=10)
        return SlottedHARE.of(hare.fit(context), slots=8)


def test_slotted_hare_keeps_the_policy_contract():
    from simstudy.checks import check_policy, check_profiles

    engine = prepared_engine()
    people = engine.people()
    rows = np.arange(12)
    ids = people.ids[rows]
    profiles = check_profiles(engine.context_.world.roles.actionable, ids)
    check_policy(_SlottedHAREPolicy, engine.context_, people.x[rows], ids, profiles,
                 name="slotted-hare", seed=3,
                 recommend_kwargs=lambda r: {"feedback": people.feedback()})


def test_only_bases_whose_rows_keep_to_themselves_are_batched(monkeypatch):
    from simstudy.policies import CausalOracle, Wachter

    assert Wachter.row_local and not CausalOracle.row_local
    engine = prepared_engine()
    assert engine.refines("hare")
    monkeypatch.setattr(engine.fitted_["hare"].base_.policy, "row_local", False)
    assert not engine.refines("hare")
    steps = [(800, "hare", engine.people().x[0].tolist(),
              engine.people().reported.scores[0].tolist(), [])]
    assert engine.prefill(steps) == 0
