"""Prolific's rules at the live server: entry links, who creates a participant, slots held
at most ``timeout_minutes``, per-client entry limits, closing at the target."""

from __future__ import annotations

import re
import warnings

import pandas as pd
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from _live_support import prepared_engine  # noqa: E402

from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.export import export_study, live_tables  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402

KEY = b"test-key"
STUDY_ID = "60f0c0ffee0000000000abcd"


def _pid(n: int) -> str:
    return f"{n:024x}"


def _flow(tmp_path, **live):
    flow = StudyFlow(prepared_engine(), Store(tmp_path / "s.sqlite"), KEY)
    flow.live = flow.live.model_copy(update={"platform": "prolific", "study_id": STUDY_ID,
                                             **live})
    return flow


def _page(text):
    m = re.search(r"""name=['"]page['"] value=['"]([^'"]*)['"]""", text)
    return m.group(1) if m else None


def _participants(flow) -> int:
    return flow.store.read("SELECT COUNT(*) FROM participants")[0][0]


def _enter(client, pid, study_id=STUDY_ID):
    """A participant through the link's start page (its form's POST; the response)."""
    link = {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": "S"}
    return client.post("/", params=link, data={"page": "start"}, follow_redirects=False)


def _address(client, pid):
    """The address of a participant created through the start page."""
    r = _enter(client, pid)
    assert r.status_code == 303
    return r.headers["location"]


def test_prolific_links_are_checked_and_only_a_post_creates_a_participant(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    link = {"PROLIFIC_PID": _pid(1), "STUDY_ID": STUDY_ID, "SESSION_ID": "S"}
    # a malformed participant id, another study's link: refused, nobody created
    for bad in ({**link, "PROLIFIC_PID": "BOT-1"}, {**link, "PROLIFIC_PID": _pid(1) + "0"},
                {**link, "STUDY_ID": "another"}, {**link, "STUDY_ID": ""}):
        assert client.get("/", params=bad).status_code == 400
        assert client.post("/", params=bad, data={"page": "start"}).status_code == 400
    # the link opened, previewed, prefetched: the start page, nobody created
    r = client.get("/", params=link)
    assert r.status_code == 200 and _page(r.text) == "start"
    assert client.head("/", params=link).status_code == 200
    client.get("/", params=link, headers={"Purpose": "prefetch", "Sec-Purpose": "prefetch"})
    assert _participants(flow) == 0
    # the start page's form (a POST to the same link) creates them, once
    r = client.post(str(r.url), data={"page": "start"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/p/")
    assert _participants(flow) == 1
    again = client.get("/", params=link, follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == r.headers["location"]
    assert client.post("/", params=link, data={"page": "start"}).status_code == 200
    assert _participants(flow) == 1
    # an unknown or malformed participant address: 404, nothing created
    assert client.get("/p/" + "0" * 16).status_code == 404
    assert client.get("/p/" + "x" * 500).status_code == 404
    assert _participants(flow) == 1


def test_sixty_fake_entries_from_one_client_leave_the_study_open(tmp_path):
    flow = _flow(tmp_path, target_per_condition=20)  # 3 conditions: 60 places
    app = create_app(flow)
    fake = TestClient(app, client=("203.0.113.66", 40000), follow_redirects=False)
    admitted = []
    for n in range(60):  # made-up ids of the right form, each consenting at once
        r = _enter(fake, _pid(1000 + n))
        if r.status_code == 303:
            admitted.append(r.headers["location"])
            fake.post(r.headers["location"], data={"page": "consent", "consent": "yes"})
        else:
            assert r.status_code == 429 and "Too many new entries" in r.text
    assert 0 < len(admitted) <= 10  # the default: 10 new participants a minute per client
    # real participants, each from their own address, all get a place
    for n in range(20):
        real = TestClient(app, client=(f"198.51.100.{n + 1}", 40000), follow_redirects=False)
        r = _enter(real, _pid(n + 1))
        assert r.status_code == 303
        real.post(r.headers["location"], data={"page": "consent", "consent": "yes"})
        assert flow.store.participant(r.headers["location"][3:])["status"] == "in_progress"
    taken = flow.store.counts(flow.engine.conditions)
    assert sum(taken.values()) == len(admitted) + 20 and max(taken.values()) <= 20


def test_an_idle_participant_past_the_timeout_frees_the_slot_and_cannot_complete(tmp_path):
    flow = _flow(tmp_path, target_per_condition=1)
    client = TestClient(create_app(flow), follow_redirects=True)
    crowd = BotCrowd(flow.engine, seed=0)
    late = _address(client, _pid(1))
    for key in ("consent", "profile", *flow.checks("profile"), "actionability"):
        r = client.get(late)
        assert _page(r.text) == key
        client.post(late, data={"page": key, **crowd.answer(0, key, r.text)})
    r = client.get(late)
    while _page(r.text) != "rating:0":  # through the policy's questions
        key = _page(r.text)
        r = client.post(late, data={"page": key, **crowd.answer(0, key, r.text)})
    for n in (2, 3):
        u = _address(client, _pid(n))
        client.post(u, data={"page": "consent", "consent": "yes"})
    # every condition's one place is held: a newcomer is turned away
    u = _address(client, _pid(4))
    r = client.post(u, data={"page": "consent", "consent": "yes"})
    assert flow.store.participant(u[3:])["status"] == "full"
    # the first participant is away longer than the timeout (their assignment moved back)
    with flow.store.write() as db:
        db.execute("UPDATE participants SET assigned_at = assigned_at - ? WHERE uid = ?",
                   (60.0 * flow.live.timeout_minutes + 1.0, late[3:]))
    u = _address(client, _pid(5))
    client.post(u, data={"page": "consent", "consent": "yes"})
    newcomer = flow.store.participant(u[3:])
    assert newcomer["status"] == "in_progress"  # the slot was freed for them
    assert flow.store.participant(late[3:])["status"] == "timed_out"
    assert newcomer["condition"] == flow.store.participant(late[3:])["condition"]
    # the late return: a clear page, no completion code, and every answer refused
    r = client.get(late)
    assert "time for this study has run out" in r.text and "id='code'" not in r.text
    for _ in range(10):
        key = "rating:0"
        r = client.post(late, data={"page": key, "accept": "5", "act": "5", "why": ""})
        assert "time for this study has run out" in r.text
    assert flow.store.participant(late[3:])["status"] == "timed_out"
    assert not [k for k in flow.store.answers(late[3:]) if k.startswith("rating:")]


def test_leaving_frees_the_slot_and_no_plan_participants_do_not_count(tmp_path):
    flow = _flow(tmp_path, target_per_condition=1)
    client = TestClient(create_app(flow), follow_redirects=True)
    crowd = BotCrowd(flow.engine, seed=0)
    u = _address(client, _pid(1))
    client.post(u, data={"page": "consent", "consent": "yes"})
    r = client.get(u)
    assert "Leave the study" in r.text
    r = client.post(u, data={"page": "return"})
    assert "You have left the study" in r.text
    assert flow.store.participant(u[3:])["status"] == "returned"
    assert sum(flow.store.counts(flow.engine.conditions).values()) == 0
    # a participant whose condition found no plan: recorded, and their place is free again
    u = _address(client, _pid(2))
    client.post(u, data={"page": "consent", "consent": "yes"})
    r = client.get(u)
    client.post(u, data={"page": "profile", **crowd.answer(0, "profile", r.text)})
    x = flow.store.answers(u[3:])["profile"]["x"]
    # the condition's step found no plan: only a random plan to rate (under rule exclude)
    items = [{"item": 9, "policy": "random", "intervened": [False] * len(x), "x_cf": x,
              "sparsity": 1, "proximity": 0.1, "cost": 0.1, "cost_unweighted": 0.1}]
    flow.save_step(u[3:], {"items": items})
    p = flow.store.participant(u[3:])
    assert p["no_plan"] == 1 and p["assigned_condition"] == p["condition"]
    assert flow.store.counts(flow.engine.conditions)[p["condition"]] == 0


def test_the_export_carries_status_condition_and_flags(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow), follow_redirects=True)
    crowd = BotCrowd(flow.engine, seed=0)
    u = _address(client, _pid(7))
    r = client.get(u)
    for _ in range(60):
        key = _page(r.text)
        if key is None:
            break
        form = crowd.answer(0, key, r.text)
        if key.startswith("rating:"):
            form["why"] = "=cmd|' /C calc'!A0"
        r = client.post(u, data={"page": key, **form})
    study, answers = live_tables(flow.store)
    assert set(study["status"]) == {"completed"}
    assert {"assigned_condition", "no_plan", "pilot", "study_version"} <= set(study.columns)
    assert (study["pilot"] == 0).all() and (study["study_version"] == 1).all()
    assert (study["assigned_condition"] == study["condition"]).all()
    assert answers["why"].str.startswith("=").all()  # the raw text in the table
    # in every exported CSV, a cell a spreadsheet would run is text
    res = export_study(tmp_path / "s.sqlite", tmp_path / "out" / "study.csv")
    text = (tmp_path / "out" / "study_open.csv").read_text()
    assert "'=cmd|" in text and ",=cmd" not in text and res["rows"] == len(study)
    back = pd.read_csv(tmp_path / "out" / "study_open.csv")["why"].str[1:]
    assert (back == answers["why"]).all()  # the raw text: the cell without its quote
    for path in res["paths"]:
        for cell in pd.read_csv(path).to_numpy().ravel():
            assert not str(cell).startswith(("=", "+", "@", "\t", "\r"))
