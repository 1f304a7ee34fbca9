"""The live server's edges: what one client can send, hold and start.

- **New entries per client** (:class:`EntryLimit`): a moving-window limit per client address
  on the requests that create participants (the ``limits`` library), so one client cannot
  fill the study with made-up participants. Default :data:`ENTRY_LIMIT`.
- **Bodies** (:class:`BodyLimit`): a request body over :data:`MAX_BODY` bytes is refused
  with ``413`` before it is read into memory (the largest form, a rating page with its open
  answer, is a few kB).
- **Connections** (:class:`GuardedHttpToolsProtocol`, uvicorn's protocol with two rules):
  a request must arrive whole within :data:`REQUEST_TIMEOUT` seconds of its first byte (or of
  the connection, for a connection that sends nothing), else the connection is closed, so
  slow and half-sent requests cannot pile up; and past :data:`MAX_CONNECTIONS` open
  connections the oldest one still waiting for its request is closed for each new one, so file
  handles cannot run out and a participant who sends a request is served.
- **Keep-alive** (:data:`KEEP_ALIVE`): an idle connection stays open 75 s after a response,
  longer than a browser's own idle limit and than a participant's pause on a page, so neither
  a person thinking for a minute nor a client reusing its connection after a pause meets a
  connection the server is closing (uvicorn's default, 5 s, equals httpx's own idle limit:
  clients pausing near 5 s lost connections).

Example:
    >>> limit = EntryLimit("2/minute")
    >>> [limit.allow("10.0.0.1") for _ in range(3)], limit.allow("10.0.0.2")
    ([True, True, False], True)
"""

from __future__ import annotations

import resource
import time
from typing import Any

__all__ = ["ENTRY_LIMIT", "MAX_BODY", "REQUEST_TIMEOUT", "KEEP_ALIVE", "MAX_CONNECTIONS",
           "EntryLimit", "BodyLimit", "GuardedHttpToolsProtocol", "server_config"]

#: New participants one client address may create (``limits`` notation; ``none``: no limit).
ENTRY_LIMIT = "10/minute;60/hour"
#: Largest request body accepted, bytes.
MAX_BODY = 64 * 1024
#: Seconds a request may take to arrive whole.
REQUEST_TIMEOUT = 20.0
#: Seconds an idle connection is kept open after a response.
KEEP_ALIVE = 75.0
#: Open connections at most (raised to fit the process's file-handle limit).
MAX_CONNECTIONS = 4096


class EntryLimit:
    """A moving-window rate limit per client address (``spec`` in ``limits`` notation, several
    separated by ``;``; ``"none"``: everything is allowed).

    References:
        The ``limits`` library: https://limits.readthedocs.io (moving window strategy).
    """

    def __init__(self, spec: str = ENTRY_LIMIT) -> None:
        from limits import parse_many
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        self.spec = spec
        self.items = [] if spec.strip().lower() in ("none", "off", "") else parse_many(spec)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def allow(self, client: str) -> bool:
        """Whether ``client`` may create one more participant now (counts it if so)."""
        if not all(self._limiter.test(item, "entry", client) for item in self.items):
            return False
        for item in self.items:
            self._limiter.hit(item, "entry", client)
        return True


class BodyLimit:
    """ASGI middleware refusing request bodies over ``limit`` bytes with ``413``."""

    def __init__(self, app: Any, limit: int = MAX_BODY) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.limit
                except ValueError:
                    too_big = True
                if too_big:
                    return await _too_large(send)
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _BodyTooLarge:
            await _too_large(send)


class _BodyTooLarge(Exception):
    pass


async def _too_large(send: Any) -> None:
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": b"request too large"})


def _base_protocol() -> Any:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


class GuardedHttpToolsProtocol(_base_protocol()):  # type: ignore[misc]
    """uvicorn's httptools protocol with a deadline for each request to arrive whole and a
    cap on open connections (see the module docstring): past the cap, the connection idle or
    waiting for its request the longest is closed for each new one (never one whose request
    is being answered)."""

    request_timeout = REQUEST_TIMEOUT
    max_connections = MAX_CONNECTIONS

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._idle_since: float | None = time.monotonic()
        self._deadline: Any = self.loop.call_later(self.request_timeout, self._too_slow)
        if len(self.connections) > self.max_connections:
            idle = [c for c in self.connections
                    if getattr(c, "_idle_since", None) is not None and c is not self]
            victim = min(idle, key=lambda c: c._idle_since) if idle else self
            victim.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # a request on a kept-alive connection
            self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def on_message_complete(self) -> None:
        self._idle_since = None  # being answered
        self._stop_deadline()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._idle_since = time.monotonic()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._idle_since = None
        self._stop_deadline()
        super().connection_lost(exc)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, host: str, port: int, keep_alive: float = KEEP_ALIVE,
                  **extra: Any) -> Any:
    """The uvicorn configuration of the live server: the guarded protocol, the keep-alive,
    and the process's file-handle limit raised to its hard limit (open connections at most
    half of it, and at most :data:`MAX_CONNECTIONS`)."""
    import uvicorn

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    GuardedHttpToolsProtocol.max_connections = max(64, min(MAX_CONNECTIONS, soft // 2 - 64))
    return uvicorn.Config(app, host=host, port=port, http=GuardedHttpToolsProtocol,
                          timeout_keep_alive=keep_alive, **extra)
