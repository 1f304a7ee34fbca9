"""The live study's web server: a Starlette app over :class:`~simstudy.live.flow.StudyFlow`.

Routes:

- ``GET /?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: entry from the recruitment platform; the
  platform ID goes to the linkage table only, the participant continues at ``/p/{uid}`` (their
  pseudonym);
- ``GET /p/{uid}``: the page the participant is on (derived from the stored answers);
- ``POST /p/{uid}``: an answer; recorded, then ``303`` back to ``GET /p/{uid}``
  (post/redirect/get, so a refresh never re-submits);
- ``GET /healthz``: ``200`` once the policies are ready, ``503`` while they are prepared.

The study is prepared (world, decision model, policies) in a background thread at start-up,
so the server answers ``/healthz`` at once. A page is answered in one of ``page_threads``
threads; a page that needs a recourse step (the recourse, a policy's next question) leaves its
thread while the step computes (:class:`~simstudy.live.flow.StepNeeded`): in a compute
process (:class:`~simstudy.live.engine.ComputePool`) awaited on the event loop, or,
without one, in ``compute_threads`` threads of the server. So participants waiting for a
recourse hold no page thread: when they did, a burst of them held every thread and the cheap
pages of all the others queued behind their recourses.

A participant's first step starts their policy's search (for HARE, its base recourse and first
candidates: tens of ms of CPU alone); a later step continues a search that keeps running between
pages and costs little (:mod:`~simstudy.live.questions`). The bases and first candidates of the
first steps waiting for the same compute process are computed together, in one batch while the
previous batch runs, the first of a burst waiting for the others (``gather``)
(:mod:`~simstudy.live.slots`: each participant gets the answer they would get alone). Then
first steps go to the compute process in arrival order, at most ``QUEUED_STEPS`` at a time,
and later steps go ahead of the waiting ones: a question page does not wait for a burst of
other participants' first recourses.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from contextlib import asynccontextmanager
from typing import Any

from .flow import Page, StepNeeded

__all__ = ["QUEUED_STEPS", "create_app"]

#: First steps queued in a compute process at once. Once batched, a first step costs a few ms
#: of CPU, so a question step waits behind at most these few; fewer queued measured slower
#: (100 bots without pauses: recourse p95 747-1005 ms with 2 queued over 6 runs, 728-824 ms
#: with 8 over 3).
QUEUED_STEPS = 8


def create_app(prepare: Any, page_threads: int = 3, compute_threads: int = 4,
               gather: tuple[float, float] = (0.03, 0.25)) -> Any:
    """The Starlette application.

    Args:
        prepare: a :class:`~simstudy.live.flow.StudyFlow`, or a callable returning one
            (called in a background thread at start-up).
        page_threads: threads answering pages at once (see the module docstring). A page is
            a millisecond of Python under one interpreter lock, and more threads cost CPU
            without adding speed: with 100 bots walking without pauses, 40 threads
            cost the server 3.3-3.5 ms of CPU per answer, 3 threads 2.2-2.8 ms
            (``benchmarks/live.py``); with 2, rating pages waited behind the burst's other
            pages (a rating p95 of 307 ms in one of 3 runs, 119-163 ms with 3).
        compute_threads: threads computing recourse steps at once when the flow computes in
            the server's process.
        gather: ``(quiet, longest)`` seconds: a batch of first steps, when none is being
            computed, waits for more until none has come for ``quiet`` seconds, at most
            ``longest`` seconds (a lone participant waits ``quiet``; a burst shares one batch).
    """
    # the server's libraries are the optional extra ``simstudy[live]`` (anyio comes with
    # starlette): imported where the server is made
    import anyio.to_thread
    from anyio import CapacityLimiter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse
    from starlette.routing import Route


    state: dict[str, Any] = {"flow": None, "error": None}
    pages, computing = CapacityLimiter(page_threads), CapacityLimiter(compute_threads)
    stepping: dict[str, asyncio.Lock] = {}
    starting: dict[int, asyncio.Semaphore] = {}
    prefills: dict[int, list[tuple[tuple, asyncio.Future]]] = {}
    prefilling: set[int] = set()

    async def run_in_threadpool(fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=pages)

    async def compute_step(flow: Any, uid: str, args: tuple) -> None:
        lock = stepping.setdefault(uid, asyncio.Lock())
        if lock.locked():  # a double submit: wait for the first request's step, then reread
            async with lock:
                return
        async with lock:
            index, answered = args[0], args[4]
            if answered:  # continues a running search
                step = await computed(flow, args)
            else:
                worker = index % getattr(flow.compute, "workers", 1)
                if flow.engine.refines(args[1]):
                    await prefilled(flow, worker, args)
                async with starting.setdefault(worker, asyncio.Semaphore(QUEUED_STEPS)):
                    step = await computed(flow, args)
            await run_in_threadpool(flow.save_step, uid, step)

    async def prefilled(flow: Any, worker: int, args: tuple) -> None:
        """Waits until the base of this first step is computed, together with those of every
        first step waiting in the same process meanwhile (one batch while the last runs)."""
        done = asyncio.get_running_loop().create_future()
        prefills.setdefault(worker, []).append((args, done))
        if worker not in prefilling:
            prefilling.add(worker)
            asyncio.create_task(drain_prefills(flow, worker))
        await done

    async def drain_prefills(flow: Any, worker: int) -> None:
        try:
            # the first of a burst waits for the others to share its batch, until they stop
            # coming (or for ``longest``)
            quiet, longest = gather
            waited, seen = 0.0, -1
            while waited < longest and len(prefills[worker]) != seen:
                seen = len(prefills[worker])
                await asyncio.sleep(quiet)
                waited += quiet
            while prefills[worker]:
                batch, prefills[worker] = prefills[worker], []
                steps = [args for args, _ in batch]
                try:
                    if hasattr(flow.compute, "submit_prefill"):
                        await asyncio.wrap_future(flow.compute.submit_prefill(worker, steps))
                    else:
                        await anyio.to_thread.run_sync(flow.engine.prefill, steps,
                                                       limiter=computing)
                except Exception as exc:  # each waiting page reports it
                    for _, done in batch:
                        done.set_exception(exc)
                else:
                    for _, done in batch:
                        done.set_result(None)
        finally:
            prefilling.discard(worker)

    async def computed(flow: Any, args: tuple) -> dict[str, Any]:
        if hasattr(flow.compute, "submit"):
            return await asyncio.wrap_future(flow.compute.submit(*args))
        return await anyio.to_thread.run_sync(functools.partial(flow.compute, *args),
                                              limiter=computing)

    async def with_steps(fn: Any, flow: Any, uid: str, *args: Any) -> Any:
        """``fn(uid, *args, compute=False)`` in a page thread, each recourse step it waits for
        computed outside (every step stored makes progress: a question or the recourses)."""
        while True:
            try:
                return await run_in_threadpool(functools.partial(fn, compute=False), uid, *args)
            except StepNeeded as need:
                await compute_step(flow, uid, need.step_args)

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

            return HTMLResponse(flow.pages.render(Page("unknown", "unknown"), "/"))
        uid = await run_in_threadpool(flow.enter, pid, q.get("STUDY_ID"), q.get("SESSION_ID"))
        return RedirectResponse(f"/p/{uid}", status_code=303)

    async def show(request: Request) -> Any:
        flow = flow_or_503()
        if flow is None:
            return _not_ready()
        uid = request.path_params["uid"]
        page = await with_steps(flow.current, flow, uid)
        status = 404 if page.kind == "unknown" else 200
        return HTMLResponse(flow.pages.render(page, f"/p/{uid}"), status_code=status,
                            headers={"Cache-Control": "no-store"})

    async def submit(request: Request) -> Any:
        flow = flow_or_503()
        if flow is None:
            return _not_ready()
        uid = request.path_params["uid"]
        form = {k: str(v) for k, v in (await request.form()).items()}
        refused = await with_steps(flow.submit, flow, uid, form)
        if refused is not None:
            return HTMLResponse(flow.pages.render(refused, f"/p/{uid}"), status_code=422,
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
