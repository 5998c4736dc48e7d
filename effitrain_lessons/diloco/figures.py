"""Lesson 5's figures: DiLoCo's two optimizers drawn, the runs' training losses, the outer step
against the pseudo-gradient, validation loss against bytes sent, and its explorer.

Used by lesson 5 (from Local SGD to DiLoCo), beside `diloco`, whose runs (`distributed_runs.launch`) measure
what `plot_diloco_losses` draws. Every `plot_*` and `draw_*` function returns a closed `Figure`
(`plotting.finish`); `diloco_explorer` runs the lesson's training again from its widgets.
`draw_diloco` is a drawing, not a measurement, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.ticker import FuncFormatter

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, STATUS_COLOURS, finish, rerun_explorer, wrapped


def draw_diloco(h: int = 4, rounds: int = 2, workers: int = 2) -> Figure:
    """A drawn (not measured) picture of DiLoCo's two optimizers. One lane per worker (gid
    "worker-lane"): each round the worker loads the global parameters θ and takes H inner steps (AdamW)
    on its own data, drifting away from θ; then the pseudo-gradients θ − θᵢ are all-reduced and the
    outer step (SGD with Nesterov momentum, gid "outer-step") moves θ on the global lane, which every
    worker loads for the next round. Used by lesson 5 before it measures the same thing."""
    whole_numbers(h=h, rounds=rounds, workers=workers)
    if workers < 2:
        raise ValueError(
            phrase(
                "workers must be at least 2 to have something to synchronize, got {workers}.", workers=workers
            )
        )
    inner, outer, load = MEMORY_COLOURS["parameters"], STATUS_COLOURS["recomputed"], "#777777"
    fig, ax = plt.subplots(figsize=(7.5, 2.2 + 0.75 * workers), layout="constrained")
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
            ax.add_patch(
                FancyArrowPatch(
                    (start, 0),
                    (start + 1, worker),
                    arrowstyle="-|>",
                    mutation_scale=8,
                    color=load,
                    lw=1,
                    linestyle="--",
                    shrinkA=4,
                    shrinkB=0,
                )
            )
            for step in range(h):
                ax.add_patch(
                    FancyArrowPatch(
                        (start + 1 + step, worker + drift * step),
                        (start + 2 + step, worker + drift * (step + 1)),
                        arrowstyle="-|>",
                        mutation_scale=7,
                        color=inner,
                        lw=1.2,
                        shrinkA=0,
                        shrinkB=0,
                        gid="inner-step",
                    )
                )
            ax.add_patch(
                FancyArrowPatch(
                    (start + 1 + h, worker + drift * h),
                    (start + span, 0),
                    arrowstyle="-|>",
                    mutation_scale=9,
                    color=outer,
                    lw=1.6,
                    shrinkA=0,
                    shrinkB=7,
                )
            )
        ax.plot(
            [start + span], [0], marker="o", markersize=11, color=outer, linestyle="none", gid="outer-step"
        )
        ax.text(
            start + span,
            -0.3,
            phrase("outer step {number}", number=round_ + 1),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    labels = [_("global parameters θ")] + [
        phrase("worker {number}: H = {h} inner steps (AdamW)", number=w, h=h) for w in range(workers)
    ]
    ax.set_yticks(range(workers + 1), [wrapped(label, 20) for label in labels], fontsize=9)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    ax.set_xlim(-0.4, end + 0.6)
    ax.set_ylim(workers + 0.55, -0.75)
    ax.spines[["top", "right", "left", "bottom"]].set_visible(False)
    legend = {
        _("inner step: AdamW on the worker's own data"): dict(color=inner, lw=1.2, marker=">", markersize=4),
        _("all-reduce the pseudo-gradient Δ = θ − θᵢ (averaged)"): dict(color=outer, lw=1.6),
        _("outer step: SGD with Nesterov momentum"): dict(
            color=outer, marker="o", markersize=8, linestyle="none"
        ),
        _("every worker loads θ"): dict(color=load, lw=1, linestyle="--"),
    }
    handles = [Line2D([], [], label=wrapped(label, 36), **style) for label, style in legend.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False, fontsize=9)
    fig.suptitle(
        wrapped(
            phrase(
                "Each round: H = {h} inner steps apart, then one outer step together "
                "(a drawing, not a measurement: {workers} workers, {rounds} rounds)",
                rounds=rounds,
                workers=workers,
                h=h,
            ),
            80,
        ),
        fontsize=11,
    )
    return finish(fig)


def _trailing_mean(values: list[float], window: int) -> list[float]:
    """The mean of each value and the ones before it, at most `window` in all."""
    means, total = [], 0.0
    for index, value in enumerate(values):
        total += value - (values[index - window] if index >= window else 0.0)
        means.append(total / min(index + 1, window))
    return means


def plot_diloco_losses(
    curves: Mapping[str, list[float]],
    outer_steps: Mapping[str, list[int]] | None = None,
    title: str | None = None,
    baseline: float | None = None,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """The training loss of each run against the step: faint step by step, bold as a trailing mean of
    8 steps (gid "smoothed"), and a row of ticks along the bottom (gid "outer-steps"), in the run's
    colour, at each step listed in `outer_steps[label]`: where that run synchronized. `curves` maps
    a run's label (its legend entry) to its losses. `baseline`, when given, is drawn as a dashed grey
    line (gid "baseline", last in the legend): the loss of always predicting the label frequencies,
    the plateau a run that learns nothing stays on. `colours` maps a label to its run's colour (the
    same in every figure of the lesson); others take the next of a palette. Used by lesson 5 and its
    explorer."""
    if not curves:
        raise ValueError(_("plot_diloco_losses needs at least one run's losses."))
    for label, losses in curves.items():
        if not losses:
            raise ValueError(
                phrase("plot_diloco_losses needs at least one loss per run; {label} has none.", label=label)
            )
    outer_steps = outer_steps or {}
    given, palette = colours, ("#4c72b0", "#f08c2e", "#3a9e6f", "#d1495b", "#8172b2", "#937860")
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    ticked = [label for label in curves if outer_steps.get(label)]
    for index, (label, losses) in enumerate(curves.items()):
        colour = (given or {}).get(label, palette[index % len(palette)])
        steps = range(1, len(losses) + 1)
        ax.plot(steps, losses, color=colour, alpha=0.25, lw=0.8)
        ax.plot(steps, _trailing_mean(list(losses), 8), color=colour, lw=2, label=label, gid="smoothed")
        # one row of ticks per run that synchronized, in axes height so any loss scale fits
        if label in ticked:
            row = 0.03 + 0.045 * ticked.index(label)
            at = [step for step in outer_steps[label] if 1 <= step <= len(losses)]
            ax.plot(
                at,
                [row] * len(at),
                transform=ax.get_xaxis_transform(),
                linestyle="none",
                marker="|",
                markersize=8,
                mew=1.5,
                color=colour,
                gid="outer-steps",
            )
    if baseline is not None:
        ax.axhline(
            baseline,
            color="#777777",
            lw=1,
            linestyle="--",
            label=phrase("always predicting the label frequencies: {loss:.2f}", loss=baseline),
            gid="baseline",
        )
    if ticked:  # room under the curves for the rows of ticks, and no loss values beside them
        low, high = ax.get_ylim()
        values = [value for value in ax.get_yticks() if low <= value <= high]
        strip = 0.05 + 0.045 * len(ticked)
        ax.set_ylim(low - (high - low) * strip / (1 - strip), high)
        ax.set_yticks(values)
        what = _(
            "training step (faint: each step; bold: mean of "
            "the last 8 steps; ticks: where a run synchronized)"
        )
    else:
        what = _("training step (faint: each step; bold: mean of the last 8 steps)")
    ax.set_xlim(0, max(len(losses) for losses in curves.values()) + 1)
    ax.set_xlabel(wrapped(what, 80), fontsize=9)
    ax.set_ylabel(_("training loss"))
    # lower left, above the rows of ticks: the runs start on the plateau, high on the left
    above = 0.05 + 0.045 * len(ticked) if ticked else 0.0
    ax.legend(fontsize=9, frameon=False, loc="lower left", bbox_to_anchor=(0, above))
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(wrapped(_(title), 75), fontsize=11)
    return finish(fig)


def diloco_explorer(
    run,
    figure,
    hs=(4, 8, 16, 32, 64),
    outer_lrs=(0.1, 0.3, 0.5, 0.7, 1.0),
    h: int = 32,
    outer_lr: float = 0.7,
):
    """An H slider and an outer-learning-rate slider above a figure: moving either calls
    `run(h, outer_lr)`, which must return a new Figure, and shows it in place of the old one.
    `figure` is shown first (a static image stays where widgets cannot render). Used by lesson 5."""
    import ipywidgets as widgets

    h_slider = widgets.SelectionSlider(options=list(hs), value=h, description="H", continuous_update=False)
    lr_slider = widgets.SelectionSlider(
        # each option labelled as the reader writes numbers: "0.1" in English, "0,1" in Turkish
        options=[(format_number(lr), lr) for lr in outer_lrs],
        value=outer_lr,
        description=_("outer lr"),
        continuous_update=False,
    )
    return rerun_explorer(
        run,
        figure,
        [h_slider, lr_slider],
        _("Move H or the outer learning rate to run again."),
        lambda h, lr: phrase("running H = {h}, outer lr {lr:g}...", h=h, lr=lr),
        lambda h, lr: phrase("H = {h}, outer lr {lr:g}: measured just now.", h=h, lr=lr),
    )


def plot_outer_steps(
    runs: Mapping[str, list],
    title: str | None = None,
    ceiling: float | None = None,
    colours: Mapping[str, str] | None = None,
    styles: Mapping[str, str] | None = None,
) -> Figure:
    """Each run's outer steps, as `OptimizerWatch` measured them: against the inner step at which it
    was taken, how many times the averaged pseudo-gradient the outer step moved the global parameters
    (`OuterStep.ratio`; 1: Local SGD), one line with a marker per outer step (gid "ratio"). `runs`
    maps a run's label to its outer steps; `colours` and `styles` (a line style: "-", "--") a label
    to its run's colour and its seed's line. `ceiling`, when given, is drawn dashed grey (gid
    "ceiling"): lr / (1 − momentum), where a Nesterov step settles when every pseudo-gradient is the
    same. Used by lesson 5 to test why DiLoCo at H = 8 stalls."""
    if not runs or not any(runs.values()):
        raise ValueError(_("plot_outer_steps needs at least one run with outer steps."))
    palette = ("#d1495b", "#4c72b0", "#3a9e6f", "#f08c2e", "#8172b2", "#937860")
    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    for index, (label, steps) in enumerate(runs.items()):
        ax.plot(
            [outer.step for outer in steps],
            [outer.ratio for outer in steps],
            color=(colours or {}).get(label, palette[index % len(palette)]),
            linestyle=(styles or {}).get(label, "-"),
            lw=1.8,
            marker="o",
            markersize=4,
            label=wrapped(label, 45),
            gid="ratio",
        )
    if ceiling is not None:
        ax.axhline(
            ceiling,
            color="#777777",
            lw=1,
            linestyle=":",
            label=phrase("lr / (1 − momentum) = {ceiling:g}", ceiling=ceiling),
            gid="ceiling",
        )
    ax.set_ylim(0, None)
    ax.set_xlim(0, None)
    ax.set_xlabel(_("inner step at which the outer step was taken"))
    ax.set_ylabel(wrapped(_("outer step ÷ averaged pseudo-gradient (norms)"), 30))
    fig.legend(fontsize=9, frameon=False, loc="outside lower center", ncols=2)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(wrapped(_(title), 75), fontsize=11)
    return finish(fig)


def plot_bytes_against_loss(
    band: Mapping[str, list[tuple[float, float]]],
    points: Mapping[str, list[tuple[float, float]]],
    title: str | None = None,
    baseline: float | None = None,
    target: tuple[float, float] | None = None,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """Validation loss against megabytes sent per process, x on a log scale. `band` maps a label to
    one curve per seed of (MB, loss) pairs (data parallel evaluated along its run): drawn as the
    area between the seeds (gid "band") and their thin lines. `points` maps a run's label to its
    (MB, loss) pairs, one per seed (gid "runs"). `baseline` is drawn dashed (gid "baseline");
    `target`, (low, high), as a faint strip across the plane (gid "target"): where data parallel's
    seeds ended, so that a run's end reads against it at any bytes. `colours` maps a point's label to
    its run's colour (the same in every figure of the lesson). Used by lesson 5: data parallel, Local
    SGD and DiLoCo on one plane."""
    import numpy as np

    if not band and not points:
        raise ValueError(_("plot_bytes_against_loss needs a band or at least one run."))
    fig, ax = plt.subplots(figsize=(7.5, 5.2), layout="constrained")
    for label, curves in band.items():
        if not curves or not all(curves):
            raise ValueError(phrase("plot_bytes_against_loss: {label} has no measurements.", label=label))
        sizes = np.array([size for size, _loss in curves[0]])
        losses = np.array([[loss for _size, loss in curve] for curve in curves])
        ax.fill_between(sizes, losses.min(0), losses.max(0), color="#8c8c8c", alpha=0.3, lw=0, gid="band")
        for curve in losses:
            ax.plot(sizes, curve, color="#8c8c8c", lw=0.8)
        ax.fill_between([], [], [], color="#8c8c8c", alpha=0.3, label=wrapped(label, 45))
    palette = ("#f08c2e", "#3a9e6f", "#d1495b", "#4c72b0", "#8172b2", "#937860")
    markers = ("s", "o", "D", "^", "v", "P")
    for index, (label, pairs) in enumerate(points.items()):
        ax.plot(
            [size for size, _loss in pairs],
            [loss for _size, loss in pairs],
            linestyle="none",
            marker=markers[index % len(markers)],
            markersize=7,
            mec="white",
            color=(colours or {}).get(label, palette[index % len(palette)]),
            label=wrapped(label, 45),
            gid="runs",
        )
    if baseline is not None:
        ax.axhline(
            baseline,
            color="#777777",
            lw=1,
            linestyle="--",
            label=phrase("always predicting the label frequencies: {loss:.2f}", loss=baseline),
            gid="baseline",
        )
    if target is not None:
        low, high = target
        ax.axhspan(
            low,
            high,
            color="#4c72b0",
            alpha=0.08,
            lw=0,
            label=phrase("where data parallel ended: {low:.3f} to {high:.3f}", low=low, high=high),
            gid="target",
        )
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))  # 1, 10: not 10⁰
    ax.set_xlabel(_("MB sent per process (log scale)"))
    ax.set_ylabel(_("validation loss"))
    fig.legend(fontsize=8.5, frameon=False, loc="outside lower center", ncols=2)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(wrapped(_(title), 75), fontsize=11)
    return finish(fig)
