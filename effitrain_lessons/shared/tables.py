"""How the package's results print themselves: one table, as aligned text and as HTML.

`StepReport`, `StepTrace`, `TrainingMemory` and the lesson reports return a `Table` so that a
notebook shows a result by naming it, never by formatting columns by hand; each of them is a
`ShowsAsTable`, which shows its `table()` as the text `print` writes and the HTML a notebook
draws. A table's columns, title and notes are English when built and shown in the lesson's
language (`effitrain_lessons.shared.i18n`): the language is chosen after the table's text is written.
The cells are data and show as they are, numbers as the reader writes them (`format_number`: 0,05
in Turkish). `format_bytes` and `format_flops` write the cells' sizes the same way (no torch
needed, so the planner and the command line stay light).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from effitrain_lessons.shared.i18n import _, format_number, phrase


@dataclass(frozen=True, repr=False)
class Table:
    """Rows under named columns; `notes` are lines shown under the table (totals, legends)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[object]]
    title: str | None = None
    notes: Sequence[str] = ()

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(
                    phrase(
                        "A row has {cells} cells for {columns} columns: {row!r}.",
                        cells=len(row),
                        columns=len(self.columns),
                        row=list(row),
                    )
                )

    def _words(self) -> tuple[list[str], str | None, list[str]]:
        """The columns, title and notes in the language in use."""
        return (
            [_(str(c)) for c in self.columns],
            _(self.title) if self.title else None,
            [_(line) for line in self.notes],
        )

    def __str__(self) -> str:
        columns, title, notes = self._words()
        cells = [columns, *[[_cell(c) for c in row] for row in self.rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
        lines.insert(1, "  ".join("-" * width for width in widths))
        if title:
            lines.insert(0, title)
        if notes:
            lines += ["", *notes]
        return "\n".join(lines)

    def __repr__(self) -> str:  # a cell that ends with a Table shows the text where HTML cannot show
        return str(self)

    def _repr_html_(self) -> str:
        columns, title, notes = self._words()
        caption = f"<caption>{html.escape(title)}</caption>" if title else ""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in row) + "</tr>" for row in self.rows
        )
        below = "".join(f"<p>{html.escape(line)}</p>" for line in notes)
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{below}"


def _cell(value: object) -> str:
    """A cell as text: a number as the reader writes it, anything else as `str` writes it."""
    return format_number(value) if isinstance(value, (int, float)) else str(value)


class ShowsAsTable:
    """A result that shows itself as its `table()`: `print(result)` prints the table's text, and a
    cell that ends with the result shows the table's HTML. Subclasses define `table()`; a dataclass
    keeps its own `repr` (the fields), one made with `repr=False` shows the table's text there too."""

    def table(self) -> Table:
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self.table())

    def __repr__(self) -> str:  # where HTML cannot show (a terminal, a text-only viewer)
        return str(self)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


class ShowsAsLines:
    """A result shown as a few lines of text: `print(result)`, or the last line of a cell. Subclasses
    define `lines()`; the lines are written when shown, so they are in the language in use then."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)


def format_bytes(n: float) -> str:
    """1536 -> '1.50 KiB' ('1,50 KiB' in Turkish): bytes in the largest binary unit that keeps the
    number >= 1."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{format_number(n, ',.0f' if unit == 'B' else ',.2f')} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_flops(n: float) -> str:
    """12288 -> '12.29 kFLOP' ('12,29 kFLOP' in Turkish): FLOPs with a decimal prefix."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if abs(n) >= scale:
            return f"{format_number(n / scale, ',.2f')} {unit}"
    return f"{format_number(n, ',.0f')} FLOP"
