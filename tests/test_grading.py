"""Tests for `effitrain grade`: real submissions graded in worker processes, each with its expected score.

Two batches: every lesson's solution edition (full marks) and untouched learner edition (zero), and
lesson 00/01 submissions that misbehave in every way the grader must survive.
"""

import csv
import json
import shutil
import time
from pathlib import Path

import psutil
import pytest

from effitrain_lessons import authoring, grading
from effitrain_lessons.checks import HONEST, CheckResult

ROOT = authoring.ROOT
LESSONS = authoring.lesson_names()


def edition(name: str, kind: str) -> dict:
    return json.loads((ROOT / authoring.edition_paths(name)[kind]).read_text(encoding="utf-8"))


def with_answer(name: str, answers: dict[str, str], kind: str = "learner") -> dict:
    """The learner edition of `name` with the answer cells of the given questions replaced."""
    notebook = edition(name, kind)
    lesson = grading.load_lesson(name)
    for cell in notebook["cells"]:
        question = lesson.answers.get(cell.get("id"))
        if question in answers:
            cell["source"] = answers[question]
    return notebook


def write(folder: Path, filename: str, notebook) -> Path:
    path = folder / filename
    path.write_text(notebook if isinstance(notebook, str) else json.dumps(notebook), encoding="utf-8")
    return path


def read_csv(path: Path) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["file"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def editions_batch(tmp_path_factory):
    """Every lesson's solution and learner edition, graded with the defaults (2 workers)."""
    folder = tmp_path_factory.mktemp("editions")
    for name in LESSONS:
        shutil.copy(ROOT / authoring.edition_paths(name)["solution"], folder / f"solution_{name}.ipynb")
        shutil.copy(ROOT / authoring.edition_paths(name)["learner"], folder / f"learner_{name}.ipynb")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    start = time.monotonic()
    results = grading.grade([str(folder)], str(folder.parent / "editions_out"))
    seconds = time.monotonic() - start
    print(f"\ngraded {len(results)} submissions in {seconds:.0f} s with the default workers")
    return folder, results, before, seconds


def test_solution_editions_get_full_marks(editions_batch):
    folder, results, _, _ = editions_batch
    by_file = {result.file: result for result in results}
    for name in LESSONS:
        result = by_file[f"solution_{name}.ipynb"]
        assert result.status == "graded" and result.reason == "", (name, result.reason)
        possible = sum(question.possible for question in result.questions.values())
        assert possible > 0 and result.total == possible, (name, {q: r.points for q, r in result.questions.items()})


def test_untouched_learner_editions_get_zero(editions_batch):
    folder, results, _, _ = editions_batch
    by_file = {result.file: result for result in results}
    for name in LESSONS:
        result = by_file[f"learner_{name}.ipynb"]
        assert result.status == "graded"
        assert result.total == 0, (name, {q: r.points for q, r in result.questions.items()})
        # Hidden tests ran, from the instructor's copy (the learner edition has none).
        assert all(q.hidden_total > 0 for q in result.questions.values())


def test_results_files_and_submissions_untouched(editions_batch):
    folder, results, before, _ = editions_batch
    out = folder.parent / "editions_out"
    rows = read_csv(out / "grades.csv")
    assert set(rows) == {result.file for result in results}
    assert rows["solution_00_start_here.ipynb"]["q_bytes"] == "1" and rows["learner_00_start_here.ipynb"]["total"] == "0"
    for result in results:
        text = (out / "feedback" / f"{Path(result.file).stem}.txt").read_text(encoding="utf-8")
        assert "hidden tests:" in text and "All test cases passed" not in text
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # never modified
    assert psutil.Process().children(recursive=True) == []


@pytest.fixture(scope="module")
def hostile_batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    right = "tensor_bytes = 8 * 32 * 64 * 4\n"
    write(folder, "partial.ipynb", with_answer("00_start_here", {"q_bytes": "tensor_bytes = 7\n"}))
    write(folder, "right.ipynb", with_answer("00_start_here", {"q_bytes": right}))
    write(folder, "endless_loop.ipynb", with_answer("00_start_here", {"q_bytes": "while True:\n    pass\n"}))
    write(folder, "endless_print.ipynb", with_answer("00_start_here", {"q_bytes": "while True:\n    print('x' * 10000)\n"}))
    write(folder, "memory_hog.ipynb", with_answer("00_start_here", {"q_bytes": "hog = bytearray(8 * 2**30)\n" + right}))
    write(folder, "kernel_exit.ipynb", with_answer("00_start_here", {"q_bytes": "import os\nos._exit(3)\n"}))
    write(folder, "malformed.ipynb", '{"cells": [ this is not json')
    write(folder, "not_a_notebook.ipynb", json.dumps({"hello": "world"}))
    # The wrong answer of lesson 01 (no checkpointing at all), honestly and with every trick at once.
    wrong = "def checkpointed_block(x):\n    return block(x)\n"
    tricks = (
        "import otter.test_files, effitrain_lessons.checkpointing as _c\n"
        "otter.test_files.OKTestFile.run = lambda self, env: None\n"
        "_real = _c.trace_step\n"
        "def _fake(fn, inputs, parameters=None):\n"
        "    report = _real(fn, inputs, parameters)\n"
        "    object.__setattr__(report, 'kept_bytes', 0) if hasattr(report, 'kept_bytes') else None\n"
        "    return report\n"
        "_c.trace_step = _fake\n"
        "grader = None\n"
    )
    tampered = with_answer("01_checkpointing_first_principles", {"q_checkpoint_block": wrong + tricks})
    tampered["metadata"]["otter"]["tests"] = {}  # and the notebook's own tests deleted
    tampered["cells"] = [c for c in tampered["cells"] if "grader.check" not in "".join(c["source"])]
    write(folder, "tampered.ipynb", tampered)
    write(folder, "honest_wrong.ipynb", with_answer("01_checkpointing_first_principles", {"q_checkpoint_block": wrong}))
    results = grading.grade([str(folder)], str(folder.parent / "hostile_out"), timeout=90, memory_mb=3072)
    return {result.file: result for result in results}


def test_partly_solved_gets_partial_credit(hostile_batch):
    assert hostile_batch["right.ipynb"].total == 1
    partial = hostile_batch["partial.ipynb"]
    assert partial.status == "graded" and partial.total == 0.5
    assert partial.questions["q_bytes"].public_passed == 1 and partial.questions["q_bytes"].hidden_passed == 0


def test_endless_loop_times_out_with_zero(hostile_batch):
    result = hostile_batch["endless_loop.ipynb"]
    assert result.status == "timeout" and "did not finish within 90 s" in result.reason
    assert result.total == 0 and set(result.questions) == {"q_bytes"}
    assert result.seconds < 90 + 30


def test_endless_print_is_cut_off_with_zero(hostile_batch):
    # Its output is capped and reported as the cause, unless the time limit strikes first.
    result = hostile_batch["endless_print.ipynb"]
    assert result.status in ("output", "timeout")
    assert "printed more than the 2 MB allowed" in result.reason or result.status == "timeout"
    assert result.total == 0


def test_memory_hog_is_stopped_by_the_cap(hostile_batch):
    result = hostile_batch["memory_hog.ipynb"]
    assert result.status == "memory" and "3072 MiB" in result.reason
    # The cell failed before the answer: nothing to show.
    assert result.total == 0


def test_kernel_that_exits_is_reported(hostile_batch):
    result = hostile_batch["kernel_exit.ipynb"]
    assert result.status == "kernel died" and result.total == 0


def test_malformed_files_get_a_row_with_the_reason(hostile_batch):
    assert hostile_batch["malformed.ipynb"].status == "malformed"
    assert "is not a valid Jupyter notebook" in hostile_batch["malformed.ipynb"].reason
    assert hostile_batch["not_a_notebook.ipynb"].status == "malformed"


def test_tampering_gains_nothing(hostile_batch):
    honest, tampered = hostile_batch["honest_wrong.ipynb"], hostile_batch["tampered.ipynb"]
    assert honest.status == tampered.status == "graded"
    assert tampered.total == honest.total
    assert tampered.questions["q_checkpoint_block"].points == honest.questions["q_checkpoint_block"].points
    assert honest.questions["q_checkpoint_block"].points < honest.questions["q_checkpoint_block"].possible


def test_nothing_outlives_the_batch(hostile_batch):
    assert psutil.Process().children(recursive=True) == []


# --- the in-notebook check is honest about hidden tests -----------------------------------------


class _Otter:
    def __repr__(self):
        return "q results: All test cases passed!"

    def _repr_html_(self):
        return "<p><strong><pre style='display: inline;'>q</pre></strong> passed! 🍀</p>"


def test_learners_are_not_told_all_tests_passed_while_hidden_tests_remain():
    learner = CheckResult(_Otter(), hidden_ran=False)
    assert "All test cases passed" not in repr(learner) and HONEST in repr(learner)
    assert "passed!" not in learner._repr_html_() and HONEST in learner._repr_html_()
    solution = CheckResult(_Otter(), hidden_ran=True)
    assert repr(solution) == "q results: All test cases passed!"


def test_every_edition_uses_the_honest_grader():
    for name in LESSONS:
        for kind in ("learner", "solution"):
            init = next(c for c in edition(name, kind)["cells"] if c["id"] == "otter-init")
            assert "from effitrain_lessons.checks import Notebook" in "".join(init["source"])


def test_grade_command_reports_bad_options(tmp_path, capsys):
    assert grading.main_grade([str(tmp_path), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    assert grading.main_grade([str(tmp_path / "nothing_here"), "--out", str(tmp_path / "o")]) == 2
    assert "nothing_here does not exist" in capsys.readouterr().err
    assert grading.main_grade([str(tmp_path), "--out", str(tmp_path / "o")]) == 2  # an empty folder
    assert "No submissions found" in capsys.readouterr().err
