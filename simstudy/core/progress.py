"""Progress of long work: one helper used by every loop that makes a user wait.

On a terminal a :mod:`tqdm` bar is drawn on stderr. When stderr is not a terminal (a log file, a
CI job, a batch queue) a bar would write one line per refresh, so plain log lines are written
instead: one at the start, then at most one per :data:`LOG_EVERY_SECONDS` and at each tenth of
the total, and one at the end. :func:`set_quiet` (the command line's ``--quiet``) silences all
of it, wherever the loop is.

Example:
    >>> from simstudy.core.progress import progress, set_quiet
    >>> set_quiet(True)
    >>> with progress(total=3, desc="demo", unit="step") as bar:
    ...     for _ in range(3):
    ...         bar.update()
    >>> set_quiet(False)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

# plain tqdm (not tqdm.auto): bars are only drawn on a terminal
from tqdm import tqdm

__all__ = ["progress", "track", "Tracked", "set_quiet", "is_quiet", "Progress", "LOG_EVERY_SECONDS"]

LOG_EVERY_SECONDS = 30.0
_QUIET = False


def set_quiet(quiet: bool) -> None:
    """Silences (or restores) every progress display of this process."""
    global _QUIET
    _QUIET = bool(quiet)


def is_quiet() -> bool:
    return _QUIET


class Progress:
    """A progress display with the small interface the loops use: ``update``, ``close``.

    Attributes:
        total: the number of steps expected (``None``: unknown).
        done: steps finished so far.
    """

    def __init__(self, total: int | None, desc: str, unit: str, initial: int = 0,
                 leave: bool = True, enabled: bool = True):
        self.total, self.desc, self.unit, self.done = total, desc, unit, int(initial)
        self._bar = None
        self._lines = False
        self._postfix = ""
        if not enabled or _QUIET:
            return
        stream = sys.stderr
        if getattr(stream, "isatty", lambda: False)():
            self._bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, leave=leave)
        else:
            self._lines = True
            self._started = time.monotonic()
            self._last_time = self._started
            self._last_tenth = self._tenth()
            self._log("started")

    def _tenth(self) -> int:
        return int(10 * self.done / self.total) if self.total else 0

    def _log(self, what: str) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        elapsed = time.monotonic() - self._started
        print(f"{self.desc}: {self.done}{of} {self.unit} {what} ({elapsed:.0f} s){self._postfix}",
              file=sys.stderr, flush=True)

    def set_postfix(self, **values: Any) -> None:
        """Figures shown beside the count (for example a validation loss)."""
        if self._bar is not None:
            self._bar.set_postfix(**values)
        self._postfix = "".join(f", {k} {v}" for k, v in values.items())

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._lines:
            now = time.monotonic()
            tenth = self._tenth()
            if tenth > self._last_tenth or now - self._last_time >= LOG_EVERY_SECONDS:
                self._last_tenth, self._last_time = tenth, now
                if self.total is None or self.done < self.total:
                    self._log("done")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._lines:
            self._lines = False
            self._log("finished")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress(total: int | None, desc: str, unit: str, initial: int = 0, leave: bool = True,
             enabled: bool = True) -> Progress:
    """A :class:`Progress` display (nothing is shown when ``enabled`` is false or quiet)."""
    return Progress(total, desc, unit, initial=initial, leave=leave, enabled=enabled)


class Tracked:
    """Iterates over items while showing their progress; ``set_postfix`` adds figures."""

    def __init__(self, items: Iterable[Any], bar: Progress):
        self._items, self.bar = items, bar

    def __iter__(self) -> Iterator[Any]:
        with self.bar:
            for item in self._items:
                yield item
                self.bar.update()

    def set_postfix(self, **values: Any) -> None:
        self.bar.set_postfix(**values)


def track(items: Iterable[Any], desc: str, unit: str, total: int | None = None,
          leave: bool = True, enabled: bool = True) -> Tracked:
    """``items`` wrapped so that iterating shows their progress."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    return Tracked(items, progress(total, desc, unit, leave=leave, enabled=enabled))
