"""The live study's database: every answer committed as it arrives (SQLite, WAL).

Tables:

- ``participants``: pseudonymous ``uid``, arrival ``idx`` (the key of every seeded draw),
  ``condition``, the assignment's tie-breaking ``draw``, ``status`` (``entered``,
  ``in_progress``, ``completed``, ``failed_attention``, ``no_consent``, ``full``), times;
- ``linkage``: ``uid`` and the platform's ids (``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``),
  the only place they are stored (``simstudy export --drop-linkage`` deletes it);
- ``answers``: one row per answered page, ``(uid, page)`` unique, so a re-submitted page is a
  no-op;
- ``items``: the recourses a participant rates, in their seeded display order;
- ``questions``: the pairwise / accept questions a policy asked, as shown.

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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Store", "pseudonym", "SCHEMA"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS participants (
    uid TEXT PRIMARY KEY,
    idx INTEGER UNIQUE NOT NULL,
    condition TEXT,
    draw REAL,
    status TEXT NOT NULL,
    entered_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL
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
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def pseudonym(platform_pid: str, key: bytes) -> str:
    """The participant's uid: ``HMAC-SHA256(key, platform id)``, 16 hex digits."""
    return hmac.new(key, platform_pid.encode(), hashlib.sha256).hexdigest()[:16]


class Store:
    """The study database at ``path`` (created with :data:`SCHEMA` if new)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._local = threading.local()
        self._connection().executescript(SCHEMA)

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
            self._local.db = db
        return db

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (``BEGIN IMMEDIATE``: writers queue, readers go on)."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        return self._connection().execute(sql, args).fetchall()

    # -- participants -----------------------------------------------------------------------
    def enter(self, platform_pid: str, study_id: str | None, session_id: str | None,
              key: bytes) -> dict[str, Any]:
        """The participant of a platform ID, created (next arrival index) on first entry."""
        uid = pseudonym(platform_pid, key)
        now = time.time()
        with self.write() as db:
            row = db.execute("SELECT * FROM participants WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                idx = db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM participants"
                                 ).fetchone()[0]
                db.execute("INSERT INTO participants (uid, idx, status, entered_at, updated_at)"
                           " VALUES (?, ?, 'entered', ?, ?)", (uid, idx, now, now))
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

    def assign(self, uid: str, conditions: list[str], draw: float, target: int,
               cutoff_seconds: float) -> str | None:
        """Assigns a condition inside one write transaction; ``None`` when every condition has
        its target. Idempotent: an assigned participant keeps their condition.

        Balance: the least-assigned condition (participants first assigned to it, completed or
        in progress within the cutoff), ties broken by ``draw``, among the conditions still
        open. A condition is open while fewer than ``target`` participants count towards it:
        those it serves, completed or in progress, except those whose condition found no plan
        and were not given another (:meth:`route_no_plan`). Balancing on first assignments
        keeps the assignment independent of when an earlier participant's plan is found.
        """
        now = time.time()
        with self.write() as db:
            row = db.execute("SELECT condition, status FROM participants WHERE uid = ?",
                             (uid,)).fetchone()
            if row["condition"] is not None:
                return row["condition"]
            assigned, counted = dict.fromkeys(conditions, 0), dict.fromkeys(conditions, 0)
            for r in db.execute(
                    "SELECT COALESCE(json_extract(a.value, '$.assigned'), p.condition), "
                    "p.condition, COALESCE(json_extract(a.value, '$.counted'), 1) "
                    "FROM participants p LEFT JOIN answers a "
                    "ON a.uid = p.uid AND a.page = 'no_plan' "
                    "WHERE p.condition IS NOT NULL AND (p.status = 'completed' OR "
                    "(p.status = 'in_progress' AND p.updated_at >= ?))", (now - cutoff_seconds,)):
                if r[0] in assigned:
                    assigned[r[0]] += 1
                if r[1] in counted and r[2]:
                    counted[r[1]] += 1
            open_ = [c for c in conditions if counted[c] < target]
            if not open_:
                db.execute("UPDATE participants SET status = 'full', updated_at = ? "
                           "WHERE uid = ?", (now, uid))
                return None
            low = min(assigned[c] for c in open_)
            tied = [c for c in open_ if assigned[c] == low]
            chosen = tied[min(int(draw * len(tied)), len(tied) - 1)]
            db.execute("UPDATE participants SET condition = ?, draw = ?, status = 'in_progress',"
                       " updated_at = ? WHERE uid = ?", (chosen, draw, now, uid))
        return chosen

    def route_no_plan(self, uid: str, assigned: str, served: str | None, counted: bool) -> bool:
        """Records once that participant ``uid``'s condition ``assigned`` found no plan (the
        answer ``no_plan``), and, with ``served``, that condition serves them instead;
        ``counted``: whether they count towards the target of the condition serving them.
        Recorded before (the replacement found no plan either), it only stops counting them.
        False when it was recorded before."""
        now = time.time()
        value = json.dumps({"assigned": assigned, "served": served or assigned,
                            "counted": int(counted)}, sort_keys=True)
        with self.write() as db:
            cur = db.execute("INSERT OR IGNORE INTO answers VALUES (?, 'no_plan', ?, ?)",
                             (uid, value, now))
            if cur.rowcount == 0 and not counted:
                db.execute("UPDATE answers SET value = json_set(value, '$.counted', 0) "
                           "WHERE uid = ? AND page = 'no_plan'", (uid,))
            elif cur.rowcount == 1 and served is not None:
                db.execute("UPDATE participants SET condition = ?, updated_at = ? WHERE uid = ?",
                           (served, now, uid))
        return cur.rowcount == 1

    def set_status(self, uid: str, status: str, finished: bool = False) -> None:
        now = time.time()
        with self.write() as db:
            db.execute("UPDATE participants SET status = ?, updated_at = ?, finished_at = "
                       "CASE WHEN ? THEN COALESCE(finished_at, ?) ELSE finished_at END "
                       "WHERE uid = ?", (status, now, finished, now, uid))

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
