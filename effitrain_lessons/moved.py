"""Old import places that keep working for a while: a name imported from the module it has left.

Shared by every module a name moved out of when each lesson's code came to sit in one place (`viz`,
whose figures now sit beside the module that measures each lesson; `checkpointing`, `local_sgd`,
`device`, `quiz`, `data`). A learner's notebook written against the old place still runs: it gets
the object, and one `FutureWarning` (Jupyter shows it under the cell) that says where the name went.
The old places go in the next minor version.

A module whose names moved says where each one lives now, in a table, and hands it to
`moved_names` as its module-level `__getattr__` (PEP 562: Python asks it only for names the module
does not hold):

    MOVED = {"trace_step": "effitrain_lessons.tracing"}
    __getattr__ = moved_names(__name__, MOVED)

The table names each new place as a string, imported only when a name is asked for; tests/test_layers.py
reads it and counts each entry as an import of the new place when it looks for import cycles.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping

from effitrain_lessons.i18n import phrase

SCRIPT = ".py"  # a place ending so is a script of the course's repository, outside the package


def moved_names(old: str, places: Mapping[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` for the module named `old`: each name in `places` is fetched from
    the module `places[name]` names, with a FutureWarning saying so; any other name is missing.

    A place that is a script (`tools/make_course_data.py`) cannot be imported from the package: asking
    for the name raises an ImportError that says where it went (an AttributeError's sentence would be
    lost: `from module import name` replaces it with "cannot import name").
    """

    def __getattr__(name: str):
        place = places.get(name)
        if place is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        if place.endswith(SCRIPT):
            raise ImportError(
                phrase(
                    "{name} moved out of the package, to {place} in the course's repository: "
                    "run that script in a checkout.",
                    name=name,
                    place=place,
                ),
                name=old,
            )
        # stacklevel 2: the warning names the line that imported the name (the learner's cell)
        warnings.warn(
            phrase(
                "{name} moved to {place}: import it from there; the old place goes in the next "
                "minor version.",
                name=name,
                place=place,
            ),
            FutureWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(place), name)

    return __getattr__
