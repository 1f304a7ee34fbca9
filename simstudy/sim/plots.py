"""Plots of event-world results (matplotlib, non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.plotting import plt, save_figure

__all__ = ["plot_cumulative_approvals"]

_STYLES = ("-", "--", ":", "-.")


def plot_cumulative_approvals(timeline: pd.DataFrame, path: str | Path,
                              share: bool = True) -> Path:
    """Cumulative approvals over time: one colour per policy, one line style per group.

    Args:
        timeline: rows of :func:`simstudy.sim.outcomes.timeline` with ``policy`` and
            ``replication`` columns; lines are means over replications.
        path: output image file.
        share: plot the share of arrivals so far approved (otherwise counts).

    Returns:
        The written path.
    """
    path = Path(path)
    column = "approved_share" if share else "approved"
    mean = timeline.groupby(["policy", "group", "day"], sort=False)[column].mean().reset_index()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    groups = list(dict.fromkeys(mean["group"].tolist()))
    for i, policy in enumerate(dict.fromkeys(mean["policy"].tolist())):
        for j, group in enumerate(groups):
            part = mean[(mean["policy"] == policy) & (mean["group"] == group)]
            ax.plot(part["day"], part[column], color=colours[i % len(colours)],
                    linestyle=_STYLES[j % len(_STYLES)], label=f"{policy} / {group}")
    ax.set_xlabel("day")
    ax.set_ylabel("share of arrivals approved" if share else "approvals")
    ax.set_title("Cumulative approvals by policy and group")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)
