"""Lesson 4's figures: when the processes synchronize, what Local SGD saves and costs, and its explorer.

Used by lesson 4 (Local SGD), beside `local_sgd`: its runs (`distributed_runs.launch`,
`distributed_runs.summary`) measure what they draw. Every `plot_*` and `draw_*` function returns a
closed `Figure` (`plotting.finish`); `local_sgd_explorer` runs the lesson's training again from its
widgets. Drawn from measurements, except `draw_data_parallel_and_local_sgd`, a drawing that says so.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish, rerun_explorer, wrapped


def _sync_marks(k: int | None, steps: int) -> list[int]:
    """The steps after which the processes communicate: every step (k None), or every k steps."""
    return list(range(1, steps + 1)) if k is None else list(range(k, steps + 1, k))


def draw_data_parallel_and_local_sgd(k: int = 4, steps: int = 8, devices: int = 2) -> Figure:
    """A drawn (not measured) picture of what crosses the network: data parallel all-reduces the
    gradients at every step, so every copy takes the same step; Local SGD lets each copy take its own
    steps (the copies drift apart, drawn as diverging rows) and averages the parameters every k steps,
    and once more when its block exits: floor(steps / k) + 1 synchronizations, the rule lesson 4
    states and counts. Used by lesson 4 before it measures the same thing."""
    whole_numbers(k=k, steps=steps, devices=devices)
    if devices < 2:
        raise ValueError(
            phrase(
                "devices must be at least 2 to have something to synchronize, got {devices}.", devices=devices
            )
        )
    exit_at = steps + 0.6  # where the drawing puts LocalSGD's average on exit, after the last step
    cases = {
        _("data parallel (DDP): gradients all-reduced every step"): None,
        phrase("Local SGD, K = {k}: parameters averaged every {k} steps and on exit", k=k): k,
    }
    fig, axes = plt.subplots(
        len(cases), 1, figsize=(8, 1.2 + 0.5 * devices * len(cases)), layout="constrained"
    )
    for ax, (title, every) in zip(axes, cases.items()):
        marks = _sync_marks(every, steps)
        for device in range(devices):
            drift = 0.0
            for step in range(1, steps + 1):
                # between averages each copy moves its own way; an average brings them together again
                offset = 0.0 if every is None else drift * (device - (devices - 1) / 2) * 0.12
                ax.add_patch(
                    plt.Rectangle(
                        (step - 0.9, device + offset - 0.25),
                        0.8,
                        0.5,
                        color=MEMORY_COLOURS["parameters"],
                        alpha=0.75,
                    )
                )
                drift = 0.0 if step in marks else drift + 1
        arrows = marks if every is None else [*marks, exit_at]
        for step in arrows:
            ax.add_patch(
                FancyArrowPatch(
                    (step, -0.4),
                    (step, devices - 0.6),
                    arrowstyle="<->",
                    mutation_scale=12,
                    color=STATUS_COLOURS["recomputed"],
                    lw=2,
                )
            )
        if every is None:
            what = phrase("{count} synchronizations\nof the gradients", count=len(arrows))
            ax.set_xticks(range(1, steps + 1))
        else:
            what = phrase("{count} synchronizations\nof the parameters", count=len(arrows))
            ax.set_xticks([*range(1, steps + 1), exit_at], [*map(str, range(1, steps + 1)), _("exit")])
        ax.text(exit_at + 0.4, (devices - 1) / 2, what, va="center", fontsize=9)
        ax.set_yticks(range(devices), [phrase("process {number}", number=d) for d in range(devices)])
        ax.set_xlim(0, steps + 3.4)
        ax.set_ylim(devices - 0.2, -0.8)
        ax.set_title(title, fontsize=10, loc="left")
        ax.spines[["top", "right", "left"]].set_visible(False)
    words = _(
        "training step (blue: a copy's forward, backward and optimizer step; orange: a synchronization)"
    )
    axes[-1].set_xlabel(wrapped(words, 80))
    fig.suptitle(
        _("Data parallel synchronizes every step, Local SGD every K steps and on exit (a drawing)"),
        fontsize=10,
    )
    return finish(fig)


def plot_sync_timeline(
    syncs: Mapping[str, list[int]], steps: int, devices: int = 2, title: str | None = None
) -> Figure:
    """Slides 7-8 as a picture: one row of compute steps per device, one panel per schedule, and a
    vertical bar wherever the devices synchronize. `syncs` maps a label to the steps (1-based) after
    which that schedule communicated; lesson 4 draws the rule first, then the measured steps."""
    if not syncs:
        raise ValueError(_("plot_sync_timeline needs at least one schedule of synchronization steps."))
    fig, axes = plt.subplots(
        len(syncs), 1, figsize=(8, 1.1 + 0.45 * devices * len(syncs)), layout="constrained", squeeze=False
    )
    for ax, (label, at) in zip(axes[:, 0], syncs.items()):
        for device in range(devices):
            ax.barh(
                device,
                [0.8] * steps,
                left=[s - 0.9 for s in range(1, steps + 1)],
                height=0.6,
                color=MEMORY_COLOURS["parameters"],
                alpha=0.75,
            )
        for step in at:
            if 1 <= step <= steps:
                ax.axvline(step + 0.0, color=STATUS_COLOURS["recomputed"], lw=2.5)
        ax.set_yticks(range(devices), [phrase("process {number}", number=d) for d in range(devices)])
        ax.set_xlim(0, steps + 0.5)
        ax.set_title(
            phrase(
                "{label}: {count} synchronizations in {steps} steps",
                label=_(label),
                count=len([s for s in at if 1 <= s <= steps]),
                steps=steps,
            ),
            fontsize=9,
            loc="left",
        )
        ax.spines[["top", "right", "left"]].set_visible(False)
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel(_("training step (blue: compute; orange: a synchronization)"))
    if title:
        fig.suptitle(_(title), fontsize=11)
    return finish(fig)


def plot_local_sgd_sweep(
    rows: list[Mapping],
    baselines: Mapping | list[Mapping],
    title: str | None = None,
    nothing_learned: float | None = None,
    tolerance: float | None = None,
) -> Figure:
    """Lesson 4's results against K, one message a panel: the megabytes each process all-reduced
    (left: they fall as K grows) and the final validation loss (right: what that costs). Data
    parallel is drawn as dashed lines, one for each of its runs (`baselines`, e.g. two seeds), so the
    spread between two data-parallel runs is in view. The loss axis starts at 0 and reaches the loss
    of a model that learned nothing (`nothing_learned`, drawn dotted) when given, so a difference of
    a few thousandths does not fill the panel; `tolerance` shades that far around the first data-
    parallel run. `rows` are `distributed_runs.summary` dicts (k, megabytes, eval_loss). Without a
    `title`, the title says what the largest K saved and cost against the first data-parallel run."""
    if not rows:
        raise ValueError(_("plot_local_sgd_sweep needs at least one Local SGD row."))
    baselines = [baselines] if isinstance(baselines, Mapping) else list(baselines)
    if not baselines:
        raise ValueError(_("plot_local_sgd_sweep needs at least one data-parallel row."))
    ks = [row["k"] for row in rows]
    fig, (bytes_ax, loss_ax) = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained")
    bytes_ax.plot(
        ks, [row["megabytes"] for row in rows], "o-", color=STATUS_COLOURS["recomputed"], label=_("Local SGD")
    )
    bytes_ax.axhline(
        baselines[0]["megabytes"],
        color=MEMORY_COLOURS["parameters"],
        ls="--",
        lw=1,
        label=phrase("data parallel: {mb:.1f} MB", mb=baselines[0]["megabytes"]),
    )
    bytes_ax.set_yscale("log")
    smallest = min([row["megabytes"] for row in rows] + [baselines[0]["megabytes"]])
    bytes_ax.set_ylim(
        0.75 * smallest, 1.3 * max([row["megabytes"] for row in rows] + [baselines[0]["megabytes"]])
    )
    bytes_ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    bytes_ax.yaxis.set_major_formatter(ScalarFormatter())
    bytes_ax.yaxis.set_minor_formatter(NullFormatter())
    bytes_ax.set_ylabel(wrapped(_("MB all-reduced per process (log scale)"), 30))
    bytes_ax.set_title(_("communication: what each process sends"), fontsize=10)
    bytes_ax.legend(fontsize=8, frameon=False, loc="center left")

    loss_ax.plot(
        ks, [row["eval_loss"] for row in rows], "o-", color=STATUS_COLOURS["recomputed"], label=_("Local SGD")
    )
    for number, baseline in enumerate(baselines):
        loss_ax.axhline(
            baseline["eval_loss"],
            color=MEMORY_COLOURS["parameters"],
            ls="--" if number == 0 else "-.",
            lw=1,
            label=phrase("data parallel, run {number}", number=number + 1),
        )
    if tolerance is not None:
        centre = baselines[0]["eval_loss"]
        loss_ax.axhspan(
            centre - tolerance,
            centre + tolerance,
            color=MEMORY_COLOURS["parameters"],
            alpha=0.12,
            lw=0,
            label=phrase("data parallel ± {tolerance}", tolerance=tolerance),
        )
    if nothing_learned is not None:
        loss_ax.axhline(
            nothing_learned, color="grey", ls=":", lw=1.5, label=_("a model that learned nothing")
        )
        loss_ax.set_ylim(0, 1.15 * nothing_learned)
    loss_ax.set_ylabel(_("final validation loss"))
    loss_ax.set_title(_("quality: what the model learned"), fontsize=10)
    loss_ax.legend(fontsize=7, frameon=False, loc="lower left")
    for ax in (bytes_ax, loss_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("K (local_sgd_steps)")  # a symbol and a parameter's name: no words to translate
        ax.spines[["top", "right"]].set_visible(False)
    if title is None:
        largest = max(rows, key=lambda row: row["k"])
        title = phrase(
            "K = {k}: {ratio:.0f} times fewer bytes than data parallel, "
            "validation loss {loss:.3f} against {ddp:.3f}",
            k=largest["k"],
            ratio=baselines[0]["megabytes"] / largest["megabytes"],
            loss=largest["eval_loss"],
            ddp=baselines[0]["eval_loss"],
        )
    if title:
        fig.suptitle(_(title), fontsize=10)
    return finish(fig)


def plot_loss_against_bytes(
    rows: list[Mapping], title: str | None = None, nothing_learned: float | None = None
) -> Figure:
    """Final validation loss against the megabytes each process all-reduced, one point per run
    (lesson 4's explore exercise): the price of communication, in loss. `rows` are
    `distributed_runs.summary` dicts; each point is labelled with its run (data-parallel runs
    numbered, as in the sweep's legend). The loss axis starts at 0 and reaches the loss of a model
    that learned nothing (`nothing_learned`, dotted) when given. Without a `title`, the title names
    the largest K drawn."""
    if not rows:
        raise ValueError(_("plot_loss_against_bytes needs at least one run's summary."))
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    data_parallel = 0
    for row in rows:
        if row["k"] is None:
            data_parallel += 1
            label = phrase("data parallel, run {number}", number=data_parallel)
        else:
            label = _(row["run"])
        colour = MEMORY_COLOURS["parameters"] if row["k"] is None else STATUS_COLOURS["recomputed"]
        ax.scatter(row["megabytes"], row["eval_loss"], color=colour, zorder=3)
        ax.annotate(
            label, (row["megabytes"], row["eval_loss"]), textcoords="offset points", xytext=(5, 4), fontsize=8
        )
    if nothing_learned is not None:
        ax.axhline(nothing_learned, color="grey", ls=":", lw=1.5, label=_("a model that learned nothing"))
        ax.set_ylim(0, 1.15 * nothing_learned)
        ax.legend(fontsize=8, frameon=False, loc="lower left")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel(_("MB all-reduced per process (log scale)"))
    ax.set_ylabel(_("final validation loss"))
    ax.spines[["top", "right"]].set_visible(False)
    ks = [row["k"] for row in rows if row["k"] is not None]
    if title is None and ks:
        title = phrase("Validation loss against communication, K up to {k}", k=max(ks))
    if title:
        ax.set_title(_(title), fontsize=10)
    return finish(fig)


def local_sgd_explorer(
    run, figure, ks=(1, 2, 4, 8, 16, 32), processes=(2, 3, 4), k: int = 8, num_processes: int = 2
):
    """A K slider and a process-count menu above a figure: changing either calls
    `run(k, num_processes)`, which must return a new Figure, and shows it in place of the old one.
    `figure` is shown first (a static image stays where widgets cannot render). Used by lesson 4."""
    import ipywidgets as widgets

    slider = widgets.SelectionSlider(options=list(ks), value=k, description="K", continuous_update=False)
    menu = widgets.Dropdown(options=list(processes), value=num_processes, description=_("processes"))
    return rerun_explorer(
        run,
        figure,
        [slider, menu],
        _("Move K or change the number of processes to run again."),
        lambda k, n: phrase("running K = {k} on {processes} processes...", k=k, processes=n),
        lambda k, n: phrase("K = {k}, {processes} processes: measured just now.", k=k, processes=n),
    )


def plot_link_timings(timings, title: str | None = None) -> Figure:
    """Lesson 4's slow-link sweep, one panel per link: ms per step against K for Local SGD, measured
    (the median, bars from the first to the third quartile of the timed windows) and predicted by
    the latency + bytes / bandwidth model (dashed), with data parallel's measured time (a line and
    its middle half shaded) and the model's (dotted); a grey line at the model's crossover K*.
    `timings` are `local_sgd.LinkTiming`s. Without a `title`, the title says where Local SGD was
    measured clearly faster on each link."""
    if not timings:
        raise ValueError(_("plot_link_timings needs at least one link's timing."))
    fig, axes = plt.subplots(
        1, len(timings), figsize=(8, 3.4), layout="constrained", squeeze=False, sharey=True
    )
    local_colour, parallel_colour = STATUS_COLOURS["recomputed"], MEMORY_COLOURS["parameters"]
    highest = 0.0
    for ax, timing in zip(axes[0], timings):
        ks = sorted(timing.local_sgd)
        measured = [timing.local_sgd[k][0] for k in ks]
        medians = [1000 * times.median for times in measured]
        ax.errorbar(
            ks,
            medians,
            yerr=[
                [1000 * (times.median - times.low) for times in measured],
                [1000 * (times.high - times.median) for times in measured],
            ],
            fmt="o-",
            color=local_colour,
            capsize=3,
            label=_("Local SGD, measured"),
            gid="measured",
        )
        ax.plot(
            ks,
            [1000 * timing.local_sgd[k][1] for k in ks],
            "--",
            color=local_colour,
            lw=1,
            label=_("Local SGD, model"),
        )
        parallel = timing.data_parallel
        ax.axhline(1000 * parallel.median, color=parallel_colour, lw=1.5, label=_("data parallel, measured"))
        ax.axhspan(1000 * parallel.low, 1000 * parallel.high, color=parallel_colour, alpha=0.15, lw=0)
        ax.axhline(
            1000 * timing.data_parallel_model,
            color=parallel_colour,
            ls=":",
            lw=1.5,
            label=_("data parallel, model"),
        )
        ax.axvline(timing.model_crossover, color="grey", ls="-.", lw=1, label=_("model's crossover K*"))
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlim(min(ks[0], timing.model_crossover) / 1.3, max(ks[-1], timing.model_crossover) * 1.3)
        highest = max(highest, 1000 * parallel.high, *[1000 * times.high for times in measured])
        ax.set_xlabel("K (local_sgd_steps)")
        ax.set_title(wrapped(f"{timing.name}: {timing.link.describe()}", 30), fontsize=9)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylim(0, 1.15 * highest)
    axes[0][0].set_ylabel(_("ms per step (bars: middle half)"))
    handles, labels = axes[0][0].get_legend_handles_labels()
    first = labels.index(_("Local SGD, measured"))  # the measurement first, then the model's lines
    order = [first, *[index for index in range(len(labels)) if index != first]]
    handles, labels = [handles[index] for index in order], [labels[index] for index in order]
    fig.legend(handles, labels, fontsize=7, frameon=False, loc="outside lower center", ncols=5)
    if title is None:
        title = phrase(
            "Local SGD against data parallel, measured: {links}",
            links="; ".join(f"{timing.name}: {timing.describe_crossover()}" for timing in timings),
        )
    if title:
        fig.suptitle(wrapped(_(title), 95), fontsize=10)
    return finish(fig)
