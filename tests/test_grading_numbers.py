"""Numbers judged as numbers: a NaN or an infinity is never a right answer, wherever it sits (a
number, a tensor, an array, a list or a dict; first or last), in every helper a judgement calls and in
the grader's judgement of data read from the wire. And the reference cache is keyed by everything
that computes a reference, so that a fix in the package grades against fresh expected values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from effitrain_lessons.course import grade
from effitrain_lessons.course.lessons import Case, Cell, load_lesson
from effitrain_lessons.shared.checks import check_prediction
from effitrain_lessons.shared.judging import close, encode, finite, split_case

NAN, INF = math.nan, math.inf
NOT_FINITE = [NAN, INF, -INF]
NAMES = ["nan", "+inf", "-inf"]


# ---------------------------------------------------------------------------------------------
# close


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
def test_close_never_takes_a_number_that_is_not_finite(bad):
    assert not close(bad, 1.0) and not close(bad, 1) and not close(bad, 0.0, atol=1e9)
    assert not close(bad, bad), "the same infinity expected is no excuse"
    assert not close(1.0, bad)
    assert close(1.0, 1.0) and close(3, 3.0)


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
@pytest.mark.parametrize("where", [0, 2], ids=["first", "last"])
def test_close_never_takes_a_tensor_or_array_holding_one(bad, where):
    want = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    answer = want.copy()
    answer[where] = bad
    assert not close(answer, want) and not close(torch.from_numpy(answer), want)
    assert not close(answer, answer), "an array equal to its own infinities is still wrong"
    assert not close(answer.astype(np.float64), want, rtol=1e9, atol=1e9)
    assert close(want.copy(), want)


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
def test_close_never_takes_a_list_or_dict_holding_one_anywhere(bad):
    """The route of lesson 05's red team: parameter 1 of several filled with NaN, after a right one."""
    want = {"weight": np.ones((2, 2), dtype=np.float32), "bias": np.zeros(2, dtype=np.float32)}
    answer = {"weight": want["weight"].copy(), "bias": np.full(2, bad, dtype=np.float32)}
    assert not close(answer, want) and not close(answer, answer)
    assert not close([1.0, 2.0, bad], [1.0, 2.0, 3.0]) and not close([bad, 2.0], [bad, 2.0])
    assert not close({"a": [1.0, {"b": bad}]}, {"a": [1.0, {"b": 0.0}]}, rtol=10, atol=10)
    assert close({"a": [1.0, {"b": 0.0}]}, {"a": [1.0, {"b": 0.0}]})


def test_close_keeps_its_other_rules():
    assert close(np.array([True, False]), np.array([True, False]))
    assert not close(np.array([True, False]), np.array([True, True]))
    assert close(10**400, 10**400) and not close(10**400, 1.0) and not close(10**400, 10**400 + 1)
    assert close(1_000_000, 1_000_001)  # whole numbers keep the tolerance they had


@pytest.mark.parametrize(
    "value, expected",
    [
        (1.0, True),
        (3, True),
        (10**400, True),
        ("nan", True),
        (None, True),
        ([], True),
        (NAN, False),
        (INF, False),
        (-INF, False),
        ([1.0, [2.0, INF]], False),
        ({"a": 1.0, "b": {"c": NAN}}, False),
        (np.array([1.0, -np.inf]), False),
        (np.array([1, 2]), True),
        (torch.tensor([0.0, float("nan")]), False),
        (torch.ones(3), True),
        (np.float64(np.inf), False),
    ],
    ids=repr,
)
def test_finite_sees_every_number_that_is_not(value, expected):
    assert finite(value) is expected


# ---------------------------------------------------------------------------------------------
# check_prediction


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
@pytest.mark.parametrize("rel", [0.0, 0.01, 1e9])
def test_a_prediction_that_is_not_finite_is_never_right(bad, rel):
    for measured in (65_536.0, 0.0, 1e-3):
        with pytest.raises(AssertionError, match="that is not what was measured"):
            check_prediction("peak", bad, measured, rel=rel)
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("peak", bad, bad, rel=rel)
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("peak", 1.0, bad, rel=rel)  # a measurement that is not finite matches nothing
    check_prediction("peak", 65_536.0, 65_536.0, rel=rel)


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
def test_a_dict_or_list_of_predictions_holding_one_is_never_right(bad):
    measured = {"synchronizations": 4, "calls": 8, "bytes": 1024}
    with pytest.raises(AssertionError, match="Not what was measured: 'bytes'"):
        check_prediction("communication", {**measured, "bytes": bad}, measured, rel=0.5)
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("communication", {**measured, "bytes": bad}, {**measured, "bytes": bad})
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("bytes", [100.0, bad], [100.0, 200.0], rel=0.5)
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("bytes", [100.0, bad], [100.0, bad])
    with pytest.raises(AssertionError, match="that is not what was measured"):
        check_prediction("grad", np.array([1.0, bad]), np.array([1.0, 2.0]), rel=0.5)


def test_a_list_of_predictions_is_compared_item_by_item_and_as_a_whole():
    check_prediction("bytes", [100.0, 201.0], [100, 200], rel=0.01)
    check_prediction("bytes", [100, 200], [100, 200])
    check_prediction("grad", np.array([1.0, 2.0]), np.array([1.0, 2.01]), rel=0.01)
    for wrong in ([100.0], [100.0, 200.0, 300.0], [], [100.0, 210.0]):
        with pytest.raises(AssertionError, match="that is not what was measured"):
            check_prediction("bytes", wrong, [100, 200], rel=0.01)
    with pytest.raises(AssertionError, match="should be a list; it is a dict"):
        check_prediction("bytes", {"a": 100}, [100, 200], rel=0.01)


# ---------------------------------------------------------------------------------------------
# The grader's judgement, on data read from the wire


def case_of(source: str) -> Case:
    return Case("q_x", 0, source, False, 1.0, split_case(source))


PER_TENSOR = """from effitrain_lessons.shared.judging import close, plain
got = {"parameters": answer}
want = {}
want["parameters"] = reference
got, want = plain(got), plain(want)
assert close(got["parameters"], want["parameters"], rtol=0.01), "not the outer step's parameters"
"""
PREDICTED = """from effitrain_lessons.shared.checks import check_prediction
from effitrain_lessons.shared.judging import plain
got = {"answers": answers}
want = {}
want["measured"] = measured
got, want = plain(got), plain(want)
check_prediction("layer_bytes", got["answers"], want["measured"], rel=0.01)
"""
FINITE = """from effitrain_lessons.shared.judging import finite, plain
got = {"kept": kept}
want = {}
want["kept"] = 1.0
got, want = plain(got), plain(want)
assert type(got["kept"]) in (int, float) and finite(got["kept"]) and got["kept"] >= 0
"""


@pytest.mark.parametrize("bad", NOT_FINITE, ids=NAMES)
def test_the_grader_fails_a_case_whose_data_holds_one(bad):
    reference = [torch.ones(3), torch.zeros(2)]
    answer = [torch.ones(3), torch.full((2,), bad)]
    want = {"parameters": [t.numpy() for t in reference]}
    passed, _ = grade.judge_case(case_of(PER_TENSOR), {"data": encode({"parameters": answer})}, want, "en")
    assert not passed
    good = {"data": encode({"parameters": reference})}
    assert grade.judge_case(case_of(PER_TENSOR), good, want, "en") == (True, "")

    want = {"measured": [1000.0, 2000.0]}
    for answers in ([1000.0, bad], [bad, 2000.0]):
        passed, said = grade.judge_case(
            case_of(PREDICTED), {"data": encode({"answers": answers})}, want, "en"
        )
        assert not passed and "not what was measured" in said
    good = {"data": encode({"answers": [1001.0, 1999.0]})}
    assert grade.judge_case(case_of(PREDICTED), good, want, "en") == (True, "")

    passed, _ = grade.judge_case(case_of(FINITE), {"data": encode({"kept": bad})}, {"kept": 1.0}, "en")
    assert not passed
    assert grade.judge_case(case_of(FINITE), {"data": encode({"kept": 3})}, {"kept": 1.0}, "en") == (True, "")


# ---------------------------------------------------------------------------------------------
# The reference cache's key


@pytest.fixture
def fresh_key():
    """`grade._computed_by` read again in the test, and once more after it (it is cached)."""
    grade._computed_by.cache_clear()
    yield
    grade._computed_by.cache_clear()


@pytest.mark.parametrize(
    "module",
    [
        "will_it_fit/plan.py",
        "shared/memory.py",
        "shared/tracing.py",
        "shared/judging.py",
        "course/worker.py",
        "course_data/configs/gpt2.json",
    ],
)
def test_a_changed_file_of_the_package_changes_the_reference_key(module, fresh_key, monkeypatch):
    lesson = load_lesson("06_will_it_fit")
    before = grade._expected_key(lesson)
    grade._computed_by.cache_clear()
    assert grade._expected_key(lesson) == before, "the key is the same when nothing changed"
    read = grade._package_file
    seen = []

    def changed(path):
        if path.as_posix().endswith("effitrain_lessons/" + module):
            seen.append(path)
            return read(path) + b"\n# a fix\n"
        return read(path)

    monkeypatch.setattr(grade, "_package_file", changed)
    grade._computed_by.cache_clear()
    assert grade._expected_key(lesson) != before
    assert seen, f"{module} is not read for the key"


@pytest.mark.parametrize("library", ["torch", "transformers", "accelerate", "numpy"])
def test_another_library_version_changes_the_reference_key(library, fresh_key, monkeypatch):
    lesson = load_lesson("00_start_here")
    before = grade._expected_key(lesson)
    version = grade._version
    monkeypatch.setattr(grade, "_version", lambda name: "0.0.1" if name == library else version(name))
    grade._computed_by.cache_clear()
    assert grade._expected_key(lesson) != before


def test_the_package_version_and_the_lessons_tags_change_the_reference_key(fresh_key, monkeypatch):
    import effitrain_lessons

    lesson = load_lesson("00_start_here")
    before = grade._expected_key(lesson)
    monkeypatch.setattr(effitrain_lessons, "__version__", effitrain_lessons.__version__ + ".post1")
    grade._computed_by.cache_clear()
    assert grade._expected_key(lesson) != before
    monkeypatch.undo()
    grade._computed_by.cache_clear()
    assert grade._expected_key(lesson) == before
    lesson_cell = next(i for i, cell in enumerate(lesson.cells) if not cell.answer_for and not cell.check_for)
    retagged = lesson.cells[lesson_cell]
    lesson.cells[lesson_cell] = Cell(retagged.id, retagged.source, setup_for=frozenset({"q_bytes"}))
    assert grade._expected_key(lesson) != before, "a cell that now runs before an answer changes it"
