"""Lesson 7's figure: what each choice of blocks keeps for the backward pass, and what its step costs.

Beside `own_model`, which measures the choices; the shared style is `plotting`'s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish, wrapped


def plot_choices(table, title: str | None = None) -> Figure:
    """Two panels of horizontal bars, one bar per measured choice of an `own_model.ChoiceTable`
    (gid "kept" and "time"): left, the activation memory kept for the backward pass (MiB); right, the
    time of a step relative to the first choice (the plain step), from 0, with the recomputed FLOPs
    written beside each bar. Used by lesson 7."""
    points = list(table.points)
    base = points[0]
    labels = [wrapped(_(p.label), 22) for p in points]
    rows = list(range(len(points)))[::-1]  # the first choice on top
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(8, 1.0 + 0.55 * len(points)), sharey=True, layout="constrained"
    )
    left.barh(rows, [p.saved_bytes / 2**20 for p in points], color=MEMORY_COLOURS["activations"], gid="kept")
    left.set_yticks(rows, labels)
    left.set_xlabel(_("kept for the backward pass (MiB)"))
    seconds = [p.seconds / base.seconds if p.seconds else 0.0 for p in points]
    right.barh(rows, seconds, color="#4c72b0", gid="time")
    right.axvline(1.0, color="#333333", linewidth=0.8, linestyle="--")
    for row, p, ratio in zip(rows, points, seconds, strict=True):
        right.annotate(
            phrase("{flops:+.0%} FLOPs", flops=(p.flops - base.flops) / base.flops),
            (ratio, row),
            textcoords="offset points",
            xytext=(4, -3),
            fontsize=9,
        )
    right.set_xlim(0, max(seconds) * 1.45)
    right.set_xlabel(_("time of a step (plain step = 1)"))
    fig.suptitle(wrapped(_(title), 80) if title else "")
    return finish(fig)
