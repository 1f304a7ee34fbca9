"""The live server's edges over real connections (uvicorn in a thread): idle and half-sent
connections, memory under unknown ids, body limits, keep-alive across a participant's pause."""

from __future__ import annotations

import gc
import os
import re
import socket
import threading
import time

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

from _live_support import prepared_engine  # noqa: E402

from simstudy.cli import live_commands  # noqa: E402
from simstudy.live import edges  # noqa: E402
from simstudy.live.app import create_app  # noqa: E402
from simstudy.live.bots import BotCrowd, run_bots  # noqa: E402
from simstudy.live.database import Store  # noqa: E402
from simstudy.live.edges import GuardedHttpToolsProtocol, server_config  # noqa: E402
from simstudy.live.flow import StudyFlow  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """The live app served by uvicorn in a thread, with the live server's settings."""

    def __init__(self, tmp_path, **config):
        self.flow = StudyFlow(prepared_engine(), Store(tmp_path / "s.sqlite"), b"test-key")
        self.port = _port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(server_config(
            create_app(self.flow, entry_limit="none"), "127.0.0.1", self.port,
            log_level="warning", **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return self
            time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def connections(self) -> int:
        return len(self.server.server_state.connections)


def _page(text):
    m = re.search(r"""name=['"]page['"] value=['"]([^'"]*)['"]""", text)
    return m.group(1) if m else None


def _half_sent(port: int, n: int) -> list[socket.socket]:
    """``n`` connections each holding a request whose headers never end."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        out.append(s)
    return out


def _walk_first_pages(url: str, crowd: BotCrowd, pid: str) -> list[float]:
    """A participant's start, consent, profile and first check: each answer's seconds."""
    times = []
    with httpx.Client(base_url=url, timeout=30) as client:
        r = client.get("/", params={"PROLIFIC_PID": pid})
        for _ in range(4):
            key = _page(r.text)
            t = time.perf_counter()
            r = client.post(str(r.url), data={"page": key, **crowd.answer(0, key, r.text)},
                            follow_redirects=True)
            times.append(time.perf_counter() - t)
            assert r.status_code == 200
    return times


def test_the_cli_defaults_are_the_servers():
    assert live_commands.ENTRY_LIMIT == edges.ENTRY_LIMIT
    assert live_commands.KEEP_ALIVE == edges.KEEP_ALIVE
    assert edges.KEEP_ALIVE > 60  # a participant thinking for a minute keeps the connection


def test_two_thousand_idle_connections_do_not_stop_a_participant(tmp_path):
    crowd = BotCrowd(prepared_engine(), seed=0)
    with _Server(tmp_path) as srv:
        idle = _half_sent(srv.port, 1000)
        idle += [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(1000)]
        try:
            time.sleep(0.5)
            assert srv.connections() >= 1900
            times = _walk_first_pages(srv.url, crowd, "PID-real")
            print(f"2,000 idle connections: answers in {[round(t, 3) for t in times]} s")
            assert max(times) < 1.0, times
        finally:
            for s in idle:
                s.close()


def test_half_sent_requests_are_closed_and_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(GuardedHttpToolsProtocol, "request_timeout", 1.0)
    crowd = BotCrowd(prepared_engine(), seed=0)
    with _Server(tmp_path) as srv:
        monkeypatch.setattr(GuardedHttpToolsProtocol, "max_connections", 100)
        slow = _half_sent(srv.port, 300)
        try:
            time.sleep(0.3)
            assert srv.connections() <= 101  # the oldest waiting ones closed for the new
            assert max(_walk_first_pages(srv.url, crowd, "PID-real")) < 1.0
            time.sleep(1.5)
            assert srv.connections() == 0  # a request not whole within the deadline: closed
            closed = 0
            for s in slow:
                s.settimeout(1.0)
                try:
                    closed += s.recv(1) == b""
                except OSError:
                    closed += 1
            assert closed == len(slow)
        finally:
            for s in slow:
                s.close()


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    return kb / 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_ten_thousand_unknown_ids_leave_memory_bounded(tmp_path):
    with _Server(tmp_path) as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        for i in range(200):  # warm up every code path first
            client.get(f"/p/{i:016x}")
            client.get("/p/" + "z" * 3000)
        gc.collect()
        start = _rss_mb()
        for i in range(5000):
            assert client.get(f"/p/{(i + 1) << 20:016x}").status_code == 404
            assert client.get("/p/" + f"{i:x}" * 600).status_code == 404
            assert client.get("/", params={"PROLIFIC_PID": f"unknown-{i}-" + "q" * 40}
                              ).status_code == 200
        gc.collect()
        grown = _rss_mb() - start
        print(f"15,000 requests of unknown ids: memory {start:.1f} -> {start + grown:.1f} MB")
        assert grown < 50, f"{grown:.1f} MB"
        assert srv.flow.store.read("SELECT COUNT(*) FROM participants")[0][0] == 0
        assert len(srv.flow._locks) == 0


def test_body_limit_and_slow_bodies(tmp_path):
    with _Server(tmp_path) as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        r = client.post("/p/" + "0" * 16, content=b"page=x&why=" + b"a" * (edges.MAX_BODY + 1),
                        headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 413

        def chunks():
            for _ in range(100):
                yield b"a" * 4096

        r = client.post("/p/" + "0" * 16, content=chunks(),
                        headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 413  # no length announced: counted as it arrives
        assert client.get("/healthz").status_code == 200


def test_a_bot_pausing_longer_than_the_keep_alive_completes(tmp_path):
    # the server closes idle connections after 1 s here; the bot pauses 1.2-1.5 s per page
    with _Server(tmp_path, keep_alive=1.0) as srv:
        report = run_bots(srv.flow.engine, srv.url, 1, concurrency=1, think=(1.2, 1.5))
    assert not report.errors and report.summary()["completed"] == 1


@pytest.mark.slow
def test_a_connection_is_kept_across_a_sixty_second_pause(tmp_path):
    """The default settings: a participant thinking 60 s finds their connection open."""
    with _Server(tmp_path) as srv:
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.settimeout(30)
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        s.sendall(request)
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        time.sleep(61)
        s.sendall(request)
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        s.close()
