"""Exit codes of interrupted commands, shared by the command line's entry point and the
commands that catch an interruption themselves (``serve``).

Example:
    >>> exit_code(Terminated()), exit_code(KeyboardInterrupt())
    (143, 130)
"""

from __future__ import annotations

__all__ = ["INTERRUPTED", "TERMINATED", "Terminated", "exit_code"]

#: Exit code of an interrupted command (128 + SIGINT, as a shell reports Ctrl-C).
INTERRUPTED = 130
#: Exit code of a command stopped by SIGTERM (128 + SIGTERM: kill, a batch queue's limit).
TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwinding like Ctrl-C (worker pools stopped, finished results kept)."""


def exit_code(exc: KeyboardInterrupt) -> int:
    """:data:`TERMINATED` for SIGTERM, :data:`INTERRUPTED` for Ctrl-C."""
    return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED
