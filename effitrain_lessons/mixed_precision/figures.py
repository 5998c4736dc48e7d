"""Lesson 8's figures: what a block saves for backward in fp32 and under autocast as the tokens grow,
and where a step's gradients lie against fp16's smallest values.

Beside `measure`, which measures both; the shared style is `plotting`'s.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import N_, _
from effitrain_lessons.shared.plotting import MEMORY_COLOURS, finish, wrapped

COPIES_COLOUR = "#c44e52"  # the 16-bit weight copies, as the planner's figure colours them
LINES = {
    "fp32": (N_("fp32: saved for backward"), "#4c72b0"),
    "activations": (N_("autocast: activations"), MEMORY_COLOURS["activations"]),
    "weight copies": (N_("autocast: 16-bit weight copies"), COPIES_COLOUR),
}


def plot_saved_by_tokens(measured: dict, title: str | None = None) -> Figure:
    """What `measure.saved_by_tokens` measured: fp32's bytes saved for backward as a line (gid "fp32"),
    autocast's as two stacked areas, its activations (gid "activations") under its weight copies
    (gid "weight copies"), against the tokens in a step, both axes logarithmic. Used by lesson 8."""
    tokens = list(measured.get("tokens", []))
    if not tokens:
        raise ValueError(
            _("plot_saved_by_tokens needs what saved_by_tokens measured, for at least one count of tokens.")
        )
    mib = {key: [b / 2**20 for b in measured[key]] for key in LINES}
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    both = [a + c for a, c in zip(mib["activations"], mib["weight copies"])]
    label, colour = LINES["activations"]
    ax.fill_between(tokens, 0, mib["activations"], color=colour, alpha=0.8, label=_(label), gid="activations")
    label, colour = LINES["weight copies"]
    ax.fill_between(
        tokens, mib["activations"], both, color=colour, alpha=0.8, label=_(label), gid="weight copies"
    )
    label, colour = LINES["fp32"]
    ax.plot(
        tokens, mib["fp32"], color=colour, linewidth=2.2, marker="o", markersize=4, label=_(label), gid="fp32"
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    low = min(min(mib["activations"]), min(mib["fp32"]))
    ax.set_ylim(low / 1.5, max(max(both), max(mib["fp32"])) * 1.5)
    ax.set_xlabel(_("tokens in the step"))
    ax.set_ylabel(_("MiB saved for backward"))
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    if title:
        ax.set_title(wrapped(_(title), 80), fontsize=11)
    return finish(fig)


# gid -> (label, value): fp16's two thresholds
THRESHOLDS = {
    "fp16-smallest": (
        N_("fp16's smallest value above 0"),
        torch.finfo(torch.float16).tiny * 2**-10,
    ),
    "fp16-normal": (
        N_("fp16's smallest normal value: below it, fewer digits"),
        torch.finfo(torch.float16).tiny,
    ),
}


def plot_gradient_magnitudes(magnitudes, scale: float | None = None, title: str | None = None) -> Figure:
    """A histogram of log10 |g| for a step's non-zero fp32 gradient values (`measure.gradient_magnitudes`),
    with fp16's smallest value and smallest normal value as vertical lines (gids "fp16-smallest",
    "fp16-normal"), and, given `scale`, where the smallest value lies once the loss is multiplied by it
    (gid "scaled"). Used by lesson 8."""
    values = torch.as_tensor(magnitudes).detach().double().flatten()
    values = values[values > 0]
    if values.numel() == 0:
        raise ValueError(_("plot_gradient_magnitudes needs at least one non-zero gradient value."))
    logs = values.log10().numpy()
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    ax.hist(logs, bins=80, color="#8172b2", alpha=0.85, gid="gradients", label=_("fp32 gradient values"))
    styles = {"fp16-smallest": ("#c44e52", "-"), "fp16-normal": ("#c44e52", "--")}
    for gid, (label, value) in THRESHOLDS.items():
        colour, dash = styles[gid]
        ax.axvline(math.log10(value), color=colour, linestyle=dash, linewidth=1.6, label=_(label), gid=gid)
    if scale:
        shifted = math.log10(THRESHOLDS["fp16-smallest"][1] / scale)
        ax.axvline(
            shifted,
            color="#3a9e6f",
            linewidth=1.6,
            gid="scaled",
            label=_("fp16's smallest value above 0, for the loss times the scale"),
        )
    ax.set_xlabel(_("log10 |gradient value|"))
    ax.set_ylabel(_("gradient values"))
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    if title:
        ax.set_title(wrapped(_(title), 80), fontsize=11)
    return finish(fig)
