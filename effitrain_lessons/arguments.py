"""The one check every size, count and step argument in the package goes through."""

from __future__ import annotations


def whole_numbers(**values: object) -> None:
    """Raise one sentence for the first value that is not a whole number of at least 1.

    `whole_numbers(batch=8, width=0)` raises "width must be a whole number of at least 1, got 0.".
    A bool is refused too: `True` is an int to Python, never a size to a learner.
    """
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}.")
