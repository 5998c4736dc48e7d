"""A check points back to the lesson; it never hands over the method (STYLE.md, "A check teaches
without telling").

tests/test_checks_never_tell.py runs every public check on wrong answers and holds that the right
value never shows. This file holds the words around it, in every lesson master:
- each `why=` a check gives (what to re-read) names a place to re-read and writes no formula;
- a question's own text, read before any answer, writes no formula either;
- a failed prediction never says which way it is wrong (shared/checks.py: a learner told "too high"
  or "too low" finds any number by halving the distance).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from effitrain_lessons import lessons as manifest

ROOT = Path(__file__).resolve().parents[1]
# arithmetic written out: "2 x 4", "s * b", "(1 + 2)", "h / a", "a × b", "= 4 *"
FORMULA = re.compile(
    r"\d\s*[x×*/]\s*\(?\d"  # 8 x 4, 2*3, 16 / 8
    r"|\b[a-zA-Z_]\w*\s*(?:[×*]|/(?!s\b))\s*[a-zA-Z_(\d]"  # s * b, h/a, heads × seq (not Mb/s)
    r"|\(\s*[\w.]+\s*[-+*/×]\s*[\w.]+\s*\)"  # (1 + 2), (n - 1)
    r"|=\s*[\w.()]+\s*(?:[-+*/×]|x\s)"  # an equation: bytes = elements x 4 (a setting, K = 7, is no method)
)
DIRECTION = re.compile(r"\b(too (high|low|large|small|big|many|few)|higher|lower|fazla|eksik)\b", re.I)


def masters() -> list[tuple[str, dict]]:
    return [
        (each.number, json.loads((ROOT / "lessons" / each.notebook).read_text(encoding="utf-8")))
        for each in manifest.LESSONS
    ]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def questions(master: dict):
    """(question, its text before the answer, its test cells' sources) for each graded question."""
    found, current, text, tests, where = [], None, [], [], None
    for cell in master["cells"]:
        body = source(cell)
        if cell["cell_type"] == "raw" and body.startswith("# BEGIN QUESTION"):
            current = re.search(r"name:\s*(\w+)", body).group(1)
            text, tests, where = [], [], "question"
        elif cell["cell_type"] == "raw" and body.startswith("# BEGIN SOLUTION"):
            where = "solution"
        elif cell["cell_type"] == "raw" and body.startswith("# BEGIN TESTS"):
            where = "tests"
        elif cell["cell_type"] == "raw" and body.startswith("# END QUESTION"):
            found.append((current, "\n".join(text), tests))
            current, where = None, None
        elif current and where == "question" and cell["cell_type"] == "markdown":
            text.append(body)
        elif current and where == "tests" and cell["cell_type"] == "code":
            tests.append(body)
    return found


def whys(test_source: str) -> list[str]:
    """The text of every `why=` a test passes, as far as it is written out in the source."""
    said = []
    for node in ast.walk(ast.parse(test_source)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "why":
                    value = keyword.value
                    if isinstance(value, ast.Call) and value.args:  # phrase("...") or _("...")
                        value = value.args[0]
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        said.append(value.value)
    return said


ALL_QUESTIONS = [
    (lesson, question, text, tests)
    for lesson, master in masters()
    for question, text, tests in questions(master)
]


@pytest.mark.parametrize(
    "lesson, question, text, tests", ALL_QUESTIONS, ids=[q for _, q, _, _ in ALL_QUESTIONS]
)
def test_a_check_says_what_to_re_read_and_writes_no_formula(lesson, question, text, tests):
    for said in [why for test in tests for why in whys(test)]:
        assert re.search(r"re-read", said, re.I), (
            f"{question}: a why= that names nothing to re-read: {said!r}"
        )
        assert not FORMULA.search(said), f"{question}: a why= that writes the method: {said!r}"
        assert not DIRECTION.search(said), f"{question}: a why= that says which way: {said!r}"


@pytest.mark.parametrize(
    "lesson, question, text, tests", ALL_QUESTIONS, ids=[q for _, q, _, _ in ALL_QUESTIONS]
)
def test_a_question_s_text_writes_no_formula_before_the_answer(lesson, question, text, tests):
    prose = re.sub(r"`[^`]*`", " ", text)  # code names the learner calls, e.g. `f(8, 32)`, are not a method
    assert not FORMULA.search(prose), (
        f"{question}: its text writes the method: {FORMULA.search(prose).group(0)!r}"
    )


def test_every_lesson_has_a_graded_question_that_measures():
    """Each lesson grades at least one prediction its public check compares with a measurement."""
    for lesson, master in masters():
        predictions = [q for q, _, tests in questions(master) if any("check_prediction(" in t for t in tests)]
        assert predictions, f"lesson {lesson} has no graded prediction"


def test_the_formula_reader_catches_methods_and_spares_plain_words():
    for method in ("count 8 x 4 elements", "s * b * h", "(1 + 2) / 3", "bytes = elements x 4", "h/a"):
        assert FORMULA.search(method), method
    for plain in (
        "Re-read section 5, Gradient accumulation.",
        "micro-batches of 16 pairs",
        "lesson 00's model",
    ):
        assert not FORMULA.search(plain), plain
