"""Lesson 6's figures: the planner's estimates against a GPU's memory, its explorer, and what to recompute.

Used by lesson 6 (will it fit?), beside its two measuring modules: `plan`, whose estimates
`plot_memory_estimates` stacks line by line and `plan_explorer` redraws at every change, and
`recompute`, whose measured points `plot_recompute_pareto` draws as memory against compute. Every
`plot_*` function returns a closed `Figure` (`plotting.finish`).
"""

from __future__ import annotations

from dataclasses import replace

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish, wrapped
from effitrain_lessons.shared.tables import format_bytes
from effitrain_lessons.will_it_fit import plan

# The keys are the planner's line names (effitrain_lessons.will_it_fit.plan), the legend's words
# (translated when drawn).
PLAN_COLOURS = {
    N_("parameters"): MEMORY_COLOURS["parameters"],
    N_("fp32 master weights"): "#64b5cd",
    N_("gradients"): MEMORY_COLOURS["gradients"],
    N_("optimizer state"): MEMORY_COLOURS["optimizer state"],
    N_("activations"): MEMORY_COLOURS["activations"],
    N_("16-bit weight copies"): "#e7b84a",
    N_("one layer recomputed"): "#d1495b",
    N_("not modelled (allowance)"): "#d4d4d4",
}


def plot_memory_estimates(estimates, labels=None, gpu=None, title: str | None = None) -> Figure:
    """Stacked bars, one per `effitrain_lessons.will_it_fit.plan.Estimate`, of what one training step
    needs, line by line (parameters, master weights, gradients, optimizer state, activations, the
    recomputed layer, the allowance; gid "memory-line"), in GiB, each bar's total at its end, in red
    where it passes `gpu`'s memory (a preset such as "T4", or a size), drawn as a dashed line (gid
    "gpu-memory"). `labels` name the bars (default: each estimate's setup). The title is `title`, or
    for one estimate against a GPU whether it fits ("gpt2 on T4: fits"). Used by lesson 6 and
    `plan_explorer`."""
    estimates = list(estimates)
    if not estimates:
        raise ValueError(
            _('plot_memory_estimates needs at least one estimate, e.g. [estimate("bert-base-uncased")].')
        )
    labels = [plan.describe(e) for e in estimates] if labels is None else [_(label) for label in labels]
    if len(labels) != len(estimates):
        raise ValueError(
            phrase(
                "plot_memory_estimates has {estimates} estimates and {labels} labels: give one label each.",
                estimates=len(estimates),
                labels=len(labels),
            )
        )
    limit = None if gpu is None else plan.memory_of(gpu)
    presets = {name.lower(): name for name in plan.GPUS}
    gpu_name = None if limit is None else presets.get(str(gpu).lower(), format_bytes(limit))
    if title is None and limit is not None and len(estimates) == 1:
        title = phrase(
            "{model} on {gpu}: {said}",
            model=estimates[0].model.name,
            gpu=gpu_name,
            said=_("fits") if estimates[0].total <= limit else _("does not fit"),
        )
    gib = 2**30
    longest = max([e.total for e in estimates] + [limit or 0]) / gib
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.55 * len(estimates)), layout="constrained")
    for row, estimate in enumerate(estimates):
        left = 0.0
        for line in estimate.lines:
            width = line.nbytes / gib
            ax.barh(
                row,
                width,
                left=left,
                height=0.62,
                color=PLAN_COLOURS.get(line.name, "#999999"),
                edgecolor="white",
                linewidth=0.6,
                hatch=None if line.modelled else "//",
                gid="memory-line",
            )
            left += width
        over = limit is not None and estimate.total > limit
        ax.text(
            left + 0.01 * longest,
            row,
            format_bytes(estimate.total),
            va="center",
            fontsize=9,
            color="#cf222e" if over else "#333333",
            fontweight="bold" if over else "normal",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
        )
    if limit is not None:
        ax.axvline(limit / gib, color="#333333", ls="--", lw=1.2, gid="gpu-memory")
        ax.text(
            limit / gib,
            -0.62,
            phrase("{gpu}: {memory}", gpu=gpu_name, memory=format_bytes(limit)),
            ha="center",
            va="center",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
        )
    ax.set_yticks(range(len(labels)), [wrapped(label, 26) for label in labels], fontsize=9)
    ax.set_ylim(len(estimates) - 0.4, -0.95)
    ax.set_xlim(0, longest * 1.18)
    ax.set_xlabel("GiB")
    ax.set_title(_(title) if title else _("What one training step needs (estimated)"), fontsize=10)
    shown = [name for name in PLAN_COLOURS if any(e.bytes_of(name) for e in estimates)]
    handles = [
        Patch(
            facecolor=PLAN_COLOURS[name],
            hatch="//" if name == "not modelled (allowance)" else None,
            edgecolor="white",
            label=_(name),
        )
        for name in shown
    ]
    fig.legend(
        handles=handles, loc="outside lower center", fontsize=9, frameon=False, ncols=min(3, len(handles))
    )
    ax.spines[["top", "right"]].set_visible(False)
    return finish(fig)


def _plan_figure(model, gpu, settings) -> tuple[Figure, str]:
    """The explorer's picture and status: the setting, and beside it the largest micro-batch that fits."""
    judged = plan.verdict(model, gpu, settings)
    estimates, labels = (
        [judged.estimate],
        [phrase("batch {batch}, sequence {seq}", batch=settings.batch, seq=settings.seq)],
    )
    largest = judged.largest_micro_batch
    if largest and largest != settings.batch:
        estimates.append(plan.estimate(model, replace(settings, batch=largest, accumulation=1)))
        labels.append(phrase("the largest micro-batch that fits: {largest}", largest=largest))
    words = dict(
        model=judged.estimate.model.name,
        gpu=judged.gpu,
        precision=settings.precision,
        attention=settings.attention,
        checkpointing=_("on") if settings.checkpointing else _("off"),
        verdict=_("fits") if judged.fits else _("does not fit"),
    )
    if settings.gpus > 1:
        title = phrase(
            "{model} on {gpus} x {gpu}, {sharding}, {precision}, {attention} attention, checkpointing "
            "{checkpointing}: {verdict} in each",
            gpus=settings.gpus,
            sharding=plan.SHARDING_NAMES.get(settings.sharding) or _("no sharding"),
            **words,
        )
    else:
        title = phrase(
            "{model} on {gpu}, {precision}, {attention} attention, checkpointing {checkpointing}: {verdict}",
            **words,
        )
    status = (
        judged.sentence()
        if largest
        else phrase("{sentence} Not even a micro-batch of 1 fits.", sentence=judged.sentence())
    )
    return plot_memory_estimates(estimates, labels, gpu=gpu, title=title), status


def plan_explorer(
    model: str = "bert-base-uncased",
    gpu: str = "T4",
    batch: int = 32,
    seq: int = 512,
    precision: str = "fp32",
    attention: str = "eager",
    checkpointing: bool = False,
    gpus: int = 1,
    sharding: str = "none",
):
    """Menus for the model (the bundled configs), the GPU, the precision and the attention, sliders for
    the batch and the sequence length, a checkpointing box, and menus for the number of GPUs and how
    their state is sharded (lesson 9's stages; every line is then per GPU), above the estimate's stacked bars
    against the GPU's memory (`plot_memory_estimates`) and, beside them, the largest micro-batch that
    fits. Every change redraws at once (an estimate takes milliseconds); the status line says whether
    it fits and what would make it fit. The first figure is an ordinary image, so a static viewer
    keeps it. Returns the widget box. Used by lesson 6."""
    import ipywidgets as widgets
    from IPython.display import display

    batches = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, batch})
    seqs = sorted({128, 256, 512, 1024, 2048, seq})
    controls = {
        "model": widgets.Dropdown(options=plan.bundled_models(), value=model, description=_("model")),
        "gpu": widgets.Dropdown(options=list(plan.GPUS), value=gpu, description="GPU"),
        "batch": widgets.SelectionSlider(
            options=batches, value=batch, description=_("batch"), continuous_update=False
        ),
        "seq": widgets.SelectionSlider(
            options=seqs, value=seq, description=_("sequence"), continuous_update=False
        ),
        "precision": widgets.Dropdown(
            options=list(plan.PRECISIONS), value=precision, description=_("precision")
        ),
        "attention": widgets.Dropdown(
            options=list(plan.ATTENTIONS), value=attention, description=_("attention")
        ),
        "checkpointing": widgets.Checkbox(value=checkpointing, description=_("checkpointing")),
        "gpus": widgets.Dropdown(options=sorted({1, 2, 4, 8, gpus}), value=gpus, description=_("GPUs")),
        "sharding": widgets.Dropdown(
            options=[(plan.SHARDING_NAMES.get(stage) or _("no sharding"), stage) for stage in plan.SHARDINGS],
            value=sharding,
            description=_("sharding"),
        ),
    }

    def current() -> tuple[Figure, str]:
        values = {name: control.value for name, control in controls.items()}
        settings = plan.Settings(
            batch=values["batch"],
            seq=values["seq"],
            precision=values["precision"],
            attention=values["attention"],
            checkpointing=values["checkpointing"],
            gpus=values["gpus"],
            sharding=values["sharding"],
        )
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
    box = widgets.VBox([widgets.HBox(names[:4]), widgets.HBox(names[4:7]), widgets.HBox(names[7:]), status])
    display(box)
    return box


# ---------------------------------------------------------------------------------------------
# What to recompute, measured memory against FLOPs


def plot_recompute_pareto(curve, title: str | None = None) -> Figure:
    """Two panels, one per price of recomputation, each with the activation memory kept for the backward
    (MiB) on its vertical axis. Left: against the FLOPs of a step (GFLOP, matrix products), every
    measured `recompute.RecomputePoint`: the eager points (gid "eager-point") labelled with their
    names, the compiled ones joined in the order of their budget (gid "budget-line") and labelled
    with it, and a cross (gid "redraws-random") on compiled points whose backward draws dropout's
    random numbers again, drawn over any point in the same place. Right: against the measured time
    of a step, its median over the first point's (gid "time-point"), with a bar for the range the
    two spreads allow (gid "time-spread"), timed eager points only (a compiled step is not timed).
    The Pareto-optimal points of each panel are ringed (gid "pareto"); a crossed point never is.
    `curve` is a `RecomputeCurve` or its points. Used by lesson 6."""
    # here: it imports torch, the planner's figures do not
    from effitrain_lessons.will_it_fit.recompute import RecomputeCurve

    curve = curve if isinstance(curve, RecomputeCurve) else RecomputeCurve(tuple(curve))
    eager = [p for p in curve.points if not p.compiled]
    compiled = sorted((p for p in curve.points if p.compiled), key=lambda p: p.budget)
    colours = dict(
        zip(
            [p.label for p in eager],
            ("#4c72b0", STATUS_COLOURS["stored"], "#8172b2", "#937860", "#d1495b", "#55a868"),
            strict=False,
        )
    )
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 4.8), sharey=True, layout="constrained")

    def mib(p):
        return p.saved_bytes / 2**20

    def ring(ax, points, x_of, label):
        ax.plot(
            [x_of(p) for p in points],
            [mib(p) for p in points],
            "o",
            ms=16,
            mfc="none",
            mec="#333333",
            mew=1.2,
            linestyle="none",
            label=label,
            gid="pareto",
        )

    def name_points(ax, points, x_of, gid):
        for p in points:
            colour = colours[p.label]
            ax.plot(x_of(p), mib(p), "s", color=colour, ms=8, zorder=3, gid=gid)
            ax.annotate(
                wrapped(p.name(), 16),
                (x_of(p), mib(p)),
                textcoords="offset points",
                xytext=(9, 4),
                fontsize=9,
                color=colour,
            )

    def gflops(p):
        return p.flops / 1e9

    if compiled:
        left.plot(
            [gflops(p) for p in compiled],
            [mib(p) for p in compiled],
            "o-",
            color=STATUS_COLOURS["recomputed"],
            ms=6,
            label=_("torch.compile, one memory budget per point"),
            gid="budget-line",
        )
        for p in compiled:
            left.annotate(
                format_number(p.budget, "g"),
                (gflops(p), mib(p)),
                textcoords="offset points",
                xytext=(-9, -5),
                ha="right",
                va="top",
                fontsize=9,
                color="#a65a14",
            )
    name_points(left, eager, gflops, "eager-point")
    ring(left, curve.optimal(), gflops, _("best trade-off: nothing keeps less for less"))
    redrawn = [p for p in curve.points if p.redraws_random]
    if redrawn:
        left.plot(
            [gflops(p) for p in redrawn],
            [mib(p) for p in redrawn],
            "x",
            color="#d1495b",
            ms=10,
            mew=2,
            linestyle="none",
            zorder=4,  # over an eager point in the same place (budget 0 and full checkpointing)
            label=_("dropout redrawn: wrong gradients"),
            gid="redraws-random",
        )

    timed = [p for p in eager if curve.time_ratio(p) is not None]

    def relative(p):
        return curve.time_ratio(p).median

    for p in timed:
        ratio = curve.time_ratio(p)
        right.errorbar(
            ratio.median,
            mib(p),
            xerr=[[ratio.median - ratio.low], [ratio.high - ratio.median]],
            fmt="none",
            ecolor=colours[p.label],
            elinewidth=1.5,
            capsize=4,
            zorder=2,
            gid="time-spread",
        )
    name_points(right, timed, relative, "time-point")
    ring(right, curve.optimal("seconds"), relative, None)
    low, high = left.get_ylim()
    left.set_ylim(low, high + 0.2 * (high - low))  # room above for a top point's label of 2-3 lines
    for ax in (left, right):
        low, high = ax.get_xlim()
        ax.set_xlim(low, high + 0.35 * (high - low))  # room for the labels on the right
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelsize=9)
    left.set_xlabel(_("FLOPs of a step (GFLOP, matrix products)"), fontsize=9)
    right.set_xlabel(_("time of a step, measured (x no checkpointing; bar: the spread)"), fontsize=9)
    left.set_ylabel(_("activations kept for backward (MiB)"), fontsize=9)
    left.set_title(_("against FLOPs"), fontsize=10)
    right.set_title(_("against time, on this CPU"), fontsize=10)
    default = _("What to recompute: memory against compute (measured)")
    fig.suptitle(_(title) if title else default, fontsize=11)
    fig.legend(loc="outside lower center", fontsize=9, frameon=False, ncols=2)
    return finish(fig)
