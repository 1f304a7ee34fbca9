"""The control room: the token, counts equal to the database's, pause / resume, pilot flag,
downloads."""

from __future__ import annotations

import base64
import re
import warnings

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from _live_support import prepared_engine  # noqa: E402

from simstudy.live.admin import token_matches  # noqa: E402
from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.export import live_tables  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402

TOKEN = "correct horse battery staple"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _page(text):
    m = re.search(r"""name=['"]page['"] value=['"]([^'"]*)['"]""", text)
    return m.group(1) if m else None


def _enter(client, pid):
    r = client.post("/", params={"PROLIFIC_PID": pid}, data={"page": "start"},
                    follow_redirects=False)
    assert r.status_code == 303
    return r.headers["location"]


def _csrf(client):
    return re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/admin", headers=AUTH
                                                                  ).text).group(1)


@pytest.fixture
def room(tmp_path):
    flow = StudyFlow(prepared_engine(), Store(tmp_path / "s.sqlite"), b"test-key")
    return flow, TestClient(create_app(flow, admin_token=TOKEN))


def test_the_control_room_needs_the_token(room, tmp_path):
    flow, client = room
    for path in ("/admin", "/admin/progress.json", "/admin/study.csv",
                 "/admin/bonus.csv?amount=1"):
        assert client.get(path).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get(path, headers=AUTH).status_code == 200
    assert client.post("/admin", data={"action": "pause"}).status_code == 401
    basic = base64.b64encode(f"researcher:{TOKEN}".encode()).decode()
    assert client.get("/admin", headers={"Authorization": f"Basic {basic}"}).status_code == 200
    assert not token_matches(f"Bearer {TOKEN}", None)
    # a server without a token keeps the room closed
    off = TestClient(create_app(flow, admin_token=""))
    assert off.get("/admin", headers=AUTH).status_code == 401
    # a form without the page's own token is refused (another site cannot press it)
    assert client.post("/admin", data={"action": "pause"}, headers=AUTH).status_code == 403
    assert not flow.store.switch("paused")


def test_counts_equal_the_database_and_pause_stops_new_consents(room):
    flow, client = room
    crowd = BotCrowd(flow.engine, seed=0)
    done = _enter(client, "PID-done")
    r = client.get(done)
    for _ in range(60):
        key = _page(r.text)
        if key is None:
            break
        r = client.post(done, data={"page": key, **crowd.answer(0, key, r.text)})
    client.post(_enter(client, "PID-no"), data={"page": "consent", "consent": "no"})
    client.post(_enter(client, "PID-busy"), data={"page": "consent", "consent": "yes"})
    info = client.get("/admin/progress.json", headers=AUTH).json()
    rows = flow.store.read("SELECT COALESCE(condition, '(none)') AS c, status, COUNT(*) AS n "
                           "FROM participants GROUP BY c, status")
    assert info["statuses"] == {c: {s: n for c2, s, n in rows if c2 == c}
                                for c in {r[0] for r in rows}}
    assert info["participants"] == 3 and info["slots_taken"] == flow.store.counts(
        flow.engine.conditions)
    assert len(info["last_answers"]) == 10 and set(info["median_minutes"]) == {
        flow.store.participant(done[3:])["condition"]}
    page = client.get("/admin", headers=AUTH).text
    assert "Pause recruitment" in page and "PID-" not in page
    # pause: a new consent is refused with a page saying so, nothing assigned
    csrf = _csrf(client)
    assert client.post("/admin", data={"action": "pause", "csrf": csrf},
                       headers=AUTH).status_code == 200
    waiting = _enter(client, "PID-wait")
    r = client.post(waiting, data={"page": "consent", "consent": "yes"})
    assert r.status_code == 422 and "Recruitment is paused" in r.text
    assert flow.store.participant(waiting[3:])["condition"] is None
    assert "consent" not in flow.store.answers(waiting[3:])
    # resume: the same link consents
    client.post("/admin", data={"action": "resume", "csrf": csrf}, headers=AUTH)
    r = client.post(waiting, data={"page": "consent", "consent": "yes"})
    assert r.status_code == 200 and flow.store.participant(waiting[3:])["status"] == \
        "in_progress"


def test_pilot_flag_and_downloads(room):
    flow, client = room
    crowd = BotCrowd(flow.engine, seed=0)
    client.post("/admin", data={"action": "pilot_on", "csrf": _csrf(client)}, headers=AUTH)
    pilot = _enter(client, "PID-pilot")
    client.post("/admin", data={"action": "pilot_off", "csrf": _csrf(client)}, headers=AUTH)
    live = _enter(client, "PID-live")
    for n, u in enumerate((pilot, live)):
        r = client.get(u)
        for _ in range(60):
            key = _page(r.text)
            if key is None:
                break
            r = client.post(u, data={"page": key, **crowd.answer(n, key, r.text)})
    assert flow.store.participant(pilot[3:])["pilot"] == 1
    assert flow.store.participant(live[3:])["pilot"] == 0
    study, _ = live_tables(flow.store)
    assert study.groupby("uid")["pilot"].first().tolist() == [1, 0]
    csv = client.get("/admin/study.csv", headers=AUTH)
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0].startswith("uid,item,sparsity")
    assert len(csv.text.splitlines()) == len(study) + 1
    bonus = client.get("/admin/bonus.csv", params={"amount": "1.5"}, headers=AUTH)
    assert bonus.text == "PID-live,1.50\n"  # completed, not a pilot: Prolific's bulk format
    assert client.get("/admin/bonus.csv", params={"amount": "-1"},
                      headers=AUTH).status_code == 400
