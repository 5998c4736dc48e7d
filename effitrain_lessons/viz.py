"""Lesson figures, drawn with matplotlib from measurements (never from hand-typed numbers; the
one exception is slide 3's qualitative Trainer/Accelerator chart, which places two names).

Every `plot_*` function returns a closed `Figure`: the notebook shows it once, as the cell's value
(closing it keeps pyplot from showing it a second time). Used by lessons 1 to 5.

Every word a figure or widget shows is in the lesson's language (`effitrain_lessons.i18n`): the
module's own labels are marked `N_` where they are defined and translated when drawn, and the titles
and labels a lesson passes in are translated when drawn too (text the catalog lacks stays as it is).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, Patch
from matplotlib.ticker import NullFormatter, ScalarFormatter

from effitrain_lessons.arguments import whole_numbers
from effitrain_lessons.checkpointing import SegmentSweep, StepTrace, chen_flops_ratio, chen_memory
from effitrain_lessons.i18n import N_, _, phrase
from effitrain_lessons.memory import TrainingMemory, format_bytes

# The keys are what the measurements call each status and part, and the legends' words (translated when drawn).
STATUS_COLOURS = {
    N_("stored"): "#3a9e6f",  # kept in memory from the forward pass to the backward pass
    N_("deleted"): "#d4d4d4",  # freed after the forward pass and not needed again
    N_("recomputed"): "#f08c2e",  # freed after the forward pass, computed again during the backward pass
}
MEMORY_COLOURS = {
    N_("parameters"): "#4c72b0",
    N_("gradients"): "#8172b2",
    N_("optimizer state"): "#937860",
    N_("activations"): "#f08c2e",
}

# The A + B = C graph: where each node goes, what it is called, what it does, and the edges between them.
_NODES = {
    "x": ((0.0, 0.5), "x", N_("input")),
    "A": ((1.0, 0.9), "A", N_("sin(x): cheap")),
    "B": ((1.0, 0.1), "B", N_("x @ W: costly")),
    "C": ((2.0, 0.5), "C", "A * B"),  # formulas: the same in every language
    "loss": ((3.0, 0.5), "loss", "sum(C)"),
}
_EDGES = [("x", "A"), ("x", "B"), ("A", "C"), ("B", "C"), ("C", "loss")]


def _finish(fig: Figure) -> Figure:
    plt.close(fig)
    return fig


def plot_memory_breakdown(breakdowns: Mapping[str, TrainingMemory], title: str | None = None) -> Figure:
    """Stacked bars, one per measured setting, of what training holds: parameters, gradients,
    optimizer state and activations (the part checkpointing targets)."""
    if not breakdowns:
        raise ValueError(_("plot_memory_breakdown needs at least one measured TrainingMemory, e.g. {'batch 8': ...}."))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.9 * len(breakdowns)), layout="constrained")
    labels = list(breakdowns)
    for row, label in enumerate(labels):
        left = 0.0
        for part, nbytes in breakdowns[label].parts().items():
            mib = nbytes / 2**20
            ax.barh(row, mib, left=left, color=MEMORY_COLOURS[part], edgecolor="white", height=0.6)
            if mib > 0.06 * max(m.total for m in breakdowns.values()) / 2**20:
                ax.text(left + mib / 2, row, format_bytes(nbytes), ha="center", va="center", fontsize=8, color="white")
            left += mib
    ax.set_yticks(range(len(labels)), [_(label) for label in labels])
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_title(_(title) if title else _("What one training step holds in memory (measured)"))
    handles = [Patch(color=c, label=_(p)) for p, c in MEMORY_COLOURS.items()]
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=4)
    ax.spines[["top", "right"]].set_visible(False)
    return _finish(fig)


def _draw_graph(ax, trace: StepTrace, title: str) -> None:
    statuses = {name: trace.status(name) for name in ("A", "B", "C")}
    statuses["x"] = "stored"  # the input: kept by autograd or by checkpoint, and there anyway
    kept = {r.name: r.nbytes for r in trace.kept}
    for start, end in _EDGES:
        (x0, y0), (x1, y1) = _NODES[start][0], _NODES[end][0]
        again = statuses.get(end) == "recomputed"
        ax.add_patch(
            FancyArrowPatch(
                (x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=14, shrinkA=22, shrinkB=22,
                color=STATUS_COLOURS["recomputed"] if again else "#555555", lw=2.4 if again else 1.2,
                linestyle="--" if again else "-",
            )
        )
    for name, ((x, y), label, role) in _NODES.items():
        status = statuses.get(name)
        face = STATUS_COLOURS[status] if status else "white"
        ax.add_patch(Circle((x, y), 0.2, facecolor=face, edgecolor="#333333", lw=1.2))
        ax.text(x, y, label, ha="center", va="center", fontsize=11 if len(label) < 3 else 9, weight="bold")
        note = _(role)
        if name in ("A", "B", "C"):
            if status == "recomputed":
                note += "\n" + phrase("recomputed x{times}", times=trace.recomputations(name))
            elif status == "stored":
                note += "\n" + phrase("stored ({size})", size=format_bytes(kept.get(name, 0)))
            else:
                note += "\n" + _("deleted")
        ax.text(x, y - 0.27 if y <= 0.5 else y + 0.27, note, ha="center", va="top" if y <= 0.5 else "bottom", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-0.35, 3.35)
    ax.set_ylim(-0.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")


def plot_checkpoint_graph(traces: StepTrace | Mapping[str, StepTrace], title: str | None = None) -> Figure:
    """The A + B = C graph once per traced case, side by side, coloured as measured: stored,
    deleted, or recomputed (with how many times). Panel titles give what the forward kept for the
    backward and the FLOPs relative to the first case."""
    if isinstance(traces, StepTrace):
        traces = {"": traces}
    if not traces or not all(isinstance(t, StepTrace) for t in traces.values()):
        raise TypeError(_("plot_checkpoint_graph needs traces from trace_step, e.g. {'no checkpointing': trace}."))
    base = next(iter(traces.values()))
    fig, axes = plt.subplots(1, len(traces), figsize=(4.6 * len(traces), 3.6), layout="constrained", squeeze=False)
    for ax, (name, trace) in zip(axes[0], traces.items()):
        numbers = phrase("keeps {size}, FLOPs x{ratio:.2f}", size=format_bytes(trace.kept_bytes), ratio=trace.flops / base.flops)
        _draw_graph(ax, trace, f"{_(name)}\n{numbers}" if name else numbers)
    handles = [Patch(facecolor=c, edgecolor="#333333", label=_(s)) for s, c in STATUS_COLOURS.items()]
    handles.append(Line2D([], [], color=STATUS_COLOURS["recomputed"], lw=2.4, ls="--", label=_("rerun in backward")))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=9)
    if title:
        fig.suptitle(_(title))
    return _finish(fig)


def plot_segments_tradeoff(sweep: SegmentSweep, highlight: int | None = None) -> Figure:
    """Memory (left) and compute (right) of the deep stack against the number of segments k:
    measured points, Chen et al.'s model (memory n/k + k - 1 block activations; FLOPs
    1 + (1 - 1/k)/3), and k = sqrt(n) marked. `highlight` circles one measured k and prints its numbers."""
    if not isinstance(sweep, SegmentSweep):
        raise TypeError(_("plot_segments_tradeoff needs the result of sweep_segments(...)."))
    n, ks = sweep.n_blocks, sweep.ks
    smooth = [1 + i * (n - 1) / 200 for i in range(201)]
    fig, (memory_ax, compute_ax) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")

    unit = sweep.unit_bytes / 2**10
    memory_ax.plot(smooth, [chen_memory(n, k) * unit for k in smooth], "--", color="#888888",
                   label=_("model: (n/k + k - 1) block activations"))
    memory_ax.plot(ks, [sweep.row(k).kept_bytes / 2**10 for k in ks], "o-", color=STATUS_COLOURS["stored"],
                   label=_("measured: kept for backward"))
    memory_ax.set_ylabel(_("activations kept for backward (KiB)"))

    compute_ax.plot(smooth, [chen_flops_ratio(k) for k in smooth], "--", color="#888888", label=_("model: 1 + (1 - 1/k)/3"))
    compute_ax.plot(ks, [sweep.flops_ratio(k) for k in ks], "o-", color=STATUS_COLOURS["recomputed"], label=_("measured FLOPs"))
    compute_ax.plot(ks, [sweep.seconds_ratio(k) for k in ks], "s:", color="#4c72b0", alpha=0.8, label=_("measured time"))
    compute_ax.axhline(4 / 3, color="#bbbbbb", lw=0.8)
    compute_ax.text(1, 4 / 3, " " + _("one extra forward (4/3)"), va="bottom", fontsize=8, color="#777777")
    compute_ax.set_ylabel(_("cost relative to k = 1"))

    for ax in (memory_ax, compute_ax):
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.axvline(math.sqrt(n), color="#333333", lw=1, ls=":", label=f"k = sqrt(n) = {math.sqrt(n):.3g}")
        ax.set_xlabel(phrase("segments k (n = {n} blocks)", n=n))
        ax.spines[["top", "right"]].set_visible(False)
    if highlight is not None:
        row = sweep.row(highlight)
        memory_ax.plot([highlight], [row.kept_bytes / 2**10], "o", ms=14, mfc="none", mec="black", mew=1.5)
        compute_ax.plot([highlight], [sweep.flops_ratio(highlight)], "o", ms=14, mfc="none", mec="black", mew=1.5)
        fig.suptitle(sweep.describe(highlight), fontsize=10)
    memory_ax.legend(fontsize=8, frameon=False, loc="upper center")
    compute_ax.legend(fontsize=8, frameon=False, loc="lower right")
    return _finish(fig)


def segments_explorer(sweep: SegmentSweep, k: int | None = None):
    """Show the trade-off figure with one k highlighted, and a slider that moves the highlight.

    The figure is an ordinary image output (so a static viewer, or nbval, keeps it); the slider
    redraws it in place. Returns the slider. Used by lesson 1.
    """
    import ipywidgets as widgets
    from IPython.display import display

    if k is None:
        k = min(sweep.ks, key=lambda value: abs(value - sweep.sqrt_n))
    sweep.row(k)  # a clear error for a k that was not measured
    handle = display(plot_segments_tradeoff(sweep, highlight=k), display_id=True)
    slider = widgets.SelectionSlider(options=sweep.ks, value=k, description=_("segments k"), continuous_update=False)

    def redraw(change) -> None:
        figure = plot_segments_tradeoff(sweep, highlight=change["new"])
        if handle is not None:
            handle.update(figure)

    slider.observe(redraw, names="value")
    display(slider)
    return slider


def plot_trainer_vs_accelerator() -> Figure:
    """Slide 3's chart: Trainer and Accelerator placed on ease of use and customizability.

    A qualitative picture (the slide's, not a measurement): Trainer runs the loop for you,
    Accelerator leaves the loop to you and handles devices, processes and precision. Lesson 2.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    tools = {"Trainer": (0.25, 0.8, "#4c72b0"), "Accelerator": (0.8, 0.3, "#f08c2e")}
    for name, (custom, ease, colour) in tools.items():
        ax.add_patch(Circle((custom, ease), 0.15, color=colour, alpha=0.85))
        ax.text(custom, ease, name, ha="center", va="center", color="white", fontsize=9, weight="bold")
    ax.annotate("", xy=(0.66, 0.38), xytext=(0.38, 0.7),
                arrowprops=dict(arrowstyle="->", color="#777777", lw=1.2))
    ax.text(0.56, 0.6, _("you write the loop"), fontsize=8, color="#555555", rotation=-40, ha="center")
    ax.set(xlim=(0, 1.05), ylim=(0, 1.05), xticks=[], yticks=[], aspect="equal")
    ax.set_xlabel(_("customizability") + "  \u2192")
    ax.set_ylabel(_("ease of use") + "  \u2192")
    ax.set_title(_("Trainer or Accelerator? (slide 3)"), fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    return _finish(fig)


def plot_checkpointing_cost(plain, checkpointed, title: str | None = None) -> Figure:
    """Two bar panels from two measured `memory.StepReport`s of one micro-batch: saved activation
    bytes, and time and FLOPs relative to the plain step. Lesson 2 (from `StepMeter.step_report()`)."""
    from effitrain_lessons.memory import StepReport

    if not (isinstance(plain, StepReport) and isinstance(checkpointed, StepReport)):
        raise TypeError(_("plot_checkpointing_cost needs two StepReports (for example trainer.step_report())."))
    fig, (memory_ax, cost_ax) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    names = [_("without"), _("with")]  # the x axis says what: checkpointing
    colours = [MEMORY_COLOURS["activations"], STATUS_COLOURS["stored"]]
    values = [plain.saved_bytes / 2**10, checkpointed.saved_bytes / 2**10]
    bars = memory_ax.bar(names, values, color=colours)
    memory_ax.bar_label(bars, [format_bytes(plain.saved_bytes), format_bytes(checkpointed.saved_bytes)], fontsize=9)
    memory_ax.set_ylabel(_("activations saved for backward (KiB)"))
    memory_ax.set_title(_("memory per micro-batch"), fontsize=10)

    ratio = checkpointed / plain
    x = range(2)
    width = 0.38
    flop_bars = cost_ax.bar([i - width / 2 for i in x], [1.0, ratio.flops], width, color="#8172b2", label=_("FLOPs"))
    time_bars = cost_ax.bar([i + width / 2 for i in x], [1.0, ratio.seconds], width, color="#4c72b0", label=_("time"))
    cost_ax.bar_label(flop_bars, ["1", f"{ratio.flops:.2f}"], fontsize=9)
    cost_ax.bar_label(time_bars, ["1", f"{ratio.seconds:.2f}"], fontsize=9)
    cost_ax.axhline(4 / 3, color="#bbbbbb", lw=0.8, ls="--")
    cost_ax.text(-0.45, 4 / 3, "4/3", va="bottom", fontsize=8, color="#777777")
    cost_ax.set_xticks(list(x), names)
    cost_ax.set_ylabel(_("relative to without checkpointing"))
    cost_ax.set_title(_("compute per micro-batch"), fontsize=10)
    cost_ax.legend(fontsize=8, frameon=False, loc="upper left")
    for ax in (memory_ax, cost_ax):
        ax.set_xlabel(_("checkpointing"))
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(_(title), fontsize=11)
    return _finish(fig)


def plot_loop_curves(losses, learning_rates, title: str | None = None) -> Figure:
    """Training loss (left) and learning rate (right) after each optimizer step, as measured by
    a training loop (lesson 3's `watch_training` measures both)."""
    if not losses or len(losses) != len(learning_rates):
        raise ValueError(_("plot_loop_curves needs one loss and one learning rate per optimizer step (a TrainingRun's)."))
    steps = range(1, len(losses) + 1)
    fig, (loss_ax, lr_ax) = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
    loss_ax.plot(steps, losses, color=MEMORY_COLOURS["activations"], lw=1)
    loss_ax.set_ylabel(_("training loss (mean of the micro-batches)"))
    lr_ax.plot(steps, learning_rates, color=MEMORY_COLOURS["parameters"])
    lr_ax.set_ylabel(_("learning rate"))
    for ax in (loss_ax, lr_ax):
        ax.set_xlabel(_("optimizer step"))
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(_(title), fontsize=11)
    return _finish(fig)


def plot_schedules(schedules: Mapping[str, list[float]], title: str | None = None) -> Figure:
    """Measured learning-rate schedules, one line each, against the optimizer step (lesson 3)."""
    if not schedules:
        raise ValueError(_("plot_schedules needs at least one named schedule."))
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    for (label, rates), colour in zip(schedules.items(), ("#3a9e6f", "#d1495b", "#4c72b0", "#937860")):
        ax.plot(range(1, len(rates) + 1), rates, color=colour, lw=2,
                label=phrase("{label}: ends at {rate:.2g}", label=_(label), rate=rates[-1]))
    ax.set_xlabel(_("optimizer step"))
    ax.set_ylabel(_("learning rate (peak = 1)"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(_(title), fontsize=10)
    return _finish(fig)


def plot_sync_timeline(syncs: Mapping[str, list[int]], steps: int, devices: int = 2, title: str | None = None) -> Figure:
    """Slides 7-8 as a picture: one row of compute steps per device, one panel per schedule, and a
    vertical bar wherever the devices synchronize. `syncs` maps a label to the steps (1-based) after
    which that schedule communicated; lesson 4 draws the rule first, then the measured steps."""
    if not syncs:
        raise ValueError(_("plot_sync_timeline needs at least one schedule of synchronization steps."))
    fig, axes = plt.subplots(len(syncs), 1, figsize=(10, 1.1 + 0.45 * devices * len(syncs)), layout="constrained",
                             squeeze=False)
    for ax, (label, at) in zip(axes[:, 0], syncs.items()):
        for device in range(devices):
            ax.barh(device, [0.8] * steps, left=[s - 0.9 for s in range(1, steps + 1)], height=0.6,
                    color=MEMORY_COLOURS["parameters"], alpha=0.75)
        for step in at:
            if 1 <= step <= steps:
                ax.axvline(step + 0.0, color=STATUS_COLOURS["recomputed"], lw=2.5)
        ax.set_yticks(range(devices), [phrase("device {number}", number=d) for d in range(devices)])
        ax.set_xlim(0, steps + 0.5)
        ax.set_title(phrase("{label}: {count} synchronizations in {steps} steps",
                            label=_(label), count=len([s for s in at if 1 <= s <= steps]), steps=steps),
                     fontsize=9, loc="left")
        ax.spines[["top", "right", "left"]].set_visible(False)
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel(_("training step (blue: compute; orange: all-reduce)"))
    if title:
        fig.suptitle(_(title), fontsize=11)
    return _finish(fig)


def plot_local_sgd_sweep(rows: list[Mapping], baseline: Mapping, title: str | None = None) -> Figure:
    """Lesson 4's results against K: synchronizations and megabytes all-reduced per process (left),
    final validation loss (the loss the lesson's tolerance is about) and validation accuracy (right),
    with data parallel as dashed lines.
    `rows` are dicts with k, synchronizations, megabytes, eval_loss, eval_accuracy; `baseline` the same
    for data parallel (its k is ignored)."""
    if not rows:
        raise ValueError(_("plot_local_sgd_sweep needs at least one Local SGD row."))
    ks = [row["k"] for row in rows]
    fig, (comm_ax, loss_ax) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    comm_ax.plot(ks, [row["synchronizations"] for row in rows], "o-", color=STATUS_COLOURS["recomputed"], label=_("synchronizations"))
    comm_ax.axhline(baseline["synchronizations"], color=STATUS_COLOURS["recomputed"], ls="--", lw=1, label=_("data parallel"))
    comm_ax.set_ylabel(_("synchronizations per process"))
    bytes_ax = comm_ax.twinx()
    bytes_ax.plot(ks, [row["megabytes"] for row in rows], "s:", color=MEMORY_COLOURS["parameters"], label=_("MB all-reduced"))
    bytes_ax.axhline(baseline["megabytes"], color=MEMORY_COLOURS["parameters"], ls="--", lw=1)
    bytes_ax.set_ylabel(_("MB all-reduced per process"))
    for ax in (comm_ax, bytes_ax):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    handles = comm_ax.get_legend_handles_labels()[0] + bytes_ax.get_legend_handles_labels()[0]
    comm_ax.legend(handles=handles, fontsize=8, frameon=False, loc="lower left")
    comm_ax.set_title(_("communication"), fontsize=10)

    loss_ax.plot(ks, [row["eval_loss"] for row in rows], "o-", color=MEMORY_COLOURS["activations"], label=_("validation loss"))
    loss_ax.axhline(baseline["eval_loss"], color=MEMORY_COLOURS["activations"], ls="--", lw=1)
    loss_ax.set_ylabel(_("final validation loss"))
    accuracy_ax = loss_ax.twinx()
    accuracy_ax.plot(ks, [row["eval_accuracy"] for row in rows], "s:", color=STATUS_COLOURS["stored"], label=_("validation accuracy"))
    accuracy_ax.axhline(baseline["eval_accuracy"], color=STATUS_COLOURS["stored"], ls="--", lw=1)
    accuracy_ax.set_ylabel(_("validation accuracy"))
    handles = loss_ax.get_legend_handles_labels()[0] + accuracy_ax.get_legend_handles_labels()[0]
    loss_ax.legend(handles=handles, fontsize=8, frameon=False, loc="best")
    loss_ax.set_title(_("what it costs in quality (dashed: data parallel)"), fontsize=10)
    for ax in (comm_ax, loss_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("K (local_sgd_steps)")  # a symbol and a parameter's name: no words to translate
        ax.spines[["top"]].set_visible(False)
    if title:
        fig.suptitle(_(title), fontsize=11)
    return _finish(fig)


def local_sgd_explorer(run, figure, ks=(1, 2, 4, 8, 16, 32), processes=(2, 3, 4), k: int = 8, num_processes: int = 2):
    """A K slider and a process-count menu above a figure: changing either calls
    `run(k, num_processes)`, which must return a new Figure, and shows it in place of the old one.
    `figure` is shown first (a static image stays where widgets cannot render). Used by lesson 4."""
    import ipywidgets as widgets

    slider = widgets.SelectionSlider(options=list(ks), value=k, description="K", continuous_update=False)
    menu = widgets.Dropdown(options=list(processes), value=num_processes, description=_("processes"))
    return _rerun_explorer(run, figure, [slider, menu], _("Move K or change the number of processes to run again."),
                           lambda k, n: phrase("running K={k} on {processes} processes...", k=k, processes=n),
                           lambda k, n: phrase("K={k}, {processes} processes: measured just now.", k=k, processes=n))


def _rerun_explorer(run, figure, controls: list, waiting: str, running, measured):
    """Show `figure`, then `controls` in a row above a status line; changing any control calls
    `run(*values)` and shows the Figure it returns in place of the old one. `running(*values)` and
    `measured(*values)` are the status before and after a run; a RuntimeError or ValueError from
    `run` (a launch that failed, a setting it refused) becomes the status. Returns the widget box."""
    import ipywidgets as widgets
    from IPython.display import display

    handle = display(figure, display_id=True)
    status = widgets.Label(value=waiting)

    def rerun(_change) -> None:
        values = [control.value for control in controls]
        status.value = running(*values)
        try:
            new = run(*values)
        except (RuntimeError, ValueError) as error:
            status.value = str(error)
            return
        if handle is not None:
            handle.update(new)
        status.value = measured(*values)

    for control in controls:
        control.observe(rerun, names="value")
    box = widgets.VBox([widgets.HBox(controls), status])
    display(box)
    return box


def _memory_over_step(n_layers: int, segments: int) -> list[tuple[str, int]]:
    """(phase, activations held in layers' worth) after each layer computation of one step; a
    phase is "forward", "recompute" or "backward". One segment is the plain step."""
    size = n_layers // segments
    timeline = []
    for layer in range(1, n_layers + 1):  # forward: a checkpointed step keeps only segment inputs
        segment_inputs = -(-layer // size)
        timeline.append(("forward", layer if segments == 1 else segment_inputs + 1))
    for segment in range(segments, 0, -1):
        held = segment - 1 if segments > 1 else 0  # inputs of the earlier segments
        if segments > 1:
            timeline += [("recompute", held + 1 + r) for r in range(1, size + 1)]
        timeline += [("backward", held + r) for r in range(size - 1, -1, -1)]
    return timeline


def draw_checkpointing_memory(n_layers: int = 12, segments: int = 3) -> Figure:
    """A drawn (not measured) picture of one training step: activations held over time, without
    checkpointing and with the layers cut into `segments` checkpointed segments. Used by lesson 1.

    Without, memory climbs with every layer of the forward pass and falls in the backward pass.
    With, the forward pass keeps only each segment's input; the backward pass recomputes one segment
    at a time (orange), so the peak is about n/k + k and the step is one forward pass longer."""
    whole_numbers(n_layers=n_layers, segments=segments)
    if segments < 2 or n_layers % segments:
        raise ValueError(phrase("segments must divide n_layers and be at least 2, got {segments} for {n_layers} layers.",
                                segments=segments, n_layers=n_layers))
    colours = {N_("forward"): "#4c72b0", N_("recompute"): STATUS_COLOURS["recomputed"], N_("backward"): STATUS_COLOURS["stored"]}
    cases = {_("without checkpointing"): 1, phrase("checkpointing, {segments} segments", segments=segments): segments}
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True, layout="constrained")
    longest = 2 * n_layers + n_layers
    for ax, (title, k) in zip(axes, cases.items()):
        timeline = _memory_over_step(n_layers, k)
        for t, (phase, held) in enumerate(timeline):
            ax.bar(t + 0.5, held, width=1.0, color=colours[phase], edgecolor="white", linewidth=0.5)
        peak = max(held for _phase, held in timeline)
        ax.axhline(peak, color="#333333", lw=0.8, ls=":")
        ax.text(len(timeline), peak, phrase("peak {peak}", peak=peak), ha="right", va="bottom", fontsize=9)
        ax.set_xlim(0, longest)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(phrase("time: layer computations ({count} in this step)", count=len(timeline)))
        ax.spines[["top", "right"]].set_visible(False)
    axes[0].set_ylabel(_("activations held (layers' worth)"))
    handles = [Patch(color=c, label=_(phase)) for phase, c in colours.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False, fontsize=9)
    fig.suptitle(phrase("A drawing, not a measurement: {n_layers} layers, one step", n_layers=n_layers), fontsize=10)
    return _finish(fig)


def _sync_marks(k: int | None, steps: int) -> list[int]:
    """The steps after which the processes communicate: every step (k None), or every k steps."""
    return list(range(1, steps + 1)) if k is None else list(range(k, steps + 1, k))


def draw_data_parallel_and_local_sgd(k: int = 4, steps: int = 8, devices: int = 2) -> Figure:
    """A drawn (not measured) picture of what crosses the network: data parallel all-reduces the
    gradients at every step, so every copy takes the same step; Local SGD lets each copy take its own
    steps (the copies drift apart, drawn as diverging rows) and averages the parameters every k steps.
    Used by lesson 4 before it measures the same thing."""
    whole_numbers(k=k, steps=steps, devices=devices)
    if devices < 2:
        raise ValueError(phrase("devices must be at least 2 to have something to synchronize, got {devices}.", devices=devices))
    cases = {_("data parallel (DDP): gradients all-reduced every step"): None,
             phrase("Local SGD, K = {k}: parameters averaged every {k} steps", k=k): k}
    fig, axes = plt.subplots(len(cases), 1, figsize=(10, 1.3 + 0.55 * devices * len(cases)), layout="constrained")
    for ax, (title, every) in zip(axes, cases.items()):
        marks = _sync_marks(every, steps)
        for device in range(devices):
            drift = 0.0
            for step in range(1, steps + 1):
                # between averages each copy moves its own way; an average brings them together again
                offset = 0.0 if every is None else drift * (device - (devices - 1) / 2) * 0.12
                ax.add_patch(plt.Rectangle((step - 0.9, device + offset - 0.25), 0.8, 0.5,
                                           color=MEMORY_COLOURS["parameters"], alpha=0.75))
                drift = 0.0 if step in marks else drift + 1
        for step in marks:
            ax.add_patch(FancyArrowPatch((step, -0.4), (step, devices - 0.6), arrowstyle="<->", mutation_scale=12,
                                         color=STATUS_COLOURS["recomputed"], lw=2))
        if every is None:
            what = phrase("{count} all-reduces\nof the gradients", count=len(marks))
        else:
            what = phrase("{count} all-reduces\nof the parameters", count=len(marks))
        ax.text(steps + 0.3, (devices - 1) / 2, what, va="center", fontsize=9)
        ax.set_yticks(range(devices), [phrase("process {number}", number=d) for d in range(devices)])
        ax.set_xticks(range(1, steps + 1))
        ax.set_xlim(0, steps + 2.2)
        ax.set_ylim(devices - 0.2, -0.8)
        ax.set_title(title, fontsize=10, loc="left")
        ax.spines[["top", "right", "left"]].set_visible(False)
    axes[-1].set_xlabel(_("training step (blue: a copy's forward, backward and optimizer step; orange: an all-reduce)"))
    fig.suptitle(_("A drawing, not a measurement"), fontsize=10)
    return _finish(fig)


def plot_loss_against_bytes(rows: list[Mapping], title: str | None = None) -> Figure:
    """Final validation loss against the megabytes each process all-reduced, one point per run
    (lesson 4's explore exercise): the price of communication, in loss. `rows` are
    `local_sgd.summary` dicts; each point is labelled with its run."""
    if not rows:
        raise ValueError(_("plot_loss_against_bytes needs at least one run's summary."))
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    for row in rows:
        colour = MEMORY_COLOURS["parameters"] if row["k"] is None else STATUS_COLOURS["recomputed"]
        ax.scatter(row["megabytes"], row["eval_loss"], color=colour, zorder=3)
        ax.annotate(_(row["run"]), (row["megabytes"], row["eval_loss"]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(_("MB all-reduced per process (log scale)"))
    ax.set_ylabel(_("final validation loss"))
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(_(title), fontsize=10)
    return _finish(fig)


def _wrapped(text: str, width: int) -> str:
    """`text` broken into lines of about `width` characters, so a longer language grows down, not out."""
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def draw_diloco(h: int = 4, rounds: int = 2, workers: int = 2) -> Figure:
    """A drawn (not measured) picture of DiLoCo's two optimizers. One lane per worker (gid
    "worker-lane"): each round the worker loads the global parameters θ and takes H inner steps (AdamW)
    on its own data, drifting away from θ; then the pseudo-gradients θ − θᵢ are all-reduced and the
    outer step (SGD with Nesterov momentum, gid "outer-step") moves θ on the global lane, which every
    worker loads for the next round. Used by lesson 5 before it measures the same thing."""
    whole_numbers(h=h, rounds=rounds, workers=workers)
    if workers < 2:
        raise ValueError(phrase("workers must be at least 2 to have something to synchronize, got {workers}.",
                                workers=workers))
    inner, outer, load = MEMORY_COLOURS["parameters"], STATUS_COLOURS["recomputed"], "#777777"
    fig, ax = plt.subplots(figsize=(10, 1.9 + 0.75 * workers), layout="constrained")
    span = h + 2  # one round: load θ, H inner steps, the all-reduce into the outer step
    end = rounds * span
    ax.plot([0, end], [0, 0], color="#333333", lw=2, gid="global-lane")
    for worker in range(1, workers + 1):
        ax.plot([0, end], [worker, worker], color="#e4e4e4", lw=1, zorder=0, gid="worker-lane")
    ax.plot([0], [0], marker="o", markersize=8, mfc="white", mec="#333333", linestyle="none")
    for round_ in range(rounds):
        start = round_ * span  # where θ is when the round begins
        for worker in range(1, workers + 1):
            # a worker's own data takes it its own way: the copies fan out from the θ they all loaded
            drift = 0.76 * (worker - (workers + 1) / 2) / max(workers - 1, 1) / h
            ax.add_patch(FancyArrowPatch((start, 0), (start + 1, worker), arrowstyle="-|>", mutation_scale=8,
                                         color=load, lw=1, linestyle="--", shrinkA=4, shrinkB=0))
            for step in range(h):
                ax.add_patch(FancyArrowPatch((start + 1 + step, worker + drift * step),
                                             (start + 2 + step, worker + drift * (step + 1)), arrowstyle="-|>",
                                             mutation_scale=7, color=inner, lw=1.2, shrinkA=0, shrinkB=0,
                                             gid="inner-step"))
            ax.add_patch(FancyArrowPatch((start + 1 + h, worker + drift * h), (start + span, 0), arrowstyle="-|>",
                                         mutation_scale=9, color=outer, lw=1.6, shrinkA=0, shrinkB=7))
        ax.plot([start + span], [0], marker="o", markersize=11, color=outer, linestyle="none", gid="outer-step")
        ax.text(start + span, -0.3, phrase("outer step {number}", number=round_ + 1), ha="center", va="bottom",
                fontsize=8)
    labels = [_("global parameters θ")] + [phrase("worker {number}: H = {h} inner steps (AdamW)", number=w, h=h)
                                           for w in range(workers)]
    ax.set_yticks(range(workers + 1), [_wrapped(label, 22) for label in labels], fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    ax.set_xlim(-0.4, end + 0.6)
    ax.set_ylim(workers + 0.55, -0.75)
    ax.spines[["top", "right", "left", "bottom"]].set_visible(False)
    legend = {_("inner step: AdamW on the worker's own data"): dict(color=inner, lw=1.2, marker=">", markersize=4),
              _("all-reduce the pseudo-gradient Δ = θ − θᵢ (averaged)"): dict(color=outer, lw=1.6),
              _("outer step: SGD with Nesterov momentum"): dict(color=outer, marker="o", markersize=8, linestyle="none"),
              _("every worker loads θ"): dict(color=load, lw=1, linestyle="--")}
    handles = [Line2D([], [], label=_wrapped(label, 28), **style) for label, style in legend.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=8)
    fig.suptitle(phrase("A drawing, not a measurement: {rounds} rounds of DiLoCo, {workers} workers, H = {h}",
                        rounds=rounds, workers=workers, h=h), fontsize=10)
    return _finish(fig)


def _trailing_mean(values: list[float], window: int) -> list[float]:
    """The mean of each value and the ones before it, at most `window` in all."""
    means, total = [], 0.0
    for index, value in enumerate(values):
        total += value - (values[index - window] if index >= window else 0.0)
        means.append(total / min(index + 1, window))
    return means


def plot_diloco_losses(curves: Mapping[str, list[float]], outer_steps: Mapping[str, list[int]] | None = None,
                       title: str | None = None) -> Figure:
    """The training loss of each run against the step: faint step by step, bold as a trailing mean of
    8 steps (gid "smoothed"), and a row of ticks along the bottom (gid "outer-steps"), in the run's
    colour, at each step listed in `outer_steps[label]`: where that run synchronized. `curves` maps
    a run's label (its legend entry) to its losses. Used by lesson 5 and its explorer."""
    if not curves:
        raise ValueError(_("plot_diloco_losses needs at least one run's losses."))
    for label, losses in curves.items():
        if not losses:
            raise ValueError(phrase("plot_diloco_losses needs at least one loss per run; {label} has none.", label=label))
    outer_steps = outer_steps or {}
    colours = ("#4c72b0", "#f08c2e", "#3a9e6f", "#d1495b", "#8172b2", "#937860")
    fig, ax = plt.subplots(figsize=(9, 3.8), layout="constrained")
    ticked = [label for label in curves if outer_steps.get(label)]
    for index, (label, losses) in enumerate(curves.items()):
        colour = colours[index % len(colours)]
        steps = range(1, len(losses) + 1)
        ax.plot(steps, losses, color=colour, alpha=0.25, lw=0.8)
        ax.plot(steps, _trailing_mean(list(losses), 8), color=colour, lw=2, label=label, gid="smoothed")
        if label in ticked:  # one row of ticks per run that synchronized, in axes height so any loss scale fits
            row = 0.03 + 0.045 * ticked.index(label)
            at = [step for step in outer_steps[label] if 1 <= step <= len(losses)]
            ax.plot(at, [row] * len(at), transform=ax.get_xaxis_transform(), linestyle="none", marker="|",
                    markersize=8, mew=1.5, color=colour, gid="outer-steps")
    if ticked:  # room under the curves for the rows of ticks, and no loss values beside them
        low, high = ax.get_ylim()
        values = [value for value in ax.get_yticks() if low <= value <= high]
        strip = 0.05 + 0.045 * len(ticked)
        ax.set_ylim(low - (high - low) * strip / (1 - strip), high)
        ax.set_yticks(values)
        what = _("training step (faint: each step; bold: mean of the last 8 steps; ticks: where a run synchronized)")
    else:
        what = _("training step (faint: each step; bold: mean of the last 8 steps)")
    ax.set_xlim(0, max(len(losses) for losses in curves.values()) + 1)
    ax.set_xlabel(_wrapped(what, 100), fontsize=9)
    ax.set_ylabel(_("training loss"))
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(_(title), fontsize=10)
    return _finish(fig)


def diloco_explorer(run, figure, hs=(4, 8, 16, 32, 64), outer_lrs=(0.1, 0.3, 0.5, 0.7, 1.0), h: int = 32,
                    outer_lr: float = 0.7):
    """An H slider and an outer-learning-rate slider above a figure: moving either calls
    `run(h, outer_lr)`, which must return a new Figure, and shows it in place of the old one.
    `figure` is shown first (a static image stays where widgets cannot render). Used by lesson 5."""
    import ipywidgets as widgets

    h_slider = widgets.SelectionSlider(options=list(hs), value=h, description="H", continuous_update=False)
    lr_slider = widgets.SelectionSlider(options=list(outer_lrs), value=outer_lr, description=_("outer lr"),
                                        continuous_update=False)
    return _rerun_explorer(run, figure, [h_slider, lr_slider], _("Move H or the outer learning rate to run again."),
                           lambda h, lr: phrase("running H={h}, outer lr {lr:g}...", h=h, lr=lr),
                           lambda h, lr: phrase("H={h}, outer lr {lr:g}: measured just now.", h=h, lr=lr))


# ---------------------------------------------------------------------------------------------
# Lesson 6: will it fit? The planner's estimates against a GPU's memory

# The keys are the planner's line names (effitrain_lessons.plan), the legend's words (translated when drawn).
PLAN_COLOURS = {
    N_("parameters"): MEMORY_COLOURS["parameters"],
    N_("fp32 master weights"): "#64b5cd",
    N_("gradients"): MEMORY_COLOURS["gradients"],
    N_("optimizer state"): MEMORY_COLOURS["optimizer state"],
    N_("activations"): MEMORY_COLOURS["activations"],
    N_("one layer recomputed"): "#d1495b",
    N_("not modelled (allowance)"): "#d4d4d4",
}


def plot_memory_estimates(estimates, labels=None, gpu=None, title: str | None = None) -> Figure:
    """Stacked bars, one per `effitrain_lessons.plan.Estimate`, of what one training step needs, line by
    line (parameters, master weights, gradients, optimizer state, activations, the recomputed layer, the
    allowance; gid "memory-line"), in GiB, each bar's total at its end, in red where it passes `gpu`'s
    memory (a preset such as "T4", or a size), drawn as a dashed line (gid "gpu-memory"). `labels` name
    the bars (default: each estimate's setup). Used by lesson 6 and `plan_explorer`."""
    from effitrain_lessons.plan import GPUS, describe, memory_of

    estimates = list(estimates)
    if not estimates:
        raise ValueError(_("plot_memory_estimates needs at least one estimate, e.g. [estimate(\"bert-base-uncased\")]."))
    labels = [describe(e) for e in estimates] if labels is None else [_(label) for label in labels]
    if len(labels) != len(estimates):
        raise ValueError(phrase("plot_memory_estimates has {estimates} estimates and {labels} labels: give one label each.",
                                estimates=len(estimates), labels=len(labels)))
    limit = None if gpu is None else memory_of(gpu)
    gib = 2**30
    longest = max([e.total for e in estimates] + [limit or 0]) / gib
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.55 * len(estimates)), layout="constrained")
    for row, estimate in enumerate(estimates):
        left = 0.0
        for line in estimate.lines:
            width = line.nbytes / gib
            ax.barh(row, width, left=left, height=0.62, color=PLAN_COLOURS.get(line.name, "#999999"),
                    edgecolor="white", linewidth=0.6, hatch=None if line.modelled else "//", gid="memory-line")
            left += width
        over = limit is not None and estimate.total > limit
        ax.text(left + 0.01 * longest, row, format_bytes(estimate.total), va="center", fontsize=8,
                color="#cf222e" if over else "#333333", fontweight="bold" if over else "normal",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    if limit is not None:
        presets = {name.lower(): name for name in GPUS}
        name = presets.get(str(gpu).lower(), format_bytes(limit))
        ax.axvline(limit / gib, color="#333333", ls="--", lw=1.2, gid="gpu-memory")
        ax.text(limit / gib, -0.62, phrase("{gpu}: {memory}", gpu=name, memory=format_bytes(limit)),
                ha="center", va="center", fontsize=8, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_yticks(range(len(labels)), [_wrapped(label, 36) for label in labels], fontsize=8)
    ax.set_ylim(len(estimates) - 0.4, -0.95)
    ax.set_xlim(0, longest * 1.14)
    ax.set_xlabel("GiB")
    ax.set_title(_(title) if title else _("What one training step needs (estimated)"), fontsize=10)
    shown = [name for name in PLAN_COLOURS if any(e.bytes_of(name) for e in estimates)]
    handles = [Patch(facecolor=PLAN_COLOURS[name], hatch="//" if name == "not modelled (allowance)" else None,
                     edgecolor="white", label=_(name)) for name in shown]
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=min(4, len(handles)))
    ax.spines[["top", "right"]].set_visible(False)
    return _finish(fig)


def _plan_figure(model, gpu, settings) -> tuple[Figure, str]:
    """The explorer's picture and status: the setting, and beside it the largest micro-batch that fits."""
    from dataclasses import replace

    from effitrain_lessons.plan import estimate, verdict

    judged = verdict(model, gpu, settings)
    estimates, labels = [judged.estimate], [phrase("batch {batch}, sequence {seq}", batch=settings.batch, seq=settings.seq)]
    largest = judged.largest_micro_batch
    if largest and largest != settings.batch:
        estimates.append(estimate(model, replace(settings, batch=largest, accumulation=1)))
        labels.append(phrase("the largest micro-batch that fits: {largest}", largest=largest))
    title = phrase("{model}, {precision}, {attention} attention, checkpointing {checkpointing}", model=judged.estimate.model.name,
                   precision=settings.precision, attention=settings.attention,
                   checkpointing=_("on") if settings.checkpointing else _("off"))
    status = judged.sentence() if largest else phrase("{sentence} Not even a micro-batch of 1 fits.", sentence=judged.sentence())
    return plot_memory_estimates(estimates, labels, gpu=gpu, title=title), status


def plan_explorer(model: str = "bert-base-uncased", gpu: str = "T4", batch: int = 32, seq: int = 512,
                  precision: str = "fp32", attention: str = "eager", checkpointing: bool = False):
    """Menus for the model (the bundled configs), the GPU, the precision and the attention, sliders for
    the batch and the sequence length, and a checkpointing box, above the estimate's stacked bars
    against the GPU's memory (`plot_memory_estimates`) and, beside them, the largest micro-batch that
    fits. Every change redraws at once (an estimate takes milliseconds); the status line says whether
    it fits and what would make it fit. The first figure is an ordinary image, so a static viewer
    keeps it. Returns the widget box. Used by lesson 6."""
    import ipywidgets as widgets
    from IPython.display import display

    from effitrain_lessons.plan import ATTENTIONS, GPUS, PRECISIONS, Settings, bundled_models

    batches = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, batch})
    seqs = sorted({128, 256, 512, 1024, 2048, seq})
    controls = {
        "model": widgets.Dropdown(options=bundled_models(), value=model, description=_("model")),
        "gpu": widgets.Dropdown(options=list(GPUS), value=gpu, description="GPU"),
        "batch": widgets.SelectionSlider(options=batches, value=batch, description=_("batch"), continuous_update=False),
        "seq": widgets.SelectionSlider(options=seqs, value=seq, description=_("sequence"), continuous_update=False),
        "precision": widgets.Dropdown(options=list(PRECISIONS), value=precision, description=_("precision")),
        "attention": widgets.Dropdown(options=list(ATTENTIONS), value=attention, description=_("attention")),
        "checkpointing": widgets.Checkbox(value=checkpointing, description=_("checkpointing")),
    }

    def current() -> tuple[Figure, str]:
        values = {name: control.value for name, control in controls.items()}
        settings = Settings(batch=values["batch"], seq=values["seq"], precision=values["precision"],
                            attention=values["attention"], checkpointing=values["checkpointing"])
        return _plan_figure(values["model"], values["gpu"], settings)

    figure, said = current()
    handle = display(figure, display_id=True)
    status = widgets.Label(value=said)

    def redraw(_change) -> None:
        try:
            new, text = current()
        except ValueError as error:  # a setting the planner refuses: say it, keep the last figure
            status.value = str(error)
            return
        if handle is not None:
            handle.update(new)
        status.value = text

    for control in controls.values():
        control.observe(redraw, names="value")
    names = list(controls.values())
    box = widgets.VBox([widgets.HBox(names[:4]), widgets.HBox(names[4:]), status])
    display(box)
    return box


# ---------------------------------------------------------------------------------------------
# Lesson 6: what to recompute, measured memory against FLOPs


def plot_recompute_pareto(curve, title: str | None = None) -> Figure:
    """Activation memory kept for the backward (MiB) against the FLOPs of a step (GFLOP), one point
    per measured `recompute.RecomputePoint`: the eager points (gid "eager-point") labelled with their
    names, the compiled ones joined by a line in the order of their budget (gid "budget-line") and
    labelled with it, the Pareto-optimal points ringed (gid "pareto"), and a cross (gid
    "redraws-random") on compiled points whose backward draws dropout's random numbers again.
    `curve` is a `RecomputeCurve` or its points. Used by lesson 6."""
    from effitrain_lessons.recompute import RecomputeCurve

    curve = curve if isinstance(curve, RecomputeCurve) else RecomputeCurve(tuple(curve))
    eager = [p for p in curve.points if not p.compiled]
    compiled = sorted((p for p in curve.points if p.compiled), key=lambda p: p.budget)
    fig, ax = plt.subplots(figsize=(8.5, 4.6), layout="constrained")

    def where(p):
        return p.flops / 1e9, p.saved_bytes / 2**20

    if compiled:
        ax.plot([where(p)[0] for p in compiled], [where(p)[1] for p in compiled], "o-",
                color=STATUS_COLOURS["recomputed"], ms=6, label=_("torch.compile, one activation memory budget per point"),
                gid="budget-line")
        for p in compiled:
            ax.annotate(f"{p.budget:g}", where(p), textcoords="offset points", xytext=(-9, -5), ha="right", va="top",
                        fontsize=8, color="#a65a14")
    for colour, p in zip(("#4c72b0", STATUS_COLOURS["stored"], "#8172b2", "#937860", "#d1495b"), eager):
        ax.plot(*where(p), "s", color=colour, ms=8, zorder=3, gid="eager-point")
        ax.annotate(_wrapped(p.name(), 28), where(p), textcoords="offset points", xytext=(9, 5), fontsize=8,
                    color=colour)
    optimal = curve.optimal()
    ax.plot([where(p)[0] for p in optimal], [where(p)[1] for p in optimal], "o", ms=15, mfc="none", mec="#333333",
            mew=1.2, linestyle="none", label=_("Pareto-optimal: nothing keeps less for no more FLOPs"), gid="pareto")
    redrawn = [p for p in curve.points if p.redraws_random]
    if redrawn:
        ax.plot([where(p)[0] for p in redrawn], [where(p)[1] for p in redrawn], "x", color="#d1495b", ms=9, mew=2,
                linestyle="none", zorder=4, label=_("backward redraws dropout's random numbers: wrong gradients"),
                gid="redraws-random")
    low, high = ax.get_xlim()
    ax.set_xlim(low, high + 0.25 * (high - low))  # room for the labels on the right
    ax.set_xlabel(_("FLOPs of one step, forward + backward (GFLOP, matrix products)"))
    ax.set_ylabel(_("activations kept for backward (MiB)"))
    ax.set_title(_(title) if title else _("What to recompute: memory against compute (measured)"), fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    ax.spines[["top", "right"]].set_visible(False)
    return _finish(fig)
