"""How the package's results print themselves: one table, as aligned text and as HTML.

`StepReport`, `StepTrace`, `TrainingMemory` and the lesson reports return a `Table` so that a
notebook shows a result by naming it, never by formatting columns by hand.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass


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
                raise ValueError(f"A row has {len(row)} cells for {len(self.columns)} columns: {list(row)!r}.")

    def __str__(self) -> str:
        cells = [[str(c) for c in self.columns], *[[str(c) for c in row] for row in self.rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
        lines.insert(1, "  ".join("-" * width for width in widths))
        if self.title:
            lines.insert(0, self.title)
        if self.notes:
            lines += ["", *self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:  # a cell that ends with a Table shows the text where HTML cannot show
        return str(self)

    def _repr_html_(self) -> str:
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in self.rows)
        notes = "".join(f"<p>{html.escape(line)}</p>" for line in self.notes)
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}"
