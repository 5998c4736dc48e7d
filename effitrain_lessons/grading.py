"""Grade learners' notebooks for an instructor: `effitrain grade SUBMISSION... --out DIR`.

How a submission is graded (one worker process per submission, several in parallel):

1. The instructor's copy decides everything but the answers. The grader starts from the lesson's
   *solution edition* in the course folder and puts the learner's answer cells into it (matched
   by cell id, which JupyterLab keeps). Every other cell of the submission (lesson code, test
   cells, `grader = ...`) is ignored, so editing, deleting or re-ordering them changes nothing.
2. That notebook runs in a fresh kernel, with errors allowed (an error in one answer costs that
   answer only), under a memory cap, without network where the OS allows it (a new network
   namespace), and with its output capped.
3. Then the lesson's tests (public and hidden, from the autograder folder of the course, never
   from the submission) run in the kernel after the package and otter have been re-imported from
   disk, so monkeypatching `effitrain_lessons` or otter inside the notebook gains nothing.
4. A submission that is malformed, runs past its time, exhausts its memory, kills its kernel or
   prints without end gets a row saying so and zero for what it could not show; the batch goes
   on. Submissions are read, never written. Every process a submission starts is stopped when
   its grading ends.

Results: `DIR/grades.csv` (file, one column per question, total, status, reason) and
`DIR/feedback/<file>.txt`, which a learner can read: points per question, and how many public and
hidden tests ran and passed (hidden tests' code is never shown).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nbclient import NotebookClient

from effitrain_lessons.authoring import ROOT, edition_paths, lesson_names

ANSWER_TAG = "otter_answer_cell"
SOLUTION_TAG = "otter_assign_solution_cell"
CHECK_CALL = re.compile(r"""grader\.check\(\s*["'](?P<name>\w+)["']\s*\)""")
DEFAULT_TIMEOUT = 600  # seconds per submission: the slowest lesson runs in about 90 s on 2 cores
DEFAULT_MEMORY_MB = 3072
DEFAULT_OUTPUT_BYTES = 2_000_000  # what one submission may print before the rest is dropped
MEMORY_ERRORS = ("MemoryError", "OutOfMemoryError", "can't allocate memory", "DefaultCPUAllocator")


@dataclass
class QuestionResult:
    name: str
    points: float
    possible: float
    public_passed: int = 0
    public_total: int = 0
    hidden_passed: int = 0
    hidden_total: int = 0
    public_messages: list[str] = field(default_factory=list)  # why public tests failed (learners may see these)


@dataclass
class SubmissionResult:
    file: str
    lesson: str | None
    status: str  # graded, malformed, timeout, memory, output, kernel died, error
    reason: str = ""
    questions: dict[str, QuestionResult] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(question.points for question in self.questions.values())


# ---------------------------------------------------------------------------------------------
# The instructor's copy
# ---------------------------------------------------------------------------------------------


@dataclass
class Lesson:
    name: str
    solution: dict  # the solution edition, as JSON
    tests: dict[str, Path]  # question name -> OK-format test file
    answers: dict[str, str]  # answer cell id -> question name
    points: dict[str, float]


def load_lesson(name: str, course: Path = ROOT) -> Lesson:
    """The solution edition and test files of lesson `name` from the course folder."""
    paths = edition_paths(name)
    solution_path = Path(course) / paths["solution"]
    tests_dir = Path(course) / paths["autograder"] / "tests"
    if not solution_path.is_file() or not tests_dir.is_dir():
        raise FileNotFoundError(
            f"The course folder {course} has no solution edition or tests for {name}: run `make notebooks` there first."
        )
    solution = json.loads(solution_path.read_text(encoding="utf-8"))
    answers, pending = {}, []
    for cell in solution["cells"]:
        if SOLUTION_TAG in cell["metadata"].get("tags", []):
            pending.append(cell["id"])
        match = CHECK_CALL.search(_source(cell)) if cell["cell_type"] == "code" else None
        if match:
            answers.update({cell_id: match["name"] for cell_id in pending})
            pending = []
    tests = {path.stem: path for path in sorted(tests_dir.glob("*.py"))}
    points = {question: _points(path) for question, path in tests.items()}
    return Lesson(name, solution, tests, answers, points)


def _points(path: Path) -> float:
    match = re.search(r"'points':\s*([0-9.]+)", path.read_text(encoding="utf-8"))
    return float(match[1]) if match else 1.0


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def identify_lesson(submission: dict, filename: str, names: list[str]) -> str | None:
    """Which lesson a submission answers: otter's assignment name in its metadata, else its file name."""
    assignment = submission.get("metadata", {}).get("otter", {}).get("assignment_name")
    if assignment in names:
        return assignment
    stem = Path(filename).stem
    matches = [name for name in names if name in stem or stem.startswith(name[:3])]
    return matches[0] if len(matches) == 1 else None


def read_submission(path: Path) -> tuple[dict | None, str]:
    """The submission as notebook JSON, or None and one sentence saying why it cannot be graded."""
    import nbformat

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, f"cannot be read as a text file ({type(error).__name__})"
    try:
        notebook = json.loads(text)
        nbformat.validate(nbformat.from_dict(notebook))
    except (json.JSONDecodeError, nbformat.ValidationError, AttributeError, TypeError) as error:
        return None, f"is not a valid Jupyter notebook ({type(error).__name__})"
    if notebook.get("nbformat") != 4:
        return None, "is not a version-4 Jupyter notebook"
    return notebook, ""


_GRADING_CELL = '''\
# Grading: re-import the package and otter from disk, then run the instructor's tests.
import importlib as _importlib, json as _json, sys as _sys
for _name in [n for n in list(_sys.modules) if n.split(".")[0] in ("effitrain_lessons", "otter")]:
    del _sys.modules[_name]
_importlib.invalidate_caches()
from otter.test_files import OKTestFile as _OKTestFile
_results = {{}}
for _question, _path in {tests!r}.items():
    _test = _OKTestFile.from_file(_path)
    try:
        _test.run(globals())
    except BaseException as _error:
        _results[_question] = {{"error": type(_error).__name__}}
        continue
    _results[_question] = {{"score": _test.score, "possible": _test.possible, "cases": [
        {{"hidden": _r.test_case.hidden, "passed": _r.passed, "message": _r.message}} for _r in _test.test_case_results]}}
with open({result!r}, "w", encoding="utf-8") as _file:
    _json.dump(_results, _file)
'''


def grading_notebook(submission: dict, lesson: Lesson, result_path: str) -> tuple[dict, list[str]]:
    """The lesson's solution edition with the learner's answers in it, then the grading cell.

    Returns the notebook and the questions whose answer cells the submission lacks."""
    learner = {}
    for cell in submission.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and "id" in cell:
            learner[cell["id"]] = _source(cell)
    cells, missing = [], set()
    for cell in lesson.solution["cells"]:
        if cell["cell_type"] != "code" or cell["id"] == "otter-init" or CHECK_CALL.search(_source(cell)):
            continue
        source = _source(cell)
        if cell["id"] in lesson.answers:
            if cell["id"] in learner:
                source = learner[cell["id"]]
            else:
                source = ""
                missing.add(lesson.answers[cell["id"]])
        cells.append({"cell_type": "code", "id": cell["id"], "metadata": {}, "source": source,
                      "outputs": [], "execution_count": None})
    tests = {question: str(path) for question, path in lesson.tests.items()}
    cells.append({"cell_type": "code", "id": "effitrain-grading", "metadata": {},
                  "source": _GRADING_CELL.format(tests=tests, result=result_path), "outputs": [], "execution_count": None})
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    return notebook, sorted(missing)


# ---------------------------------------------------------------------------------------------
# The worker: one submission, in its own process
# ---------------------------------------------------------------------------------------------


def _become_subreaper() -> None:
    """Orphans of this process's children re-parent to it (Linux), so none escapes the cleanup."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _kill_descendants(pid: int) -> None:
    import psutil

    try:
        family = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return
    for process in family:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=5)


def _worker(submission_path: str, lesson_name: str, course: str, report_path: str, output_bytes: int) -> int:
    from nbclient.exceptions import DeadKernelError

    _become_subreaper()
    lesson = load_lesson(lesson_name, Path(course))
    submission = json.loads(Path(submission_path).read_text(encoding="utf-8"))
    report = {"status": "graded", "reason": "", "missing": [], "results": {}, "memory": False, "truncated": False}
    with tempfile.TemporaryDirectory(prefix="effitrain-grade-") as workdir:
        result_path = str(Path(workdir) / "results.json")
        notebook, report["missing"] = grading_notebook(submission, lesson, result_path)
        import nbformat

        client = CappedClient(nbformat.from_dict(notebook), allow_errors=True, timeout=None, kernel_name="python3",
                               resources={"metadata": {"path": workdir}})
        client.output_budget = output_bytes
        try:
            client.execute(cwd=workdir)
        except DeadKernelError:
            report["status"], report["reason"] = "kernel died", "the kernel died or exited while running the notebook"
        finally:
            _kill_descendants(os.getpid())
        report["truncated"] = client.output_budget < 0
        for cell in client.nb.cells:
            for output in cell.get("outputs", []):
                text = f"{output.get('ename', '')} {output.get('evalue', '')}"
                if output.get("output_type") == "error" and any(marker in text for marker in MEMORY_ERRORS):
                    report["memory"] = True
        if Path(result_path).is_file():
            report["results"] = json.loads(Path(result_path).read_text(encoding="utf-8"))
        elif report["status"] == "graded":
            report["status"], report["reason"] = "error", "the tests could not run after the notebook"
    Path(report_path).write_text(json.dumps(report), encoding="utf-8")
    return 0


class CappedClient(NotebookClient):
    """nbclient's NotebookClient, keeping at most `output_budget` bytes of the notebook's output."""

    output_budget = DEFAULT_OUTPUT_BYTES

    def output(self, outs, msg, display_id, cell_index):
        self.output_budget -= len(json.dumps(msg.get("content", {}), default=str))
        if self.output_budget < 0:
            return None  # dropped: the submission printed more than it may
        return super().output(outs, msg, display_id, cell_index)


# ---------------------------------------------------------------------------------------------
# The batch
# ---------------------------------------------------------------------------------------------


def _network_prefix() -> list[str]:
    """A command prefix that runs a process without network (loopback only), or [] where impossible."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    options = ["-n"] if hasattr(os, "geteuid") and os.geteuid() == 0 else ["-n", "-r"]
    probe = subprocess.run(["unshare", *options, "ip", "link", "set", "lo", "up"], capture_output=True)
    return ["unshare", *options, "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] if probe.returncode == 0 else []


def _limit_memory(megabytes: int):
    def apply() -> None:
        import resource

        cap = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.setsid()

    return apply


def grade_one(path: Path, names: list[str], course: Path, timeout: float, memory_mb: int, threads: int,
              network_prefix: list[str], output_bytes: int = DEFAULT_OUTPUT_BYTES) -> SubmissionResult:
    """Grade one submission in its own worker process; never raises for a bad submission."""
    start = time.monotonic()
    notebook, problem = read_submission(path)
    if notebook is None:
        return SubmissionResult(path.name, None, "malformed", f"{path.name} {problem}.")
    lesson_name = identify_lesson(notebook, path.name, names)
    if lesson_name is None:
        return SubmissionResult(path.name, None, "malformed",
                                f"{path.name} does not say which lesson it answers: pass --lesson NAME.")
    lesson = load_lesson(lesson_name, course)
    result = SubmissionResult(path.name, lesson_name, "graded",
                              questions={q: QuestionResult(q, 0.0, lesson.points[q]) for q in lesson.tests})
    environment = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), MPLBACKEND="Agg",
                       HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="effitrain-grade-") as folder:
        report_path = Path(folder) / "report.json"
        command = network_prefix + [sys.executable, "-m", "effitrain_lessons.grading", "_worker", str(path.resolve()),
                                    lesson_name, str(course), str(report_path), str(output_bytes)]
        worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment,
                                  preexec_fn=_limit_memory(memory_mb), cwd=folder)
        try:
            _, stderr = worker.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_descendants(worker.pid)
            worker.kill()
            worker.communicate()
            result.status, result.reason = "timeout", f"did not finish within {timeout:.0f} s (an endless loop?)"
            result.seconds = time.monotonic() - start
            return result
        finally:
            _kill_descendants(worker.pid)
        if not report_path.is_file():
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:] if stderr else []
            memory = any(marker in "".join(tail) for marker in MEMORY_ERRORS)
            result.status = "memory" if memory else "error"
            result.reason = (f"exhausted the {memory_mb} MiB memory cap" if memory
                             else f"the grader's worker failed: {tail[0] if tail else 'no message'}")
            result.seconds = time.monotonic() - start
            return result
        report = json.loads(report_path.read_text(encoding="utf-8"))
    result.status, result.reason = report["status"], report["reason"]
    if report["memory"] and result.status == "graded":
        result.status, result.reason = "memory", f"a cell exhausted the {memory_mb} MiB memory cap"
    if report["truncated"]:  # however the kernel then ended, the cause is the endless output
        result.status = "output"
        result.reason = f"printed more than the {output_bytes / 1e6:g} MB allowed (the rest was dropped)"
    for question, outcome in report["results"].items():
        entry = result.questions.setdefault(question, QuestionResult(question, 0.0, lesson.points.get(question, 1.0)))
        if "error" in outcome:
            continue
        entry.points, entry.possible = float(outcome["score"]), float(outcome["possible"])
        for case in outcome["cases"]:
            kind = "hidden" if case["hidden"] else "public"
            setattr(entry, f"{kind}_total", getattr(entry, f"{kind}_total") + 1)
            if case["passed"]:
                setattr(entry, f"{kind}_passed", getattr(entry, f"{kind}_passed") + 1)
            elif not case["hidden"]:
                entry.public_messages.append(case["message"])
    for question in report["missing"]:
        result.questions[question].public_messages.insert(0, "The answer cell is missing from the submission.")
    result.seconds = time.monotonic() - start
    return result


def submissions_in(paths: list[str]) -> list[Path]:
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.glob("*.ipynb") if p.is_file())
        elif path.exists():
            found.append(path)
        else:
            raise ValueError(f"{raw} does not exist: pass notebook files, or folders that contain them.")
    return found


def grade(paths: list[str], out: str, course: Path = ROOT, timeout: float = DEFAULT_TIMEOUT,
          memory_mb: int = DEFAULT_MEMORY_MB, workers: int = 2, network: bool = False) -> list[SubmissionResult]:
    """Grade every submission in `paths` (files or folders of .ipynb) and write the results to `out`."""
    submissions = submissions_in(paths)
    if not submissions:
        raise ValueError("No submissions found: pass notebook files or folders that contain .ipynb files.")
    names = lesson_names(course)
    threads = max(1, (os.cpu_count() or 1) // workers)
    prefix = [] if network else _network_prefix()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(grade_one, path, names, course, timeout, memory_mb, threads, prefix) for path in submissions]
        results = [future.result() for future in futures]
    write_results(results, Path(out))
    return results


def write_results(results: list[SubmissionResult], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    questions = sorted({question for result in results for question in result.questions})
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "lesson", *questions, "total", "possible", "status", "reason"])
        for result in results:
            cells = [_number(result.questions[q].points) if q in result.questions else "" for q in questions]
            possible = sum(question.possible for question in result.questions.values())
            writer.writerow([result.file, result.lesson or "", *cells, _number(result.total), _number(possible),
                             result.status, result.reason])
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    for result in results:
        (feedback / f"{Path(result.file).stem}.txt").write_text(feedback_text(result), encoding="utf-8")
    (out / "results.json").write_text(json.dumps([asdict(result) for result in results], indent=1), encoding="utf-8")


def _number(value: float) -> str:
    return f"{value:g}"


def feedback_text(result: SubmissionResult) -> str:
    """What a learner reads: points per question, and which tests ran (hidden tests' code stays hidden)."""
    lines = [f"{result.file}: {_number(result.total)} of "
             f"{_number(sum(q.possible for q in result.questions.values()))} points ({result.lesson or 'lesson unknown'})"]
    if result.status != "graded" or result.reason:
        lines.append(f"Note: {result.reason or result.status}.")
    for question in result.questions.values():
        lines.append("")
        lines.append(f"{question.name}: {_number(question.points)} of {_number(question.possible)} points")
        if question.public_total or question.hidden_total:
            lines.append(f"  public tests: {question.public_passed} of {question.public_total} passed")
            lines.append(f"  hidden tests: {question.hidden_passed} of {question.hidden_total} passed")
        else:
            lines.append("  no test ran")
        for message in question.public_messages[:3]:
            lines.append("  " + message.strip().replace("\n", "\n  ")[:2000])
    return "\n".join(lines) + "\n"


def main_grade(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="effitrain grade", description="Grade learners' notebooks (see README, For instructors).")
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION", help="notebooks, or folders of them")
    parser.add_argument("--out", required=True, help="folder for grades.csv, results.json and feedback/")
    parser.add_argument("--course", default=str(ROOT), help="the course checkout with the solution editions and tests")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per submission (default 600)")
    parser.add_argument("--memory", type=int, default=DEFAULT_MEMORY_MB, help="MiB per submission (default 3072)")
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    parser.add_argument("--network", action="store_true", help="let submissions use the network")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.timeout <= 0 or args.memory < 256:
        print("error: --workers must be at least 1, --timeout positive and --memory at least 256 MiB.", file=sys.stderr)
        return 2
    try:
        results = grade(args.submissions, args.out, Path(args.course), args.timeout, args.memory, args.workers, args.network)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for result in results:
        print(f"{result.file}: {_number(result.total)} ({result.status}{': ' + result.reason if result.reason else ''})")
    print(f"wrote {Path(args.out) / 'grades.csv'} and {len(results)} feedback files")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["_worker"]:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.exit(_worker(*sys.argv[2:6], int(sys.argv[6])))
    sys.exit(main_grade())
