"""The live study's web server: a Starlette app over :class:`~simstudy.live.flow.StudyFlow`.

Routes (each a small handler of :class:`LiveServer`):

- ``GET /?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: entry from the recruitment platform,
  checked by the platform's rules (:mod:`~simstudy.live.platform`); a participant who entered
  before continues at ``/p/{uid}`` (their pseudonym), anyone else sees a start page whose form
  posts to the same address: a ``GET`` or ``HEAD`` (a link prefetcher, a preview) creates
  nobody;
- ``POST /?PROLIFIC_PID=..``: creates the participant (at most so many per client address,
  :class:`~simstudy.live.edges.EntryLimit`; ``429`` past it); the platform ID goes to the
  linkage table only; ``303`` to ``/p/{uid}``;
- ``GET /p/{uid}``: the page the participant is on (derived from the stored answers);
- ``POST /p/{uid}``: an answer; recorded, then ``303`` back to ``GET /p/{uid}``
  (post/redirect/get, so a refresh never re-submits);
- ``/admin``: the researcher's control room behind a token (:mod:`~simstudy.live.admin`);
- ``GET /healthz``: JSON ``{"status", "study_sha256", "study_version"}``; ``200`` once the
  policies are ready and the database takes writes, ``503`` while they are prepared or when
  the database cannot store an answer (``reason``), ``500`` when preparing failed.

A database error while answering (a full disk, a database removed or turned read-only) is
answered ``503`` with a page asking to try again, logged in one line: the answer was not
stored, and the participant was not told it was. Request bodies are limited
(:class:`~simstudy.live.edges.BodyLimit`).

The study is prepared (world, decision model, policies) in a background thread at start-up,
so the server answers ``/healthz`` at once. Pages are answered in a few page threads and
recourse steps are computed outside them (:class:`~simstudy.live.steps.StepScheduler`).
Every page is rendered by :meth:`LiveServer.page_response`.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from contextlib import asynccontextmanager
from typing import Any

from .admin import AdminRoom
from .database import StoreError
from .edges import ENTRY_LIMIT, BodyLimit, EntryLimit
from .flow import Page
from .pages import Pages
from .platform import entry_problem
from .steps import QUEUED_STEPS, StepScheduler

__all__ = ["QUEUED_STEPS", "LiveServer", "create_app"]

_NO_STORE = {"Cache-Control": "no-store"}
_LOG = logging.getLogger("simstudy.live")
_UID = re.compile(r"[0-9a-f]{16}")


class LiveServer:
    """The server's state (the prepared flow, or the error preparing it) and its handlers.

    Args:
        prepare: a :class:`~simstudy.live.flow.StudyFlow`, or a callable returning one
            (called in a background thread at start-up).
        steps: the :class:`~simstudy.live.steps.StepScheduler` answering pages and steps.
        entries: the limit of new participants per client address.
    """

    def __init__(self, prepare: Any, steps: StepScheduler,
                 entries: EntryLimit | None = None, pages: Pages | None = None) -> None:
        self.steps = steps
        # the study's texts, so that even "the study is starting" speaks its language
        self.pages = pages if pages is not None else getattr(prepare, "pages", None) or Pages(None)
        self.entries = entries if entries is not None else EntryLimit(ENTRY_LIMIT)
        self.flow: Any = None
        self.error: str | None = None
        if callable(prepare) and not hasattr(prepare, "current"):
            self._starter: threading.Thread | None = threading.Thread(
                target=self._prepare, args=(prepare,), daemon=True, name="prepare-study")
        else:
            self.flow, self._starter = prepare, None

    def _prepare(self, prepare: Any) -> None:
        try:
            self.flow = prepare()
        except Exception as exc:  # reported by /healthz, the server stays up to say so
            self.error = f"{type(exc).__name__}: {exc}"

    # -- responses --------------------------------------------------------------------------
    def page_response(self, page: Page, action: str, status: int = 200) -> Any:
        """The HTML response showing ``page`` (the study's templates and texts,
        :attr:`StudyFlow.pages <simstudy.live.flow.StudyFlow.pages>`), its form posting to
        ``action``."""
        from starlette.responses import HTMLResponse

        return HTMLResponse(self.flow.pages.render(page, action), status_code=status,
                            headers=_NO_STORE)

    def not_ready(self) -> Any:
        from starlette.responses import HTMLResponse

        return HTMLResponse(self.pages.render(Page("starting", "starting"), "/"),
                            status_code=503, headers={**_NO_STORE, "Retry-After": "5"})

    # -- handlers ---------------------------------------------------------------------------
    async def healthz(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        flow = self.flow
        out: dict[str, Any] = {"status": "ready"}
        if flow is not None:
            out.update(study_sha256=flow.study_sha256, study_version=flow.store.version)
        if self.error is not None:
            return JSONResponse({"status": "failed", "reason": self.error}, status_code=500)
        if flow is None:
            return JSONResponse({"status": "preparing"}, status_code=503)
        reason = await self.steps.in_page_thread(flow.store.writable)
        if reason is not None:
            _LOG.warning("healthz: %s", reason)
            return JSONResponse({**out, "status": "store", "reason": reason}, status_code=503)
        return JSONResponse(out)

    def _entry_link(self, request: Any) -> tuple[str, Any]:
        """The platform id of an entry link and the refusal page (``None`` when it enters)."""
        q = request.query_params
        pid = (q.get("PROLIFIC_PID") or "").strip()
        if not pid:
            return pid, self.page_response(Page("unknown", "unknown"), "/")
        problem = entry_problem(self.flow.live, pid, q.get("STUDY_ID"))
        if problem is not None:
            return pid, self.page_response(Page("unknown", "unknown", {"reason": problem}),
                                           "/", 400)
        return pid, None

    async def _returning(self, request: Any) -> tuple[str | None, str | None, Any]:
        """``(platform id, uid of a participant who entered before or None, refusal or None)``
        of an entry link: what ``GET /`` and ``POST /`` both check first."""
        if self.flow is None:
            return None, None, self.not_ready()
        pid, refused = self._entry_link(request)
        if refused is not None:
            return pid, None, refused
        return pid, await self.steps.in_page_thread(self.flow.entered, pid), None

    async def entry(self, request: Any) -> Any:
        """``GET /``: a participant who entered before goes on; others see the start page."""
        from starlette.responses import RedirectResponse

        pid, uid, refused = await self._returning(request)
        if refused is not None:
            return refused
        if uid is not None:
            return RedirectResponse(f"/p/{uid}", status_code=303)
        # the start page's form posts the same link
        return self.page_response(Page("start", "start"), "/?" + request.url.query)

    async def enter(self, request: Any) -> Any:
        """``POST /``: creates the participant (once; limited per client address)."""
        from starlette.responses import RedirectResponse

        pid, uid, refused = await self._returning(request)
        if refused is not None:
            return refused
        if uid is None:
            client = request.client.host if request.client else "unknown"
            if not self.entries.allow(client):
                return self.page_response(Page("unknown", "unknown", {"reason": "limit"}),
                                          "/", 429)
            q = request.query_params
            uid = await self.steps.in_page_thread(self.flow.enter, pid, q.get("STUDY_ID"),
                                                  q.get("SESSION_ID"))
        return RedirectResponse(f"/p/{uid}", status_code=303)

    async def show(self, request: Any) -> Any:
        flow = self.flow
        if flow is None:
            return self.not_ready()
        uid = request.path_params["uid"]
        if not _UID.fullmatch(uid):  # not a pseudonym: nothing to look up
            return self.page_response(Page("unknown", "unknown"), "/", 404)
        page = await self.steps.with_steps(flow.current, flow, uid)
        return self.page_response(page, f"/p/{uid}", 404 if page.kind == "unknown" else 200)

    async def submit(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        flow = self.flow
        if flow is None:
            return self.not_ready()
        uid = request.path_params["uid"]
        if not _UID.fullmatch(uid):
            return self.page_response(Page("unknown", "unknown"), "/", 404)
        form = {k: str(v) for k, v in (await request.form()).items()}
        refused = await self.steps.with_steps(flow.submit, flow, uid, form)
        if refused is not None:
            return self.page_response(refused, f"/p/{uid}", 422)
        return RedirectResponse(f"/p/{uid}", status_code=303)

    # -- lifetime ---------------------------------------------------------------------------
    async def store_failed(self, request: Any, exc: Exception) -> Any:
        """A database error while answering: ``503``, the answer not confirmed."""
        from starlette.responses import HTMLResponse

        _LOG.warning("%s %s: the database failed: %s", request.method, request.url.path,
                     str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return HTMLResponse("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                            "<title>Please try again</title></head><body><p>The study cannot "
                            "store answers at this moment; your last answer was not saved. "
                            "Please try again in a few minutes.</p></body></html>",
                            status_code=503, headers=_NO_STORE)

    @asynccontextmanager
    async def lifespan(self, app: Any):
        if self._starter is not None:
            self._starter.start()
        yield
        close = getattr(getattr(self.flow, "compute", None), "close", None)
        if close is not None:  # the compute processes stop with the server
            close()

    def routes(self) -> list[Any]:
        from starlette.routing import Route

        return [Route("/", self.entry, methods=["GET"]),
                Route("/", self.enter, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/p/{uid}", self.show, methods=["GET"]),
                Route("/p/{uid}", self.submit, methods=["POST"])]


def create_app(prepare: Any, page_threads: int = 3, compute_threads: int = 4,
               gather: tuple[float, float] = (0.03, 0.25), entry_limit: str = ENTRY_LIMIT,
               admin_token: str | None = None, pages: Pages | None = None) -> Any:
    """The Starlette application (``app.state.live``: its :class:`LiveServer`).

    Args:
        prepare: a :class:`~simstudy.live.flow.StudyFlow`, or a callable returning one
            (called in a background thread at start-up).
        page_threads: threads answering pages at once. A page is a millisecond of Python
            under one interpreter lock, and more threads cost CPU without adding speed: with
            100 bots walking without pauses, 40 threads cost the server 3.3-3.5 ms of CPU per
            answer, 3 threads 2.2-2.8 ms (``benchmarks/live.py``); with 2, rating pages waited
            behind the burst's other pages (a rating p95 of 307 ms in one of 3 runs, 119-163 ms
            with 3).
        compute_threads: threads computing recourse steps at once when the flow computes in
            the server's process.
        gather: see :class:`~simstudy.live.steps.StepScheduler`.
        entry_limit: new participants per client address (:class:`~simstudy.live.edges.
            EntryLimit`; ``"none"``: no limit, for bots on one machine).
        admin_token: the control room's token (default: ``SIMSTUDY_ADMIN_TOKEN`` from the
            environment; :mod:`~simstudy.live.admin`).
        pages: the study's :class:`~simstudy.live.pages.Pages`, for the page shown while
            ``prepare`` runs (default: the flow's, else the English texts).
    """
    # the server's libraries are the optional extra ``simstudy[live]``: imported where the
    # server is made
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    server = LiveServer(prepare, StepScheduler(page_threads, compute_threads, gather),
                        EntryLimit(entry_limit), pages)
    app = Starlette(routes=server.routes() + AdminRoom(server, admin_token).routes(),
                    lifespan=server.lifespan,
                    middleware=[Middleware(BodyLimit)],
                    exception_handlers={sqlite3.Error: server.store_failed,
                                        StoreError: server.store_failed})
    app.state.live = server
    return app
