"""The live study in a real browser: Playwright driving the system Chromium (no download).

One participant per condition (HARE's questions answered on its pages), a refresh in the middle
of the study, a double click on a submit button and a back-button re-submission.
"""

from __future__ import annotations

import re
import shutil
import socket
import threading
import time

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

from _live_support import page_token, prepared_engine  # noqa: E402

from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def server(tmp_path):
    flow = StudyFlow(prepared_engine(), Store(tmp_path / "s.sqlite"), b"browser-key")
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(flow), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    end = time.time() + 30
    while not srv.started and time.time() < end:
        time.sleep(0.05)
    yield flow, f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


def _fill(page, answer: dict[str, str]) -> None:
    """Answers the form as a person would: clicks the radio, picks the option, types."""
    for name, value in answer.items():
        el = page.query_selector(f"[name='{name}']")
        tag = el.evaluate("e => e.tagName.toLowerCase()")
        kind = el.get_attribute("type")
        if kind == "radio":
            page.check(f"input[name='{name}'][value='{value}']")
        elif tag == "select":
            page.select_option(f"select[name='{name}']", value)
        else:
            page.fill(f"[name='{name}']", value)


@pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium")
def test_one_participant_per_condition_in_chromium(server):
    flow, url = server
    crowd = BotCrowd(flow.engine, seed=0)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for n in range(3):
                page = browser.new_page()
                page.goto(f"{url}/?PROLIFIC_PID=PW-{n}&STUDY_ID=S&SESSION_ID=X{n}")
                refreshed = double = backed = False
                for _ in range(60):
                    key = page_token(page)
                    if key is None:
                        break
                    if key.startswith("rating:") and not refreshed:
                        page.reload()  # a refresh in the middle: the same page again
                        assert page_token(page) == key
                        refreshed = True
                    _fill(page, crowd.answer(n, key, page.content()))
                    if key == "profile" and not double:
                        page.dblclick("button[type='submit']")  # a double submit
                        page.wait_for_load_state("networkidle")
                        double = True
                    else:
                        with page.expect_navigation():
                            page.click("button[type='submit']")
                    if key == "actionability" and not backed:
                        page.go_back()  # back to an answered page and submit it again
                        if page_token(page) == "actionability":
                            with page.expect_navigation():
                                page.click("button[type='submit']")
                        backed = True
                assert re.search(r"C1LIVEOK", page.inner_text("#code"))
                assert page.get_attribute("#redirect", "href").endswith("cc=C1LIVEOK")
                page.close()
        finally:
            browser.close()
    rows = flow.store.read("SELECT uid, condition, status FROM participants ORDER BY idx")
    assert sorted(r["condition"] for r in rows) == sorted(flow.engine.conditions)
    assert all(r["status"] == "completed" for r in rows)
    for r in rows:
        answers = flow.store.answers(r["uid"])
        items = flow.store.items(r["uid"])
        assert {f"rating:{i}" for i in range(len(items))} <= set(answers)
        if r["condition"] == "hare":
            assert any(k.startswith("hare:") for k in answers)
    # the double submit and the re-submission recorded each page once
    count = flow.store.read("SELECT COUNT(*) FROM answers WHERE page = 'profile'")[0][0]
    assert count == 3
