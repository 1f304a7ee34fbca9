"""Recourse steps of the live server computed outside its page threads, in batches.

A page that needs a recourse step (the recourse, a policy's next question) leaves its page
thread while the step computes (:class:`~simstudy.live.flow.StepNeeded`): in a compute
process (:class:`~simstudy.live.engine.ComputePool`) awaited on the event loop, or, without
one, in ``compute_threads`` threads of the server. So participants waiting for a recourse hold
no page thread: when they did, a burst of them held every thread and the cheap pages of all the
others queued behind their recourses.

A participant's first step starts their policy's search (for HARE, its base recourse and first
candidates: tens of ms of CPU alone); a later step continues a search that keeps running between
pages and costs little (:mod:`~simstudy.live.questions`). The bases and first candidates of the
first steps waiting for the same compute process are computed together, in one batch while the
previous batch runs, the first of a burst waiting for the others (``gather``)
(:mod:`~simstudy.live.slots`: each participant gets the answer they would get alone). Then
first steps go to the compute process in arrival order, at most :data:`QUEUED_STEPS` at a
time, and later steps go ahead of the waiting ones: a question page does not wait for a burst
of other participants' first recourses.

A participant's steps are computed one at a time (a double submit waits for the first
request's step): the per-participant locks live only while a request holds them
(a :class:`weakref.WeakValueDictionary`), so ids that arrive leave nothing behind.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from typing import Any

from .flow import StepNeeded

__all__ = ["QUEUED_STEPS", "StepScheduler"]

#: First steps queued in a compute process at once. Once batched, a first step costs a few ms
#: of CPU, so a question step waits behind at most these few; fewer queued measured slower
#: (100 bots without pauses: recourse p95 747-1005 ms with 2 queued over 6 runs, 728-824 ms
#: with 8 over 3).
QUEUED_STEPS = 8


class StepScheduler:
    """Page work in ``page_threads`` threads, recourse steps outside them (module docstring).

    Args:
        page_threads: threads answering pages at once.
        compute_threads: threads computing recourse steps at once when the flow computes in
            the server's process.
        gather: ``(quiet, longest)`` seconds: a batch of first steps, when none is being
            computed, waits for more until none has come for ``quiet`` seconds, at most
            ``longest`` seconds (a lone participant waits ``quiet``; a burst shares one batch).
    """

    def __init__(self, page_threads: int = 3, compute_threads: int = 4,
                 gather: tuple[float, float] = (0.03, 0.25)) -> None:
        from anyio import CapacityLimiter

        self.pages = CapacityLimiter(page_threads)
        self.computing = CapacityLimiter(compute_threads)
        self.gather = gather
        self._stepping: weakref.WeakValueDictionary[str, asyncio.Lock] = \
            weakref.WeakValueDictionary()
        self._starting: dict[int, asyncio.Semaphore] = {}
        self._prefills: dict[int, list[tuple[tuple, asyncio.Future]]] = {}
        self._prefilling: set[int] = set()

    async def in_page_thread(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in one of the page threads."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=self.pages)

    async def with_steps(self, fn: Any, flow: Any, uid: str, *args: Any) -> Any:
        """``fn(uid, *args, compute=False)`` in a page thread, each recourse step it waits for
        computed outside (every step stored makes progress: a question or the recourses)."""
        while True:
            try:
                return await self.in_page_thread(functools.partial(fn, compute=False), uid,
                                                 *args)
            except StepNeeded as need:
                await self.compute_step(flow, uid, need.step_args)

    async def compute_step(self, flow: Any, uid: str, args: tuple) -> None:
        """Computes and stores the step ``args`` of participant ``uid``."""
        lock = self._stepping.get(uid)
        if lock is None:
            lock = self._stepping[uid] = asyncio.Lock()
        if lock.locked():  # a double submit: wait for the first request's step, then reread
            async with lock:
                return
        async with lock:
            index, answered = args[0], args[4]
            if answered:  # continues a running search
                step = await self._computed(flow, args)
            else:
                worker = index % getattr(flow.compute, "workers", 1)
                if flow.engine.refines(args[1]):
                    await self._prefilled(flow, worker, args)
                async with self._starting.setdefault(worker, asyncio.Semaphore(QUEUED_STEPS)):
                    step = await self._computed(flow, args)
            await self.in_page_thread(flow.save_step, uid, step)

    async def _prefilled(self, flow: Any, worker: int, args: tuple) -> None:
        """Waits until the base of this first step is computed, together with those of every
        first step waiting in the same process meanwhile (one batch while the last runs)."""
        done = asyncio.get_running_loop().create_future()
        self._prefills.setdefault(worker, []).append((args, done))
        if worker not in self._prefilling:
            self._prefilling.add(worker)
            asyncio.create_task(self._drain_prefills(flow, worker))
        await done

    async def _drain_prefills(self, flow: Any, worker: int) -> None:
        import anyio.to_thread

        prefills = self._prefills
        try:
            # the first of a burst waits for the others to share its batch, until they stop
            # coming (or for ``longest``)
            quiet, longest = self.gather
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
                                                       limiter=self.computing)
                except Exception as exc:  # each waiting page reports it
                    for _, done in batch:
                        done.set_exception(exc)
                else:
                    for _, done in batch:
                        done.set_result(None)
        finally:
            self._prefilling.discard(worker)

    async def _computed(self, flow: Any, args: tuple) -> dict[str, Any]:
        import anyio.to_thread

        if hasattr(flow.compute, "submit"):
            return await asyncio.wrap_future(flow.compute.submit(*args))
        return await anyio.to_thread.run_sync(functools.partial(flow.compute, *args),
                                              limiter=self.computing)
