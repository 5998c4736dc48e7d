"""Grade learners' notebooks for an instructor: `effitrain grade SUBMISSION... --out DIR`.

How one submission is graded:

1. It is read as data (never executed by the grader), and its lesson is identified from its
   metadata or `--lesson`, checked against its cell ids (`submissions.identify`).
2. The grading plan is built from the instructor's *solution edition*, not from the submission:
   the lesson cells its questions depend on (tagged `setup-for:<question>` in the lesson master,
   plus the cells that define a name a learner's answer uses), the learner's answer cells
   (matched by cell id), and a check at each question's `grader.check`. Every other cell of the
   submission (lesson code, tests, `grader = ...`) is ignored; the long trainings never run.
3. The plan runs in a sandbox (`sandbox.py`) with the worker (`worker.py`). The grader sends each
   public test case at its check and the hidden ones after the last cell, one at a time with a
   fresh nonce, and keeps only pass or fail for the case it sent: questions and points come from
   the instructor's test files, and a score never exceeds them.
4. What an answer cell reaches for (read from its source by `review.py`, and seen by the worker's
   audit hook) becomes a flag for review; any problem with one file becomes that file's row.

`grade()` writes `grades.csv`, `results.json` and `feedback/` (`report.py`) for every file found.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from effitrain_lessons.course import report, review
from effitrain_lessons.course.lessons import (
    NO_CHECKOUT,
    ROOT,
    Cell,
    CourseError,
    Lesson,
    course_root,
    lesson_names,
    load_lesson,
    resolve_lesson,
)
from effitrain_lessons.course.sandbox import (
    Cgroup,
    Limits,
    Sandbox,
    SandboxUnavailable,
    allow_sandboxes,
    sandbox_problem,
    stop_all,
)
from effitrain_lessons.course.submissions import (
    MAX_ANSWER_CHARS,
    Submission,
    code_cells,
    edition_language,
    find_submissions,
    identify,
    read_notebook,
    readable,
    repeated_ids,
)
from effitrain_lessons.shared import judging
from effitrain_lessons.shared.checks import check_prediction
from effitrain_lessons.shared.i18n import ENVIRONMENT, Sentence, phrase, speaking

DEFAULT_WORKERS = 2
INTERRUPTED = threading.Event()


@dataclass
class QuestionResult:
    name: str
    points: float
    possible: float
    public_passed: int = 0
    public_total: int = 0
    hidden_passed: int = 0
    hidden_total: int = 0
    public_messages: list[str] = field(default_factory=list)  # why public tests failed (learners see these)
    answer_error: str = ""  # what the answer cell raised, if anything
    missing: bool = False  # the submission has no answer cell for this question
    hidden_failed: list[int] = field(default_factory=list)  # which hidden cases failed (instructor only)


@dataclass
class SubmissionResult:
    file: str
    lesson: str | None
    status: str  # graded, timeout, memory, output, error, malformed, rejected, not a notebook, interrupted
    reason: str = ""
    questions: dict[str, QuestionResult] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # "q_name: what the answer reached for"
    seconds: float = 0.0
    peak_memory_mb: float = 0.0
    memory_cap: str = ""  # how the cap was enforced: "cgroup v1", "cgroup v2" or "PSS"
    # for the instructor only (lesson cells that failed, output)
    notes: list[str] = field(default_factory=list)
    language: str = "en"  # the language of the submitted edition: its feedback is written in it

    @property
    def total(self) -> float:
        return sum(question.points for question in self.questions.values())

    @property
    def possible(self) -> float:
        return sum(question.possible for question in self.questions.values())


# ---------------------------------------------------------------------------------------------
# The plan


def grading_plan(
    lesson: Lesson, answers: dict[str, str], follow_names: bool = True
) -> tuple[list[dict], list[str]]:
    """The cells to run for `lesson` with the learner's `answers` (cell id -> source).

    These are the cells tagged `setup-for:<question>`, the answer and check cells, and (with
    `follow_names`) the lesson cells that define a name an answer uses and no chosen cell before it
    defines. Returns the job's cells and the questions whose answer cells the submission lacks.
    """
    graded = set(lesson.questions)
    chosen = {
        i
        for i, cell in enumerate(lesson.cells)
        if cell.setup_for & graded or cell.answer_for in graded or cell.check_for in graded
    }
    names = [
        review.defined_and_used(cell.source) if not cell.answer_for else (set(), set())
        for cell in lesson.cells
    ]
    learner = {cell.id: answers.get(cell.id) for cell in lesson.cells if cell.answer_for}
    for i, cell in enumerate(lesson.cells):
        if cell.answer_for and learner[cell.id] is not None:
            names[i] = review.defined_and_used(learner[cell.id])
    pending = sorted(chosen) if follow_names else []
    while pending:  # add the lesson cells that define a name a chosen cell uses and nothing before it defines
        i = pending.pop()
        for name in names[i][1]:
            if any(name in names[j][0] for j in chosen if j < i):
                continue
            definer = next(
                (j for j in range(i - 1, -1, -1) if name in names[j][0] and not lesson.cells[j].answer_for),
                None,
            )
            if definer is not None and definer not in chosen:
                chosen.add(definer)
                pending.append(definer)
    cells, missing = [], []
    for i in sorted(chosen):
        cell: Cell = lesson.cells[i]
        if cell.check_for:
            cells.append({"id": cell.id, "kind": "check", "question": cell.check_for, "source": ""})
        elif cell.answer_for:
            source = learner[cell.id]
            if source is None:
                missing.append(cell.answer_for)
                source = ""
            cells.append({"id": cell.id, "kind": "answer", "question": cell.answer_for, "source": source})
        else:
            cells.append({"id": cell.id, "kind": "lesson", "question": None, "source": cell.source})
    return cells, sorted(set(missing))


# ---------------------------------------------------------------------------------------------
# One submission


def grade_one(
    submission: Submission,
    lessons: dict[str, Lesson],
    limits: Limits,
    lesson_override: str | None = None,
    confined: bool = True,
) -> SubmissionResult:
    """Grade one submission; any problem becomes the result's status and reason, never an exception."""
    start = time.monotonic()
    try:
        result = _grade_one(submission, lessons, limits, lesson_override, confined)
    except Exception as error:  # noqa: BLE001 - one file's trouble must not stop the batch
        result = SubmissionResult(
            submission.name,
            None,
            "error",
            f"the grader failed on this file ({type(error).__name__}: {readable(str(error))[:200]})",
        )
    if INTERRUPTED.is_set() and result.status != "graded":
        result.status, result.reason = "interrupted", "the grader was stopped before this file was graded"
    result.seconds = round(time.monotonic() - start, 2)
    return result


def _grade_one(submission, lessons, limits, lesson_override, confined) -> SubmissionResult:
    if INTERRUPTED.is_set():
        return SubmissionResult(
            submission.name, None, "interrupted", "the grader was stopped before this file was graded"
        )
    if submission.problem:
        return SubmissionResult(
            submission.name, None, "not a notebook", f"{submission.name} {submission.problem}."
        )
    notebook, problem = read_notebook(submission.path)
    if notebook is None:
        return SubmissionResult(submission.name, None, "malformed", f"{submission.name} {problem}.")
    name, problem = identify(notebook, lessons, lesson_override)
    if name is None:
        return SubmissionResult(submission.name, None, "rejected", f"{submission.name} {problem}.")
    repeated = repeated_ids(notebook, lessons[name].answers)
    if repeated:
        return _rejected_repeats(submission.name, lessons[name], repeated, edition_language(notebook))
    answers = {
        cell_id: source
        for cell_id, source in code_cells(notebook).items()
        if cell_id in lessons[name].answers
    }
    return grade_answers(
        submission.name, lessons[name], answers, limits, confined, language=edition_language(notebook)
    )


def _rejected_repeats(file: str, lesson: Lesson, repeated: dict[str, int], language: str) -> SubmissionResult:
    """The row of a notebook in which several cells carry an answer cell's id: not graded, since the
    grader cannot tell which copy is the learner's answer (an instructor reading the notebook sees
    the first; a reader of the JSON might take the last), and one sentence says how to fix it."""
    cell_id, count = next(iter(repeated.items()))
    return SubmissionResult(
        file,
        lesson.name,
        "rejected",
        Sentence(
            "{count} cells have the id {cell_id}, the answer cell of {question}: keep only the one with "
            "your answer and submit the notebook again",
            count=count,
            cell_id=cell_id,
            question=lesson.answers[cell_id],
        ),
        questions={q: QuestionResult(q, 0.0, question.points) for q, question in lesson.questions.items()},
        language=language,
    )


def grade_answers(
    file: str,
    lesson: Lesson,
    answers: dict[str, str],
    limits: Limits,
    confined: bool = True,
    follow_names: bool = True,
    language: str = "en",
) -> SubmissionResult:
    """Grade the learner's `answers` (answer cell id -> source) to `lesson`, in a sandbox.

    `language` is the edition's: the tests are the same in every edition, and the messages of the
    public tests (and the feedback) come back in that language.
    """
    result = SubmissionResult(
        file,
        lesson.name,
        "graded",
        language=language,
        questions={q: QuestionResult(q, 0.0, question.points) for q, question in lesson.questions.items()},
    )
    for cell_id, source in list(answers.items()):
        if len(source) > MAX_ANSWER_CHARS:
            answers[cell_id] = ""
            result.questions[lesson.answers[cell_id]].answer_error = Sentence(
                "the answer cell is longer than {limit} characters and was not run", limit=MAX_ANSWER_CHARS
            )
    # what each question's own answer cell (the instructor's) uses, an answer may use unflagged
    allowed = {cell.id: review.allowances(cell.source) for cell in lesson.cells if cell.answer_for}
    for cell_id, source in answers.items():
        for what in review.review_answer(source, allowed.get(cell_id, frozenset())):
            _add_flag(result, lesson.answers[cell_id], what)
    cells, missing = grading_plan(lesson, answers, follow_names)
    for question in missing:
        result.questions[question].missing = True
    _run(result, lesson, cells, limits, confined)
    return result


def _add_flag(result: SubmissionResult, question: str, what: str) -> None:
    """Flag `what` for `question`: once each, cleaned and cut, and only counted past the cap
    (`report.add_flag`)."""
    report.add_flag(result.flags, f"{question}: {what}")


def _run(result: SubmissionResult, lesson: Lesson, cells: list[dict], limits: Limits, confined: bool) -> None:
    """Run the plan in a sandbox, feed it the cases one at a time, and judge the data that comes back."""
    wanted = expected_values(lesson, limits, confined)
    cell_question = {cell["id"]: cell["question"] for cell in cells}
    passed: dict[str, dict[int, bool]] = {q: {} for q in lesson.questions}

    def on_cell(message):
        question = cell_question.get(message.get("id"))
        error = readable(str(message.get("error") or ""))[:500]
        if message.get("ok") is False and question:
            result.questions[question].answer_error = error
        elif message.get("ok") is False:
            result.notes.append(f"lesson cell {readable(str(message.get('id')))[:60]} failed: {error}")

    def on_flag(label, what):
        question = cell_question.get(label) or (label[5:] if label.startswith("test ") else label)
        if question in lesson.questions:
            _add_flag(result, question, what)

    def on_case(case, message):
        ok, text = judge_case(case, message, wanted.get((case.question, case.index)), result.language)
        passed[case.question][case.index] = ok
        if not ok and case.hidden:  # for the instructor's results.json only
            result.questions[case.question].hidden_failed.append(case.index)
        if not ok and not case.hidden:
            result.questions[case.question].public_messages.append(readable(text)[:500])

    outcome, finished = _session(
        lesson,
        cells,
        limits,
        confined,
        result.language,
        learner=True,
        on_case=on_case,
        on_cell=on_cell,
        on_flag=on_flag,
        on_stray=lambda: _add_flag(result, "report", "a message arrived that the grader did not ask for"),
    )
    result.peak_memory_mb = round(outcome.peak_bytes / 2**20, 1)
    result.memory_cap = outcome.memory_method
    for name, question in lesson.questions.items():
        entry = result.questions[name]
        entry.points = question.score(passed[name])
        for case in question.cases:
            kind = "hidden" if case.hidden else "public"
            setattr(entry, f"{kind}_total", getattr(entry, f"{kind}_total") + 1)
            if passed[name].get(case.index):
                setattr(entry, f"{kind}_passed", getattr(entry, f"{kind}_passed") + 1)
    if outcome.output:
        result.status, result.reason = (
            "output",
            Sentence("printed more than the {limit:g} MB allowed", limit=limits.output_bytes / 1e6),
        )
    elif outcome.memory:
        result.status, result.reason = (
            "memory",
            Sentence("used more than the {limit} MiB memory cap", limit=limits.memory_mb),
        )
    elif outcome.timed_out:
        result.status, result.reason = (
            "timeout",
            Sentence("did not finish within {limit:g} s (an endless loop?)", limit=limits.timeout_s),
        )
    elif outcome.protocol:
        result.status, result.reason = "error", f"the submission {outcome.protocol}"
    elif not finished:
        code = outcome.returncode
        how = (
            Sentence("exit code {code}", code=code)
            if code is not None and code >= 0
            else Sentence("signal {signal}", signal=-code)
            if code
            else Sentence("no exit code")
        )
        result.status = "error"
        result.reason = Sentence(
            "the notebook's process ended before its tests finished ({how}): an answer may exit "
            "or crash Python",
            how=how,
        )
    if not finished:
        tail = outcome.stderr_head.decode("utf-8", "replace").strip().splitlines()[-3:]
        if tail:
            result.notes.append("stderr: " + " | ".join(tail)[:600])


def _session(
    lesson, cells, limits, confined, language, learner, on_case, on_cell=None, on_flag=None, on_stray=None
):
    """One sandboxed run of `cells`: each case of `lesson` is sent when the worker asks for it (public
    ones at their check, hidden ones after the last cell), one at a time with a fresh nonce, and what
    comes back is handed to `on_case`. A learner's run gets each case's part that runs beside the
    answer and sends back `got`; the solution's run gets that part and the reference, and sends back
    `want`. Returns the sandbox's outcome and whether the worker finished."""
    box = Sandbox(
        [sys.executable, "-I", "-m", "effitrain_lessons.course.worker"],
        limits,
        confined=confined,
        env={ENVIRONMENT: language},
    )
    box.start()
    session = secrets.token_hex(16)
    queue: list = []  # cases still to send at this check, then what ends it
    outstanding = None  # (nonce, case) sent and not yet answered
    finished = cells_done = False

    def send_next():
        nonlocal outstanding
        item = queue.pop(0)
        if isinstance(item, dict):
            box.send(item)
            outstanding = None
            return
        nonce = secrets.token_hex(16)
        outstanding = (nonce, item)
        box.send({"case": nonce, "question": item.question, **_order(item, learner)})

    try:
        box.send({"cells": cells, "nonce": session, "preload": preload(lesson)})
        while (message := box.receive()) is not None:
            event, nonce = message.get("event"), message.get("nonce")
            if event == "case" and outstanding is not None and nonce == outstanding[0]:
                on_case(outstanding[1], message)
                send_next()
            elif nonce != session:
                if on_stray:
                    on_stray()
            elif event == "cell" and cells_done:  # every cell has reported: this one is forged
                if on_stray:
                    on_stray()
            elif event == "cell" and on_cell:
                on_cell(message)
            elif event == "flag":
                if on_flag:
                    on_flag(str(message.get("cell", "")), str(message.get("what", "")))
            elif event == "tests" and outstanding is None and not queue:
                question = message.get("question")
                if question in lesson.questions:
                    queue = [c for c in lesson.questions[question].cases if not c.hidden] + [
                        {"continue": True}
                    ]
                    send_next()
            elif event == "cells-done" and outstanding is None and not queue and not cells_done:
                cells_done = True
                queue = [c for q in lesson.questions.values() for c in q.cases if c.hidden] + [
                    {"finish": True}
                ]
                send_next()
            elif event == "finished" and outstanding is None and not queue:
                finished = True
            elif on_stray:
                on_stray()
    finally:
        outcome = box.stop()
    return outcome, finished


def preload(lesson: Lesson) -> list[str]:
    """The modules `lesson`'s cases import: the worker loads them before any answer runs, so that
    what an answer changes in them is seen and put back before each case."""
    names = set()
    for question in lesson.questions.values():
        for case in question.cases:
            for node in ast.walk(ast.parse(case.code)):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
    return sorted(names)


def _order(case, learner: bool) -> dict:
    """What the worker runs for `case`: beside a learner's answer, the part that records `got`; with
    the solution, that part and the reference, which records `want`."""
    if learner:
        return {"code": case.parts.probe, "result": "got"}
    return {"code": case.parts.probe + case.parts.reference, "result": "want"}


def judge_case(case, message: dict, want, language: str) -> tuple[bool, str]:
    """Whether the data a learner's run sent for `case` passes its judgement against `want` (the
    solution's), and if not, why, in `language`. Runs here, in the grader, on plain data only."""
    error = str(message.get("error") or "")
    if message.get("changed"):
        return False, "the code under test changed what the tests rely on: " + str(message["changed"])
    if error:
        if error == "TooBig":
            return False, Sentence("the answer's result is larger than a test may send back").in_language(
                language
            )
        return False, error
    try:
        got = judging.decode(message.get("data"))
    except ValueError as problem:
        return False, f"the answer's result could not be read: {problem}"
    namespace = {
        "got": got,
        "want": want,
        "plain": judging.plain,
        "close": judging.close,
        "finite": judging.finite,
        "phrase": phrase,
        "check_prediction": check_prediction,
        "math": math,
        "np": np,
    }
    with speaking(language):
        try:
            exec(compile(case.parts.judgement, f"<{case.question} case {case.index}>", "exec"), namespace)  # noqa: S102 - the instructor's judgement
        except AssertionError as failure:
            said = failure.args[0] if failure.args and type(failure.args[0]) is str else ""
            return False, f"AssertionError: {said}" if said else "AssertionError"
        except Exception as failure:  # noqa: BLE001 - data of the wrong form fails the case
            return False, phrase(
                "the answer's result does not have the form the test expects ({kind})",
                kind=type(failure).__name__,
            )
    return True, ""


_EXPECTED: dict[str, dict] = {}
_EXPECTED_LOCKS: dict[str, threading.Lock] = {}
_EXPECTED_GUARD = threading.Lock()


def expected_values(lesson: Lesson, limits: Limits, confined: bool) -> dict[tuple[str, int], object]:
    """(question, case index) -> `want`, from the solution edition run on every case in a sandbox of
    its own. Computed once per lesson and kept in the user's cache folder, keyed by everything that
    computes them (`_expected_key`): the lesson's cells and cases, the package's files and version,
    and the versions of Python and the libraries. Raises CourseError when the solution fails a case."""
    key = _expected_key(lesson)
    with _EXPECTED_GUARD:
        lock = _EXPECTED_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _EXPECTED:
            try:
                _EXPECTED[key] = _read_expected(key) or _compute_expected(lesson, limits, confined, key)
            except CourseError as error:  # said once per batch's files, computed once
                _EXPECTED[key] = error
    if isinstance(_EXPECTED[key], CourseError):
        raise _EXPECTED[key]
    return _EXPECTED[key]


# What computes a reference besides the lesson's cells and cases: the package's code and data (the
# worker, the measuring modules, the models' configs, the data set) and the libraries it runs on. The
# translations are left out: the references run in English.
REFERENCE_LIBRARIES = ("torch", "transformers", "accelerate", "numpy")
NOT_REFERENCE_CODE = ("__pycache__", "locale")


@functools.cache
def _computed_by() -> tuple[str, ...]:
    """What the solution's data depends on besides the lesson (read once per grader process): the
    package's version, a digest of every file of the package, and the versions of Python and of the
    libraries the references run on."""
    import effitrain_lessons

    package = Path(effitrain_lessons.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if not path.is_file() or set(relative.parts) & set(NOT_REFERENCE_CODE) or path.suffix == ".pyc":
            continue
        digest.update(relative.as_posix().encode() + b"\0" + _package_file(path) + b"\0")
    return (
        effitrain_lessons.__version__,
        digest.hexdigest(),
        sys.version,
        *(f"{name} {_version(name)}" for name in REFERENCE_LIBRARIES),
    )


def _package_file(path: Path) -> bytes:
    """A file of the package, as the reference cache's key reads it."""
    return path.read_bytes()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _expected_key(lesson: Lesson) -> str:
    """The reference cache's key: the lesson's solution cells (what they run, and the questions they
    answer, check or set up), its cases (their code, and whether they run at their check or at the
    end), and `_computed_by()`."""
    parts = (
        lesson.name,
        [(c.id, c.source, c.answer_for, c.check_for, sorted(c.setup_for)) for c in lesson.cells],
        [(c.question, c.index, c.code, c.hidden) for q in lesson.questions.values() for c in q.cases],
        _computed_by(),
    )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _cache_file(key: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "effitrain-lessons" / "expected" / f"{key}.json"


def _read_expected(key: str) -> dict | None:
    try:
        stored = json.loads(_cache_file(key).read_text(encoding="utf-8"))
        return {(q, int(i)): judging.decode(text) for q, i, text in stored}
    except (OSError, ValueError, TypeError):
        return None


def _compute_expected(lesson: Lesson, limits: Limits, confined: bool, key: str) -> dict:
    solution = {cell.id: cell.source for cell in lesson.cells if cell.answer_for}
    cells, _ = grading_plan(lesson, solution)
    wanted: dict[tuple[str, int], object] = {}
    texts: list[list] = []
    problems: list[str] = []

    def on_case(case, message):
        try:
            if message.get("error"):
                raise ValueError(str(message["error"])[:300])
            wanted[(case.question, case.index)] = judging.decode(message.get("data"))
            texts.append([case.question, case.index, message.get("data")])
        except ValueError as problem:
            problems.append(f"{case.question} case {case.index}: {problem}")

    # the instructor's own code: the batch's limits are for learners
    generous = dataclasses.replace(
        limits, timeout_s=max(limits.timeout_s, 600.0), memory_mb=max(limits.memory_mb, Limits().memory_mb)
    )
    outcome, finished = _session(lesson, cells, generous, confined, "en", learner=False, on_case=on_case)
    total = sum(len(q.cases) for q in lesson.questions.values())
    if problems or not finished or len(wanted) != total:
        why = "; ".join(problems[:3]) or (
            f"it stopped early (exit code {outcome.returncode}, timed out: {outcome.timed_out})"
        )
        raise CourseError(
            f"The solution edition of {lesson.name} does not pass its own tests ({why}): "
            "fix the lesson, then `effitrain build`."
        )
    path = _cache_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(texts), encoding="utf-8")
        temporary.replace(path)
    except OSError:
        pass  # no cache: the next batch computes them again
    return wanted


# ---------------------------------------------------------------------------------------------
# The batch


def load_lessons(course: Path) -> dict[str, Lesson]:
    names = lesson_names(course)
    if not names:
        raise CourseError(
            f"{course} holds no lessons (no lessons/NN_name.ipynb): pass --course with the course checkout."
        )
    return {name: load_lesson(name, course) for name in names}


def grade(
    paths: list[str],
    out: str | Path,
    course: Path = ROOT,
    limits: Limits | None = None,
    workers: int = DEFAULT_WORKERS,
    lesson: str | None = None,
    confined: bool = True,
    progress: bool = False,
) -> list[SubmissionResult]:
    """Grade every submission in `paths` (files, or folders searched recursively) and write the
    results to `out`.

    Raises ValueError for a path that does not exist or a batch with no candidates, CourseError when
    the course folder lacks its editions or tests, and SandboxUnavailable when `confined` and no
    sandbox can be made here.
    """
    INTERRUPTED.clear()
    allow_sandboxes()
    limits = limits or Limits()
    if limits.threads < 1:
        limits = dataclasses.replace(limits, threads=max(1, (os.cpu_count() or 1) // workers))
    if confined:
        problem = sandbox_problem()
        if problem:
            raise SandboxUnavailable(problem)
    Cgroup.sweep()
    lessons = load_lessons(Path(course))
    if lesson is not None:
        lesson = resolve_lesson(lesson, sorted(lessons))
    submissions = find_submissions(paths)
    if not submissions:
        raise ValueError("No submissions found: pass notebook files or folders that contain .ipynb files.")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(submissions), unit="notebook", desc="grading", file=sys.stderr, dynamic_ncols=True
        )
    results: list[SubmissionResult | None] = [None] * len(submissions)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(grade_one, s, lessons, limits, lesson, confined): i for i, s in enumerate(submissions)
        }
        try:
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
                if bar is not None:
                    bar.update(1)
        except BaseException:
            INTERRUPTED.set()
            for future in futures:
                future.cancel()
            stop_all()
            raise
        finally:
            if bar is not None:
                bar.close()
            report.write_results([r for r in _complete(results, submissions)], Path(out))
    return [r for r in results if r is not None]


def _complete(results, submissions):
    for result, submission in zip(results, submissions):
        yield result or SubmissionResult(
            submission.name, None, "interrupted", "the grader was stopped before this file was graded"
        )


# ---------------------------------------------------------------------------------------------
# The command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    parser.add_argument(
        "submissions",
        nargs="+",
        metavar="SUBMISSION",
        help="notebooks, or folders of them (searched recursively)",
    )
    parser.add_argument("--out", required=True, help="folder for grades.csv, results.json and feedback/")
    parser.add_argument(
        "--course",
        default=None,
        help="the course checkout with the solution editions and tests "
        "(default: the one this package runs from)",
    )
    parser.add_argument(
        "--lesson",
        default=None,
        help="grade every submission as this lesson (e.g. 01), whatever its metadata says",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=defaults.timeout_s,
        help=f"seconds per submission (default {defaults.timeout_s:g})",
    )
    parser.add_argument(
        "--memory",
        type=int,
        default=defaults.memory_mb,
        help=f"MiB of memory per submission (default {defaults.memory_mb})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"submissions graded at once (default {DEFAULT_WORKERS})",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run submissions without the sandbox (UNSAFE: a submission can read and change your files)",
    )


def run(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.timeout <= 0 or args.memory < 256:
        print(
            "error: --workers must be at least 1, --timeout positive and --memory at least 256 MiB.",
            file=sys.stderr,
        )
        return 2
    course = course_root(args.course)
    if course is None:
        print(f"error: {NO_CHECKOUT.format(command='effitrain grade')}", file=sys.stderr)
        return 2
    limits = Limits(memory_mb=args.memory, timeout_s=args.timeout, threads=0)
    previous = {}

    def interrupted(signum, frame):
        # Stop the sandboxes here, wherever the main thread was: the exception below may land where
        # nothing catches it in time (inside the thread pool's waiting), and a sandbox left running
        # would keep the pool, and the grader, waiting for its timeout.
        INTERRUPTED.set()
        stop_all()
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous[number] = signal.signal(number, interrupted)
    try:
        results = grade(
            args.submissions,
            args.out,
            course,
            limits,
            args.workers,
            args.lesson,
            confined=not args.unsafe_no_sandbox,
            progress=not args.quiet,
        )
    except (ValueError, CourseError, SandboxUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"interrupted: every sandbox was stopped; what was graded is in {Path(args.out) / 'grades.csv'}",
            file=sys.stderr,
        )
        return 130
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    for result in results:  # one line each, whatever a file's name or reason holds
        reason = report.clean(result.reason, report.MESSAGE_CHARS)
        print(
            f"{report.clean(result.file)}: {report.number(result.total)} of {report.number(result.possible)} "
            f"({report.clean(result.status)}{': ' + reason if reason else ''})"
        )
    print(f"wrote {Path(args.out) / 'grades.csv'} and {len(results)} feedback files")
    return 0


def main_grade(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="effitrain grade", description="Grade learners' notebooks (README: For instructors)."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
