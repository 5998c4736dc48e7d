"""`grader.check` in the lessons: otter's checks, honest about the tests a learner cannot see.

Learner editions carry only the public tests; the hidden ones run when an instructor grades
(`effitrain grade`). Otter would still say "All test cases passed!" once the public tests pass, so
the lessons' `grader` says "All public tests passed" instead and names the hidden ones still to come.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

# otter imports nbformat, which imports jsonschema, whose format checkers import rfc3987_syntax if it
# is installed; that module builds a parser at import and costs about 3 s of every lesson's start.
# Notebooks never use the IRI formats it checks, so it is kept out while otter loads, and the name
# is released afterwards (anyone may still import it).
_IRI_PARSER = "rfc3987_syntax"
_blocked = _IRI_PARSER not in sys.modules
if _blocked:
    sys.modules[_IRI_PARSER] = None  # makes `import rfc3987_syntax` raise ImportError, which jsonschema skips
try:
    import otter
finally:
    if _blocked and sys.modules.get(_IRI_PARSER, 0) is None:
        del sys.modules[_IRI_PARSER]

OTTER_ALL_PASSED = "All test cases passed!"
HONEST = "All public tests passed. Hidden tests run when your work is graded, and may still fail."
OTTER_HTML_PASSED = re.compile(r"</strong> passed!.*?</p>", re.DOTALL)


class CheckResult:
    """Otter's result for one question, shown with the honest summary."""

    def __init__(self, result, hidden_ran: bool):
        self._result = result
        self._hidden_ran = hidden_ran

    def __getattr__(self, name):
        return getattr(self._result, name)

    def __repr__(self) -> str:
        text = repr(self._result)
        return text if self._hidden_ran else text.replace(OTTER_ALL_PASSED, HONEST)

    def _repr_html_(self) -> str:
        html = self._result._repr_html_()
        return html if self._hidden_ran else OTTER_HTML_PASSED.sub(f"</strong>: {HONEST}</p>", html)


def hidden_tests_in(notebook_path: str | Path) -> bool:
    """Whether the notebook's own test metadata has hidden cases (solution editions do)."""
    try:
        notebook = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    tests = notebook.get("metadata", {}).get("otter", {}).get("tests", {})
    return any(case.get("hidden") for test in tests.values() for suite in test.get("suites", []) for case in suite.get("cases", []))


def Notebook(notebook_path: str, **kwargs):  # noqa: N802 - used like otter.Notebook
    """`otter.Notebook(notebook_path)` whose `check` reports which tests ran."""
    grader = otter.Notebook(notebook_path, **kwargs)
    original = grader.check
    hidden_ran = hidden_tests_in(notebook_path)

    def check(question: str, global_env: dict | None = None):
        if global_env is None:
            global_env = inspect.currentframe().f_back.f_globals
        return CheckResult(original(question, global_env), hidden_ran)

    grader.check = check
    return grader
