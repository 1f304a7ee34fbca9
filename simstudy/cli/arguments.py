"""Checks of the live commands' arguments, made before any work starts.

* :func:`bind_port`: ``serve --host/--port``: the port's range, then the socket itself is
  bound (and listens) before anything is printed, so a busy port, a port needing
  administrator rights or a host that is not this machine's is said first, in one line, and
  no other server can take the port while the study is prepared;
* :func:`check_url`: ``bots --url``: a scheme (``127.0.0.1:8000`` without ``http://`` is the
  common slip), a host and a port in range;
* :func:`server_study`: what the server at a URL answers on ``/healthz``: nothing (no server
  there), not a study server, a server still preparing, or a ready server and the sha256 of
  the study file it serves (:func:`check_same_study` compares it with the file given to
  ``bots``);
* :func:`check_study_database`: a file that ``export`` reads (or ``serve --db`` continues) is
  a study database, told by its content and its tables, never opened for writing first.

Example:
    >>> check_url("http://127.0.0.1:8000/")
    'http://127.0.0.1:8000'
    >>> try:
    ...     check_url("127.0.0.1:8000")
    ... except UsageError as exc:
    ...     print(exc)
    --url 127.0.0.1:8000: no scheme; write --url http://127.0.0.1:8000
"""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

from ..core.documents import UsageError
from ..core.file_kinds import expect_kind, file_kind
from ..core.store import check_output_file, file_sha256

__all__ = ["check_port", "bind_port", "check_url", "server_study", "check_same_study",
           "check_study_database", "check_new_database"]


def check_port(port: int) -> None:
    """Refuses a port number outside 1..65535."""
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port}: outside 1..65535; choose a free port such as 8000")


def bind_port(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``, or a one-line refusal naming the argument."""
    check_port(port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--host {host}: cannot resolve it ({exc}); use 127.0.0.1 (this "
                         "machine only) or 0.0.0.0 (every interface)") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    # as uvicorn does: a restarted server may bind while the last one's connections close
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"--port {port}: already in use on {host} (another server? stop "
                             f"it, or choose another port such as --port {_free_port(host)})"
                             ) from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"--port {port}: binding a port below 1024 needs administrator "
                             "rights; choose a port such as 8000") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise UsageError(f"--host {host}: not an address of this machine; use 127.0.0.1 "
                             "or 0.0.0.0") from None
        raise UsageError(f"--host {host} --port {port}: cannot listen there "
                         f"({exc.strerror or exc})") from None
    sock.set_inheritable(True)
    return sock


def _free_port(host: str) -> int:
    try:
        with socket.socket() as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    except OSError:
        return 8001


def check_url(url: str) -> str:
    """``url`` without a trailing slash, or a one-line refusal saying what to write."""
    text = url.strip()
    if "://" not in text:
        raise UsageError(f"--url {url}: no scheme; write --url http://{text}")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"--url {url}: scheme {parts.scheme!r}; the server speaks http "
                         "(--url http://HOST:PORT)")
    if not parts.hostname:
        raise UsageError(f"--url {url}: no host; write --url http://127.0.0.1:PORT")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"--url {url}: the port is not a number in 1..65535") from None
    if port == 0:
        raise UsageError(f"--url {url}: port 0; give the port simstudy serve listens on")
    return text.rstrip("/")


def server_study(url: str, timeout: float = 5.0) -> tuple[str, str | None]:
    """``(state, study sha256)`` of the server at ``url``: ``absent`` (nothing answers),
    ``foreign`` (something answers that is not a study server), ``preparing``, ``failed``
    or ``ready``."""
    import httpx

    try:
        r = httpx.get(f"{url}/healthz", timeout=timeout)
    except httpx.HTTPError:
        return "absent", None
    if r.status_code == 503:
        return "preparing", None
    if r.status_code == 500 and r.text.startswith("failed"):
        return "failed", r.text
    if r.status_code != 200:
        return "foreign", f"/healthz answered {r.status_code}"
    try:
        body = r.json()
    except ValueError:
        return ("ready", None) if r.text.strip() == "ready" else ("foreign", "/healthz "
                                                                   "answered no study")
    if not isinstance(body, dict):
        return "foreign", "/healthz answered no study"
    return "ready", body.get("study_sha256")


def check_same_study(study: str | Path, url: str, wait: float) -> None:
    """Waits up to ``wait`` seconds for the server at ``url`` to be ready, then refuses unless
    it serves ``study`` byte for byte (the sha256 its ``/healthz`` reports)."""
    end = time.time() + wait
    state, sha = server_study(url)
    while state in ("absent", "preparing") and time.time() < end:
        time.sleep(0.5)
        state, sha = server_study(url)
    if state == "absent":
        raise UsageError(f"--url {url}: nothing answers there after {wait:g} s; start the "
                         f"server first (simstudy serve {study} --db DB --port PORT) or fix "
                         "the URL")
    if state == "foreign":
        raise UsageError(f"--url {url}: not a simstudy study server ({sha}); give the URL "
                         "simstudy serve printed")
    if state == "failed":
        raise UsageError(f"--url {url}: the server could not prepare its study ({sha}); see "
                         "its log")
    if state == "preparing":
        raise UsageError(f"--url {url}: the server is still preparing the study after "
                         f"{wait:g} s; wait longer (--wait SECONDS)")
    mine = file_sha256(study)
    if sha is not None and sha != mine:
        raise UsageError(f"{study}: the server at {url} serves another study file (sha256 "
                         f"{sha[:12]}, this file {mine[:12]}); give bots the file the server "
                         "serves")


def check_study_database(path: str | Path, command: str, argument: str = "DB") -> None:
    """Refuses a file that is not a live study's database (read only, never altered)."""
    expect_kind(path, "sqlite", command, argument)
    tables = _tables(path, argument)
    if "participants" not in tables:
        raise UsageError(f"{argument} {path}: a SQLite database without a study's tables "
                         f"(it has {sorted(tables) or 'none'}); give the file simstudy serve "
                         "--db wrote")


def check_new_database(path: str | Path) -> None:
    """``serve --db``: a new file (its folder is created), an empty file, or a study
    database to continue; anything else is refused before the server starts."""
    path = Path(path)
    kind = file_kind(path)
    if kind in ("missing", "empty"):
        check_output_file(path, "--db")  # its folder is made, or it cannot be written there
        return
    if kind == "folder":
        raise UsageError(f"--db {path}: is a folder; give a file name such as "
                         f"{path / 'study.sqlite'}")
    expect_kind(path, "sqlite", "serve", "--db", "give a new file name (simstudy serve creates "
                "the database) or the database this study's server wrote, to continue it")
    if os.statvfs(path.parent).f_flag & os.ST_RDONLY or not os.access(path, os.W_OK):
        raise UsageError(f"--db {path}: readonly (the server writes every answer to it); "
                         "serve a writable copy")
    check_study_database(path, "serve", "--db")


def _tables(path: str | Path, argument: str) -> set[str]:
    try:
        with closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro",
                                     uri=True)) as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                             "'table'")}
    except sqlite3.Error as exc:
        raise UsageError(f"{argument} {path}: a damaged SQLite database ({exc}); restore it "
                         "from a copy") from None
