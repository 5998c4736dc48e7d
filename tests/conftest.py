"""What every test shares: the tiers, how `make test` shares two cores, and two fixtures.

Tiers (markers):
- `browser`: the lessons in JupyterLab in headless Chromium (tests/test_browser.py marks its tests);
- `sandbox`: grading in the bubblewrap sandbox (tests/test_sandbox.py, and tests/test_grading.py's
  tests that need it, marked by its `needs_sandbox`);
- `notebooks`: each lesson's English solution edition run whole, its prose held to its run
  (tests/test_lesson_runs.py; marked here).
`make test-fast` runs everything else; `make test` runs all of it.

Two cores: `make test` runs pytest-xdist with two workers. Each worker takes whole units of work
(a test file, one lesson notebook, the English or the Turkish browser run, all the sandboxed tests
together, since those look for leftover sandboxes machine-wide) and the longest units go first.
Each worker and every process it starts (kernels, sandboxes, launched ranks) computes on one
thread: two workers at two threads each would fight over two cores (OpenMP threads spin while
they wait, and a Trainer run took minutes instead of seconds).

Fixtures: every test starts in English, whatever an earlier test or the shell chose (the lessons'
language lives in the EFFITRAIN_LANGUAGE environment variable, which processes inherit); `shown`
records what an explorer widget displays.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from effitrain_lessons.shared.i18n import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[1]
BROWSER_FILE = "tests/test_browser.py"
LESSON_RUNS_FILE = "tests/test_lesson_runs.py"
LESSON_RUN_TEST = "test_the_lesson_runs_whole_and_its_prose_quotes_what_it_printed"
SANDBOX_FILES = (
    "tests/test_grading.py",
    "tests/test_sandbox.py",
    "tests/test_grading_output.py",
    "tests/test_red_team.py",
)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# Seconds each unit took in a `make test` on two cores (the longest first; unknown units last, in
# collection order). Only the order of the work depends on these: a stale figure costs time, never a test.
UNIT_SECONDS = {
    "browser-en": 190,
    "browser-tr": 175,
    "sandbox": 160,
    "lesson-02": 40,
    "lesson-04": 25,
    "lesson-05": 25,
    "lesson-03": 20,
    "tests/test_local_sgd.py": 20,
    "tests/test_train_loop.py": 18,
    "tests/test_learning.py": 16,
    "tests/test_diloco.py": 16,
    "tests/test_trainer.py": 15,
    "lesson-07": 15,
    "lesson-06": 12,
    "lesson-09": 40,
    "lesson-01": 10,
    "tests/test_benchmarks.py": 8,
}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: a worker runs a unit whole, in order."""
    path = nodeid.split("::", 1)[0]
    if path == BROWSER_FILE:
        return "browser-tr" if "[tr/" in nodeid else "browser-en"
    if path in SANDBOX_FILES:
        return "sandbox"
    if path == LESSON_RUNS_FILE and f"::{LESSON_RUN_TEST}[" in nodeid:  # each lesson a unit of its own
        return f"lesson-{nodeid.rsplit('[', 1)[1].rstrip(']')}"
    return path


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one compute thread per worker, for everything it starts
        for variable in THREAD_VARIABLES:
            os.environ[variable] = "1"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(f"{LESSON_RUNS_FILE}::{LESSON_RUN_TEST}["):
            item.add_marker(pytest.mark.notebooks)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, which `make test-lowest` runs without
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class LongestUnitsFirst(LoadScopeScheduling):
        """xdist's scope scheduling with this suite's units, the longest sent out first."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_sorted", False):  # once, when the first unit goes out
                # stable
                units = sorted(self.workqueue.items(), key=lambda unit: -UNIT_SECONDS.get(unit[0], 0))
                self.workqueue.clear()
                self.workqueue.update(units)
                self._sorted = True
            super()._assign_work_unit(node)

    return LongestUnitsFirst(config, log)


@pytest.fixture(autouse=True)
def english_unless_asked(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)


@pytest.fixture
def shown(monkeypatch):
    """What an explorer widget shows, IPython's display replaced: ("display", object) and
    ("update", figure)."""
    seen = []

    class Handle:
        def update(self, obj):
            seen.append(("update", obj))

    def fake_display(obj, display_id=False):
        seen.append(("display", obj))
        return Handle() if display_id else None

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    return seen
