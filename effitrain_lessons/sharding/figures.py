"""Lesson 9's figure: what each process holds, setup by setup, between steps and during one.

Beside `measure`, which counts it in every process of a launch; the shared style is `plotting`'s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import N_, _, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish, wrapped

# gid -> (legend, colour): the parts a process holds once a step is over
PARTS = {
    "parameters": (N_("parameters"), MEMORY_COLOURS["parameters"]),
    "gradients": (N_("gradients"), MEMORY_COLOURS["gradients"]),
    "optimizer_state": (N_("optimizer state"), MEMORY_COLOURS["optimizer state"]),
}
GATHERED = N_("whole parameters still gathered when the forward pass ends (the most of any process)")


def plot_per_process(per_process: dict, title: str | None = None) -> Figure:
    """One panel per number of processes (from `Sharded.per_process()`), one stacked bar per process
    of each setup: parameters, gradients and optimizer state once the step is over (gids "parameters",
    "gradients", "optimizer_state"); beside them, hatched, the whole parameters a process still held
    when the forward pass ended (gid "gathered", the most of any process), another moment of the
    step, so a bar of its own. Used by lesson 9."""
    if not per_process or not any(per_process.values()):
        raise ValueError(_("plot_per_process needs what a launch measured, for at least one setup."))
    counts = sorted(per_process)
    widths = [
        sum(
            len(parts["parameters"]) + 1 + bool(max(parts.get("gathered", [0])))
            for parts in per_process[n].values()
        )
        for n in counts
    ]
    fig, axes = plt.subplots(
        1,
        len(counts),
        figsize=(8.5, 4.2),
        layout="constrained",
        sharey=True,
        width_ratios=widths,
        squeeze=False,
    )
    drawn = set()
    for ax, n in zip(axes[0], counts):
        x, ticks, names = 0.0, [], []
        for setup, parts in per_process[n].items():
            start = x
            for rank in range(len(parts["parameters"])):
                bottom = 0.0
                for gid, (label, colour) in PARTS.items():
                    mib = parts[gid][rank] / 2**20
                    shown = _(label) if gid not in drawn else None
                    ax.bar(x, mib, 0.8, bottom=bottom, color=colour, label=shown, gid=gid)
                    drawn.add(gid)
                    bottom += mib
                x += 1
            gathered = max(parts.get("gathered", [0])) / 2**20
            if gathered:  # a moment of its own, inside the step: beside the bars, not on them
                shown = _(GATHERED) if "gathered" not in drawn else None
                ax.bar(
                    x,
                    gathered,
                    0.8,
                    color="white",
                    edgecolor=MEMORY_COLOURS["parameters"],
                    hatch="///",
                    label=shown,
                    gid="gathered",
                )
                drawn.add("gathered")
                x += 1
            ticks.append((start + x - 1) / 2)
            names.append(setup)
            x += 1
        ax.set_xticks(ticks, [wrapped(_(name), 12) for name in names], fontsize=8)
        ax.tick_params(axis="x", length=0)
        ax.set_title(phrase("{n} processes, one bar each", n=n), fontsize=9)  # the hatched bar: the most
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel(_("MiB one process holds"))
    handles, labels = [], []
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.append(handle)
            labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    if title:
        fig.suptitle(wrapped(_(title), 80), fontsize=11)
    return finish(fig)
