"""Lesson 00's figure: what a step saves for backward, for every shape of one number of tokens.

Used by lesson 00's Explore cell, which measures the steps (`measure_step`) and passes the bytes
here, with the learner's own prediction (exercise 3's `predicted_saved_bytes`) drawn beside them.
Returns a closed `Figure` (`plotting.finish`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from effitrain_lessons.shared.i18n import _, format_number, phrase
from effitrain_lessons.shared.plotting import STATUS_COLOURS, finish

MiB = 2**20
PREDICTION_COLOUR = "#333333"  # the learner's own numbers, beside the measured bars


def _prediction(predicted: Callable | None, sequences: int, tokens: int) -> float | None:
    """The learner's prediction for one shape, or None where there is none yet (an unanswered `...`,
    a function that returns no number, or one that fails)."""
    if predicted is None or not callable(predicted):
        return None
    try:
        value = predicted(sequences, tokens)
    except Exception:  # noqa: BLE001 - a learner's unfinished function must not stop the figure
        return None
    return float(value) if type(value) in (int, float) else None


def plot_saved_by_shape(measured: Mapping[tuple[int, int], int], predicted: Callable | None = None) -> Figure:
    """Bars of the bytes saved for backward, one per shape (sequences, tokens), the shapes ordered by
    tokens per sequence; `predicted(sequences, tokens)`, where given, drawn as points beside them.
    The title says how much more the longest sequences save than the shortest, measured."""
    if not measured:
        raise ValueError(
            _("plot_saved_by_shape needs at least one measured shape, e.g. {(8, 32): report.saved_bytes}.")
        )
    shapes = sorted(measured, key=lambda shape: (shape[1], shape[0]))
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    positions = range(len(shapes))
    ax.bar(
        positions,
        [measured[shape] / MiB for shape in shapes],
        color=STATUS_COLOURS["stored"],
        width=0.6,
        label=_("measured"),
    )
    guesses = [_prediction(predicted, *shape) for shape in shapes]
    if any(guess is not None for guess in guesses):
        ax.plot(
            [i for i, guess in zip(positions, guesses) if guess is not None],
            [guess / MiB for guess in guesses if guess is not None],
            "D",
            color=PREDICTION_COLOUR,
            ms=8,
            label=_("your prediction"),
        )
    ax.set_xticks(list(positions), [f"{sequences} × {tokens}" for sequences, tokens in shapes])
    ax.set_xlabel(_("sequences × tokens per sequence"))
    ax.set_ylabel(_("saved for backward (MiB)"))
    ax.set_ylim(bottom=0)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=9, frameon=False, loc="upper left")
    shortest, longest = shapes[0], shapes[-1]
    if shortest[0] * shortest[1] == longest[0] * longest[1]:
        title = phrase(
            "The same {tokens} tokens: {longest} saves x{ratio} what {shortest} saves",
            tokens=shortest[0] * shortest[1],
            longest=f"{longest[0]} × {longest[1]}",
            shortest=f"{shortest[0]} × {shortest[1]}",
            ratio=format_number(measured[longest] / measured[shortest], ".2f"),
        )
    else:
        title = _("What a training step saves for backward, by the batch's shape (measured)")
    ax.set_title(title, fontsize=10)
    return finish(fig)
