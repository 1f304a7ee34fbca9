"""Core subcommands: ``validate`` and ``run``."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds the core subcommands (filled in with the scenario runner)."""
