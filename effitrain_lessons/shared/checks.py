"""`grader.check` in the lessons: a question's tests, run in the notebook's own namespace.

An edition carries its tests in its metadata (otter's OK format: doctest cases made of `>>>`
statements that pass when they raise nothing). Learner editions carry only the public tests; the
hidden ones run when an instructor grades (`effitrain grade`), so a learner is told "all public
tests passed", never that everything did.

`Notebook(path)` reads the tests from the notebook file in the kernel's working folder (JupyterLab
and nbval start the kernel in the notebook's folder). Where the notebook is not on disk (Colab opens
it from GitHub) or was renamed, the tests come from the same lesson installed with the package, in
the edition of the language in use (a Turkish notebook reads the Turkish one), so checking needs no
network. Nothing here imports otter: a learner's kernel needs only the runtime. What a check says
is in the lesson's language (`effitrain_lessons.shared.i18n`).
"""

from __future__ import annotations

import html
import inspect
import json
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from effitrain_lessons.shared.i18n import DEFAULT, LANGUAGES, N_, _, phrase
from effitrain_lessons.shared.i18n import language as language_in_use
from effitrain_lessons.shared.judging import Opaque, finite

HONEST = N_("All public tests passed. Hidden tests run when your work is graded, and may still fail.")
ALL_PASSED = N_("All tests passed, hidden ones included.")
TRACEBACK_LINES = 6  # of a failing case's traceback, from its end


def installed_lessons(language: str = DEFAULT) -> Path:
    """The learner editions in `language` this installation carries: the wheel's copy, or a
    checkout's notebooks/; an edition in another language than English is in their `<language>/`
    (the Turkish ones in notebooks/tr/)."""
    if language not in LANGUAGES:
        raise ValueError(
            phrase(
                "There are lessons in {languages}, not in {language!r}: pass one of those.",
                languages=", ".join(LANGUAGES),
                language=language,
            )
        )
    package = Path(__file__).resolve().parents[1]  # effitrain_lessons
    packaged = package / "notebooks"
    folder = packaged if packaged.is_dir() else package.parent / "notebooks"
    return folder if language == DEFAULT else folder / language


def doctest_to_source(code: str, where: str = "a test case") -> str:
    """Python source from doctest examples (`>>> ` and `... ` lines); expected output is refused."""
    lines = []
    for line in code.splitlines():
        if line.startswith(">>> ") or line.startswith("... "):
            lines.append(line[4:])
        elif line.rstrip() in (">>>", "..."):
            lines.append("")
        elif line.strip():
            raise ValueError(
                f"{where} expects printed output ({line.strip()[:60]!r}); write it as an assert."
            )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Case:
    source: str
    hidden: bool


def tests_of(notebook: dict) -> dict[str, list[Case]]:
    """Question -> its test cases, from a notebook's metadata."""
    tests = notebook.get("metadata", {}).get("otter", {}).get("tests", {})
    return {
        question: [
            Case(doctest_to_source(case["code"], f"{question} case {i}"), bool(case.get("hidden")))
            for suite in test.get("suites", [])
            for i, case in enumerate(suite.get("cases", []))
        ]
        for question, test in tests.items()
    }


@dataclass(frozen=True)
class CaseResult:
    index: int  # 1-based, as a learner counts
    source: str
    hidden: bool
    error: str | None  # the end of the traceback when the case failed

    @property
    def passed(self) -> bool:
        return self.error is None


def run_case(case: Case, index: int, global_env: dict) -> CaseResult:
    """Run one case in a copy of `global_env`, so a test's own names never reach the notebook."""
    try:
        exec(compile(case.source, f"<{index}>", "exec"), dict(global_env))  # noqa: S102 - the lesson's own test
    except Exception as error:  # noqa: BLE001 - any exception fails the case
        lines = traceback.format_exception(type(error), error, error.__traceback__)
        return CaseResult(index, case.source, case.hidden, "".join(lines[-TRACEBACK_LINES:]).rstrip())
    return CaseResult(index, case.source, case.hidden, None)


@dataclass(frozen=True)
class CheckResult:
    """What `grader.check(question)` shows: which cases failed and why, or that all passed."""

    question: str
    results: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    @property
    def public_passed(self) -> bool:
        return all(result.passed for result in self.results if not result.hidden)

    @property
    def hidden_ran(self) -> bool:
        return any(result.hidden for result in self.results)

    def summary(self) -> str:
        failed = [r for r in self.results if not r.passed]
        if not failed:
            return _(ALL_PASSED) if self.hidden_ran else _(HONEST)
        if self.hidden_ran:
            return phrase("{failed} of {total} tests failed.", failed=len(failed), total=len(self.results))
        return phrase("{failed} of {total} public tests failed.", failed=len(failed), total=len(self.results))

    def failures(self) -> list[str]:
        return [f"{_heading(r)}\n{_indent(r.error)}" for r in self.results if not r.passed]

    def __repr__(self) -> str:
        return "\n\n".join([f"{self.question}: {self.summary()}", *self.failures()])

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        head = (
            f"<p><strong><code>{html.escape(self.question)}</code></strong>: "
            f"<span style='color: {colour}'>{html.escape(self.summary())}</span></p>"
        )
        return head + "".join(_failure_html(r) for r in self.results if not r.passed)


def _failure_html(result: CaseResult) -> str:
    """A failed case as HTML: its heading and the test's sentence (an AssertionError's) as text, the
    traceback as code (it is Python's, in any language). The test's own code is not shown: a public
    test may hold the answer it checks against."""
    lines = result.error.rstrip("\n").splitlines()
    # a test's sentence; other errors are Python's
    ours = bool(lines) and lines[-1].startswith("AssertionError")
    frames, sentence = "\n".join(lines[:-1] if ours else lines), lines[-1] if ours else ""
    code = _indent(frames) if frames else ""
    said = f"\n    {html.escape(sentence)}" if sentence else ""
    return f"<pre>{html.escape(_heading(result))}\n<code>{html.escape(code)}</code>{said}</pre>"


def _heading(result: CaseResult) -> str:
    if result.hidden:
        return phrase("Test {index} (hidden):", index=result.index)
    return phrase("Test {index}:", index=result.index)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip("\n").splitlines())


class Notebook:
    """The lessons' `grader`: `grader.check("q_name")` runs that question's tests on your answer."""

    def __init__(self, notebook_path: str):
        path = Path(notebook_path)
        if not path.is_file():
            # the edition the setup cell's use_language chose
            path = installed_lessons(language_in_use()) / path.name
        if not path.is_file():
            raise FileNotFoundError(
                phrase(
                    "There is no lesson {path}: open the lessons with `effitrain lab`, "
                    "which puts them in a folder of yours.",
                    path=notebook_path,
                )
            )
        self.path = path
        self.tests = tests_of(json.loads(path.read_text(encoding="utf-8")))

    def check(self, question: str, global_env: dict | None = None) -> CheckResult:
        if question not in self.tests:
            raise KeyError(
                phrase(
                    "{lesson} has no question {question!r}; it has {questions}.",
                    lesson=self.path.name,
                    question=question,
                    questions=", ".join(sorted(self.tests)),
                )
            )
        if global_env is None:
            global_env = inspect.currentframe().f_back.f_globals
        cases = self.tests[question]
        return CheckResult(question, tuple(run_case(case, i, global_env) for i, case in enumerate(cases, 1)))


def check_prediction(name: str, predicted, measured, why: str = "", rel: float = 0.0) -> None:
    """The comparison a public test makes: when the prediction differs from the measurement, raise a
    sentence that says what is wrong (not the number measured, nor whether the prediction is too high
    or too low: a learner would find the answer by halving the distance) and `why`, what to re-read.

    The measurement itself is never said: it is a graded question's answer. Numbers may differ by
    `rel` of the measurement (0: exactly); a NaN or an infinity is never what was measured. Types are
    compared strictly (an object can claim any class and equal anything). A learner who has not
    answered yet (`...`) is told to replace it. A dict says which of its keys are wrong; a list is
    compared item by item, and must have as many items as was measured.
    """
    if predicted is Ellipsis or (type(predicted) is Opaque and predicted.kind == "ellipsis"):
        raise AssertionError(phrase("{name} is still `...`: replace it with your prediction.", name=name))
    if type(measured) in (int, float):
        if type(predicted) not in (int, float):
            _fail(phrase("{name} should be a number; it is a {kind}.", name=name, kind=_kind(predicted)), why)
        if type(measured) is int and type(predicted) is not int:
            _fail(
                phrase("{name} should be a whole number; it is a {kind}.", name=name, kind=_kind(predicted)),
                why,
            )
    if _same(predicted, measured, rel):
        return
    if type(predicted) is not type(measured) and not (_number(predicted) and _number(measured)):
        _fail(
            phrase(
                "{name} should be a {kind}; it is a {given}.",
                name=name,
                kind=_kind(measured),
                given=_kind(predicted),
            ),
            why,
        )
    said = phrase(
        "You predicted {name} = {predicted}: that is not what was measured.",
        name=name,
        predicted=_show(predicted),
    )
    if type(measured) is dict and set(predicted) == set(measured):
        wrong = [key for key in measured if not _same(predicted[key], measured[key], rel)]
        said = " ".join([said, phrase("Not what was measured: {keys}.", keys=", ".join(map(repr, wrong)))])
    _fail(said, why)


def _fail(said: str, why: str):
    raise AssertionError(" ".join(filter(None, [said, why])))


def _number(value) -> bool:
    return type(value) in (int, float)


def _same(predicted, measured, rel: float) -> bool:
    """Whether `predicted` is what was `measured`: numbers within `rel` of the measurement (whole and
    real numbers alike inside a dict or a list), both finite; dicts key by key and lists item by item,
    of the same keys and length; anything else of the same type and equal."""
    if _number(predicted) and _number(measured):
        if not (finite(predicted) and finite(measured)):
            return False
        try:
            return abs(predicted - measured) <= rel * abs(measured)
        except OverflowError:  # a whole number too large for a float
            return False
    if type(predicted) is not type(measured):
        return False
    if type(measured) is dict:
        return set(predicted) == set(measured) and all(
            _same(predicted[key], measured[key], rel) for key in measured
        )
    if type(measured) is list:
        return len(predicted) == len(measured) and all(_same(p, m, rel) for p, m in zip(predicted, measured))
    if type(measured) is np.ndarray:
        if not {predicted.dtype.kind, measured.dtype.kind} <= {"i", "u", "f"}:
            return bool(predicted.shape == measured.shape and np.array_equal(predicted, measured))
        ours, theirs = predicted.astype(np.float64), measured.astype(np.float64)
        return (
            ours.shape == theirs.shape
            and finite(ours)
            and finite(theirs)
            and bool(np.all(np.abs(ours - theirs) <= rel * np.abs(theirs)))
        )
    return predicted == measured


def _kind(value) -> str:
    return value.kind if type(value) is Opaque else type(value).__name__


def _show(value) -> str:
    """A learner's value as they read numbers (Turkish: 1.234.567, 0,05); text as its `repr`."""
    from effitrain_lessons.shared.i18n import format_number

    if type(value) is int:
        return format_number(value, ",")
    return format_number(value) if type(value) is float else repr(value)
