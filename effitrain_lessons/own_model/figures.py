"""Lesson 7's figure: what each choice of blocks keeps for the backward pass, against the peak of its step.

Beside `own_model`, whose `PeakReport` measures both; the shared style is `plotting`'s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import N_, _, format_number
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish, wrapped

# gid -> (legend, colour): the three bars of each step, top to bottom
BARS = {
    "kept": (N_("kept for the backward pass"), MEMORY_COLOURS["activations"]),
    "peak-backward": (N_("peak of the forward and backward passes"), MEMORY_COLOURS["gradients"]),
    "peak-step": (N_("peak with AdamW's first step"), MEMORY_COLOURS["optimizer state"]),
}


def plot_peaks(report, title: str | None = None) -> Figure:
    """Three horizontal bars per step of an `own_model.PeakReport`, in MiB, each with its size at its
    end: what the step keeps for the backward pass (gid "kept"), the peak of its forward and backward
    passes (gid "peak-backward"), and the peak with the optimizer's step after them (gid "peak-step").
    Used by lesson 7."""
    steps = list(report.steps)
    if not steps:
        raise ValueError(_("plot_peaks needs a PeakReport with at least one step."))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 1.0 * len(steps)), layout="constrained")
    height = 0.26
    longest = max(max(kept, backward, whole) for _label, kept, backward, whole in steps) / 2**20
    for row, (_label, *sizes) in enumerate(steps):
        for offset, ((gid, (legend, colour)), size) in enumerate(zip(BARS.items(), sizes, strict=True)):
            y = row + (offset - 1) * height
            mib = size / 2**20
            ax.barh(
                y, mib, height=height * 0.92, color=colour, gid=gid, label=_(legend) if row == 0 else None
            )
            ax.text(mib + 0.01 * longest, y, format_number(mib, ".1f"), va="center", fontsize=8)
    ax.set_yticks(range(len(steps)), [wrapped(_(label), 20) for label, *_sizes in steps])
    ax.invert_yaxis()  # the first step on top
    ax.set_xlim(0, longest * 1.12)
    ax.set_xlabel(_("MiB"))
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    if title:
        ax.set_title(wrapped(_(title), 80), fontsize=11)
    return finish(fig)
