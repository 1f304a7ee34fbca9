"""The live study's web server: a Starlette app over :class:`~simstudy.study.live.flow.StudyFlow`.

Routes:

- ``GET /?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: entry from the recruitment platform; the
  platform ID goes to the linkage table only, the participant continues at ``/p/{uid}`` (their
  pseudonym);
- ``GET /p/{uid}``: the page the participant is on (derived from the stored answers);
- ``POST /p/{uid}``: an answer; recorded, then ``303`` back to ``GET /p/{uid}``
  (post/redirect/get, so a refresh never re-submits);
- ``GET /healthz``: ``200`` once the policies are ready, ``503`` while they are prepared.

The study is prepared (world, decision model, policies) in a background thread at start-up,
so the server answers ``/healthz`` at once. A page is answered in a thread of the server's own
pool of ``page_threads``: a page that computes a recourse waits there for the compute process
(:class:`~simstudy.study.live.engine.ComputePool`) without holding the interpreter, so the
threads must outnumber the participants who can wait at once, or the cheap pages of the others
queue behind them (the event loop's default pool has 40 threads).
"""

from __future__ import annotations

import threading
from contextlib import asynccontextmanager
from typing import Any

from .flow import Page
from .pages import render

__all__ = ["create_app"]


def create_app(prepare: Any, page_threads: int = 256) -> Any:
    """The Starlette application.

    Args:
        prepare: a :class:`~simstudy.study.live.flow.StudyFlow`, or a callable returning one
            (called in a background thread at start-up).
        page_threads: threads answering pages at once (see the module docstring).
    """
    import functools

    import anyio.to_thread
    from anyio import CapacityLimiter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse
    from starlette.routing import Route


    state: dict[str, Any] = {"flow": None, "error": None}
    pages = CapacityLimiter(page_threads)

    async def run_in_threadpool(fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=pages)

    def _prepare() -> None:
        try:
            state["flow"] = prepare()
        except Exception as exc:  # reported by /healthz, the server stays up to say so
            state["error"] = f"{type(exc).__name__}: {exc}"

    if callable(prepare) and not hasattr(prepare, "current"):
        starter = threading.Thread(target=_prepare, daemon=True, name="prepare-study")
    else:
        state["flow"], starter = prepare, None

    def flow_or_503() -> Any:
        return state["flow"]

    async def healthz(request: Request) -> Any:
        if state["error"] is not None:
            return PlainTextResponse(f"failed: {state['error']}", status_code=500)
        if state["flow"] is None:
            return PlainTextResponse("preparing", status_code=503)
        return PlainTextResponse("ready")

    def _not_ready() -> Any:
        return HTMLResponse("<p>The study is starting; please reload in a moment.</p>",
                            status_code=503)

    async def entry(request: Request) -> Any:
        flow = flow_or_503()
        if flow is None:
            return _not_ready()
        q = request.query_params
        pid = (q.get("PROLIFIC_PID") or "").strip()
        if not pid:

            return HTMLResponse(render(Page("unknown", "unknown"), "/"))
        uid = await run_in_threadpool(flow.enter, pid, q.get("STUDY_ID"), q.get("SESSION_ID"))
        return RedirectResponse(f"/p/{uid}", status_code=303)

    async def show(request: Request) -> Any:
        flow = flow_or_503()
        if flow is None:
            return _not_ready()
        uid = request.path_params["uid"]
        page = await run_in_threadpool(flow.current, uid)
        status = 404 if page.kind == "unknown" else 200
        return HTMLResponse(render(page, f"/p/{uid}"), status_code=status,
                            headers={"Cache-Control": "no-store"})

    async def submit(request: Request) -> Any:
        flow = flow_or_503()
        if flow is None:
            return _not_ready()
        uid = request.path_params["uid"]
        form = {k: str(v) for k, v in (await request.form()).items()}
        refused = await run_in_threadpool(flow.submit, uid, form)
        if refused is not None:
            return HTMLResponse(render(refused, f"/p/{uid}"), status_code=422,
                                headers={"Cache-Control": "no-store"})
        return RedirectResponse(f"/p/{uid}", status_code=303)

    async def startup() -> None:
        if starter is not None:
            starter.start()


    @asynccontextmanager
    async def lifespan(app: Any):
        await startup()
        yield
        close = getattr(getattr(state["flow"], "compute", None), "close", None)
        if close is not None:  # the compute processes stop with the server
            close()

    app = Starlette(routes=[
        Route("/", entry, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/p/{uid}", show, methods=["GET"]),
        Route("/p/{uid}", submit, methods=["POST"]),
    ], lifespan=lifespan)
    app.state.live = state
    return app
