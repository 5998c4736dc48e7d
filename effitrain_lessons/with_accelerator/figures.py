"""Lesson 3's figures: a training loop's measured loss and learning rate, and learning-rate schedules.

Used by lesson 3 (checkpointing with `Accelerator`), beside `train_loop`, whose `watch_training`
and `measure_schedule` measure what they draw. Every function returns a closed `Figure`
(`plotting.finish`).
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish


def plot_loop_curves(losses, learning_rates, title: str | None = None) -> Figure:
    """Training loss (left) and learning rate (right) after each optimizer step, as measured by
    a training loop (lesson 3's `watch_training` measures both)."""
    if not losses or len(losses) != len(learning_rates):
        raise ValueError(
            _("plot_loop_curves needs one loss and one learning rate per optimizer step (a TrainingRun's).")
        )
    steps = range(1, len(losses) + 1)
    fig, (loss_ax, lr_ax) = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
    loss_ax.plot(steps, losses, color=MEMORY_COLOURS["activations"], lw=0.8, alpha=0.4, label=_("each step"))
    window = min(10, len(losses))  # a running mean, so that one noisy step does not read as a trend
    running = [sum(losses[max(0, i - window + 1) : i + 1]) / min(window, i + 1) for i in range(len(losses))]
    loss_ax.plot(
        steps,
        running,
        color=MEMORY_COLOURS["activations"],
        lw=2,
        label=phrase("mean of the last {n} steps", n=window),
    )
    loss_ax.legend(fontsize=8, frameon=False)
    loss_ax.set_ylabel(_("training loss (mean of the micro-batches)"))
    lr_ax.plot(steps, learning_rates, color=MEMORY_COLOURS["parameters"])
    lr_ax.set_ylabel(_("learning rate"))
    for ax in (loss_ax, lr_ax):
        ax.set_xlabel(_("optimizer step"))
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(_(title), fontsize=11)
    return finish(fig)


def plot_schedules(schedules: Mapping[str, list[float]], title: str | None = None) -> Figure:
    """Measured learning-rate schedules, one line each, against the optimizer step (lesson 3)."""
    if not schedules:
        raise ValueError(_("plot_schedules needs at least one named schedule."))
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    for (label, rates), colour in zip(schedules.items(), ("#3a9e6f", "#d1495b", "#4c72b0", "#937860")):
        ax.plot(
            range(1, len(rates) + 1),
            rates,
            color=colour,
            lw=2,
            label=phrase("{label}: ends at {rate:.2g}", label=_(label), rate=rates[-1]),
        )
    ax.set_xlabel(_("optimizer step"))
    ax.set_ylabel(_("learning rate (peak = 1)"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(_(title), fontsize=10)
    return finish(fig)
