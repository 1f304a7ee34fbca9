"""``python -m simstudy.cli``: the same as the ``simstudy`` command."""

from .main import main

raise SystemExit(main())
