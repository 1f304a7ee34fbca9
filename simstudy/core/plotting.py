"""Figures: the one place that selects matplotlib's non-interactive backend and writes figures.

Importing this module imports matplotlib (with the ``Agg`` backend, so nothing needs a display);
command modules import it where they draw, which keeps the command line's start-up fast.
Figures are written atomically (see :mod:`simstudy.core.store`) and closed after writing.

Example:
    >>> from simstudy.core.plotting import plt, png_base64
    >>> fig, ax = plt.subplots()
    >>> png_base64(fig)[:8]
    'iVBORw0K'
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .store import atomic_write  # noqa: E402

__all__ = ["plt", "save_figure", "png_base64"]


def save_figure(fig, path: str | Path, dpi: int = 120) -> Path:
    """Writes ``fig`` to ``path`` (format from the suffix) atomically and closes it."""
    path = Path(path)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi))
    plt.close(fig)
    return path


def png_base64(fig, dpi: int = 80) -> str:
    """``fig`` as a base64 PNG (for self-contained HTML), then closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")
