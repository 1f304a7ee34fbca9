"""The live study over HTTP (Starlette's test client): path, idempotency, export, rules."""

from __future__ import annotations

import re
import sqlite3
import warnings

import pandas as pd
import pytest
import yaml

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from _live_support import STUDY, prepared_engine, small_study_file  # noqa: E402

from simstudy.cli.run_commands import validate_files
from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd, run_bots  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.export import export_study, live_tables  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402

KEY = b"test-key"


def _flow(tmp_path, name="s.sqlite"):
    return StudyFlow(prepared_engine(), Store(tmp_path / name), KEY)


def _page(text):
    m = re.search(r"name='page' value='([^']*)'", text)
    return m.group(1) if m else None


def _enter(client, pid, **params):
    """A participant created through the entry link's start page (its form's POST)."""
    r = client.get("/", params={"PROLIFIC_PID": pid, **params})
    assert _page(r.text) == "start"
    return client.post(str(r.url).replace("http://testserver", ""), data={"page": "start"})


def _walk(client, crowd, n, pid, stop_at=None):
    """Bot ``n``'s answers through the test client until the end (or page ``stop_at``)."""
    r = client.get("/", params={"PROLIFIC_PID": pid, "STUDY_ID": "S", "SESSION_ID": "X"})
    url = str(r.url).replace("http://testserver", "")
    for _ in range(100):
        key = _page(r.text)
        if key is None or key == stop_at:
            return url, r
        r = client.post(url, data={"page": key, **crowd.answer(n, key, r.text)})
        assert r.status_code == 200, r.text
        url = str(r.url).replace("http://testserver", "")  # the start page posts to the link
    raise AssertionError("no end")


def test_the_study_file_validates_and_the_shipped_sections_hold():
    assert validate_files([str(STUDY)]) == []
    live = yaml.safe_load(STUDY.read_text())["study"]["live"]
    assert len(live["attention_checks"]) >= 2


@pytest.mark.parametrize("check, reason", [
    ({"options": ["No", "Neutral", "Yes", "Maybe"], "correct": "Yes"}, "neutral option"),
    ({"options": ["Low", "Mid", "High"], "correct": "High"}, "neutral middle"),
    ({"prompt": "What colour was the car?", "options": ["Red", "Blue"], "correct": "Red"},
     "names the option"),
])
def test_attention_checks_follow_the_platform_rules(tmp_path, check, reason):
    base = {"after": "profile", "prompt": f"Please select '{check['correct']}'."}
    bad = {**base, **check}
    good = {"after": "ratings", "prompt": "Please select 'Yes'.", "options": ["Yes", "No"],
            "correct": "Yes"}
    path = small_study_file(tmp_path, attention_checks=[bad, good])
    problems = validate_files([str(path)])
    assert len(problems) == 1 and "attention_checks[0]" in problems[0] and reason in problems[0]
    one = small_study_file(tmp_path, attention_checks=[good])
    assert any("attention_checks" in p for p in validate_files([str(one)]))


def test_every_condition_completes_and_the_export_is_the_analysis_schema(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    assert client.get("/healthz").status_code == 200
    crowd = BotCrowd(flow.engine, seed=0)
    codes = []
    for n in range(3):
        _, r = _walk(client, crowd, n, f"PID-{n}")
        codes.append(re.search(r"id='code'>([^<]*)<", r.text).group(1))
    assert codes == ["C1LIVEOK"] * 3
    conds = [r["condition"] for r in flow.store.read("SELECT condition FROM participants "
                                                     "ORDER BY idx")]
    assert sorted(conds) == sorted(flow.engine.conditions)  # balanced: one each
    hare_uid = flow.store.read("SELECT uid FROM participants WHERE condition = 'hare'")[0][0]
    asked = [k for k in flow.store.answers(hare_uid) if k.startswith("hare:")]
    assert asked, "HARE asked its questions live"
    out = tmp_path / "exp" / "study.csv"
    res = export_study(tmp_path / "s.sqlite", out)
    table = pd.read_csv(out)
    assert list(table.columns[:6]) == ["uid", "item", "sparsity", "proximity", "accept", "act"]
    assert {"policy", "blocked", "condition", "gender"} <= set(table.columns)
    assert res["participants"] == 3 and table["uid"].nunique() == 3
    assert table["accept"].between(1, 7).all() and table["act"].between(1, 7).all()
    # every shown item is rated, and the condition's own recourse is the condition's policy
    for uid, grp in table.groupby("uid"):
        assert len(grp) == len(flow.store.items(
            flow.store.read("SELECT uid FROM participants WHERE idx = ?", (int(uid),))[0][0]))
        own = grp[grp["policy"] != "random"]
        assert (own["policy"] == own["condition"]).all()
    text = "".join(p.read_text() for p in (tmp_path / "exp").iterdir())
    assert "PID-" not in text and hare_uid not in text
    assert "NOT DESCRIBED" not in (tmp_path / "exp" / "data_dictionary.csv").read_text()
    assert (tmp_path / "exp" / "study_open.csv").exists()


def test_refresh_back_double_submit_reentry_and_restart_resume(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    crowd = BotCrowd(flow.engine, seed=0)
    # participants 0 and 1 take the first two conditions; participant 2 gets HARE's (tie order
    # is seeded, so find whoever is served by hare)
    for n in range(3):
        _walk(client, crowd, n, f"PID-{n}", stop_at="actionability")
    uid = flow.store.read("SELECT uid FROM participants WHERE condition = 'hare'")[0][0]
    n = flow.store.participant(uid)["idx"]
    url = f"/p/{uid}"
    r = client.get(url)
    r = client.post(url, data={"page": "actionability",
                               **crowd.answer(n, "actionability", r.text)})
    key = _page(r.text)
    assert key.startswith("hare:")
    assert _page(client.get(url).text) == key  # refresh: the same question
    form = {"page": key, **crowd.answer(n, key, r.text)}
    client.post(url, data=form)
    before = flow.store.answers(uid)
    again = client.post(url, data=form)  # double submit / back and submit again: a no-op
    assert flow.store.answers(uid) == before and again.status_code == 200
    rows = sqlite3.connect(tmp_path / "s.sqlite").execute(
        "SELECT COUNT(*) FROM answers WHERE uid = ?", (uid,)).fetchone()[0]
    assert rows == len(before)
    where = _page(client.get(url).text)
    # re-entry through the recruitment URL with the same platform ID: the same place
    r = client.get("/", params={"PROLIFIC_PID": f"PID-{n}", "STUDY_ID": "S",
                                "SESSION_ID": "other"})
    assert str(r.url).endswith(url) and _page(r.text) == where
    # a restart: a new server over the same database replays HARE's answers to the same page
    client2 = TestClient(create_app(_flow(tmp_path)))
    assert _page(client2.get(url).text) == where
    _, r = _walk(client2, crowd, n, f"PID-{n}")
    assert "C1LIVEOK" in r.text


def test_refusals_no_consent_and_failed_attention(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    crowd = BotCrowd(flow.engine, seed=0)
    url, r = _walk(client, crowd, 0, "PID-A", stop_at="profile")
    form = {"page": "profile", **crowd.answer(0, "profile", r.text)}
    bad = {**form, "x_age": "1e9"}
    r = client.post(url, data=bad)
    assert r.status_code == 422 and "Please enter a value between" in r.text
    assert "profile" not in flow.store.answers(url.split("/")[-1])
    r = client.post(url, data={**form, "x_gender": "7"})
    assert r.status_code == 422 and "choose one of the options" in r.text
    # no consent: its own code, no condition taken
    r = _enter(client, "PID-B")
    u2 = str(r.url).replace("http://testserver", "")
    r = client.post(u2, data={"page": "consent", "consent": "no"})
    assert "C3NOCONSENT" in r.text and flow.store.participant(u2[3:])["condition"] is None
    # attention checks answered wrongly: recorded, the failed-attention code, rows kept
    r = _enter(client, "PID-C")
    u3 = str(r.url).replace("http://testserver", "")
    n3 = flow.store.participant(u3[3:])["idx"]
    for _ in range(100):
        key = _page(r.text)
        if key is None:
            break
        answer = crowd.answer(n3, key, r.text)
        if key.startswith("check:"):
            check = flow.live.attention_checks[int(key[6:])]
            answer = {"choice": next(o for o in check.options if o != check.correct)}
        r = client.post(u3, data={"page": key, **answer})
    assert "C2ATTN" in r.text
    study, _ = live_tables(flow.store)
    mine = study[study["uid"] == n3]
    assert len(mine) and (mine["status"] == "failed_attention").all()
    assert (mine["attention_failures"] == 2).all()


def test_consistency_check_flags_contradicting_answers(tmp_path):
    flow = _flow(tmp_path)
    client = TestClient(create_app(flow))
    crowd = BotCrowd(flow.engine, seed=0)
    url, r = _walk(client, crowd, 0, "PID-Z", stop_at="rating:0")
    form = {"page": "rating:0", **crowd.answer(0, "rating:0", r.text)}
    flipped = {k: ("no" if v == "yes" else "yes") if k.startswith("c_") else v
               for k, v in form.items()}
    client.post(url, data=flipped)
    rating = flow.store.answers(url[3:])["rating:0"]
    stated = flow.store.answers(url[3:])["actionability"]["scores"]
    act = list(flow.engine.actionable)
    expect = [f for f, v in rating["changeable"].items()
              if (f in act and stated[act.index(f)] > 0) != v]
    assert expect and sorted(rating["inconsistent"]) == sorted(expect)


def test_bots_through_the_app_give_the_same_export_twice(tmp_path):
    import httpx

    exports = []
    for name in ("a", "b"):
        flow = _flow(tmp_path, f"{name}.sqlite")
        report = run_bots(flow.engine, "http://bots", 6, concurrency=3,
                          transport=httpx.ASGITransport(create_app(flow)))
        assert not report.errors and report.summary()["completed"] == 6
        export_study(tmp_path / f"{name}.sqlite", tmp_path / name / "study.csv",
                     drop_linkage=True)
        exports.append((tmp_path / name / "study.csv").read_bytes())
        tables = [r[0] for r in sqlite3.connect(tmp_path / f"{name}.sqlite").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert "linkage" not in tables
    assert exports[0] == exports[1]
    table = pd.read_csv(tmp_path / "a" / "study.csv")
    counts = table.drop_duplicates("uid")["condition"].value_counts()
    assert counts.max() - counts.min() <= 0 and len(counts) == 3


def test_prereg_records_the_sha256_and_serve_refuses_a_changed_file(tmp_path, capsys):
    from simstudy.cli import main
    from simstudy.live.prereg import check_prereg

    path = small_study_file(tmp_path)
    assert main(["preregister", str(path), "--out", str(tmp_path / "prereg.md")]) == 0
    text = (tmp_path / "prereg.md").read_text()
    assert "Hypotheses" in text and "Exclusions" in text and "Procedure (live)" in text
    assert "Stopping rule" in text and "Study version: 1" in text
    assert check_prereg(path, tmp_path / "prereg.md") is None
    path.write_text(path.read_text() + "\n# changed\n")
    assert "changed since" in check_prereg(path, tmp_path / "prereg.md")
    capsys.readouterr()
    code = main(["serve", str(path), "--db", str(tmp_path / "x.sqlite"), "--prereg",
                 str(tmp_path / "prereg.md")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "changed since it was preregistered" in err[0]


def test_serve_refuses_a_bad_document_in_one_line(tmp_path, capsys):
    from simstudy.cli import main

    path = small_study_file(tmp_path, elicitation="sliders")
    code = main(["serve", str(path), "--db", str(tmp_path / "x.sqlite")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "study.live.elicitation" in err[0]


def test_healthz_answers_503_until_the_study_is_prepared(tmp_path):
    import threading

    go = threading.Event()

    def prepare():
        go.wait(30)
        return _flow(tmp_path)

    with TestClient(create_app(prepare)) as client:
        assert client.get("/healthz").status_code == 503
        assert client.get("/?PROLIFIC_PID=P").status_code == 503
        go.set()
        for _ in range(100):
            if client.get("/healthz").status_code == 200:
                break
            threading.Event().wait(0.05)
        assert client.get("/healthz").status_code == 200


def test_a_full_study_turns_newcomers_away_and_counts_those_in_progress(tmp_path):
    flow = _flow(tmp_path)
    flow.live = flow.live.model_copy(update={"target_per_condition": 1})
    client = TestClient(create_app(flow))
    crowd = BotCrowd(flow.engine, seed=0)
    for n in range(3):  # in progress (stopped at the profile page) still count
        _walk(client, crowd, n, f"PID-{n}", stop_at="profile")
    r = _enter(client, "PID-late")
    url = str(r.url).replace("http://testserver", "")
    r = client.post(url, data={"page": "consent", "consent": "yes"})
    assert "all the participants it needs" in r.text
    assert flow.store.participant(url[3:])["status"] == "full"


@pytest.mark.parametrize("live, field", [
    ({"conditions": ["oracle", "nobody"]}, "study.live.conditions[1]"),
    ({"completion": {"completed": "A", "failed_attention": "A", "no_consent": "C"}},
     "study.live.completion"),
    ({"reject_after_failures": 3}, "study.live"),
])
def test_live_section_names_and_codes_are_checked(tmp_path, live, field):
    problems = validate_files([str(small_study_file(tmp_path, **live))])
    assert len(problems) == 1 and field in problems[0], problems


def test_a_running_question_session_asks_what_a_replay_asks():
    import numpy as np

    from simstudy.live.questions import NeedAnswer

    engine = prepared_engine()
    people = engine.people()
    fb = people.feedback()
    checked = 0
    for row in range(4):
        x, scores = people.x[row].tolist(), people.reported.scores[row].tolist()
        index = 1000 + row
        answers: list[tuple[str, bool]] = []
        for _ in range(20):
            step = engine.recourse_step(index, "hare", x, scores, answers)
            try:
                shown = engine.recourses(index, "hare", np.array(x), np.array(scores), answers)
                replay = engine._items(index, shown)
            except NeedAnswer as need:
                replay = {"question": {"kind": need.kind, "q": need.index,
                                       "a": need.a.tolist(),
                                       "b": None if need.b is None else need.b.tolist()}}
            if "items" in step:
                assert step == {**replay, "condition": "hare"}
                break
            q = step["question"]
            assert {k: q[k] for k in ("kind", "q", "a", "b")} == replay["question"]
            ids = people.ids[row:row + 1]
            a = np.array([q["a"]])
            yes = fb.prefer(ids, a, np.array([q["b"]])) if q["kind"] == "prefer" else \
                fb.accept(ids, a)
            answers.append((q["kind"], bool(yes[0])))
            checked += 1
    assert checked >= 4
