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

from effitrain_lessons.arguments import whole_numbers
from effitrain_lessons.checkpointing import SegmentSweep, chen_flops_ratio, chen_memory
from effitrain_lessons.i18n import N_, _, phrase
from effitrain_lessons.memory import TrainingMemory, format_bytes
from effitrain_lessons.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish
from effitrain_lessons.tracing import StepTrace

# The A + B = C graph: where each node goes, what it is called, what it does, and the edges between them.
_NODES = {
    "x": ((0.0, 0.5), "x", N_("input")),
    "A": ((1.0, 0.9), "A", N_("sin(x): cheap")),
    "B": ((1.0, 0.1), "B", N_("x @ W: costly")),
    "C": ((2.0, 0.5), "C", "A * B"),  # formulas: the same in every language
    "loss": ((3.0, 0.5), "loss", "sum(C)"),
}
_EDGES = [("x", "A"), ("x", "B"), ("A", "C"), ("B", "C"), ("C", "loss")]


def plot_memory_breakdown(breakdowns: Mapping[str, TrainingMemory], title: str | None = None) -> Figure:
    """Stacked bars, one per measured setting, of what training holds: parameters, gradients,
    optimizer state and activations (the part checkpointing targets)."""
    if not breakdowns:
        raise ValueError(
            _("plot_memory_breakdown needs at least one measured TrainingMemory, e.g. {'batch 8': ...}.")
        )
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.9 * len(breakdowns)), layout="constrained")
    labels = list(breakdowns)
    for row, label in enumerate(labels):
        left = 0.0
        for part, nbytes in breakdowns[label].parts().items():
            mib = nbytes / 2**20
            ax.barh(row, mib, left=left, color=MEMORY_COLOURS[part], edgecolor="white", height=0.6)
            if mib > 0.06 * max(m.total for m in breakdowns.values()) / 2**20:
                ax.text(
                    left + mib / 2,
                    row,
                    format_bytes(nbytes),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
            left += mib
    ax.set_yticks(range(len(labels)), [_(label) for label in labels])
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_title(_(title) if title else _("What one training step holds in memory (measured)"))
    handles = [Patch(color=c, label=_(p)) for p, c in MEMORY_COLOURS.items()]
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=4)
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
            fontsize=8,
        )
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
        raise TypeError(
            _("plot_checkpoint_graph needs traces from trace_step, e.g. {'no checkpointing': trace}.")
        )
    base = next(iter(traces.values()))
    fig, axes = plt.subplots(
        1, len(traces), figsize=(4.6 * len(traces), 3.6), layout="constrained", squeeze=False
    )
    for ax, (name, trace) in zip(axes[0], traces.items()):
        numbers = phrase(
            "keeps {size}, FLOPs x{ratio:.2f}",
            size=format_bytes(trace.kept_bytes),
            ratio=trace.flops / base.flops,
        )
        _draw_graph(ax, trace, f"{_(name)}\n{numbers}" if name else numbers)
    handles = [Patch(facecolor=c, edgecolor="#333333", label=_(s)) for s, c in STATUS_COLOURS.items()]
    handles.append(
        Line2D([], [], color=STATUS_COLOURS["recomputed"], lw=2.4, ls="--", label=_("rerun in backward"))
    )
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=9)
    if title:
        fig.suptitle(_(title))
    return finish(fig)


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
    memory_ax.plot(
        smooth,
        [chen_memory(n, k) * unit for k in smooth],
        "--",
        color="#888888",
        label=_("model: (n/k + k - 1) block activations"),
    )
    memory_ax.plot(
        ks,
        [sweep.row(k).kept_bytes / 2**10 for k in ks],
        "o-",
        color=STATUS_COLOURS["stored"],
        label=_("measured: kept for backward"),
    )
    memory_ax.set_ylabel(_("activations kept for backward (KiB)"))

    compute_ax.plot(
        smooth,
        [chen_flops_ratio(k) for k in smooth],
        "--",
        color="#888888",
        label=_("model: 1 + (1 - 1/k)/3"),
    )
    compute_ax.plot(
        ks,
        [sweep.flops_ratio(k) for k in ks],
        "o-",
        color=STATUS_COLOURS["recomputed"],
        label=_("measured FLOPs"),
    )
    compute_ax.plot(
        ks, [sweep.seconds_ratio(k) for k in ks], "s:", color="#4c72b0", alpha=0.8, label=_("measured time")
    )
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
        compute_ax.plot(
            [highlight], [sweep.flops_ratio(highlight)], "o", ms=14, mfc="none", mec="black", mew=1.5
        )
        fig.suptitle(sweep.describe(highlight), fontsize=10)
    memory_ax.legend(fontsize=8, frameon=False, loc="upper center")
    compute_ax.legend(fontsize=8, frameon=False, loc="lower right")
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
    cases = {
        _("without checkpointing"): 1,
        phrase("checkpointing, {segments} segments", segments=segments): segments,
    }
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
    fig.suptitle(
        phrase("A drawing, not a measurement: {n_layers} layers, one step", n_layers=n_layers), fontsize=10
    )
    return finish(fig)
