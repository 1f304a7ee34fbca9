"""The ``simstudy`` command line: every command-line module lives in this package.

:mod:`simstudy.cli.main` builds the parser and runs a command; the command modules
(:mod:`~simstudy.cli.run_commands`, :mod:`~simstudy.cli.study_commands`) each contribute their
subcommands. Nothing below this package imports it.
"""

from .main import main

__all__ = ["main"]
