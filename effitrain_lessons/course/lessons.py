"""The course's lessons as the instructor's tooling sees them: names, files, questions and tests.

One home for lesson names: `lesson_names` lists them, `resolve_lesson` turns what a person or a
notebook's metadata says ('01', '01_checkpointing_first_principles', 'lessons/01_....ipynb') into
one of them, and `edition_paths` says where a lesson's built files live.

`load_lesson` reads what grading needs from the built editions (never from a submission):

- the solution edition's code cells, in order: the lesson's own cells, the answer cells (tagged
  `otter_assign_solution_cell` by Otter Assign, each followed by its question's `grader.check`), and
  the cells each question depends on, tagged `setup-for:<question>` in the lesson master;
- the questions, their points and their test cases, from `autograder/<lesson>/tests/*.py` (otter's OK
  format, read as data with `ast.literal_eval`, never executed).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from effitrain_lessons import lessons as manifest
from effitrain_lessons.shared.checks import doctest_to_source
from effitrain_lessons.shared.judging import Parts, split_case

ROOT = Path(__file__).resolve().parents[2]
"""The course checkout this package lives in (its lessons/, notebooks/ and autograder/), when it does."""

LESSONS_DIR = "lessons"
LEARNER_DIR = "notebooks"
SOLUTIONS_DIR = "notebooks/solutions"
# the Turkish editions: learner editions here, solution editions in its solutions/
TURKISH_DIR = "notebooks/tr"
TURKISH_SOLUTIONS_DIR = "notebooks/tr/solutions"
AUTOGRADER_DIR = "autograder"
LESSON_NAME = re.compile(r"\d\d_[a-z0-9_]+")

SOLUTION_TAG = "otter_assign_solution_cell"
SETUP_TAG = "setup-for:"  # a lesson cell tagged `setup-for:q_name` is run before q_name's answer
CHECK_CALL = re.compile(r"""grader\.check\(\s*["'](?P<name>\w+)["']\s*\)""")
SKIPPED_CELLS = ("setup", "otter-init")  # install/import boilerplate: the grader has the package


NO_CHECKOUT = (
    "{command} needs the course checkout (a clone of https://github.com/effitrain/effitrain-lessons, "
    "with its lessons/ folder): run it there, or pass --course with the checkout's path."
)


def course_root(given: str | Path | None) -> Path | None:
    """The course folder an instructor's command works on: `given`, else this package's checkout,
    else None."""
    if given is not None:
        return Path(given)
    return ROOT if (ROOT / LESSONS_DIR).is_dir() else None


def lesson_names(root: Path = ROOT) -> list[str]:
    """The lessons in `root/lessons/`, sorted: names like '00_start_here'."""
    folder = Path(root) / LESSONS_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.ipynb") if LESSON_NAME.fullmatch(p.stem))


SAVED_MODULE = "saved.py"  # a lesson's `# @save` cells, as a module of its package, for launchers


def saved_path(name: str) -> str | None:
    """Where lesson `name`'s `# @save` cells go: `saved.py` in its package, which the manifest
    (`effitrain_lessons/lessons.py`) names; None for a lesson the manifest does not list."""
    found = [each for each in manifest.LESSONS if each.file == name]
    return f"{found[0].package.replace('.', '/')}/{SAVED_MODULE}" if found else None


def edition_paths(name: str) -> dict[str, str]:
    """Where a lesson's editions go, relative to the course root."""
    return {
        "learner": f"{LEARNER_DIR}/{name}.ipynb",
        "solution": f"{SOLUTIONS_DIR}/{name}.ipynb",
        "learner_tr": f"{TURKISH_DIR}/{name}.ipynb",
        "solution_tr": f"{TURKISH_SOLUTIONS_DIR}/{name}.ipynb",
        "autograder": f"{AUTOGRADER_DIR}/{name}",
        "saved": saved_path(name),
    }


def resolve_lesson(text: str, available: list[str]) -> str:
    """A lesson name from '00_start_here', 'lessons/00_start_here.ipynb', '00' or '0'.

    Raises ValueError with the lessons there are when `text` names none of them (or several).
    """
    stem = Path(str(text).strip()).stem
    if stem in available:
        return stem
    if stem.isdigit():
        matches = [name for name in available if int(name.split("_", 1)[0]) == int(stem)]
    else:
        matches = [name for name in available if name.split("_", 1)[0] == stem]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(available) or "none"
    raise ValueError(f"There is no lesson {str(text)[:80]!r} in {LESSONS_DIR}/ (lessons: {known}).")


# ---------------------------------------------------------------------------------------------
# A lesson, as grading needs it


@dataclass(frozen=True)
class Case:
    """One test case: Python source that passes when it runs without an exception (in a notebook),
    and the same source split into the parts `effitrain grade` runs apart (`judging.split_case`)."""

    question: str
    index: int
    code: str
    hidden: bool
    points: float
    parts: Parts | None = None  # None only for a case made by hand, never read from a test file


@dataclass
class Question:
    name: str
    points: float  # what the instructor's test file makes it worth
    cases: list[Case]
    all_or_nothing: bool = False

    def score(self, passed: dict[int, bool]) -> float:
        """Points for the cases that passed (`passed[index]`), by otter's rules, never above `points`."""
        if self.all_or_nothing:
            won = self.points if self.cases and all(passed.get(c.index, False) for c in self.cases) else 0.0
        else:
            won = sum(c.points for c in self.cases if passed.get(c.index, False))
        return max(0.0, min(float(won), self.points))


@dataclass(frozen=True)
class Cell:
    """A code cell of the solution edition."""

    id: str
    source: str
    answer_for: str | None = None  # the question this cell answers
    check_for: str | None = None  # the question whose `grader.check` this is
    setup_for: frozenset[str] = frozenset()  # questions that need this lesson cell


@dataclass
class Lesson:
    name: str
    cells: list[Cell]
    questions: dict[str, Question]
    cell_ids: frozenset[str] = field(default_factory=frozenset)  # every cell id of both editions

    @property
    def answers(self) -> dict[str, str]:
        """Answer cell id -> question."""
        return {cell.id: cell.answer_for for cell in self.cells if cell.answer_for}

    def only(self, question: str) -> Lesson:
        """This lesson with one question: its lesson cells, and that question's answer and check."""
        cells = [cell for cell in self.cells if (cell.answer_for or cell.check_for or question) == question]
        return Lesson(self.name, cells, {question: self.questions[question]}, self.cell_ids)


class CourseError(Exception):
    """The course folder lacks what grading needs (a sentence saying what to do)."""


def load_lesson(name: str, course: Path = ROOT) -> Lesson:
    """The instructor's copy of lesson `name`: solution edition cells and autograder tests."""
    course = Path(course)
    paths = edition_paths(name)
    solution_path = course / paths["solution"]
    tests_dir = course / paths["autograder"] / "tests"
    if not solution_path.is_file() or not tests_dir.is_dir():
        raise CourseError(
            f"The course folder {course} has no solution edition or tests for {name}: "
            "run `effitrain build` (or `make notebooks`) there first."
        )
    solution = json.loads(solution_path.read_text(encoding="utf-8"))
    ids = {cell.get("id") for cell in solution["cells"]}
    learner_path = course / paths["learner"]
    if learner_path.is_file():
        ids |= {cell.get("id") for cell in json.loads(learner_path.read_text(encoding="utf-8"))["cells"]}
    questions = {}
    for path in sorted(tests_dir.glob("*.py")):
        question = read_test_file(path)
        questions[question.name] = question
    cells, pending = [], []
    for raw in solution["cells"]:
        if raw["cell_type"] != "code" or raw["id"] in SKIPPED_CELLS:
            continue
        source = _source(raw)
        tags = raw.get("metadata", {}).get("tags", [])
        check = CHECK_CALL.search(source)
        if check:
            for cell_id in pending:
                index = next(i for i, c in enumerate(cells) if c.id == cell_id)
                cells[index] = Cell(cell_id, cells[index].source, answer_for=check["name"])
            pending = []
            cells.append(Cell(raw["id"], source, check_for=check["name"]))
            continue
        if SOLUTION_TAG in tags:
            pending.append(raw["id"])
        setup = frozenset(tag[len(SETUP_TAG) :] for tag in tags if tag.startswith(SETUP_TAG))
        cells.append(Cell(raw["id"], source, setup_for=setup))
    answered = {cell.answer_for for cell in cells if cell.answer_for}
    if pending or answered != set(questions):
        raise CourseError(
            f"{paths['solution']} and {paths['autograder']}/tests/ disagree on the questions "
            f"({sorted(answered)} vs {sorted(questions)}): rebuild with `effitrain build`."
        )
    unknown = {q for cell in cells for q in cell.setup_for} - set(questions)
    if unknown:
        raise CourseError(
            f"{paths['solution']} tags cells {SETUP_TAG}{sorted(unknown)[0]}, which is no question of {name}."
        )
    return Lesson(name, cells, questions, frozenset(i for i in ids if isinstance(i, str)))


def read_test_file(path: Path) -> Question:
    """A question from an OK-format test file, read as data (the file is never executed).

    Only doctest suites of `>>>` statements with no expected output are supported: each case is
    turned into plain Python source that passes when it runs without an exception.
    """
    path = Path(path)
    spec = None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "test" for t in node.targets
        ):
            spec = ast.literal_eval(node.value)
    if not isinstance(spec, dict) or "name" not in spec:
        raise CourseError(
            f"{path} has no OK-format `test = {{...}}`: rebuild the autograder folder with `effitrain build`."
        )
    raw_cases = []
    for suite in spec.get("suites", []):
        if suite.get("type", "doctest") != "doctest" or suite.get("setup") or suite.get("teardown"):
            raise CourseError(f"{path}: only doctest suites without setup or teardown can be graded.")
        raw_cases += suite.get("cases", [])
    points = _case_points(spec.get("points"), [case.get("points") for case in raw_cases])
    cases = []
    try:
        for i, (case, p) in enumerate(zip(raw_cases, points)):
            where = f"{path.name} case {i}"
            code = doctest_to_source(case["code"], where)
            cases.append(Case(spec["name"], i, code, bool(case.get("hidden")), p, _parts(code, where)))
    except (ValueError, SyntaxError) as error:
        raise CourseError(str(error)) from None
    return Question(spec["name"], float(sum(points)), cases, bool(spec.get("all_or_nothing", False)))


def _parts(code: str, where: str) -> Parts:
    """The case's parts; CourseError when it is not split (`effitrain_lessons/shared/judging.py` says how)."""
    try:
        return split_case(code, where)
    except ValueError as error:
        raise CourseError(f"{error} Rebuild the autograder folder with `effitrain build`.") from None


def _case_points(total, given: list) -> list[float]:
    """Each case's points, resolved as otter resolves them for OK-format tests."""
    if isinstance(total, list):
        if len(total) != len(given):
            raise CourseError("a test file lists points for a different number of cases than it has")
        given, total = list(total), None
    fixed = sum(p for p in given if p is not None)
    unset = sum(p is None for p in given)
    if total is not None:
        if fixed > total:
            raise CourseError("a test file's cases are worth more points than the question")
        share = (total - fixed) / unset if unset else 0.0
    elif fixed == 0:
        share = 1 / unset if unset else 0.0  # no points anywhere: the question is worth 1
    else:
        share = 0.0
    return [float(p) if p is not None else float(share) for p in given]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source
