"""Lesson 1's figures: what training holds, the A + B = C graph as measured, the segments trade-off.

Used by lesson 1 (gradient checkpointing from first principles), beside `checkpointing`, which
measures what they draw (and `tracing`, whose traces the graph is coloured by). Every `plot_*`
and `draw_*` function returns a closed `Figure` (`plotting.finish`); `segments_explorer` adds a
slider. Drawn from measurements, except `draw_checkpointing_memory`, a drawing that says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, Patch
from matplotlib.ticker import MaxNLocator

from effitrain_lessons.first_principles.checkpointing import (
    SegmentSweep,
    chen_flops_ratio,
    chen_memory,
    times_ratio,
)
from effitrain_lessons.first_principles.reports import batch_label
from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.memory import TrainingMemory, format_bytes
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish
from effitrain_lessons.shared.tracing import StepTrace

TIME_COLOUR = "#4c72b0"  # the measured time, beside the FLOPs (STATUS_COLOURS["recomputed"])

# The A + B = C graph: where each node goes, what it is called, what it does, and the edges between them.
_NODES = {
    "x": ((0.0, 0.5), "x", N_("input")),
    "A": ((1.0, 0.9), "A", N_("sin(x): cheap")),
    "B": ((1.0, 0.1), "B", N_("x @ W: costly")),
    "C": ((2.0, 0.5), "C", "A * B"),  # formulas: the same in every language
    "loss": ((3.0, 0.5), "loss", "sum(C)"),
}
_EDGES = [("x", "A"), ("x", "B"), ("A", "C"), ("B", "C"), ("C", "loss")]


def plot_memory_breakdown(breakdowns: Mapping[int | str, TrainingMemory], title: str | None = None) -> Figure:
    """Stacked bars, one per measured setting, of what training holds: parameters, gradients,
    optimizer state and activations (the part checkpointing targets). A setting is a batch size
    (an int, labelled "batch 8") or a label."""
    if not breakdowns:
        raise ValueError(
            _("plot_memory_breakdown needs at least one measured TrainingMemory, e.g. {'batch 8': ...}.")
        )
    fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.9 * len(breakdowns)), layout="constrained")
    labels = list(breakdowns)
    for row, label in enumerate(labels):
        left = 0.0
        for part, nbytes in breakdowns[label].parts().items():
            mib = nbytes / 2**20
            ax.barh(row, mib, left=left, color=MEMORY_COLOURS[part], edgecolor="white", height=0.6)
            if mib > 0.1 * max(m.total for m in breakdowns.values()) / 2**20:  # room for its label
                ax.text(
                    left + mib / 2,
                    row,
                    format_bytes(nbytes),
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white",
                )
            left += mib
    ax.set_yticks(range(len(labels)), [batch_label(label) for label in labels])
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_title(_(title) if title else _("What one training step holds in memory (measured)"))
    handles = [Patch(color=c, label=_(p)) for p, c in MEMORY_COLOURS.items()]
    fig.legend(handles=handles, loc="outside lower center", fontsize=9, frameon=False, ncols=4)
    ax.spines[["top", "right"]].set_visible(False)
    return finish(fig)


def _draw_graph(ax, trace: StepTrace, title: str) -> None:
    statuses = {name: trace.status(name) for name in ("A", "B", "C")}
    statuses["x"] = "stored"  # the input: kept by autograd or by checkpoint, and there anyway
    kept = {r.name: r.nbytes for r in trace.kept}
    for start, end in _EDGES:
        (x0, y0), (x1, y1) = _NODES[start][0], _NODES[end][0]
        again = statuses.get(end) == "recomputed"
        ax.add_patch(
            FancyArrowPatch(
                (x0, y0),
                (x1, y1),
                arrowstyle="-|>",
                mutation_scale=14,
                shrinkA=22,
                shrinkB=22,
                color=STATUS_COLOURS["recomputed"] if again else "#555555",
                lw=2.4 if again else 1.2,
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
        ax.text(
            x,
            y - 0.27 if y <= 0.5 else y + 0.27,
            note,
            ha="center",
            va="top" if y <= 0.5 else "bottom",
            fontsize=9,
        )
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlim(-0.35, 3.35)
    ax.set_ylim(-0.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")


def plot_checkpoint_graph(traces: StepTrace | Mapping[str, StepTrace], title: str | None = None) -> Figure:
    """The A + B = C graph once per traced case, side by side, coloured as measured: stored,
    deleted, or recomputed (with how many times). Panel titles give what the forward kept for the
    backward and the FLOPs relative to the first case. One panel a row: legible at about 7 inches."""
    if isinstance(traces, StepTrace):
        traces = {"": traces}
    if not traces or not all(isinstance(t, StepTrace) for t in traces.values()):
        raise TypeError(
            _("plot_checkpoint_graph needs traces from trace_step, e.g. {'no checkpointing': trace}.")
        )
    base = next(iter(traces.values()))
    fig, axes = plt.subplots(
        len(traces), 1, figsize=(7, 0.6 + 2.7 * len(traces)), layout="constrained", squeeze=False
    )
    for ax, (name, trace) in zip(axes[:, 0], traces.items()):
        numbers = phrase(
            "keeps {size}, FLOPs x{ratio:.2f}",
            size=format_bytes(trace.kept_bytes),
            ratio=trace.flops / base.flops,
        )
        _draw_graph(ax, trace, f"{_(name)}: {numbers}" if name else numbers)
    handles = [Patch(facecolor=c, edgecolor="#333333", label=_(s)) for s, c in STATUS_COLOURS.items()]
    handles.append(
        Line2D([], [], color=STATUS_COLOURS["recomputed"], lw=2.4, ls="--", label=_("rerun in backward"))
    )
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=9)
    if title:
        fig.suptitle(_(title), fontsize=11)
    return finish(fig)


def plot_segments_tradeoff(sweep: SegmentSweep, highlight: int | None = None) -> Figure:
    """Memory (left), and FLOPs and time (right), of the deep stack against the number of segments k,
    each relative to k = 1: measured points, Chen et al.'s model (memory n/k + k - 1 block
    activations; FLOPs 1 + (1 - 1/k)/3), and k = sqrt(n) marked. The time is the median of the timed
    steps, its error bar the lowest to the highest ratio the middle halves allow (shared/timing.py).
    The title says the trade at the k that keeps least. `highlight` circles one measured k and gives
    its numbers."""
    if not isinstance(sweep, SegmentSweep):
        raise TypeError(_("plot_segments_tradeoff needs the result of sweep_segments(...)."))
    n, ks = sweep.n_blocks, sweep.ks
    smooth = [1 + i * (n - 1) / 200 for i in range(201)]
    fig, (memory_ax, compute_ax) = plt.subplots(1, 2, figsize=(7.5, 4.4), layout="constrained")

    unit = sweep.unit_bytes / 2**10
    memory_ax.plot(
        smooth,
        [chen_memory(n, k) * unit for k in smooth],
        "--",
        color="#888888",
        label=_("model: n/k + k - 1 blocks"),
    )
    memory_ax.plot(
        ks,
        [sweep.row(k).kept_bytes / 2**10 for k in ks],
        "o-",
        color=STATUS_COLOURS["stored"],
        label=_("measured"),
    )
    memory_ax.set_ylim(bottom=0)
    memory_ax.set_ylabel(_("activations kept for backward (KiB)"))

    compute_ax.plot(
        smooth,
        [chen_flops_ratio(k) for k in smooth],
        "--",
        color="#888888",
        label=_("FLOPs model: 1 + (1 - 1/k)/3"),
    )
    compute_ax.plot(
        ks,
        [sweep.flops_ratio(k) for k in ks],
        "o-",
        color=STATUS_COLOURS["recomputed"],
        label=_("FLOPs, measured"),
    )
    times = [sweep.time_ratio(k) for k in ks]
    compute_ax.errorbar(
        ks,
        [t.median for t in times],
        yerr=[[t.median - t.low for t in times], [t.high - t.median for t in times]],
        fmt="s-",
        color=TIME_COLOUR,
        ms=4,
        capsize=3,
        label=_("time (median, middle half)"),
    )
    compute_ax.axhline(4 / 3, color="#bbbbbb", lw=0.8, label=_("one extra forward (4/3)"))
    compute_ax.set_ylim(0.95, max(1.4, 1.05 * max(t.high for t in times)))
    compute_ax.set_ylabel(_("FLOPs and time relative to k = 1"))

    for ax in (memory_ax, compute_ax):
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.axvline(
            math.sqrt(n),
            color="#333333",
            lw=1,
            ls=":",
            label=f"k = √n = {format_number(math.sqrt(n), '.3g')}",
        )
        ax.set_xlabel(phrase("segments k (n = {n} blocks)", n=n))
        ax.spines[["top", "right"]].set_visible(False)
    memory_ax.legend(fontsize=9, frameon=False, loc="upper center")
    # the right panel's legend under it, less k = sqrt(n), which the left one names
    shown = [(h, label) for h, label in zip(*compute_ax.get_legend_handles_labels()) if "√n" not in label]
    fig.legend(
        [h for h, _label in shown],
        [label for _h, label in shown],
        loc="outside lower right",
        ncols=2,
        fontsize=8,
        frameon=False,
    )
    best = sweep.best_k
    title = phrase(
        "{k} segments keep the least: {share:.0%} of the activations,\n"
        "for x{flops:.2f} the FLOPs and {time} the time",
        k=best,
        share=sweep.memory_ratio(best),
        flops=sweep.flops_ratio(best),
        time=times_ratio(sweep.time_ratio(best)),
    )
    if highlight is not None:
        row = sweep.row(highlight)
        memory_ax.plot([highlight], [row.kept_bytes / 2**10], "o", ms=14, mfc="none", mec="black", mew=1.5)
        compute_ax.plot(
            [highlight], [sweep.flops_ratio(highlight)], "o", ms=14, mfc="none", mec="black", mew=1.5
        )
        title += "\n" + phrase(
            "circled, k = {k}: keeps {size} ({share:.0%}), FLOPs x{flops:.3f}, time {time}",
            k=highlight,
            size=format_bytes(row.kept_bytes),
            share=sweep.memory_ratio(highlight),
            flops=sweep.flops_ratio(highlight),
            time=times_ratio(sweep.time_ratio(highlight)),
        )
    fig.suptitle(title, fontsize=10)
    return finish(fig)


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
    slider = widgets.SelectionSlider(
        options=sweep.ks, value=k, description=_("segments k"), continuous_update=False
    )

    def redraw(change) -> None:
        figure = plot_segments_tradeoff(sweep, highlight=change["new"])
        if handle is not None:
            handle.update(figure)

    slider.observe(redraw, names="value")
    display(slider)
    return slider


FORWARD_COST, BACKWARD_COST = 1, 2  # a layer's backward pass costs about two forward passes


def _memory_over_step(n_layers: int, segments: int) -> list[tuple[str, int, int]]:
    """(phase, activations held in layers' worth, cost in layer forwards) of each layer computation
    of one step; a phase is "forward", "recompute" or "backward". One segment is the plain step.

    Checkpointed as `checkpoint_sequential` does (Chen et al. 2016): the forward pass keeps the
    input of every segment after the first (the step's input is there anyway) and the activations of
    the last segment, which is not checkpointed; the backward pass goes through the last segment,
    then recomputes each earlier segment, one at a time, before going back through it. Peak:
    n/k + k - 1 layers' worth (`chen_memory`); cost: the plain step's 3n plus (k - 1) n/k."""
    size = n_layers // segments
    timeline = []
    for layer in range(1, n_layers + 1):
        segment = -(-layer // size)  # 1-based
        if segments == 1:
            held = layer
        elif segment < segments:  # a checkpointed segment: the inputs kept so far, and this output
            held = segment
        else:  # the last segment keeps its activations
            held = segments - 1 + layer - (segments - 1) * size
        timeline.append(("forward", held, FORWARD_COST))
    for segment in range(segments, 0, -1):
        held = segment - 1  # inputs of this segment and the earlier ones (the first is the step's)
        if 1 < segments and segment < segments:
            timeline += [("recompute", held + r, FORWARD_COST) for r in range(1, size + 1)]
        timeline += [("backward", held + r, BACKWARD_COST) for r in range(size, 0, -1)]
    return timeline


def draw_checkpointing_memory(n_layers: int = 12, segments: int = 3) -> Figure:
    """A drawn (not measured) picture of one training step: activations held as the step goes,
    without checkpointing (top) and with the layers cut into `segments` segments (bottom), on one
    axis of FLOPs counted in layer forwards (a layer's backward counts two). Used by lesson 1.

    Without, memory climbs with every layer of the forward pass and falls in the backward pass.
    With, the forward pass keeps only each segment's input, and the last segment's activations; the
    backward pass recomputes each earlier segment (orange) before going back through it. The peak
    falls from n to n/k + k - 1, and the step's FLOPs grow by (k - 1) n/k layer forwards: x1.22 for
    12 layers in 3. The axis counts FLOPs, not measured time (the sweep measures that)."""
    whole_numbers(n_layers=n_layers, segments=segments)
    if segments < 2 or n_layers % segments:
        raise ValueError(
            phrase(
                "segments must divide n_layers and be at least 2, got {segments} for {n_layers} layers.",
                segments=segments,
                n_layers=n_layers,
            )
        )
    colours = {
        N_("forward"): "#4c72b0",
        N_("recompute"): STATUS_COLOURS["recomputed"],
        N_("backward"): STATUS_COLOURS["stored"],
    }
    timelines = {1: _memory_over_step(n_layers, 1), segments: _memory_over_step(n_layers, segments)}
    peaks = {k: max(held for _phase, held, _cost in timeline) for k, timeline in timelines.items()}
    costs = {k: sum(cost for _phase, _held, cost in timeline) for k, timeline in timelines.items()}
    titles = {
        1: _("without checkpointing"),
        segments: phrase("checkpointing, {segments} segments", segments=segments),
    }
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 5.2), sharex=True, sharey=True, layout="constrained")
    for ax, (k, timeline) in zip(axes, timelines.items()):
        t = 0
        for phase, held, cost in timeline:
            ax.bar(t, held, width=cost, align="edge", color=colours[phase], edgecolor="white", linewidth=0.5)
            t += cost
        ax.axhline(peaks[k], color="#333333", lw=0.8, ls=":")
        ax.axvline(costs[k], color="#333333", lw=0.8)
        ax.text(
            costs[k],
            peaks[k],
            phrase("peak {peak}, FLOPs {cost}", peak=peaks[k], cost=costs[k]) + " ",
            ha="right",
            va="bottom",
            fontsize=9,
        )
        ax.set_title(titles[k], fontsize=10, loc="left")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.spines[["top", "right"]].set_visible(False)
    axes[1].set_xlim(0, costs[segments] * 1.02)
    axes[1].set_ylim(0, n_layers * 1.18)
    axes[1].set_xlabel(_("FLOPs, in layer forward passes (a layer's backward counts two)"))
    fig.supylabel(_("activations held (layers)"), fontsize=10)  # one label for both rows
    handles = [Patch(color=c, label=_(phase)) for phase, c in colours.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False, fontsize=9)
    fig.suptitle(
        phrase(
            "{k} segments cut the peak from {plain_peak} to {peak} layers\n"
            "for x{ratio:.2f} the FLOPs ({plain_cost} → {cost} layer forwards); drawn, not measured",
            k=segments,
            plain_peak=peaks[1],
            peak=peaks[segments],
            ratio=costs[segments] / costs[1],
            plain_cost=costs[1],
            cost=costs[segments],
        ),
        fontsize=10,
    )
    return finish(fig)
