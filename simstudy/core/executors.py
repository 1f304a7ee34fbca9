"""Where independent work units run: this process, a local process pool, or a Ray cluster.

A run is a list of independent tasks (a replication x condition x policy of a scenario, a
replication x policy of the event world, one simulated study of a power plan, the units of every
cell of a sweep). Each task is a picklable call ``fn(task)`` whose result depends only on the
task, never on where or when it runs; :meth:`Executor.map_unordered` yields ``(index, result)``
as tasks finish and the caller stores results by key, so every executor writes the same bytes.

Workers compute with one BLAS / torch thread each: it is the fastest use of a machine's cores for
many small tasks, and a fixed thread count keeps floating-point reductions identical whatever
the executor. Files are written only by the caller (the driver), so a cluster needs no shared
file system for results.

Example:
    >>> with make_executor("local", workers=1) as ex:
    ...     sorted(ex.map_unordered(abs, [-2, 3]))
    [(0, 2), (1, 3)]
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from threadpoolctl import threadpool_limits

from .documents import StrictModel, UsageError
from .registry import build, entry_model

__all__ = ["Executor", "SerialExecutor", "ProcessExecutor", "RayExecutor", "make_executor",
           "AffinityQueue", "affinity_of", "EXECUTORS", "BLAS_VARIABLES", "single_threaded"]

EXECUTORS = ("local", "ray")
#: Environment variables fixing the BLAS / OpenMP thread count of a worker.
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class single_threaded:  # noqa: N801 - used as a context manager, like torch.no_grad
    """Runs a block with one torch thread and one BLAS / OpenMP thread (threadpoolctl),
    restoring the previous counts after: a task computed in the calling process uses what a
    helper process uses."""

    def __enter__(self) -> None:
        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)
        self._limits = threadpool_limits(1)

    def __exit__(self, *exc: Any) -> None:
        self._limits.restore_original_limits()
        torch.set_num_threads(self._threads)


def _call_single_threaded(fn: Callable[[Any], Any], task: Any) -> Any:
    with single_threaded():
        return fn(task)


def _watch_parent(parent: int) -> None:
    # A worker whose parent was killed (even with SIGKILL) is re-parented: it exits at once
    # instead of finishing units nobody will store.
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def _worker_init(parent: int) -> None:
    os.environ.update({v: "1" for v in BLAS_VARIABLES})
    torch.set_num_threads(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _indexed(job: tuple[int, Callable[[Any], Any], Any]) -> tuple[int, Any]:
    i, fn, task = job
    return i, fn(task)


class Executor(ABC):
    """Runs ``fn`` over tasks; a context manager that releases its workers on exit."""

    workers: int = 1

    @abstractmethod
    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any]
                      ) -> Iterator[tuple[int, Any]]:
        """Yields ``(index, fn(tasks[index]))`` as each task finishes."""

    def close(self) -> None:
        """Releases the workers (cancelling tasks not yet started); this process has none."""
        return None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about where it ran (not part of any result)."""
        return {"executor": type(self).__name__, "workers": self.workers}


class SerialExecutor(Executor):
    """Every task in this process, one after another."""

    def map_unordered(self, fn, tasks):
        for i, task in enumerate(tasks):
            yield i, _call_single_threaded(fn, task)


class _Failed:
    """A helper's exception, carried to the caller through the results queue."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def affinity_of(task: Any) -> tuple | None:
    """The task's affinity key (its ``affinity`` attribute), or ``None``.

    An affinity key is a tuple from the most to the least widely shared thing a task prepares,
    e.g. ``(run, replication, policy)`` for a work unit: tasks sharing a prefix share what that
    prefix prepares (a world sample and decision model, a trained policy).
    """
    return getattr(task, "affinity", None)


def _shared_prefix(a: tuple | None, b: tuple | None) -> int:
    if a is None or b is None:
        return 0
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


#: How many pending tasks the scheduler compares when it picks a worker's next task: keeps a
#: pick's cost bounded for runs of many thousand tasks (tasks are submitted grouped already).
SCHEDULING_WINDOW = 256


class AffinityQueue:
    """Hands each worker its next task: preferably one that reuses what the worker prepared
    last, and never one whose key another worker is preparing while any other task is left.

    Tasks sharing an affinity key need the same expensive preparation (a world sample and
    decision model, a trained policy), and the content-hash cache makes concurrent workers that
    need the same entry wait for the one training it. First-come-first-served would give two
    workers the first two tasks, which usually share everything, so one of them waits; this
    queue ranks the pending tasks by (the exact key is being prepared elsewhere, how much of the
    key the worker prepared last, how much of it other workers are preparing, submission
    order). Which worker computes a task never changes its result, only the wall time.

    Example:
        >>> q = AffinityQueue([("a", 0), ("a", 0), ("a", 1), ("a", 1)])
        >>> first, second = q.take("w1"), q.take("w2")
        >>> (first, second)
        (0, 2)
        >>> q.done("w1"); q.take("w1")
        1
    """

    def __init__(self, keys: Sequence[tuple | None]) -> None:
        self._keys = list(keys)
        self._pending = list(range(len(self._keys)))
        self._running: dict[Any, tuple | None] = {}
        self._last: dict[Any, tuple | None] = {}
        self._lock = threading.Lock()
        self._plain = all(k is None for k in self._keys)

    def __len__(self) -> int:
        return len(self._pending)

    def take(self, worker: Any) -> int | None:
        """The index of ``worker``'s next task (marked running), or ``None`` when none is left."""
        with self._lock:
            if not self._pending:
                return None
            if self._plain:
                j = 0
            else:
                last = self._last.get(worker)
                others = [k for w, k in self._running.items() if w != worker]

                def rank(j: int) -> tuple:
                    key = self._keys[self._pending[j]]
                    busy = max((_shared_prefix(key, k) for k in others), default=0)
                    clash = key is not None and key in others
                    return clash, -_shared_prefix(key, last), busy, j

                j = min(range(min(len(self._pending), SCHEDULING_WINDOW)), key=rank)
            i = self._pending.pop(j)
            self._running[worker] = self._last[worker] = self._keys[i]
            return i

    def done(self, worker: Any) -> None:
        """``worker`` finished its task."""
        with self._lock:
            self._running.pop(worker, None)


class ProcessExecutor(Executor):
    """``workers`` tasks at a time: this process and ``workers - 1`` spawned helper processes
    (spawned, so no torch state is forked).

    A helper imports torch and simstudy's modules when it starts, seconds of work that this
    process has already done; computing here as well means no core waits for that start-up,
    and the helpers join as soon as they are ready. Each helper is handed its next task the
    moment it finishes one, so no helper waits on this process either. Each helper has its own
    single-process pool, so the next task can be chosen for that helper: an
    :class:`AffinityQueue` keeps the tasks sharing a world or a trained model on the process
    that prepared it (its memo serves them) and keeps two processes from waiting on one cache
    entry. This process computes its share in a thread, so every finished result reaches the
    caller at once and is stored, whoever computed it.

    An interrupted run stops its helpers at once (``terminate``), and helpers whose parent
    died exit by themselves.
    """

    def __init__(self, workers: int) -> None:
        self.workers = int(workers)
        self._pools: list | None = None

    def _start(self) -> list:
        if self._pools is None and self.workers > 1:
            # Spawned workers read the BLAS variables when numpy loads: set them before.
            saved = {v: os.environ.get(v) for v in BLAS_VARIABLES}
            os.environ.update({v: "1" for v in BLAS_VARIABLES})
            # Ctrl-C reaches every process of the terminal's group: the helpers start with
            # SIGINT ignored (an ignored signal stays ignored across exec, and Python then
            # installs no KeyboardInterrupt handler), so only this process handles it, by
            # terminating them, and no helper prints a traceback of its own. Meanwhile this
            # process blocks SIGINT (a blocked signal stays pending, even while ignored), so a
            # Ctrl-C during the start-up is delivered here right after.
            main = threading.current_thread() is threading.main_thread()
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
            try:
                # multiprocessing's Pool (not concurrent.futures) for its terminate(); one
                # single-process pool per helper so that a task goes to the helper chosen
                context = mp.get_context("spawn")
                self._pools = [context.Pool(1, initializer=_worker_init,
                                            initargs=(os.getpid(),))
                               for _ in range(self.workers - 1)]
            finally:
                if handler is not None:
                    signal.signal(signal.SIGINT, handler)
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                for v, val in saved.items():
                    if val is None:
                        os.environ.pop(v, None)
                    else:
                        os.environ[v] = val
        return self._pools or []

    def __enter__(self) -> ProcessExecutor:
        # the helpers start importing while the caller validates and opens its run
        self._start()
        return self

    def map_unordered(self, fn, tasks):
        if not len(tasks):
            return
        pools = self._start()
        queue_ = AffinityQueue([affinity_of(t) for t in tasks])
        results: queue.SimpleQueue = queue.SimpleQueue()

        def hand_next(helper: int) -> None:
            # runs in the helper's pool result thread when it finishes: give it the next task
            i = queue_.take(helper)
            if i is None:
                return

            def finished(r: tuple[int, Any]) -> None:
                queue_.done(helper)
                results.put(r)
                hand_next(helper)

            try:
                pools[helper].apply_async(_indexed, ((i, fn, tasks[i]),), callback=finished,
                                          error_callback=lambda e: results.put(_Failed(e)))
            except ValueError:  # the pool was stopped
                pass

        stop = threading.Event()

        def compute_here() -> None:
            # This process's share runs in a thread, so that the caller stores every finished
            # result at once (a helper's result never waits for this process's unit to end).
            with single_threaded():
                while not stop.is_set() and (i := queue_.take("caller")) is not None:
                    try:
                        results.put((i, fn(tasks[i])))
                    except BaseException as exc:  # carried to the caller like a helper's
                        results.put(_Failed(exc))
                        return
                    finally:
                        queue_.done("caller")

        try:
            for helper in range(len(pools)):
                hand_next(helper)
            threading.Thread(target=compute_here, daemon=True, name="simstudy-caller").start()
            for _ in range(len(tasks)):
                item = results.get()
                if isinstance(item, _Failed):
                    raise item.exc
                yield item
        except BaseException:
            self._stop(terminate=True)
            raise
        finally:
            stop.set()

    def _stop(self, terminate: bool) -> None:
        for pool in self._pools or []:
            if terminate:
                pool.terminate()
            else:
                pool.close()
        for pool in self._pools or []:
            pool.join()
        self._pools = None

    def close(self) -> None:
        self._stop(terminate=False)

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._stop(terminate=exc_type is not None)


class RayExecutor(Executor):
    """Tasks on a Ray cluster, one CPU each.

    Args:
        address: the cluster to join (``ray://host:10001`` or ``host:6379``; ``"auto"``: the
            cluster this machine belongs to). ``None`` starts a private local instance.
        num_cpus: CPUs of a private local instance (default: all cores).

    The nodes need simstudy installed (``pip install simstudy[ray]``) and any data file a
    scenario names at the same path; trained models are cached per node.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise UsageError("the Ray executor needs the ray package: "
                             "pip install 'simstudy[ray]'") from exc
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            env = {"env_vars": {v: "1" for v in BLAS_VARIABLES}}
            if address is None:
                ray.init(num_cpus=num_cpus, runtime_env=env, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, runtime_env=env, log_to_driver=False,
                         configure_logging=False)
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self.address = address

    def map_unordered(self, fn, tasks):
        ray = self._ray
        remote = ray.remote(num_cpus=1, max_retries=0)(_call_single_threaded)
        refs = {remote.remote(fn, task): i for i, task in enumerate(tasks)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    yield refs[ref], ray.get(ref)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False

    def describe(self) -> dict[str, Any]:
        return {"executor": "ray", "workers": self.workers, "address": self.address}


def local_executor(params: StrictModel) -> Executor:
    """The local executor (its entry: :class:`~simstudy.core.executor_kinds.LocalExecutorParams`,
    declared with this runtime there): in this process for one worker, else a process pool."""
    workers = params.workers or os.cpu_count() or 1
    return SerialExecutor() if workers <= 1 else ProcessExecutor(workers)


def ray_executor(params: StrictModel) -> Executor:
    """The Ray executor (:class:`RayExecutor`; its entry:
    :class:`~simstudy.core.executor_kinds.RayExecutorParams`)."""
    return RayExecutor(params.address, params.workers)


def make_executor(kind: str = "local", workers: int | None = None,
                  address: str | None = None) -> Executor:
    """The executor a command line asks for: the registered executor kind ``kind``
    (``local`` or ``ray``) with ``workers`` (and, for Ray, ``address``)."""
    values: dict[str, Any] = {"kind": kind, "workers": workers}
    if address is not None:
        values["address"] = address
    return build("executor", entry_model("executor", kind).model_validate(values))
