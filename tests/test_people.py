"""The simulated people: one object, keyed draws, hidden truth, and the same person throughout."""

from __future__ import annotations

import numpy as np
import pytest
from _sim_support import PreferredFeaturePolicy, ranking_population, small_world
from conftest import make_people

from simstudy.core.registry import KINDS, Kind, discover
from simstudy.metrics import evaluate_recourse
from simstudy.people import LogisticResponse, LogisticResponseParams, People, PeopleSpec
from simstudy.policies.growing_spheres import GrowingSpheres
from simstudy.policies.hare import HARE
from simstudy.primitives.space import ScaledSpace
from simstudy.sim.spec import SimulationSpec
from simstudy.sim.world import EventWorld


def _build(ctx, spec, rows=slice(None), seed=11):
    x = ctx.data.x_test.numpy()[rows]
    ids = np.arange(len(ctx.data.x_test))[rows]
    return People.from_spec(spec, x, ids, seed, ctx.feature_names,
                            ctx.world.roles.actionable, ScaledSpace.from_context(ctx),
                            immutable=ctx.world.roles.immutable,
                            rankings=ctx.world.roles.rankings)


def test_every_draw_is_keyed_by_person(lin_ctx):
    spec = ranking_population(0.5)
    whole = _build(lin_ctx, spec)
    part = _build(lin_ctx, spec, rows=np.arange(40, 10, -3))
    rows = whole.rows(part.ids)
    np.testing.assert_array_equal(part.reported.scores, whole.reported.scores[rows])
    np.testing.assert_array_equal(part.true_actionable, whole.true_actionable[rows])
    np.testing.assert_array_equal(part.dispositions, whole.dispositions[rows])
    np.testing.assert_array_equal(part.groups["privileged"], whole.groups["privileged"][rows])
    gt, has = whole.ground_truth
    np.testing.assert_array_equal(part.ground_truth[0].numpy(), gt[rows].numpy())
    assert not np.array_equal(_build(lin_ctx, spec, seed=12).dispositions, whole.dispositions)


def test_hidden_profile_removes_one_reported_feature_from_the_misreporting_people(lin_ctx):
    people = _build(lin_ctx, ranking_population(0.5))
    reported = people.reported.actionable
    assert not (people.true_actionable & ~reported).any()
    lost = (reported & ~people.true_actionable).sum(axis=1)
    assert set(lost[people.misreported]) == {1} and (lost[~people.misreported] == 0).all()
    assert 0.35 < people.misreported.mean() < 0.65
    # an action on a feature the person reported but cannot truly change is blocked
    i = np.flatnonzero(people.misreported)[0]
    k = np.flatnonzero(reported[i] & ~people.true_actionable[i])[0]
    action = np.zeros((1, len(people.feature_names)), dtype=bool)
    action[0, people.feature_names.index(people.reported.features[k])] = True
    assert people.blocked(action, np.array([i]))[0]
    assert not people.blocked(action & False, np.array([i]))[0]


def test_the_person_who_answers_is_the_person_who_is_measured(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="far", n_samples=50)
    others = make_people(lin_ctx, x, ids, profiles, seed=99, scale="far", n_samples=50)

    def loss_after(budget, iterations, answering):
        # the first iteration of (B = 12, T = 3) is exactly (B = 4, T = 1): same keys, same k
        hare = HARE(GrowingSpheres(n_samples=50), budget=budget, iterations=iterations,
                    steps=20, early_stop=False, keep_best=True).fit(lin_ctx)
        rec = hare.recommend(x, profiles, ids, feedback=answering.feedback())
        return people.loss(rec.counterfactual)

    # keeping the incumbent, answers from these people never leave them worse off than their
    # first choice, under the hidden truth the run tables measure them with ...
    assert (loss_after(12, 3, people) <= loss_after(4, 1, people) + 1e-12).all()
    # ... while answers from other people (another hidden truth) do
    assert (loss_after(12, 3, others) > loss_after(4, 1, others) + 1e-9).any()


class _AskingPolicy(PreferredFeaturePolicy):
    """Asks each person one question before answering; remembers who answered."""

    asks_questions = True
    sessions: list = []

    def recommend(self, x, profiles, ids, seed=0, feedback=None):
        rec = super().recommend(x, profiles, ids, seed)
        feedback.accept(ids, x)
        self.sessions.append((feedback.people, np.asarray(ids).copy()))
        return rec


class _RecordingResponse(LogisticResponse):
    calls: list = []

    def probabilities(self, inputs):
        self.calls.append(inputs)
        return super().probabilities(inputs)


def test_in_the_event_world_the_same_people_answer_and_respond(monkeypatch):
    # the logistic kind's runtime, for this test: the recording response model (replacing
    # the declared one, which is read first)
    discover()
    monkeypatch.setitem(KINDS["response"], "logistic", Kind(
        "response", "logistic", LogisticResponseParams, lambda params: _RecordingResponse()))
    _AskingPolicy.sessions, _RecordingResponse.calls = [], []
    world, data, model = small_world()
    spec = SimulationSpec.model_validate({
        "horizon_days": 20, "arrivals": {"kind": "cohort", "size": 120},
        "max_attempts": 1})
    sim = EventWorld(spec, world, data, model, lambda c: _AskingPolicy().fit(c),
                     ranking_population(0.3), 4)
    events = sim.run().events
    people = sim.people
    assert _AskingPolicy.sessions and _RecordingResponse.calls
    assert all(p is people for p, _ in _AskingPolicy.sessions)
    asked = np.concatenate([i for _, i in _AskingPolicy.sessions])
    served = events.loc[events["event"] == "recourse_given", "applicant"].to_numpy()
    assert len(served) and set(served) <= set(asked)
    # the dispositions that decided accepting and acting are the answering people's own
    z = np.concatenate([c.accept_effect for c in _RecordingResponse.calls])
    np.testing.assert_array_equal(np.sort(z),
                                  np.sort(people.dispositions[people.rows(served), 0]))


def test_two_policies_face_identical_people_and_luck():
    world, data, model = small_world()
    spec = SimulationSpec.model_validate({"horizon_days": 10,
                                          "arrivals": {"kind": "cohort", "size": 80}})
    worlds = []
    for policy in (PreferredFeaturePolicy, _AskingPolicy):
        w = EventWorld(spec, world, data, model, lambda c, p=policy: p().fit(c),
                       ranking_population(0.3), 2)
        w.run()
        worlds.append(w)
    a, b = (w.people for w in worlds)
    for name in ("ids", "x", "true_actionable", "misreported", "dispositions",
                 "patience_draw"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(a.reported.scores, b.reported.scores)
    np.testing.assert_array_equal(a.ground_truth[0].numpy(), b.ground_truth[0].numpy())
    ids = np.arange(20)
    np.testing.assert_array_equal(worlds[0]._uniforms("respond", ids, 4),
                                  worlds[1]._uniforms("respond", ids, 4))


def test_truth_columns_of_any_recourse(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    people = make_people(lin_ctx, x, ids, profiles, scale="near", n_samples=50, mismatch=1.0)
    rec = GrowingSpheres(n_samples=50).fit(lin_ctx).recommend(x, profiles, ids)
    ev = evaluate_recourse(lin_ctx.world, lin_ctx.model, x, rec, profiles,
                           lin_ctx.feature_range)
    cols = people.truth_columns(ev["x_cf"], ev["found"], rec.intervened)
    assert set(cols) == {"blocked", "user_loss", "has_ground_truth", "gtp", "gtd"}
    assert np.isnan(cols["gtp"][~ev["found"]]).all()
    assert cols["blocked"].any() and not cols["blocked"][~ev["found"]].any()
    weights = make_people(lin_ctx, x, ids, profiles, preference="weights")
    assert "gtp" not in weights.truth_columns(ev["x_cf"], ev["found"], rec.intervened)


def test_people_spec_refuses_bad_sections():
    with pytest.raises(ValueError):
        PeopleSpec.model_validate({"response": {"kind": "probit"}})
    with pytest.raises(ValueError):
        PeopleSpec.model_validate({"users": {"noise": {"kind": "gaussian"}}})
    assert PeopleSpec.model_validate({"response": {"kind": "rating"}}).response.kind == "rating"
