"""Acceptance of the live study's pages in a real browser (the system Chromium, Playwright).

Every page of every shipped study (the Loan personalization study and the German-credit study,
both on small worlds) is walked at 360 px (a phone) and 1280 px, including the start, consent,
an approved profile, attention checks, actionability, a questioning policy's pages, ratings,
the end pages of a completion and of a refusal, and the page for a link without an id. On each:
no horizontal scroll; every value shown in a profile table equals the display mapping of its
model value (``data-`` attributes) and lies in its feature's declared display range; no float
noise in the text; axe-core reports no serious or critical violation (first page of each kind
per width). One participant per study completes with the keyboard alone. Screenshots of the
first page of each kind go to the output folder (``SIMSTUDY_SCREENSHOTS``, else the test's
temporary folder).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
axe_sync = pytest.importorskip("axe_playwright_python.sync_playwright")

from _live_support import page_token, prepared_engine, prepared_german  # noqa: E402

from simstudy.core.rng import generator  # noqa: E402
from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTHS = (360, 1280)
#: float noise or raw model precision in a page's text
NOISE = re.compile(r"\d[.,]\d{4,}|\de[-+]?\d")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(flow):
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(flow), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    end = time.time() + 30
    while not srv.started and time.time() < end:
        time.sleep(0.05)
    return srv, thread, f"http://127.0.0.1:{port}"


def _kind(key: str | None, page) -> str:
    if key is None:
        return "end" if page.query_selector("#code") else "unknown"
    if page.query_selector("div[role=alert]") and key == "profile":
        return "approved"
    if key.startswith("hare:"):  # a pairwise or an accept question
        return "hare-" + page.get_attribute("[data-kind]", "data-kind")
    return key.split(":")[0]


class Walker:
    """Checks and screenshots of one study's pages."""

    def __init__(self, name: str, flow, out: Path) -> None:
        self.name, self.flow, self.out = name, flow, out
        self.fields = {f.name: f for f in flow.engine.features_}
        self.axe = axe_sync.Axe()
        self.seen: dict[int, set[str]] = {w: set() for w in WIDTHS}
        self.pages = 0

    def check(self, page, width: int, kind: str) -> None:
        self.pages += 1
        over = page.evaluate("document.documentElement.scrollWidth - "
                             "document.documentElement.clientWidth")
        assert over <= 0, f"{self.name} {kind} at {width}px scrolls sideways by {over}px"
        text = page.inner_text("body")
        assert not NOISE.search(text), (kind, NOISE.search(text).group(0))
        self._values(page, kind)
        if kind in self.seen[width]:
            return
        self.seen[width].add(kind)
        page.screenshot(path=str(self.out / f"{self.name}-{width}-{kind}.png"), full_page=True)
        found = self.axe.run(page).response["violations"]
        bad = [(v["id"], v["impact"], len(v["nodes"])) for v in found
               if v["impact"] in ("serious", "critical")]
        assert bad == [], f"{self.name} {kind} at {width}px: {bad}"

    def _values(self, page, kind: str) -> None:
        pages = self.flow.pages
        for row in page.query_selector_all("tr[data-feature]"):
            f = self.fields[row.get_attribute("data-feature")]
            cells = [c.inner_text().strip() for c in row.query_selector_all("td")]
            values = [row.get_attribute("data-current"), row.get_attribute("data-suggested")]
            for cell, raw in zip(cells, [v for v in values if v is not None], strict=True):
                v = float(raw)
                assert cell == pages.value(f, v), (kind, f.name, cell, v)
                shown = f.view.rounded(v)
                if f.view.coded:
                    assert int(shown) in f.view.levels, (f.name, shown)
                else:
                    lo, hi = f.view.minimum, f.view.maximum
                    assert (lo is None or shown >= lo) and (hi is None or shown <= hi), \
                        (kind, f.name, shown)
        for f in self.fields.values():  # an entry field's range, as shown
            hint = page.query_selector(f"#hint-x_{f.name}")
            if hint is not None:
                assert hint.inner_text() == pages.t("profile.range", low=pages.number(f, f.low),
                                                    high=pages.number(f, f.high))
                assert f.view.minimum is None or f.low >= f.view.minimum


def _fill(page, answer: dict[str, str]) -> None:
    for name, value in answer.items():
        el = page.query_selector(f"[name='{name}']")
        tag = el.evaluate("e => e.tagName.toLowerCase()")
        if el.get_attribute("type") == "radio":
            page.check(f"input[name='{name}'][value='{value}']")
        elif tag == "select":
            page.select_option(f"select[name='{name}']", value)
        else:
            page.fill(f"[name='{name}']", value)


def _keyboard(page, answer: dict[str, str]) -> None:
    """Answers the form with the keyboard alone: Tab to each control, arrows and Space for
    radios and options, typing for text, Enter on the button."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    done: set[str] = set()
    for _ in range(200):
        page.keyboard.press("Tab")
        el = page.evaluate("""() => { const e = document.activeElement;
            return e ? {tag: e.tagName.toLowerCase(), type: e.type || '', name: e.name || '',
                        value: e.value, index: e.selectedIndex} : null; }""")
        if el is None or el["tag"] == "body":
            continue
        if el["tag"] == "button":
            with page.expect_navigation():
                page.keyboard.press("Enter")
            return
        name = el["name"]
        if name not in answer or name in done:
            continue
        want = answer[name]
        if el["type"] == "radio":
            values = page.eval_on_selector_all(f"input[name='{name}']",
                                               "es => es.map(e => e.value)")
            steps = values.index(want) - values.index(el["value"])
            for _ in range(steps):
                page.keyboard.press("ArrowRight")
            if steps == 0:
                page.keyboard.press("Space")
        elif el["tag"] == "select":
            values = page.eval_on_selector_all(f"select[name='{name}'] option",
                                               "es => es.map(e => e.value)")
            steps = values.index(want) - el["index"]
            for _ in range(abs(steps)):
                page.keyboard.press("ArrowDown" if steps > 0 else "ArrowUp")
        else:
            page.keyboard.press("Control+A")
            page.keyboard.type(want)
        done.add(name)
        checked = page.evaluate(f"""() => {{ const f = document.querySelector('form');
            return new FormData(f).get({name!r}); }}""")
        assert checked == want, (name, checked, want)
    raise AssertionError("the submit button was never reached with Tab")


def _approved_profile(flow) -> dict[str, str]:
    """A profile, as a person types it, that the decision model approves."""
    engine, pages = flow.engine, flow.pages
    feats = engine.features_
    x = engine.context_.world.sample(400, generator(0, "approved-profile")).numpy()
    for row in x.tolist():
        shown = [f.stated(v) for f, v in zip(feats, row, strict=True)]
        if not all(f.low <= v <= f.high for f, v in zip(feats, shown, strict=True)):
            continue
        if engine.approves([f.view.model(v) for f, v in zip(feats, shown, strict=True)]):
            return {f"x_{f.name}": str(int(v)) if f.view.coded else
                    pages.number(f, v).split(" ")[0] for f, v in zip(feats, shown, strict=True)}
    raise AssertionError("no approved profile in the sample")


def _walk(page, walker, crowd, n, url, width, keyboard=False, approve=False):
    """Participant ``n`` from the entry link to their end page; returns the kinds seen."""
    page.goto(f"{url}/?PROLIFIC_PID=ACC{width}X{n}&STUDY_ID=S&SESSION_ID=X{n}")
    kinds = []
    for _ in range(80):
        key = page_token(page)
        kind = _kind(key, page)
        kinds.append(kind)
        walker.check(page, width, kind)
        if key is None:
            return kinds
        if key == "profile" and approve:
            _fill(page, _approved_profile(walker.flow))
            with page.expect_navigation():
                page.click("button[type='submit']")
            approve = False
            continue
        answer = crowd.answer(n, key, page.content())
        if keyboard:
            _keyboard(page, answer)
        else:
            _fill(page, answer)
            with page.expect_navigation():
                page.click("button[type='submit']")
    raise AssertionError("no end page")


def _study(name, engine, tmp_path):
    flow = StudyFlow(engine, Store(tmp_path / f"{name}.sqlite"), b"acceptance")
    flow.live = flow.live.model_copy(update={"target_per_condition": 50})
    return flow


@pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium")
@pytest.mark.parametrize("name", ["loan", "german_credit"])
def test_every_page_reads_well_on_a_phone_and_a_desktop(tmp_path, name):
    out = Path(os.environ.get("SIMSTUDY_SCREENSHOTS") or tmp_path / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    engine = prepared_engine() if name == "loan" else prepared_german()
    flow = _study(name, engine, tmp_path)
    walker = Walker(name, flow, out)
    crowd = BotCrowd(engine, seed=0)
    questions = any(p.asks_questions for p in engine.fitted_.values())
    srv, thread, url = _serve(flow)
    n = 0
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                for width in WIDTHS:
                    ctx = browser.new_context(viewport={"width": width, "height": 800})
                    ctx.set_default_timeout(120_000)  # a recourse on a loaded machine
                    page = ctx.new_page()
                    page.goto(f"{url}/")  # a link without a participant id
                    walker.check(page, width, "unknown")
                    conditions: set[str] = set()
                    # participants until every condition (so every page kind) has been seen
                    while len(conditions) < len(engine.conditions):
                        kinds = _walk(page, walker, crowd, n, url, width, approve=n % 2 == 0)
                        assert kinds[-1] == "end"
                        uid = flow.store.read("SELECT uid FROM participants WHERE idx = ("
                                              "SELECT MAX(idx) FROM participants)")[0]["uid"]
                        conditions.add(flow.store.participant(uid)["assigned_condition"])
                        n += 1
                    # a refusal's end page
                    page.goto(f"{url}/?PROLIFIC_PID=ACCNO{width}&STUDY_ID=S")
                    walker.check(page, width, "start")
                    with page.expect_navigation():
                        page.click("button[type='submit']")
                    page.check("input[name='consent'][value='no']")
                    with page.expect_navigation():
                        page.click("button[type='submit']")
                    walker.check(page, width, "end-no-consent")
                    expect = {"unknown", "start", "consent", "profile", "approved", "check",
                              "actionability", "rating", "end", "end-no-consent"}
                    assert expect <= walker.seen[width], expect - walker.seen[width]
                    asked = {k for k in walker.seen[width] if k.startswith("hare-")}
                    assert bool(asked) == questions
                    ctx.close()
                # one participant with the keyboard alone, on a phone
                ctx = browser.new_context(viewport={"width": 360, "height": 800})
                ctx.set_default_timeout(120_000)
                page = ctx.new_page()
                kinds = _walk(page, walker, crowd, n, url, 360, keyboard=True)
                assert kinds[-1] == "end" and page.inner_text("#code") == \
                    flow.live.completion.completed
                ctx.close()
            finally:
                browser.close()
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
    assert walker.pages > 20
