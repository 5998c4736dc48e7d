"""The red team's routes to full marks, rebuilt as submissions and graded through `effitrain grade`.

Each route reached the tests when they ran beside the answer, in the learner's process. Now the
learner's process only sends data back, and the grader judges it against the solution's: each
route, added to a wrong answer, must score no more than the same wrong answer without it. An
honest answer that aliases torch earns full marks and no flag.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
from test_grading import needs_sandbox

from effitrain_lessons.course.lessons import ROOT, edition_paths, load_lesson

LESSON_00 = "00_start_here"
LESSON_01 = "01_checkpointing_first_principles"
WRONG_00 = "tensor_bytes = 7.0\n"
WRONG_01 = "def checkpointed_block(x):\n    return block(x)\n"
RIGHT_01_ALIASED = (
    "import torch as tt\n\n\n"
    "def checkpointed_block(x):\n"
    "    return tt.utils.checkpoint.checkpoint(block, x, use_reentrant=False)\n"
)

# 1. Walk the stack, with attribute names built as strings, to the worker's loop over cases, and
# replace the function that runs a case with one that reports whatever looks like success.
STACK_WALK = """
import gc, logging

def _forge(*args, **kwargs):
    return '{"dict": {"passed": true, "bytes": [1, 1, 1, 1], "kept_bytes": 0}}', "", []

def _walk():
    frame = getattr(logging.sys, "_get" + "frame")(0)
    while frame is not None:
        code = getattr(frame, "f_" + "code")
        for function in gc.get_referrers(code):
            for cell in getattr(function, "__clo" + "sure__", None) or ():
                try:
                    value = getattr(cell, "cell_" + "contents")
                except ValueError:
                    continue
                if callable(value) and getattr(value, "__name__", "").startswith("run_"):
                    setattr(cell, "cell_" + "contents", _forge)
        frame = getattr(frame, "f_" + "back")
"""
STACK_WALK_00 = STACK_WALK + "\ndef tensor_bytes(shape, dtype):\n    _walk()\n    return 7.0\n"
STACK_WALK_01 = STACK_WALK + "\ndef checkpointed_block(x):\n    _walk()\n    return block(x)\n"

# 2. Patch a module the tests measure with, imported first by the answer: the measurement claims
# that the block was recomputed and kept nothing.
PATCH_MEASUREMENT = """
import dataclasses
import effitrain_lessons.shared.tracing as tracing

_real = tracing.trace_step

def _forged(*args, **kwargs):
    step = _real(*args, **kwargs)
    return dataclasses.replace(step, kept=[], recomputed={"mm": 1, "relu": 1})

tracing.trace_step = _forged
"""

# 3. Do the same from an import finder (the audit used to exempt imports) and from a forward hook
# that fires inside lesson cells and tests (lesson cells were not audited).
FINDER_AND_HOOK = """
import dataclasses, gc, sys

def _patch():
    for thing in gc.get_objects():
        if getattr(thing, "__name__", None) == "effitrain_lessons.shared.tracing":
            real = thing.trace_step
            if getattr(real, "forged", False):
                return
            def forged(*args, **kwargs):
                step = real(*args, **kwargs)
                return dataclasses.replace(step, kept=[], recomputed={"mm": 1, "relu": 1})
            forged.forged = True
            thing.trace_step = forged

class Finder:
    def find_spec(self, name, path=None, target=None):
        _patch()
        return None

sys.meta_path.insert(0, Finder())
block.register_forward_hook(lambda module, inputs, output: _patch())
"""

# 4. Replace torch.testing.assert_close with a library function that does nothing, relabelled so
# that it passes for a library's own.
ASSERT_CLOSE = """
import logging
import torch

_noop = logging.debug  # does nothing at the default level
_noop.__module__ = "torch.testing._comparison"
torch.testing.assert_close = _noop
torch.allclose = lambda *args, **kwargs: True
"""

# 5. A global torch function mode, built with type(), that makes every comparison true.
FUNCTION_MODE = """
import torch
from torch.overrides import TorchFunctionMode

def _always(self, func, types, args=(), kwargs=None):
    result = func(*args, **(kwargs or {}))
    if getattr(func, "__name__", "") in ("isclose", "allclose", "equal", "eq", "__eq__"):
        return torch.ones_like(result, dtype=torch.bool) if isinstance(result, torch.Tensor) else True
    return result

_Mode = type("Quiet", (TorchFunctionMode,), {"__torch_function__": _always})
_Mode().__enter__()
"""


def notebook(lesson: str, question: str, source: str) -> dict:
    """The lesson's learner edition with `question`'s answer cell holding `source`."""
    learner = json.loads((ROOT / edition_paths(lesson)["learner"]).read_text(encoding="utf-8"))
    answers = load_lesson(lesson).answers
    for cell in learner["cells"]:
        if answers.get(cell.get("id")) == question:
            cell["source"] = source
    return learner


SUBMISSIONS = {
    "wrong_00.ipynb": (LESSON_00, "q_bytes", WRONG_00),
    "wrong_01.ipynb": (LESSON_01, "q_checkpoint_block", WRONG_01),
    "stack_walk_00.ipynb": (LESSON_00, "q_bytes", STACK_WALK_00),
    "stack_walk_01.ipynb": (LESSON_01, "q_checkpoint_block", STACK_WALK_01),
    "patch_measurement_01.ipynb": (LESSON_01, "q_checkpoint_block", WRONG_01 + PATCH_MEASUREMENT),
    "finder_and_hook_01.ipynb": (LESSON_01, "q_checkpoint_block", WRONG_01 + FINDER_AND_HOOK),
    "assert_close_01.ipynb": (LESSON_01, "q_checkpoint_block", WRONG_01 + ASSERT_CLOSE),
    "function_mode_01.ipynb": (LESSON_01, "q_checkpoint_block", WRONG_01 + FUNCTION_MODE),
    "aliased_01.ipynb": (LESSON_01, "q_checkpoint_block", RIGHT_01_ALIASED),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class above, graded by the command an instructor types."""
    root = tmp_path_factory.mktemp("red_team")
    folder, out = root / "class", root / "out"
    folder.mkdir()
    for name, (lesson, question, source) in SUBMISSIONS.items():
        (folder / name).write_text(json.dumps(notebook(lesson, question, source)), encoding="utf-8")
    command = [sys.executable, "-m", "effitrain_lessons", "grade", str(folder), "--out", str(out), "--quiet"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-2000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["file"]: row for row in csv.DictReader(handle)}
    results = {entry["file"]: entry for entry in json.loads((out / "results.json").read_text("utf-8"))}
    return rows, results, out


def points(results: dict, name: str, question: str) -> float:
    return results[name]["questions"][question]["points"]


@needs_sandbox
@pytest.mark.parametrize(
    "attack, honest, question",
    [
        ("stack_walk_00.ipynb", "wrong_00.ipynb", "q_bytes"),
        ("stack_walk_01.ipynb", "wrong_01.ipynb", "q_checkpoint_block"),
        ("patch_measurement_01.ipynb", "wrong_01.ipynb", "q_checkpoint_block"),
        ("finder_and_hook_01.ipynb", "wrong_01.ipynb", "q_checkpoint_block"),
        ("assert_close_01.ipynb", "wrong_01.ipynb", "q_checkpoint_block"),
        ("function_mode_01.ipynb", "wrong_01.ipynb", "q_checkpoint_block"),
    ],
)
def test_a_route_scores_no_more_than_the_same_wrong_answer(graded, attack, honest, question):
    rows, results, _ = graded
    assert rows[attack]["status"] == "graded", rows[attack]
    assert points(results, attack, question) <= points(results, honest, question), (attack, rows[attack])
    assert float(rows[attack]["total"]) <= float(rows[honest]["total"])
    if honest == "wrong_01.ipynb":  # the wrong answer is wrong: it must not pass everything
        assert points(results, honest, question) < results[honest]["questions"][question]["possible"]


@needs_sandbox
@pytest.mark.parametrize(
    "attack, flag",
    [
        ("stack_walk_01.ipynb", "walks object referrers"),
        ("patch_measurement_01.ipynb", "effitrain_lessons.shared.tracing.trace_step"),
        ("finder_and_hook_01.ipynb", "walks the garbage collector's objects"),
        ("function_mode_01.ipynb", "torch function mode"),
    ],
)
def test_a_route_is_flagged_for_review(graded, attack, flag):
    rows, _, _ = graded
    assert flag in rows[attack]["flags"], rows[attack]["flags"]


@needs_sandbox
def test_an_honest_alias_gets_full_marks_and_no_flag(graded):
    rows, results, _ = graded
    entry = results["aliased_01.ipynb"]["questions"]["q_checkpoint_block"]
    assert entry["points"] == entry["possible"] > 0, rows["aliased_01.ipynb"]
    assert "q_checkpoint_block" not in rows["aliased_01.ipynb"]["flags"], rows["aliased_01.ipynb"]["flags"]


@needs_sandbox
def test_no_feedback_holds_a_line_of_a_hidden_case(graded):
    _, _, out = graded
    hidden_lines = {
        line.strip()
        for lesson in (LESSON_00, LESSON_01)
        for question in load_lesson(lesson).questions.values()
        for case in question.cases
        if case.hidden
        for line in case.code.splitlines()
        if len(line.strip()) > 12 and not line.strip().startswith(("import ", "from "))
    }
    for path in (out / "feedback").iterdir():
        text = path.read_text(encoding="utf-8")
        leaked = [line for line in hidden_lines if line in text]
        assert not leaked, (path.name, leaked[:3])


@needs_sandbox
def test_results_json_names_the_hidden_cases_that_failed_for_the_instructor(graded):
    _, results, _ = graded
    for name, (lesson, question, _) in SUBMISSIONS.items():
        hidden = {case.index for case in load_lesson(lesson).questions[question].cases if case.hidden}
        failed = results[name]["questions"][question]["hidden_failed"]
        assert set(failed) <= hidden, (name, failed)
        if name.startswith("wrong_"):
            assert failed, name  # a wrong answer fails a hidden case, and the instructor is told which
    assert results["aliased_01.ipynb"]["questions"]["q_checkpoint_block"]["hidden_failed"] == []
