"""A notebook in which several cells carry an answer cell's id is not graded: which copy is the
learner's answer is anyone's guess (the one an instructor reads first, or the one a reader of the
JSON keeps last), so its row says so in one sentence and the batch goes on. Written as real notebook
files and graded with `effitrain grade`; none of them reaches a sandbox."""

from __future__ import annotations

import copy
import csv
import json

import pytest

from effitrain_lessons.course import grade
from effitrain_lessons.course.lessons import ROOT, edition_paths, load_lesson
from effitrain_lessons.course.submissions import repeated_ids

LESSON = "00_start_here"
ANSWER = "q-bytes-answer"  # q_bytes's answer cell


def learner_edition() -> dict:
    return json.loads((ROOT / edition_paths(LESSON)["learner"]).read_text(encoding="utf-8"))


def with_copies(notebook: dict, cell_id: str, copies: int = 1, cell_type: str = "code") -> dict:
    """`notebook` with `copies` more cells of id `cell_id` after the first: a right-looking answer
    that a reader of the JSON would keep last."""
    notebook = copy.deepcopy(notebook)
    at = next(i for i, cell in enumerate(notebook["cells"]) if cell.get("id") == cell_id)
    for _ in range(copies):
        extra = copy.deepcopy(notebook["cells"][at])
        extra["cell_type"] = cell_type
        extra["source"] = "def tensor_bytes(shape, dtype):\n    return 0\n"
        if cell_type != "code":
            extra.pop("outputs", None)
            extra.pop("execution_count", None)
        notebook["cells"].insert(at + 1, extra)
    return notebook


def rows(out) -> dict[str, dict]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["file"]: row for row in csv.DictReader(handle)}


def test_a_repeated_answer_id_rejects_the_notebook_with_a_reason_and_the_batch_goes_on(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    edition = learner_edition()
    (folder / "twice.ipynb").write_text(json.dumps(with_copies(edition, ANSWER)), encoding="utf-8")
    (folder / "thrice.ipynb").write_text(json.dumps(with_copies(edition, ANSWER, 2)), encoding="utf-8")
    markdown = with_copies(edition, "q-trade-answer", cell_type="markdown")
    (folder / "markdown.ipynb").write_text(json.dumps(markdown), encoding="utf-8")
    (folder / "broken.ipynb").write_text("{ not json", encoding="utf-8")

    results = grade.grade([str(folder)], tmp_path / "out", workers=1, confined=False)

    by_file = {result.file: result for result in results}
    assert set(by_file) == {"twice.ipynb", "thrice.ipynb", "markdown.ipynb", "broken.ipynb"}
    assert by_file["broken.ipynb"].status == "malformed"
    possible = sum(question.points for question in load_lesson(LESSON).questions.values())
    for file, count, question in (("twice.ipynb", 2, "q_bytes"), ("thrice.ipynb", 3, "q_bytes")):
        result = by_file[file]
        assert result.status == "rejected" and result.lesson == LESSON
        assert result.total == 0 and result.possible == possible
        assert result.reason.startswith(f"{count} cells have the id {ANSWER}, the answer cell of {question}:")
        assert result.reason.count(".") == 0, "one sentence, which the feedback ends"
    assert by_file["markdown.ipynb"].status == "rejected"
    assert "q-trade-answer" in by_file["markdown.ipynb"].reason
    row = rows(tmp_path / "out")["twice.ipynb"]
    assert row["status"] == "rejected" and "2 cells have the id" in row["reason"]
    feedback = (tmp_path / "out" / row["feedback"]).read_text(encoding="utf-8")
    assert "keep only the one with your answer" in feedback


def test_only_an_answer_cell_id_that_repeats_stops_grading(monkeypatch, tmp_path):
    """A repeated lesson cell's id is nothing the grader reads: such a notebook is graded."""
    edition = learner_edition()
    lesson_cell = next(
        cell["id"]
        for cell in edition["cells"]
        if cell["cell_type"] == "code" and cell["id"] not in load_lesson(LESSON).answers
    )
    path = tmp_path / "lesson-cell-twice.ipynb"
    path.write_text(json.dumps(with_copies(edition, lesson_cell)), encoding="utf-8")
    graded = []

    def grade_answers(file, lesson, answers, *args, **kwargs):
        graded.append(answers)
        return grade.SubmissionResult(file, lesson.name, "graded")

    monkeypatch.setattr(grade, "grade_answers", grade_answers)
    lessons = {LESSON: load_lesson(LESSON)}
    [submission] = grade.find_submissions([str(path)])
    result = grade.grade_one(submission, lessons, grade.Limits(), confined=False)
    assert result.status == "graded" and graded and set(graded[0]) == set(lessons[LESSON].answers)


@pytest.mark.parametrize(
    "cells, expected",
    [
        ([{"id": "a"}, {"id": "b"}], {}),
        ([{"id": "a"}, {"id": "a"}, {"id": "x"}, {"id": "x"}], {"a": 2}),  # x is no answer cell's
        ([{"id": "b"}, "odd", {"id": 3}, {"id": "b", "cell_type": "raw"}, {"id": "b"}], {"b": 3}),
    ],
)
def test_repeated_ids_counts_the_answer_ids_that_repeat(cells, expected):
    assert repeated_ids({"cells": cells}, {"a", "b"}) == expected
