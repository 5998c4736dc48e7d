"""A graded case judged on plain data (`effitrain_lessons.shared.judging`, `grade.judge_case`): what crosses
from a learner's process is read strictly, and every case of every lesson is split so that its
judgement needs nothing but that data."""

from __future__ import annotations

import ast
import builtins
import json

import numpy as np
import pytest
import torch

from effitrain_lessons.course import grade
from effitrain_lessons.course.lessons import lesson_names, load_lesson
from effitrain_lessons.shared import judging
from effitrain_lessons.shared.judging import Opaque, close, decode, encode, plain, split_case

JUDGEMENT_NAMES = {"got", "want", "plain", "close", "finite", "phrase", "check_prediction", "math", "np"}


class Everything:
    """An object that claims to be anything and equal to everything."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0

    @property
    def __class__(self):
        return int


class Sneaky(int):
    pass


def test_plain_keeps_plain_values_and_turns_tensors_into_arrays():
    value = {
        "n": 3,
        "x": 0.5,
        "s": "text",
        "flags": [True, None],
        "t": torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True),
        "i": torch.arange(4),
        "np": np.float64(2.5),
    }
    data = plain(value)
    assert data["n"] == 3 and type(data["n"]) is int and data["np"] == 2.5 and type(data["np"]) is float
    assert type(data["t"]) is np.ndarray and data["t"].dtype == np.float32 and data["t"].shape == (2, 3)
    assert data["i"].dtype == np.int64 and data["i"].tolist() == [0, 1, 2, 3]
    assert plain(data) is not None and close(plain(data), data)


def test_objects_that_lie_become_opaque():
    assert plain(Everything()) == Opaque("Everything")
    assert plain(Sneaky(3)) == Opaque("Sneaky")
    assert plain(...) == Opaque("ellipsis")
    assert plain({1: "a"}) == Opaque("dict with keys that are not strings")
    assert not close(plain(Everything()), 3)


def test_data_over_the_limits_is_refused():
    with pytest.raises(judging.TooBig):
        plain(list(range(judging.MAX_ITEMS + 1)))
    nested = []
    for _ in range(judging.MAX_DEPTH + 2):
        nested = [nested]
    with pytest.raises(judging.TooBig):
        plain(nested)
    with pytest.raises(judging.TooBig):
        encode(["x" * judging.MAX_CHARS] * 600)


def test_what_is_encoded_is_read_back_exactly():
    value = {"a": torch.randn(5, 4), "b": [1, 2.5, "x", None, True], "c": Opaque("Module")}
    back = decode(encode(value))
    assert set(back) == {"a", "b", "c"} and back["b"] == [1, 2.5, "x", None, True]
    assert back["c"] == Opaque("Module") and np.array_equal(back["a"], value["a"].numpy())


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"object": "x"}),
        json.dumps({"array": ["object", [1], "AAAA"]}),
        json.dumps({"array": ["float32", [3], "AAAA"]}),  # 3 bytes for 12
        json.dumps({"array": ["float32", [-1], ""]}),
        json.dumps({"array": ["float32", [10**9, 10**9], ""]}),
        json.dumps({"dict": {"a": 1}, "extra": 2}),
        json.dumps({"opaque": "x" * 500}),
        "[" * 100_000 + "]" * 100_000,
        json.dumps("x" * (judging.MAX_CHARS + 1)),
        "1" * (judging.MAX_BYTES + 1),
    ],
)
def test_the_reader_refuses_anything_else(text):
    with pytest.raises(ValueError):
        decode(text)


def test_decode_refuses_what_is_not_a_string():
    for value in (None, b"{}", 3, ["a"]):
        with pytest.raises(ValueError):
            decode(value)


def test_close_compares_kind_shape_and_values():
    a = np.ones((2, 2), dtype=np.float32)
    assert close(a, a + 1e-7) and not close(a, a + 1e-3) and not close(a, np.ones(4, dtype=np.float32))
    assert close(torch.ones(2, 2), a)  # a tensor in a notebook, an array in the grader
    assert not close(np.ones(2, dtype=np.int64), np.ones(2, dtype=np.float32))
    assert close({"w": a, "n": 3}, {"w": a, "n": 3}) and not close({"w": a}, {"w": a, "n": 3})
    assert not close(True, 1) and not close("3", 3) and close(2, 2.0)
    assert not close(np.array([np.nan], dtype=np.float32), np.array([np.nan], dtype=np.float32))


CASE = """import torch
got = {"out": f(2)}
want = {}
want["out"] = 4
got, want = plain(got), plain(want)
assert got["out"] == want["out"], phrase("the result is not what it should be")
"""


def test_a_case_splits_at_its_two_statements():
    parts = split_case(CASE)
    assert parts.probe == 'import torch\ngot = {"out": f(2)}\n'
    assert parts.reference == 'want = {}\nwant["out"] = 4\n'
    assert parts.judgement.startswith("got, want = plain(got), plain(want)\n")
    for broken in (
        CASE.replace("want = {}\n", ""),
        CASE.replace("got, want = plain(got), plain(want)\n", ""),
        CASE.replace("want = {}\n", "").replace("got, want", "want = {}\ngot, want") + "want = {}\n",
    ):
        with pytest.raises(ValueError):
            split_case(broken)


def case_of(source: str, hidden: bool = False):
    from effitrain_lessons.course.lessons import Case

    return Case("q_x", 0, source, hidden, 1.0, split_case(source))


def test_the_grader_judges_data_it_read_and_nothing_else():
    case = case_of(CASE)
    want = {"out": 4}
    assert grade.judge_case(case, {"data": encode({"out": 4})}, want, "en") == (True, "")
    ok, said = grade.judge_case(case, {"data": encode({"out": 5})}, want, "en")
    assert not ok and said == "AssertionError: the result is not what it should be"
    for message in (
        {"data": "true"},  # "passed", as a same-process route would report it
        {"data": encode({"out": Everything()})},
        {"data": encode({})},
        {"data": '{"dict": {"out": {"array": ["object", [1], "AAAA"]}}}'},
        {"data": None},
        {"data": encode({"out": 4}), "changed": "changes torch.isclose"},
        {"data": encode({"out": 4}), "error": "NameError: name 'f' is not defined"},
    ):
        ok, said = grade.judge_case(case, message, want, "en")
        assert not ok and said, message


def test_the_grader_judges_in_the_learners_language():
    said_in_english = 'phrase("the result is not what it should be")'
    counted = 'phrase("{failed} of {total} tests failed.", failed=1, total=2)'
    case = case_of(CASE.replace(said_in_english, counted))
    ok, said = grade.judge_case(case, {"data": encode({"out": 5})}, {"out": 4}, "tr")
    assert not ok and said != "AssertionError: 1 of 2 tests failed." and "1" in said and "2" in said


LESSONS = lesson_names()
CASES = [
    (name, question, case)
    for name in LESSONS
    for question, entry in load_lesson(name).questions.items()
    for case in entry.cases
]


def names_used(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


def names_bound(source: str) -> set[str]:
    bound = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
            bound.update(a.arg for a in node.args.args + node.args.kwonlyargs)
            if isinstance(node, ast.FunctionDef):
                bound.add(node.name)
        elif isinstance(node, ast.comprehension):
            bound.update(names_used(ast.unparse(node.target)))
    return bound


def top_level_names(source: str) -> set[str]:
    """What an answer cell defines for the rest of the notebook: its top-level names."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            names.update(
                n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    return names


@pytest.mark.parametrize("name, question, case", CASES, ids=[f"{n[:2]}-{q}-{c.index}" for n, q, c in CASES])
def test_every_case_is_split_and_its_judgement_needs_only_data(name, question, case):
    assert case.parts is not None, f"{question} case {case.index} has no `want = {{}}` and judgement lines"
    free = names_used(case.parts.judgement) - names_bound(case.parts.judgement) - set(dir(builtins))
    assert free <= JUDGEMENT_NAMES, (question, case.index, sorted(free - JUDGEMENT_NAMES))
    assert "want" not in names_used(case.parts.probe), "the part beside the answer must not see `want`"
    lesson = load_lesson(name)
    answer = next(cell.source for cell in lesson.cells if cell.answer_for == question)
    defined = top_level_names(answer)
    leaked = defined & (names_used(case.parts.reference) - names_bound(case.parts.reference))
    assert not leaked, f"{question} case {case.index}: the reference uses the answer's {sorted(leaked)}"
