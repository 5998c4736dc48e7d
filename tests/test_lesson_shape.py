"""What every lesson offers the learner, read from its master: practice at three levels (a quiz, graded
exercises, an open exploration), further reading with links, a drawn diagram where a technique has
one, and the technique in cells rather than printed from the package."""

import importlib
import json
import re

import pytest

from effitrain_lessons.course import build as editions
from effitrain_lessons.lessons import lesson

LESSONS = editions.lesson_names()
DIAGRAMS = {
    "01": "draw_checkpointing_memory(",
    "04": "draw_data_parallel_and_local_sgd(",
    "05": "draw_diloco(",
}


def cells(name: str) -> list[tuple[str, str]]:
    master = json.loads((editions.ROOT / editions.LESSONS_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
    return [(cell["cell_type"], "".join(cell["source"])) for cell in master["cells"]]


def headings(name: str) -> list[str]:
    return [
        line
        for kind, text in cells(name)
        if kind == "markdown"
        for line in text.splitlines()
        if line.startswith("#")
    ]


def test_each_lesson_has_its_quiz_and_each_quiz_its_lesson():
    for name in LESSONS:
        questions = importlib.import_module(f"{lesson(name).package}.quiz").QUESTIONS
        calls = [text for kind, text in cells(name) if kind == "code" and "lesson_quiz(" in text]
        assert calls == [
            f'from effitrain_lessons.shared.quiz import lesson_quiz\n\nlesson_quiz("{name[:2]}")'
        ], name
        assert len(questions) >= 3, f"{name}: a quiz of {len(questions)} questions"


@pytest.mark.parametrize("name", LESSONS)
def test_practice_has_a_quiz_exercises_and_an_exploration(name):
    found = headings(name)
    practice = next(
        i for i, line in enumerate(found) if re.match(r"## (\d+\. )?(Let's practice|Practice)", line)
    )
    after = found[practice:]
    assert any(line == "### Quiz" for line in after), f"{name}: no quiz under the practice heading"
    assert any(line.startswith("### Exercise") for line in after), f"{name}: no graded exercise"
    assert any("Explore" in line for line in found), f"{name}: no open exploration"
    assert sum(kind == "raw" and text.startswith("# BEGIN QUESTION") for kind, text in cells(name)) >= 1


@pytest.mark.parametrize("name", LESSONS)
def test_further_reading_has_links(name):
    section = [
        text for kind, text in cells(name) if kind == "markdown" and text.startswith("## Further reading")
    ]
    assert section, f"{name}: no further reading"
    assert len(re.findall(r"\]\(https://[^)]+\)", section[0])) >= 2, f"{name}: further reading without links"


@pytest.mark.parametrize("lesson, call", sorted(DIAGRAMS.items()))
def test_lessons_01_04_and_05_draw_their_technique(lesson, call):
    name = next(name for name in LESSONS if name.startswith(lesson))
    assert any(kind == "code" and call in text for kind, text in cells(name)), (
        f"{name} does not call {call}...)"
    )


@pytest.mark.parametrize("name", LESSONS)
def test_no_lesson_prints_package_source(name):
    assert not any(kind == "code" and "getsource" in text for kind, text in cells(name))


REPORTING_CALLS = re.compile(r"\b(say|phrase|format_number)\(")
REPORTING_CALLS_AT_MOST = 80  # in all the English learner editions together
CELL_LINES_AT_MOST = 40


def learner_code_cells(name: str) -> list[str]:
    edition = editions.ROOT / editions.LEARNER_DIR / f"{name}.ipynb"
    notebook = json.loads(edition.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


def test_the_learners_cells_leave_reporting_to_the_package():
    """A cell shows the technique, the ecosystem's call and one display line; tables, comparisons and
    verdicts are printed by the lesson's package, in the language in use."""
    calls = {name: sum(len(REPORTING_CALLS.findall(s)) for s in learner_code_cells(name)) for name in LESSONS}
    assert sum(calls.values()) <= REPORTING_CALLS_AT_MOST, calls


@pytest.mark.parametrize("name", LESSONS)
def test_no_learner_cell_is_over_40_lines_but_the_loops_the_learner_edits(name):
    long = [
        source.splitlines()[0]
        for source in learner_code_cells(name)
        if len(source.splitlines()) > CELL_LINES_AT_MOST and not source.startswith("# @save")
    ]
    assert long == [], f"{name}: cells over {CELL_LINES_AT_MOST} lines start with {long}"
