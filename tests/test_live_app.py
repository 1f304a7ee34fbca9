"""The live server under concurrency: a computing recourse holds no page thread."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

from _live_support import prepared_engine  # noqa: E402

from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.flow import StepNeeded, StudyFlow  # noqa: E402

KEY = b"test-key"


def _page(text):
    m = re.search(r"name='page' value='([^']*)'", text)
    return m.group(1) if m else None


async def _walk(client, crowd, n, stop_after=None):
    """Bot ``n`` through the pages; the last page's key (``stop_after``: answered last)."""
    r = await client.get("/", params={"PROLIFIC_PID": f"P{n}", "STUDY_ID": "S"},
                         follow_redirects=True)
    for _ in range(100):
        key = _page(r.text)
        if key is None:
            return None
        r = await client.post(str(r.url), data={"page": key, **crowd.answer(n, key, r.text)},
                              follow_redirects=True)
        assert r.status_code == 200, r.text
        if key == stop_after:
            return key
    raise AssertionError("no end")


def test_a_participant_whose_recourse_computes_does_not_hold_up_the_others(tmp_path):
    engine = prepared_engine()
    flow = StudyFlow(engine, Store(tmp_path / "s.sqlite"), KEY)
    release, computing = threading.Event(), threading.Event()

    def slow_step(*args):
        computing.set()
        assert release.wait(60)
        return engine.recourse_step(*args)

    flow.compute = slow_step
    crowd = BotCrowd(engine)
    # one page thread: a step computed inside it would stop every other page
    app = create_app(flow, page_threads=1)

    async def main():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app),
                                     base_url="http://test", timeout=60) as client:
            first = asyncio.create_task(_walk(client, crowd, 0, stop_after="actionability"))
            while not computing.is_set():
                await asyncio.sleep(0.01)
            # participant 1 gets through consent, profile and the checks meanwhile
            r = await client.get("/", params={"PROLIFIC_PID": "P1"}, follow_redirects=True)
            for _ in range(4):  # start, consent, profile, check
                key = _page(r.text)
                r = await asyncio.wait_for(client.post(
                    str(r.url), data={"page": key, **crowd.answer(1, key, r.text)},
                    follow_redirects=True), timeout=20)
                assert r.status_code == 200
            assert not first.done()
            release.set()
            assert await first == "actionability"
            return await _walk(client, crowd, 1)

    assert asyncio.run(main()) is None  # participant 1 completed too
    uid = flow.store.read("SELECT uid FROM participants WHERE idx = 0")[0]["uid"]
    assert flow.current(uid).kind in ("rating", "question", "check", "end")


def test_a_step_computed_outside_the_flow_is_the_step_computed_inside(tmp_path):
    engine = prepared_engine()
    crowd = BotCrowd(engine)
    pages = []
    for name in ("inside", "outside"):
        flow = StudyFlow(engine, Store(tmp_path / f"{name}.sqlite"), KEY)
        uid = flow.enter("P0", "S", None)
        for _ in range(20):
            try:
                page = flow.current(uid, compute=name == "inside")
            except StepNeeded as need:
                flow.save_step(uid, engine.recourse_step(*need.step_args))
                continue
            if page.kind in ("rating", "end"):
                break
            form = {"page": page.key, **crowd.answer(0, page.key,
                                                     flow.pages.render(page, "/p/x"))}
            assert flow.submit(uid, form) is None
        pages.append((page.key, flow.store.items(uid)))
    assert pages[0] == pages[1] and pages[0][1]

