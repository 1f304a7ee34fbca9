"""The live study's web server: a Starlette app over :class:`~simstudy.live.flow.StudyFlow`.

Routes (each a small handler of :class:`LiveServer`):

- ``GET /?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: entry from the recruitment platform; the
  platform ID goes to the linkage table only, the participant continues at ``/p/{uid}`` (their
  pseudonym);
- ``GET /p/{uid}``: the page the participant is on (derived from the stored answers);
- ``POST /p/{uid}``: an answer; recorded, then ``303`` back to ``GET /p/{uid}``
  (post/redirect/get, so a refresh never re-submits);
- ``GET /healthz``: ``200`` once the policies are ready (JSON: ``status`` and the
  ``study_sha256`` of the study file served), ``503`` while they are prepared.

The study is prepared (world, decision model, policies) in a background thread at start-up,
so the server answers ``/healthz`` at once. Pages are answered in a few page threads and
recourse steps are computed outside them (:class:`~simstudy.live.steps.StepScheduler`).
Every page is rendered by :meth:`LiveServer.page_response`.
"""

from __future__ import annotations

import threading
from contextlib import asynccontextmanager
from typing import Any

from .flow import Page
from .steps import QUEUED_STEPS, StepScheduler

__all__ = ["QUEUED_STEPS", "LiveServer", "create_app"]

_NO_STORE = {"Cache-Control": "no-store"}


class LiveServer:
    """The server's state (the prepared flow, or the error preparing it) and its handlers.

    Args:
        prepare: a :class:`~simstudy.live.flow.StudyFlow`, or a callable returning one
            (called in a background thread at start-up).
        steps: the :class:`~simstudy.live.steps.StepScheduler` answering pages and steps.
    """

    def __init__(self, prepare: Any, steps: StepScheduler) -> None:
        self.steps = steps
        self.flow: Any = None
        self.error: str | None = None
        self._study_sha256: str | None = None
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

    @staticmethod
    def not_ready() -> Any:
        from starlette.responses import HTMLResponse

        return HTMLResponse("<p>The study is starting; please reload in a moment.</p>",
                            status_code=503)

    # -- handlers ---------------------------------------------------------------------------
    async def healthz(self, request: Any) -> Any:
        from starlette.responses import JSONResponse, PlainTextResponse

        if self.error is not None:
            return PlainTextResponse(f"failed: {self.error}", status_code=500)
        if self.flow is None:
            return PlainTextResponse("preparing", status_code=503)
        if self._study_sha256 is None:  # what `simstudy bots` compares with its study file
            from ..core.store import file_sha256

            path = getattr(self.flow.engine, "path", None)
            self._study_sha256 = file_sha256(path) if path is not None else ""
        return JSONResponse({"status": "ready", "study_sha256": self._study_sha256 or None})

    async def entry(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        flow = self.flow
        if flow is None:
            return self.not_ready()
        q = request.query_params
        pid = (q.get("PROLIFIC_PID") or "").strip()
        if not pid:
            return self.page_response(Page("unknown", "unknown"), "/")
        uid = await self.steps.in_page_thread(flow.enter, pid, q.get("STUDY_ID"),
                                              q.get("SESSION_ID"))
        return RedirectResponse(f"/p/{uid}", status_code=303)

    async def show(self, request: Any) -> Any:
        flow = self.flow
        if flow is None:
            return self.not_ready()
        uid = request.path_params["uid"]
        page = await self.steps.with_steps(flow.current, flow, uid)
        return self.page_response(page, f"/p/{uid}", 404 if page.kind == "unknown" else 200)

    async def submit(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        flow = self.flow
        if flow is None:
            return self.not_ready()
        uid = request.path_params["uid"]
        form = {k: str(v) for k, v in (await request.form()).items()}
        refused = await self.steps.with_steps(flow.submit, flow, uid, form)
        if refused is not None:
            return self.page_response(refused, f"/p/{uid}", 422)
        return RedirectResponse(f"/p/{uid}", status_code=303)

    # -- lifetime ---------------------------------------------------------------------------
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
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/p/{uid}", self.show, methods=["GET"]),
                Route("/p/{uid}", self.submit, methods=["POST"])]


def create_app(prepare: Any, page_threads: int = 3, compute_threads: int = 4,
               gather: tuple[float, float] = (0.03, 0.25)) -> Any:
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
    """
    # the server's libraries are the optional extra ``simstudy[live]``: imported where the
    # server is made
    from starlette.applications import Starlette

    server = LiveServer(prepare, StepScheduler(page_threads, compute_threads, gather))
    app = Starlette(routes=server.routes(), lifespan=server.lifespan)
    app.state.live = server
    return app
