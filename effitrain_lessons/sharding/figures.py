"""Lesson 9's figure: what each process holds once a step is over, setup by setup.

Beside `measure`, which counts it in every process of a launch; the shared style is `plotting`'s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import _
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish, wrapped

PARTS = ("parameters", "gradients", "optimizer_state")
PART_KEYS = {"parameters": "parameters", "gradients": "gradients", "optimizer_state": "optimizer state"}


def plot_per_process(per_process: dict, title: str | None = None) -> Figure:
    """One stacked bar per process (parameters, gradients, optimizer state: gids "parameters",
    "gradients", "optimizer_state"), grouped by setup, from `Sharded.per_process()`. Used by lesson 9."""
    if not per_process:
        raise ValueError(_("plot_per_process needs what a launch measured, for at least one setup."))
    fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    x, ticks, names = 0.0, [], []
    drawn = set()
    for setup, parts in per_process.items():
        count = len(parts["parameters"])
        start = x
        for rank in range(count):
            bottom = 0.0
            for part in PARTS:
                mib = parts[part][rank] / 2**20
                key = PART_KEYS[part]
                ax.bar(
                    x,
                    mib,
                    0.8,
                    bottom=bottom,
                    color=MEMORY_COLOURS[key],
                    label=_(key) if part not in drawn else None,
                    gid=part,
                )
                drawn.add(part)
                bottom += mib
            ax.text(
                x, -0.02, str(rank), ha="center", va="top", fontsize=7, transform=ax.get_xaxis_transform()
            )
            x += 1
        ticks.append((start + x - 1) / 2)
        names.append(setup)
        x += 0.8
    ax.set_xticks(ticks, [wrapped(_(name), 14) for name in names], fontsize=8)
    ax.tick_params(axis="x", pad=12, length=0)
    ax.set_ylabel(_("MiB one process holds"))
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    if title:
        ax.set_title(wrapped(_(title), 80), fontsize=11)
    return finish(fig)
