"""The live study's database: every answer committed as it arrives (SQLite, WAL).

Tables:

- ``participants``: pseudonymous ``uid``, arrival ``idx`` (the key of every seeded draw),
  ``condition`` (the one serving them), ``assigned_condition`` (the one first assigned), the
  assignment's tie-breaking ``draw``, ``status`` (``entered``, ``in_progress``, ``completed``,
  ``failed_attention``, ``no_consent``, ``timed_out``, ``returned``, ``full``), ``no_plan``
  (1: the assigned condition found no plan for the stated profile), ``pilot`` (1: entered
  while the pilot flag was on), ``study_version`` (of the study file they took), times;
- ``linkage``: ``uid`` and the platform's ids (``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``),
  the only place they are stored (``simstudy export --drop-linkage`` deletes it);
- ``answers``: one row per answered page, ``(uid, page)`` unique, so a re-submitted page is a
  no-op;
- ``items``: the recourses a participant rates, in their seeded display order;
- ``questions``: the pairwise / accept questions a policy asked, as shown;
- ``versions``: each study file served on the database (``sha256``, its consent text);
- ``meta``: the study's description and the researcher's switches (``recruitment``:
  ``open`` / ``paused``; ``pilot``: ``0`` / ``1``).

Slots: an assigned participant holds a slot of their condition until they finish, return, or
``timeout`` seconds after their assignment; then they are marked ``timed_out`` (in the same
transaction that frees the slot) and cannot complete. A condition closes exactly at its target
of slots taken (completed participants and slots held), where a participant whose condition
found no plan and who was not replaced does not count; among the open conditions the least
filled by everyone it served is assigned (:meth:`Store.assign`). Pilot participants are
counted apart from the others.

Faults: a database that is not one, or is corrupted, truncated, read-only or full, raises
:class:`StoreError` (one line) when opened (:meth:`Store.check`); while serving,
:meth:`Store.writable` tells whether an answer can be stored (the file still the one opened,
disk space left, a write accepted).

Writes are short ``BEGIN IMMEDIATE`` transactions on a per-thread connection with
``journal_mode=WAL``, ``synchronous=NORMAL``, a busy timeout of seconds and foreign keys on.
WAL with ``synchronous=NORMAL`` keeps every committed transaction across a crash or a kill
(SIGKILL) of the server: a commit has written the WAL to the operating system, and only a
power loss or an operating-system crash may roll back the last commits
(https://www.sqlite.org/pragma.html#pragma_synchronous, https://www.sqlite.org/wal.html).
The uid is a keyed hash of the platform ID (:func:`pseudonym`), so re-entry through the
recruitment URL finds the same participant.

Example:
    >>> import tempfile, os
    >>> store = Store(os.path.join(tempfile.mkdtemp(), "s.sqlite"))
    >>> store.enter("PID1", "S", "X", b"key")["idx"], store.enter("PID1", "S", "Y", b"key")["idx"]
    (0, 0)
    >>> store.study_version("ab" * 32, "consent text"), store.check()
    (1, None)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.documents import UsageError

__all__ = ["Store", "StoreError", "pseudonym", "SCHEMA", "STATUSES", "MIN_FREE_BYTES"]

#: A participant's statuses: ``entered`` (not consented yet), ``in_progress`` (holds a slot),
#: then one of the outcomes.
STATUSES = ("entered", "in_progress", "completed", "failed_attention", "no_consent",
            "timed_out", "returned", "full")
# pages a participant's answers may take: fewer left under SQLite's page limit is full
_SPARE_PAGES = 8
#: Free bytes on the database's disk below which the store reports it cannot take answers.
MIN_FREE_BYTES = 1 << 20

SCHEMA = """
CREATE TABLE IF NOT EXISTS participants (
    uid TEXT PRIMARY KEY,
    idx INTEGER UNIQUE NOT NULL,
    condition TEXT,
    draw REAL,
    status TEXT NOT NULL,
    entered_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    assigned_condition TEXT,
    assigned_at REAL,
    no_plan INTEGER NOT NULL DEFAULT 0,
    pilot INTEGER NOT NULL DEFAULT 0,
    study_version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS linkage (
    uid TEXT PRIMARY KEY REFERENCES participants(uid),
    platform_pid TEXT NOT NULL,
    study_id TEXT,
    session_id TEXT
);
CREATE TABLE IF NOT EXISTS answers (
    uid TEXT NOT NULL REFERENCES participants(uid),
    page TEXT NOT NULL,
    value TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (uid, page)
);
CREATE TABLE IF NOT EXISTS items (
    uid TEXT NOT NULL REFERENCES participants(uid),
    position INTEGER NOT NULL,
    item INTEGER NOT NULL,
    policy TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (uid, position)
);
CREATE TABLE IF NOT EXISTS questions (
    uid TEXT NOT NULL REFERENCES participants(uid),
    q INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (uid, q)
);
CREATE TABLE IF NOT EXISTS versions (
    version INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL,
    consent TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# columns added since the first databases (added to an older one when it is opened)
_ADDED = {"assigned_condition": "TEXT", "assigned_at": "REAL",
          "no_plan": "INTEGER NOT NULL DEFAULT 0", "pilot": "INTEGER NOT NULL DEFAULT 0",
          "study_version": "INTEGER NOT NULL DEFAULT 1"}

# every participant a condition served (the balance)
_SERVED = "condition IS NOT NULL AND status IN ('completed', 'in_progress')"
# who holds or took a slot of their condition: the completed and those in progress, but not
# a participant whose condition found no plan and who was not replaced by another condition
_COUNTED = ("condition IS NOT NULL AND status IN ('completed', 'in_progress') AND NOT "
            "(no_plan = 1 AND condition = assigned_condition)")


class StoreError(UsageError):
    """The database cannot be used: one line naming the file and the reason."""


def pseudonym(platform_pid: str, key: bytes) -> str:
    """The participant's uid: ``HMAC-SHA256(key, platform id)``, 16 hex digits."""
    return hmac.new(key, platform_pid.encode(), hashlib.sha256).hexdigest()[:16]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class Store:
    """The study database at ``path`` (created with :data:`SCHEMA` if new).

    Args:
        path: the SQLite file.
        max_pages: the most pages the database may hold (SQLite's ``max_page_count``; a
            full disk in small, for tests).
    """

    def __init__(self, path: str | Path, max_pages: int | None = None) -> None:
        self.path = str(path)
        self.max_pages = max_pages
        self.version: int | None = None
        self._local = threading.local()
        try:
            db = self._connection()
            db.executescript(SCHEMA)
            have = {r[1] for r in db.execute("PRAGMA table_info(participants)")}
            for name, kind in _ADDED.items():
                if name not in have:
                    db.execute(f"ALTER TABLE participants ADD COLUMN {name} {kind}")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {_reason(exc)}") from None
        self._inode = os.stat(self.path).st_ino

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                 check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA foreign_keys=ON")
            if self.max_pages is not None:
                db.execute(f"PRAGMA max_page_count={int(self.max_pages)}")
            self._local.db = db
        return db

    # -- health -----------------------------------------------------------------------------
    def check(self) -> None:
        """Refuses (:class:`StoreError`) a database that fails SQLite's integrity check or
        takes no write; ``None`` when it is sound."""
        try:
            rows = self._connection().execute("PRAGMA integrity_check(1)").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {_reason(exc)}") from None
        if [r[0] for r in rows] != ["ok"]:
            first = " ".join(str(rows[0][0]).split())
            raise StoreError(f"{self.path}: failed SQLite's integrity check ({first})")
        reason = self.writable()
        if reason is not None:
            raise StoreError(f"{self.path}: {reason}")

    def writable(self) -> str | None:
        """Why an answer cannot be stored now (the file was removed or replaced since it was
        opened, the disk is nearly full, a write fails), else ``None``."""
        try:
            if os.stat(self.path).st_ino != self._inode:
                return "the database file was replaced since the server opened it"
        except OSError:
            return "the database file was removed since the server opened it"
        try:
            disk = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
            if disk.f_bavail * disk.f_frsize < MIN_FREE_BYTES:
                return "the disk holding the database is full"
            pages = self.read("PRAGMA page_count")[0][0]
            if pages + _SPARE_PAGES > self.read("PRAGMA max_page_count")[0][0]:
                return "the database is full (SQLite's page limit)"
            with self.write() as db:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('checked_at', ?)",
                           (repr(time.time()),))
        except (sqlite3.Error, OSError) as exc:
            return f"cannot write: {_reason(exc)}"
        return None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (``BEGIN IMMEDIATE``: writers queue, readers go on);
        refused (:class:`StoreError`) when the file is not the one opened any more, so that
        nothing is confirmed that is not stored."""
        if getattr(self, "_inode", None) is not None:
            try:
                same = os.stat(self.path).st_ino == self._inode
            except OSError:
                same = False
            if not same:
                raise StoreError(f"{self.path}: the database file was removed or replaced "
                                 "since the server opened it")
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:  # SQLite rolls back itself after some errors (a full disk)
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        return self._connection().execute(sql, args).fetchall()

    # -- study versions ---------------------------------------------------------------------
    def study_version(self, sha256: str, consent: str, new_version: bool = False) -> int:
        """The version of the study file ``sha256`` on this database (1 for the first file;
        its consent text recorded with it). Another file than the last one is refused
        (:class:`StoreError`) unless ``new_version``, which records it as the next version;
        participants entering from now on carry it (:attr:`version`)."""
        with self.write() as db:
            last = db.execute("SELECT version, sha256 FROM versions ORDER BY version DESC "
                              "LIMIT 1").fetchone()
            if last is not None and last["sha256"] == sha256:
                version = int(last["version"])
            elif last is not None and not new_version:
                raise StoreError(
                    f"{self.path}: made for another study file (version {last['version']}, "
                    f"sha256 {last['sha256'][:12]}..., this one {sha256[:12]}...); serve it on "
                    "a new database, or pass --new-version to record it as the next version")
            else:
                version = 1 if last is None else int(last["version"]) + 1
                db.execute("INSERT INTO versions VALUES (?, ?, ?, ?)",
                           (version, sha256, consent, time.time()))
        self.version = version
        return version

    def versions(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.read("SELECT * FROM versions ORDER BY version")]

    # -- the researcher's switches ----------------------------------------------------------
    def switch(self, key: str) -> bool:
        """A switch of the control room: ``paused`` (recruitment paused) or ``pilot``."""
        value = self.meta("recruitment" if key == "paused" else key)
        return value == ("paused" if key == "paused" else "1")

    def set_switch(self, key: str, on: bool) -> None:
        if key == "paused":
            self.set_meta("recruitment", "paused" if on else "open")
        else:
            self.set_meta(key, "1" if on else "0")

    # -- participants -----------------------------------------------------------------------
    def find(self, platform_pid: str, key: bytes) -> dict[str, Any] | None:
        """The participant of a platform ID, if they entered (creates nothing)."""
        return self.participant(pseudonym(platform_pid, key))

    def enter(self, platform_pid: str, study_id: str | None, session_id: str | None,
              key: bytes) -> dict[str, Any]:
        """The participant of a platform ID, created (next arrival index, the pilot flag and
        study version in force) on first entry."""
        uid = pseudonym(platform_pid, key)
        now = time.time()
        with self.write() as db:
            row = db.execute("SELECT * FROM participants WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                idx = db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM participants"
                                 ).fetchone()[0]
                pilot = db.execute("SELECT value FROM meta WHERE key = 'pilot'").fetchone()
                db.execute("INSERT INTO participants (uid, idx, status, entered_at, updated_at,"
                           " pilot, study_version) VALUES (?, ?, 'entered', ?, ?, ?, ?)",
                           (uid, idx, now, now, int(pilot is not None and pilot[0] == "1"),
                            self.version or 1))
                db.execute("INSERT INTO linkage VALUES (?, ?, ?, ?)",
                           (uid, platform_pid, study_id, session_id))
                row = db.execute("SELECT * FROM participants WHERE uid = ?", (uid,)).fetchone()
            elif self._has_linkage(db):
                db.execute("UPDATE linkage SET study_id = COALESCE(?, study_id), session_id = "
                           "COALESCE(?, session_id) WHERE uid = ?", (study_id, session_id, uid))
        return dict(row)

    @staticmethod
    def _has_linkage(db: sqlite3.Connection) -> bool:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'linkage'").fetchone() \
            is not None

    def participant(self, uid: str) -> dict[str, Any] | None:
        rows = self.read("SELECT * FROM participants WHERE uid = ?", (uid,))
        return dict(rows[0]) if rows else None

    @staticmethod
    def _expire(db: sqlite3.Connection, now: float, timeout: float,
                uid: str | None = None) -> int:
        """Marks ``timed_out`` the participants holding a slot for longer than ``timeout``
        seconds (one participant, or all)."""
        sql = ("UPDATE participants SET status = 'timed_out', updated_at = ?, finished_at = ? "
               "WHERE status = 'in_progress' AND assigned_at < ?")
        args: tuple = (now, now, now - timeout)
        if uid is not None:
            sql, args = sql + " AND uid = ?", (*args, uid)
        return db.execute(sql, args).rowcount

    def expire(self, timeout: float, uid: str | None = None) -> int:
        """Frees the slots held longer than ``timeout`` seconds (see :meth:`_expire`); the
        number of participants marked ``timed_out``."""
        with self.write() as db:
            return self._expire(db, time.time(), timeout, uid)

    def counts(self, conditions: list[str], pilot: bool = False) -> dict[str, int]:
        """Slots taken per condition (completed and in progress, see the module docstring),
        among pilot participants or the others."""
        counts = dict.fromkeys(conditions, 0)
        for r in self.read(f"SELECT condition, COUNT(*) FROM participants WHERE {_COUNTED} "
                           "AND pilot = ? GROUP BY condition", (int(pilot),)):
            if r[0] in counts:
                counts[r[0]] = r[1]
        return counts

    def assign(self, uid: str, conditions: list[str], draw: float, target: int,
               timeout: float) -> str | None:
        """Assigns a condition inside one write transaction, after freeing the slots held
        longer than ``timeout`` seconds: among the conditions still open (fewer than
        ``target`` slots taken, :meth:`counts`), the least filled by every participant it
        served (completed and in progress, no-plan ones too: so that the balance, and with it
        a bot run's export, does not depend on when a recourse found no plan), ties broken by
        ``draw``; ``None`` (status ``full``) when every condition has its target. Pilot
        participants are balanced among themselves, without a target. Idempotent: an assigned
        participant keeps their condition."""
        now = time.time()
        with self.write() as db:
            row = db.execute("SELECT condition, status, pilot FROM participants WHERE uid = ?",
                             (uid,)).fetchone()
            if row["condition"] is not None:
                return row["condition"]
            self._expire(db, now, timeout)
            taken, served = dict.fromkeys(conditions, 0), dict.fromkeys(conditions, 0)
            for counts, where in ((taken, _COUNTED), (served, _SERVED)):
                for r in db.execute(f"SELECT condition, COUNT(*) FROM participants WHERE {where}"
                                    " AND pilot = ? GROUP BY condition", (row["pilot"],)):
                    if r[0] in counts:
                        counts[r[0]] = r[1]
            open_ = [c for c in conditions if row["pilot"] or taken[c] < target]
            if not open_:
                db.execute("UPDATE participants SET status = 'full', updated_at = ?, "
                           "finished_at = ? WHERE uid = ?", (now, now, uid))
                return None
            low = min(served[c] for c in open_)
            tied = [c for c in open_ if served[c] == low]
            chosen = tied[min(int(draw * len(tied)), len(tied) - 1)]
            db.execute("UPDATE participants SET condition = ?, assigned_condition = ?, draw = ?,"
                       " status = 'in_progress', assigned_at = ?, updated_at = ? WHERE uid = ?",
                       (chosen, chosen, draw, now, now, uid))
        return chosen

    def set_status(self, uid: str, status: str, finished: bool = False) -> None:
        now = time.time()
        with self.write() as db:
            db.execute("UPDATE participants SET status = ?, updated_at = ?, finished_at = "
                       "CASE WHEN ? THEN COALESCE(finished_at, ?) ELSE finished_at END "
                       "WHERE uid = ?", (status, now, finished, now, uid))

    def finish(self, uid: str, status: str, allowed: tuple[str, ...] = ("in_progress",)
               ) -> bool:
        """Sets the final ``status`` of a participant whose status is one of ``allowed``
        (so a participant marked ``timed_out`` meanwhile stays so); whether it was set."""
        now = time.time()
        with self.write() as db:
            marks = ",".join("?" * len(allowed))
            cur = db.execute(f"UPDATE participants SET status = ?, updated_at = ?, finished_at = "
                             f"? WHERE uid = ? AND status IN ({marks})",
                             (status, now, now, uid, *allowed))
        return cur.rowcount == 1

    def mark_no_plan(self, uid: str, replacement: str | None = None) -> None:
        """Records that the assigned condition found no plan for the participant; with a
        ``replacement`` condition, it serves them from now on (and they count towards it),
        without one they are back in their assigned condition and no longer count towards any
        target (also when a replacement found no plan either)."""
        with self.write() as db:
            db.execute("UPDATE participants SET no_plan = 1, condition = COALESCE(?, "
                       "assigned_condition, condition), updated_at = ? WHERE uid = ?",
                       (replacement, time.time(), uid))

    # -- answers, items, questions ----------------------------------------------------------
    def answer(self, uid: str, page: str, value: Any) -> bool:
        """Records the answer to ``page`` once; false when it was recorded before."""
        now = time.time()
        with self.write() as db:
            cur = db.execute("INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?)",
                             (uid, page, json.dumps(value, sort_keys=True), now))
            db.execute("UPDATE participants SET updated_at = ? WHERE uid = ?", (now, uid))
        return cur.rowcount == 1

    def answers(self, uid: str) -> dict[str, Any]:
        return {r["page"]: json.loads(r["value"])
                for r in self.read("SELECT page, value FROM answers WHERE uid = ?", (uid,))}

    def save_items(self, uid: str, items: list[dict[str, Any]]) -> None:
        """Stores the rated recourses (display order) once; a second call changes nothing."""
        with self.write() as db:
            if db.execute("SELECT COUNT(*) FROM answers WHERE uid = ? AND page = 'recourse'",
                          (uid,)).fetchone()[0]:
                return
            for pos, it in enumerate(items):
                db.execute("INSERT OR IGNORE INTO items VALUES (?, ?, ?, ?, ?)",
                           (uid, pos, it["item"], it["policy"], json.dumps(it, sort_keys=True)))
            db.execute("INSERT OR IGNORE INTO answers VALUES (?, 'recourse', ?, ?)",
                       (uid, json.dumps({"items": len(items)}), time.time()))

    def items(self, uid: str) -> list[dict[str, Any]]:
        return [json.loads(r["payload"]) for r in
                self.read("SELECT payload FROM items WHERE uid = ? ORDER BY position", (uid,))]

    def save_question(self, uid: str, q: int, payload: dict[str, Any]) -> None:
        with self.write() as db:
            db.execute("INSERT OR IGNORE INTO questions VALUES (?, ?, ?)",
                       (uid, q, json.dumps(payload, sort_keys=True)))

    def question(self, uid: str, q: int) -> dict[str, Any] | None:
        rows = self.read("SELECT payload FROM questions WHERE uid = ? AND q = ?", (uid, q))
        return json.loads(rows[0]["payload"]) if rows else None

    # -- metadata ---------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self.read("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def drop_linkage(self) -> int:
        """Deletes the linkage table (platform ids); returns the rows it held."""
        with self.write() as db:
            if not self._has_linkage(db):
                return 0
            n = db.execute("SELECT COUNT(*) FROM linkage").fetchone()[0]
            db.execute("DROP TABLE linkage")
        self._connection().execute("VACUUM")  # the dropped pages hold the ids until vacuumed
        return n
