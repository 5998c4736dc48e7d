"""Lesson 2's figures: slide 3's Trainer and Accelerator, and what checkpointing costs a micro-batch.

Used by lesson 2 (checkpointing with `Trainer`), beside `trainer`, whose `StepMeter` measures the
micro-batches `plot_checkpointing_cost` compares. Every function returns a closed `Figure`
(`plotting.finish`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.memory import StepReport, format_bytes
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish


def plot_trainer_vs_accelerator() -> Figure:
    """Slide 3's chart: Trainer and Accelerator placed on ease of use and customizability.

    A qualitative picture (the slide's, not a measurement): Trainer runs the loop for you,
    Accelerator leaves the loop to you and handles devices, processes and precision. Lesson 2 only:
    lesson 3 does not draw it again.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    tools = {"Trainer": (0.25, 0.8, "#4c72b0"), "Accelerator": (0.8, 0.3, "#f08c2e")}
    for name, (custom, ease, colour) in tools.items():
        ax.add_patch(Circle((custom, ease), 0.15, color=colour, alpha=0.85))
        ax.text(custom, ease, name, ha="center", va="center", color="white", fontsize=9, weight="bold")
    ax.annotate(
        "", xy=(0.66, 0.38), xytext=(0.38, 0.7), arrowprops=dict(arrowstyle="->", color="#777777", lw=1.2)
    )
    ax.text(0.56, 0.6, _("you write the loop"), fontsize=8, color="#555555", rotation=-40, ha="center")
    ax.set(xlim=(0, 1.05), ylim=(0, 1.05), xticks=[], yticks=[], aspect="equal")
    ax.set_xlabel(_("customizability") + "  \u2192")
    ax.set_ylabel(_("ease of use") + "  \u2192")
    ax.set_title(_("Trainer is easier, Accelerator more customizable"), fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    return finish(fig)


def plot_checkpointing_cost(plain, checkpointed, title: str | None = None) -> Figure:
    """Two bar panels from two measured `memory.StepReport`s of one micro-batch: saved activation
    bytes, and time and FLOPs relative to the plain step. Lesson 2 (from `StepMeter.step_report()`).
    Without a `title`, the figure's title says what was measured: the share of the activations kept,
    for how many times the FLOPs."""
    if not (isinstance(plain, StepReport) and isinstance(checkpointed, StepReport)):
        raise TypeError(
            _("plot_checkpointing_cost needs two StepReports (for example trainer.step_report()).")
        )
    fig, (memory_ax, cost_ax) = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained")
    names = [_("without"), _("with")]  # the x axis says what: checkpointing
    colours = [MEMORY_COLOURS["activations"], STATUS_COLOURS["stored"]]
    values = [plain.saved_bytes / 2**10, checkpointed.saved_bytes / 2**10]
    bars = memory_ax.bar(names, values, color=colours)
    memory_ax.bar_label(
        bars, [format_bytes(plain.saved_bytes), format_bytes(checkpointed.saved_bytes)], fontsize=9
    )
    memory_ax.set_ylabel(_("activations saved for backward (KiB)"))
    memory_ax.set_title(_("memory per micro-batch"), fontsize=10)

    ratio = checkpointed / plain
    x = range(2)
    width = 0.38
    flop_bars = cost_ax.bar(
        [i - width / 2 for i in x], [1.0, ratio.flops], width, color="#8172b2", label=_("FLOPs")
    )
    time = ratio.seconds  # a Ratio: the median, and the spread the two sets of steps allow
    time_bars = cost_ax.bar(
        [i + width / 2 for i in x],
        [1.0, time.median],
        width,
        color="#4c72b0",
        label=_("time (median; bar: middle half of the steps)"),
        yerr=[[0.0, time.median - time.low], [0.0, time.high - time.median]],
        capsize=3,
        error_kw={"elinewidth": 0.9, "ecolor": "#333333"},
    )
    cost_ax.bar_label(flop_bars, ["1", format_number(ratio.flops, ".2f")], fontsize=9)
    cost_ax.bar_label(time_bars, ["1", format_number(time.median, ".2f")], fontsize=9, padding=6)
    cost_ax.axhline(4 / 3, color="#bbbbbb", lw=0.8, ls="--")
    cost_ax.text(-0.45, 4 / 3, "4/3", va="bottom", fontsize=8, color="#777777")
    cost_ax.set_xticks(list(x), names)
    cost_ax.set_ylabel(_("relative to without checkpointing"))
    cost_ax.set_title(_("compute per micro-batch"), fontsize=10)
    # below the panels: inside, it would cover the time bar's spread
    fig.legend(handles=[flop_bars, time_bars], fontsize=8, frameon=False, loc="outside lower right", ncol=2)
    for ax in (memory_ax, cost_ax):
        ax.set_xlabel(_("checkpointing"))
        ax.spines[["top", "right"]].set_visible(False)
    if title is None:
        title = phrase(
            "Checkpointing keeps {kept:.0%} of the activations for {flops:.2f}x the FLOPs",
            kept=ratio.saved_bytes,
            flops=ratio.flops,
        )
    if title:
        fig.suptitle(_(title), fontsize=11)
    return finish(fig)
