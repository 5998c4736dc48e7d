"""The lessons' figures' common style: closing a figure, the shared colours, wrapped labels, explorers.

Shared by every lesson's figures module (`checkpointing_figures` for lesson 1, `trainer_figures`,
`train_loop_figures`, `local_sgd_figures`, `diloco_figures`, `plan_figures` for lessons 2 to 6). Each
of those sits beside the module that measures its lesson, so that a measurement module stays one
file a reader holds in their head, its figures sort next to it, and the measurement modules that
worker processes import never import matplotlib. What they draw alike lives here:

- `finish`: every `plot_*` and `draw_*` function returns a closed `Figure`, which the notebook shows
  once, as the cell's value; in Turkish, its axes' numbers are written the Turkish way (0,5: see
  `ReaderFormatter`);
- `STATUS_COLOURS` (stored, deleted, recomputed: lesson 1's words, which lessons 2 to 6 colour with)
  and `MEMORY_COLOURS` (parameters, gradients, optimizer state, activations);
- `wrapped`: labels broken into lines, so that a longer language grows down, not out;
- `rerun_explorer`: widgets above a figure that run a measurement again (lessons 4 and 5).

Every word a figure or widget shows is in the lesson's language (`effitrain_lessons.shared.i18n`): labels
are marked `N_` where they are defined and translated when drawn, and the titles and labels a
lesson passes in are translated when drawn too (text the catalog lacks stays as it is).
"""

from __future__ import annotations

import re
import textwrap

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from effitrain_lessons.shared.i18n import DEFAULT, N_, format_number, language

# The keys are what the measurements call each status and part, and the legends' words (translated
# when drawn).
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


# a number as ScalarFormatter writes it: an optional minus (ASCII or U+2212), digits, decimals
_TICK_NUMBER = re.compile(r"([-\N{MINUS SIGN}]?\d+)(?:\.(\d+))?")


class ReaderFormatter(ScalarFormatter):
    """matplotlib's own tick labels (the same ticks, the same digits), with each number written as
    the lesson's reader writes numbers (`format_number`: 0,25 in Turkish)."""

    def __call__(self, x, pos=None) -> str:
        return _TICK_NUMBER.sub(self._reader_number, super().__call__(x, pos))

    def _reader_number(self, match: re.Match) -> str:
        whole, decimals = match.groups()
        value = float(f"{whole.replace(chr(0x2212), '-')}.{decimals or 0}")
        return self.fix_minus(format_number(value, f".{len(decimals or '')}f"))


def reader_ticks(fig: Figure) -> Figure:
    """Give every axis of `fig` that writes matplotlib's plain numbers (`ScalarFormatter`) a
    `ReaderFormatter`, keeping its settings. English needs none: its ticks stay matplotlib's."""
    if language() == DEFAULT:
        return fig
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for formatter, install in (
                (axis.get_major_formatter(), axis.set_major_formatter),
                (axis.get_minor_formatter(), axis.set_minor_formatter),
            ):
                if type(formatter) is ScalarFormatter:
                    reader = ReaderFormatter(
                        useOffset=formatter.get_useOffset(), useMathText=formatter.get_useMathText()
                    )
                    reader.set_scientific(formatter._scientific)
                    reader.set_powerlimits(formatter._powerlimits)
                    install(reader)
    return fig


def finish(fig: Figure) -> Figure:
    """Close `fig` and return it: the notebook shows it once, as the cell's value (closed, pyplot
    does not show it a second time). Its tick labels write numbers the reader's way (`reader_ticks`)."""
    plt.close(fig)
    return reader_ticks(fig)


def wrapped(text: str, width: int) -> str:
    """`text` broken into lines of about `width` characters, so a longer language grows down, not out."""
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def rerun_explorer(run, figure, controls: list, waiting: str, running, measured):
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
