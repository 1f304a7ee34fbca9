"""Question sessions: a questioning policy's search kept running between a participant's pages.

Replaying every recorded answer from scratch on each page (:class:`~simstudy.live.engine.
ReplayFeedback`) is always correct but repeats the search's work up to the current question.
A :class:`QuestionSession` runs the policy once in a thread whose feedback blocks at each new
question until the participant's answer arrives, so an answer costs only the work up to the next
question (for HARE, a tournament question between candidates already drawn costs nothing).

The session is a cache, never the record: the answers live in the study's store, and whenever
a session does not stand exactly at the question being answered (a restart, another compute
process, an abandoned participant's session timed out), a new session replays the recorded
answers first. Every draw being keyed by (seed, purpose, participant index), both paths ask
the same questions and give the same recourse.

Example:
    >>> import numpy as np
    >>> fb = ReplayFeedback([("prefer", True)])
    >>> fb.prefer(np.array([0]), np.zeros((1, 2)), np.ones((1, 2))).tolist()
    [True]
    >>> try:
    ...     fb.accept(np.array([0]), np.zeros((1, 2)))
    ... except NeedAnswer as need:
    ...     need.kind, need.index
    ('accept', 1)
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["NeedAnswer", "BlockingFeedback", "ReplayFeedback", "QuestionSession",
           "QuestionSessions"]

#: How long a session waits for an answer before giving up (a participant who left).
IDLE_SECONDS = 3600.0


class NeedAnswer(Exception):  # noqa: N818 - a signal, not an error
    """The policy asks question ``index`` (``kind`` ``prefer``: ``a`` over ``b``?; ``accept``:
    is ``a`` satisfactory?), points in original units."""

    def __init__(self, kind: str, index: int, a: np.ndarray, b: np.ndarray | None) -> None:
        super().__init__(f"question {index} ({kind}) not answered yet")
        self.kind, self.index, self.a, self.b = kind, index, a, b


class _Stopped(Exception):  # noqa: N818 - a signal to end a session's thread
    pass


class BlockingFeedback:
    """:class:`~simstudy.primitives.Feedback` that replays ``answers``, then hands each new
    question to ``session`` and waits for its answer."""

    def __init__(self, answers: list[tuple[str, bool]], session: QuestionSession | None) -> None:
        self.answers = list(answers)
        self.asked = 0
        self.session = session

    def _next(self, kind: str, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        i = self.asked
        self.asked += 1
        if i < len(self.answers):
            recorded, answer = self.answers[i]
            if recorded != kind:
                raise RuntimeError(f"answer {i} was to a {recorded} question, the replay asks "
                                   f"a {kind} question: the study file or code changed")
            return np.array([bool(answer)])
        if self.session is None:
            raise NeedAnswer(kind, i, np.asarray(a[0], dtype=float),
                             None if b is None else np.asarray(b[0], dtype=float))
        answer = self.session.ask(NeedAnswer(kind, i, np.asarray(a[0], dtype=float),
                                             None if b is None else np.asarray(b[0], dtype=float)))
        self.answers.append((kind, answer))
        return np.array([bool(answer)])

    def prefer(self, ids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._next("prefer", a, b)

    def accept(self, ids: np.ndarray, r: np.ndarray) -> np.ndarray:
        return self._next("accept", r, None)


class ReplayFeedback(BlockingFeedback):
    """:class:`~simstudy.primitives.Feedback` of one live participant without a session: the
    recorded answers in the order asked, :class:`NeedAnswer` past them."""

    def __init__(self, answers: list[tuple[str, bool]]) -> None:
        super().__init__(answers, None)


class QuestionSession:
    """One participant's running search (see the module docstring).

    Args:
        key: what the search was started from (condition, profile, stated actionability).
        run: runs the search with the given feedback and returns the final step.
        answers: the recorded answers to replay first.
    """

    def __init__(self, key: tuple, run: Callable[[BlockingFeedback], dict[str, Any]],
                 answers: list[tuple[str, bool]]) -> None:
        self.key = key
        self.pending: NeedAnswer | None = None
        self._inbox: queue.Queue = queue.Queue()
        self._outbox: queue.Queue = queue.Queue()
        self._feedback = BlockingFeedback(answers, self)
        self._run = run
        self.thread = threading.Thread(target=self._main, daemon=True, name="question-session")
        self.thread.start()

    def _main(self) -> None:
        try:
            self._outbox.put(("done", self._run(self._feedback)))
        except _Stopped:
            return
        except Exception as exc:  # handed to the page that waits for it
            self._outbox.put(("error", exc))

    def ask(self, question: NeedAnswer) -> bool:
        """Called by the search: publishes ``question`` and waits for its answer."""
        self.pending = question
        self._outbox.put(("question", question))
        try:
            answer = self._inbox.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            answer = None
        if answer is None:
            raise _Stopped
        self.pending = None
        return bool(answer)

    def next_event(self) -> tuple[str, Any]:
        kind, value = self._outbox.get()
        if kind == "error":
            raise value
        return kind, value

    def answer(self, value: bool) -> tuple[str, Any]:
        self._inbox.put(bool(value))
        return self.next_event()

    def stop(self) -> None:
        if self.thread.is_alive():
            self._inbox.put(None)

    @property
    def answered(self) -> int:
        """Answers the search has consumed (recorded replays included)."""
        return len(self._feedback.answers)


class QuestionSessions:
    """The running sessions of a compute process, one per participant index."""

    def __init__(self) -> None:
        self._sessions: dict[int, QuestionSession] = {}
        self._lock = threading.Lock()

    def step(self, index: int, key: tuple, answers: list[tuple[str, bool]],
             run: Callable[[BlockingFeedback], dict[str, Any]]) -> tuple[str, Any]:
        """The participant's next event, ``("question", NeedAnswer)`` or ``("done", step)``,
        given all their recorded ``answers``."""
        with self._lock:
            session = self._sessions.get(index)
        n = len(answers)
        if (session is not None and session.key == key and session.thread.is_alive()
                and session.pending is not None and session.pending.index == n - 1
                and session.answered == n - 1 and session.pending.kind == answers[-1][0]):
            event = session.answer(answers[-1][1])
        else:
            if session is not None:
                session.stop()
            session = QuestionSession(key, run, answers)
            with self._lock:
                self._sessions[index] = session
            event = session.next_event()
        if event[0] == "done":
            with self._lock:
                if self._sessions.get(index) is session:
                    del self._sessions[index]
        return event
