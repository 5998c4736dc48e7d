"""`effitrain grade` as an instructor uses it: real submissions, graded in the sandbox, each with
its expected row.

Batches: every English solution and Turkish learner edition (full marks and zero), and one lesson in
all four editions; a solution named alone, and two with thread pools forced large; each question
with only the cells its marks name; and a class folder of hostile and broken files, one per class of
attack or accident the grader must survive. Then the pieces that decide a score, without a sandbox:
test files, points, lesson identification, the static review, and the report.
"""

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from effitrain_lessons.course import grade, lessons, report, review, sandbox, submissions
from effitrain_lessons.course.lessons import ROOT, edition_paths, load_lesson
from effitrain_lessons.shared import checks
from effitrain_lessons.shared.checks import HONEST
from effitrain_lessons.shared.i18n import translator

LESSONS = lessons.lesson_names()
SANDBOX = sandbox.sandbox_problem()
# `make test` installs bubblewrap and sets EFFITRAIN_REQUIRE_SANDBOX: there, no sandbox is a
# failure, not a skip.
SKIP_WITHOUT_SANDBOX = pytest.mark.skipif(
    SANDBOX is not None and not os.environ.get("EFFITRAIN_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {SANDBOX}",
)


def needs_sandbox(test):
    """A test that grades in the sandbox: the `sandbox` tier (left out of `make test-fast`)."""
    return pytest.mark.sandbox(SKIP_WITHOUT_SANDBOX(test))


def edition(name: str, kind: str) -> dict:
    return json.loads((ROOT / edition_paths(name)[kind]).read_text(encoding="utf-8"))


def with_answer(name: str, answers: dict[str, str], kind: str = "learner") -> dict:
    """The `kind` edition of lesson `name` with the answer cells of the given questions replaced."""
    notebook = edition(name, kind)
    lesson = load_lesson(name)
    for cell in notebook["cells"]:
        question = lesson.answers.get(cell.get("id"))
        if question in answers:
            cell["source"] = answers[question]
    return notebook


def write(folder: Path, filename: str, notebook) -> Path:
    path = folder / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook if isinstance(notebook, str) else json.dumps(notebook), encoding="utf-8")
    return path


def read_csv(path: Path) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["file"]: row for row in csv.DictReader(handle)}


def tree_digest(*folders: Path) -> str:
    """One hash of every file's path and bytes under `folders` (caches excluded)."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".OTTER_LOG" not in path.name:
                digest.update(os.fsencode(path) + b"\0" + path.read_bytes())
    return digest.hexdigest()


COURSE = [ROOT / "effitrain_lessons", ROOT / "notebooks", ROOT / "autograder", ROOT / "lessons"]


def leftover_processes(marker: str) -> list[str]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in process.info["cmdline"] or []):
                found.append(" ".join(process.info["cmdline"])[:120])
        except psutil.Error:
            continue
    return found


def no_sandbox_left() -> bool:
    return not leftover_processes("effitrain_lessons.course.worker") and not leftover_processes("bwrap")


# ---------------------------------------------------------------------------------------------
# The editions: right answers get full marks, untouched learner editions get zero


# The smallest batch that still covers every question in both languages: every English solution
# (full marks), every Turkish learner edition (zero, with Turkish feedback), and one lesson in all
# four editions, so that each language's score can be compared with the other's question by question.
# The Turkish editions' code is the English editions' token for token (tests/test_translations.py).
BOTH_LANGUAGES = "04_local_sgd"  # its checks launch processes: the language reaches them too
BATCH = (
    [("solution", name) for name in LESSONS]
    + [("learner_tr", name) for name in LESSONS]
    + [("learner", BOTH_LANGUAGES), ("solution_tr", BOTH_LANGUAGES)]
)


def batch_file(kind: str, name: str) -> str:
    return f"{'tr_' if kind.endswith('_tr') else ''}{kind.removesuffix('_tr')}_{name}.ipynb"


@pytest.fixture(scope="module")
def editions_batch(tmp_path_factory):
    """The editions above, graded with the defaults (2 workers)."""
    folder = tmp_path_factory.mktemp("editions")
    for kind, name in BATCH:
        shutil.copy(ROOT / edition_paths(name)[kind], folder / batch_file(kind, name))
    before = tree_digest(folder, *COURSE)
    start = time.monotonic()
    results = grade.grade([str(folder)], folder.parent / "editions_out")
    seconds = time.monotonic() - start
    print(f"\ngraded {len(results)} submissions in {seconds:.0f} s with the default workers")
    return folder, {result.file: result for result in results}, before


def shape(result) -> dict:
    """Each question's points possible and public and hidden test counts: what a language must not change."""
    return {q: (r.possible, r.public_total, r.hidden_total) for q, r in result.questions.items()}


@needs_sandbox
def test_solution_editions_get_full_marks_in_a_batch(editions_batch):
    _, results, _ = editions_batch
    for name in LESSONS:
        result = results[f"solution_{name}.ipynb"]
        assert result.status == "graded" and result.reason == "", (name, result.reason, result.notes)
        assert result.possible > 0 and result.total == result.possible, (
            name,
            {q: r.points for q, r in result.questions.items()},
        )
        assert result.flags == [], (name, result.flags)  # a right answer reaches for nothing
        assert all(
            q.hidden_total > 0 and q.hidden_passed == q.hidden_total for q in result.questions.values()
        )


@needs_sandbox
def test_untouched_learner_editions_get_zero(editions_batch):
    _, results, _ = editions_batch
    for name in LESSONS:
        result = results[f"tr_learner_{name}.ipynb"]
        assert result.status == "graded" and result.total == 0, (
            name,
            {q: r.points for q, r in result.questions.items()},
        )
        assert all(q.hidden_total > 0 for q in result.questions.values())  # from the instructor's tests
        assert shape(result) == shape(results[f"solution_{name}.ipynb"]), name
    assert results[f"learner_{BOTH_LANGUAGES}.ipynb"].total == 0


@needs_sandbox
def test_a_turkish_edition_is_graded_as_its_english_counterpart_with_turkish_feedback(editions_batch):
    folder, results, _ = editions_batch
    out = folder.parent / "editions_out"
    rows = read_csv(out / "grades.csv")
    turkish = translator("tr")
    assert turkish("hidden tests: {passed} of {total} passed") != "hidden tests: {passed} of {total} passed"
    for kind in ("solution", "learner"):
        english, translated = (
            results[f"{kind}_{BOTH_LANGUAGES}.ipynb"],
            results[f"tr_{kind}_{BOTH_LANGUAGES}.ipynb"],
        )
        assert translated.status == "graded" and translated.language == "tr", (kind, translated.reason)
        assert {
            q: (r.points, r.possible, r.public_passed, r.public_total, r.hidden_passed, r.hidden_total)
            for q, r in translated.questions.items()
        } == {
            q: (r.points, r.possible, r.public_passed, r.public_total, r.hidden_passed, r.hidden_total)
            for q, r in english.questions.items()
        }, kind
    assert (
        results[f"tr_solution_{BOTH_LANGUAGES}.ipynb"].total
        == results[f"tr_solution_{BOTH_LANGUAGES}.ipynb"].possible
        > 0
    )
    for name in LESSONS:
        feedback = (out / rows[f"tr_learner_{name}.ipynb"]["feedback"]).read_text(encoding="utf-8")
        assert turkish("public tests: {passed} of {total} passed").split("{")[0] in feedback
        assert "public tests:" not in feedback and "hidden tests:" not in feedback, feedback
    # the public tests' own messages come back in Turkish too
    said = [
        m for q in results[f"tr_learner_{BOTH_LANGUAGES}.ipynb"].questions.values() for m in q.public_messages
    ]
    english = [
        m for q in results[f"learner_{BOTH_LANGUAGES}.ipynb"].questions.values() for m in q.public_messages
    ]
    assert said and english and said != english, (said, english)


@needs_sandbox
def test_results_files_course_and_submissions_untouched(editions_batch):
    folder, results, before = editions_batch
    out = folder.parent / "editions_out"
    rows = read_csv(out / "grades.csv")
    assert set(rows) == set(results)
    assert (
        rows["solution_00_start_here.ipynb"]["q_bytes"] == "1"
        and rows["tr_learner_00_start_here.ipynb"]["total"] == "0"
    )
    for file, row in rows.items():
        text = (out / row["feedback"]).read_text(encoding="utf-8")
        hidden = translator("tr" if file.startswith("tr_") else "en")(
            "hidden tests: {passed} of {total} passed"
        )
        assert hidden.split("{")[0] in text and "All test cases passed" not in text
    assert tree_digest(folder, *COURSE) == before  # submissions and course byte-identical
    assert psutil.Process().children(recursive=True) == [] and no_sandbox_left()


@needs_sandbox
def test_a_solution_edition_named_alone_gets_full_marks(tmp_path, name="00_start_here"):
    """A single file as the argument, not a folder (the batch above grades every lesson's solution)."""
    shutil.copy(ROOT / edition_paths(name)["solution"], tmp_path / "solution.ipynb")
    [result] = grade.grade([str(tmp_path / "solution.ipynb")], tmp_path / "out")
    assert result.status == "graded" and result.total == result.possible > 0, (result.reason, result.notes)


@needs_sandbox
@pytest.mark.parametrize(
    "name, memory", [("02_checkpointing_with_trainer", "cgroup"), ("04_local_sgd", "pss")]
)
def test_solutions_get_full_marks_with_thread_pools_forced_large(tmp_path, name, memory):
    """An instructor's machine with many cores: 32 OpenMP/MKL threads per submission, default memory cap.
    Two lessons stand for the rest, each under one way of capping memory: 02's checks fine-tune with
    `Trainer` in the kernel's own thread pool, 04's fork worker processes that each start theirs."""
    shutil.copy(ROOT / edition_paths(name)["solution"], tmp_path / f"{name}.ipynb")
    limits = sandbox.Limits(threads=32, cgroup=memory == "cgroup")
    results = grade.grade([str(tmp_path)], tmp_path / "out", limits=limits)
    for result in results:
        assert result.status == "graded" and result.total == result.possible, (result.file, result.reason)
        assert result.peak_memory_mb < limits.memory_mb


@needs_sandbox
@pytest.mark.parametrize("name, question", [(n, q) for n in LESSONS for q in load_lesson(n).questions])
def test_each_questions_marked_cells_are_enough(name, question):
    """The cells tagged setup-for:<question>, alone, let the solution pass every test (the marking
    is complete)."""
    lesson = load_lesson(name).only(question)
    answers = {cell.id: cell.source for cell in lesson.cells if cell.answer_for}
    result = grade.grade_answers("solution", lesson, answers, sandbox.Limits(threads=1), follow_names=False)
    entry = result.questions[question]
    assert result.status == "graded" and entry.points == entry.possible, (
        result.reason,
        entry.public_messages,
        entry.answer_error,
        result.notes,
    )


# ---------------------------------------------------------------------------------------------
# A hostile and broken class folder


RIGHT_00 = "import math\n\ndef tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize\n"
# float32 only: passes the public test only
PARTIAL_00 = "import math\n\ndef tensor_bytes(shape, dtype):\n    return math.prod(shape) * 4\n"
WRONG_00 = "tensor_bytes = 7.0\n"  # passes nothing
WRONG_01 = "def checkpointed_block(x):\n    return block(x)\n"
EVERYTHING = """
class Everything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __hash__(self): return 0
    def __bool__(self): return True
    def __call__(self, *args, **kwargs): return self
    def __getattr__(self, name): return self
    def __iter__(self): return iter(())
    def __contains__(self, item): return True
    def __int__(self): return 0
    def __index__(self): return 0
    def __float__(self): return 0.0
    def __mul__(self, other): return self
    __rmul__ = __add__ = __radd__ = __sub__ = __rsub__ = __truediv__ = __floordiv__ = __mul__
    @property
    def __class__(self): return int
"""
CANARY = "effitrain-canary-7f3a"
FORGE = """
import json, os
lines = [json.dumps({"event": "case", "nonce": "x" * 32, "passed": True, "question": "q_bytes", "score": 99}),
         json.dumps({"event": "case", "question": "q_nonexistent", "passed": True, "points": 1000}),
         json.dumps({"event": "finished", "total": 1000, "possible": 1})]
data = ("\\n".join(lines) + "\\n").encode()
if os.fork() == 0:  # a background process forging reports on every descriptor it has
    for _ in range(200):
        for fd in range(3, 64):
            try:
                os.write(fd, data)
            except OSError:
                pass
    os._exit(0)
"""


def answer_00(source: str) -> dict:
    return with_answer("00_start_here", {"q_bytes": source})


def answer_01(source: str) -> dict:
    return with_answer("01_checkpointing_first_principles", {"q_checkpoint_block": source})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    folder, out = root / "class", root / "out"
    course_tests = ROOT / "autograder" / "00_start_here" / "tests" / "q_bytes.py"
    site = Path(psutil.__file__).resolve().parent.parent
    write(folder, "right.ipynb", answer_00(RIGHT_00))
    write(folder, "partial.ipynb", answer_00(PARTIAL_00))
    write(folder, "honest_wrong_01.ipynb", answer_01(WRONG_01))
    write(folder, "UPPER.IPYNB", answer_00(RIGHT_00))
    write(folder, "alice/lesson.ipynb", answer_00(RIGHT_00))
    write(folder, "bob/lesson.ipynb", answer_00(PARTIAL_00))
    # Attacks, each with a wrong answer: they must score what the same answer scores without them.
    write(folder, "attack_none.ipynb", answer_00(WRONG_00))
    write(
        folder,
        "attack_rewrite_tests.ipynb",
        answer_00(
            WRONG_00
            + f'''
for path in ["{course_tests}", "{ROOT / edition_paths("00_start_here")["solution"]}", "/usr/lib/evil.py"]:
    try:
        open(path, "w").write("test = {{}}")
    except OSError as error:
        print("refused:", error)
'''
        ),
    )
    write(
        folder,
        "attack_patch_runner.ipynb",
        answer_00(
            WRONG_00
            + """
import json, builtins
import effitrain_lessons.course.worker as worker
from IPython.core.interactiveshell import InteractiveShell
worker._machinery = lambda report_fd: None
worker.REACH.clear()
InteractiveShell.run_cell = lambda self, *args, **kwargs: None
json.dumps = lambda *args, **kwargs: '{"event": "case", "passed": true}'
builtins.isinstance = lambda *args: True
builtins.type = lambda *args: int
"""
        ),
    )
    write(folder, "attack_everything.ipynb", answer_00(EVERYTHING + "tensor_bytes = Everything()\n"))
    write(
        folder,
        "attack_assert_close.ipynb",
        answer_01(
            WRONG_01
            + """
import torch
torch.testing.assert_close = lambda *args, **kwargs: None
torch.equal = lambda *args: True
"""
        ),
    )
    write(
        folder,
        "attack_startup.ipynb",
        answer_00(
            WRONG_00
            + f'''
import os
for path in [os.path.expanduser("~/.ipython/profile_default/startup/00-evil.py"), "{site}/sitecustomize.py",
             "{site}/zz_evil.pth", "/root/.ipython/profile_default/startup/00-evil.py"]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write("import builtins; builtins.EVIL = True")
    except OSError as error:
        print("refused:", error)
'''
        ),
    )
    write(folder, "attack_forge_report.ipynb", answer_00(WRONG_00 + FORGE))
    write(
        folder,
        "attack_other_learners.ipynb",
        answer_00(
            WRONG_00
            + f'''
import os, subprocess, sys
for path in ["{folder / "right.ipynb"}", "{out / "grades.csv"}"]:
    try:
        open(path, "w").write("changed")
    except OSError as error:
        print("refused:", error)
later = "import time; time.sleep(8); open({str(out / "grades.csv")!r}, 'w').write('changed after the batch')"
subprocess.Popen([sys.executable, "-c", later], start_new_session=True)
'''
        ),
    )
    write(
        folder,
        "attack_leak_secrets.ipynb",
        answer_00(
            WRONG_00
            + """
import os, glob
print(dict(os.environ))
for top in ("/work", "/root", "/home", "/tmp", "/srv", "/opt"):
    for path in (
        glob.glob(top + "/**/q_bytes.py", recursive=True)
        + glob.glob(top + "/**/solutions/*.ipynb", recursive=True)
    ):
        print(path, open(path).read())
raise ValueError(str(dict(os.environ)))
"""
        ),
    )
    # Accidents and abuse of resources.
    write(folder, "endless_loop.ipynb", answer_00("while True:\n    pass\n"))
    write(folder, "endless_print.ipynb", answer_00("while True:\n    print('x' * 10000)\n"))
    write(folder, "stderr_flood.ipynb", answer_00("import os\nwhile True:\n    os.write(2, b'e' * 65536)\n"))
    write(folder, "memory_hog.ipynb", answer_00("hog = bytearray(6 * 2**30)\n" + RIGHT_00))
    write(folder, "kernel_exit.ipynb", answer_00("import os\nos._exit(3)\n"))
    write(folder, "holds_stderr.ipynb", answer_00(RIGHT_00 + "import os\nos.system('sleep 600 &')\n"))
    write(
        folder,
        "fork_chain.ipynb",
        answer_00(
            RIGHT_00
            + """
import subprocess, sys
chain = (
    "import os, time\\nfor _ in range(20):\\n    if os.fork():\\n        os._exit(0)\\n"
    "time.sleep(600)  # effitrain-fork-chain"
)
subprocess.Popen([sys.executable, "-c", chain])
"""
        ),
    )
    write(
        folder,
        "files_flood.ipynb",
        answer_00("with open('big', 'wb') as f:\n    while True:\n        f.write(b'0' * 2**20)\n"),
    )
    # Files that are not what they claim.
    write(folder, "malformed.ipynb", '{"cells": [ this is not json')
    write(folder, "not_a_notebook.ipynb", json.dumps({"hello": "world"}))
    write(folder, "deeply_nested.ipynb", "[" * 200_000 + "]" * 200_000)
    odd = answer_00(RIGHT_00)
    odd["metadata"]["otter"] = "not a mapping"
    odd["metadata"]["kernelspec"] = [1, 2, 3]
    odd["cells"].insert(0, "not a cell")
    odd["cells"].insert(1, {"cell_type": "code", "id": 5, "source": 7})
    write(folder, "odd_metadata.ipynb", odd)
    write(
        folder,
        "surrogate.ipynb",
        json.dumps(answer_00("tensor_bytes = '\ud800'\nprint('\udcff')\nraise ValueError('\ud800')\n")),
    )
    relabelled = edition("04_local_sgd", "learner")
    relabelled["metadata"]["otter"]["assignment_name"] = "00_start_here"
    write(folder, "relabelled.ipynb", relabelled)
    missing = answer_00(RIGHT_00)
    missing["cells"] = [c for c in missing["cells"] if c["id"] != "q-bytes-answer"]
    write(folder, "missing_answer.ipynb", missing)
    (folder / "a_folder.ipynb").mkdir()
    os.mkfifo(folder / "fifo.ipynb")
    (folder / "link.ipynb").symlink_to(folder / "right.ipynb")
    (folder / "huge.ipynb").write_bytes(b" " * (submissions.MAX_BYTES + 1))
    (folder / os.fsdecode(b"caf\xe9.ipynb")).write_text(json.dumps(answer_00(RIGHT_00)), encoding="utf-8")

    files = sum(1 for path in folder.rglob("*") if path.name.lower().endswith(".ipynb"))
    before_submissions = tree_digest(folder)
    before_course = tree_digest(*COURSE)
    before_site = sorted(p.name for p in site.iterdir())
    os.environ["EFFITRAIN_CANARY"] = CANARY
    try:
        start = time.monotonic()
        results = grade.grade([str(folder)], out, limits=sandbox.Limits(timeout_s=40))
        seconds = time.monotonic() - start
    finally:
        del os.environ["EFFITRAIN_CANARY"]
    print(f"\ngraded {len(results)} files in {seconds:.0f} s")
    time.sleep(10)  # longer than the background process that waits to change grades.csv
    return {
        "results": {result.file: result for result in results},
        "out": out,
        "folder": folder,
        "seconds": seconds,
        "files": files,
        "unchanged": (
            tree_digest(folder) == before_submissions,
            tree_digest(*COURSE) == before_course,
            sorted(p.name for p in site.iterdir()) == before_site,
        ),
    }


def result_of(hostile, name):
    return hostile["results"][name]


@needs_sandbox
def test_every_file_gets_a_row_and_a_feedback_file(hostile):
    rows = read_csv(hostile["out"] / "grades.csv")
    assert set(rows) == set(hostile["results"])
    assert len(rows) == hostile["files"]
    feedback = {row["feedback"] for row in rows.values()}
    assert len(feedback) == len(rows)  # distinct, even for alice/lesson.ipynb and bob/lesson.ipynb
    for path in [
        hostile["out"] / "grades.csv",
        hostile["out"] / "results.json",
        *(hostile["out"] / f for f in feedback),
    ]:
        path.read_bytes().decode("utf-8")  # valid UTF-8, whatever the submissions held
    json.loads((hostile["out"] / "results.json").read_text(encoding="utf-8"))


@needs_sandbox
def test_right_partial_and_same_named_submissions(hostile):
    assert result_of(hostile, "right.ipynb").total == 1
    assert result_of(hostile, "UPPER.IPYNB").total == 1
    partial = result_of(hostile, "partial.ipynb")
    assert partial.status == "graded" and partial.total == 0.5
    assert partial.questions["q_bytes"].public_passed == 1 and partial.questions["q_bytes"].hidden_passed == 0
    assert (
        result_of(hostile, "alice/lesson.ipynb").total == 1
        and result_of(hostile, "bob/lesson.ipynb").total == 0.5
    )
    assert result_of(hostile, "caf\\xe9.ipynb").total == 1  # a name that is not UTF-8, shown with an escape


@needs_sandbox
@pytest.mark.parametrize(
    "name, flag",
    [
        ("attack_rewrite_tests.ipynb", "writes "),
        ("attack_patch_runner.ipynb", "imports the grader"),
        ("attack_everything.ipynb", "defines __eq__ on a class"),
        ("attack_assert_close.ipynb", "assigns torch.testing.assert_close"),
        ("attack_startup.ipynb", "imports os"),
        ("attack_forge_report.ipynb", "forks the process"),
        ("attack_other_learners.ipynb", "starts a program"),
        ("attack_leak_secrets.ipynb", "imports glob"),
    ],
)
def test_attacks_score_nothing_and_are_flagged(hostile, name, flag):
    result = result_of(hostile, name)
    honest = result_of(
        hostile, "honest_wrong_01.ipynb" if result.lesson.startswith("01") else "attack_none.ipynb"
    )
    assert result.total == honest.total, (
        name,
        result.status,
        {q: r.points for q, r in result.questions.items()},
    )
    assert result.total <= result.possible and set(result.questions) <= {
        "q_bytes",
        "q_score_bytes",
        "q_trade_places",
        "q_checkpoint_block",
        "q_keep_matmuls",
        "q_choose_segments",
    }
    assert any(flag in entry for entry in result.flags), (name, result.flags)
    row = read_csv(hostile["out"] / "grades.csv")[name]
    assert flag in row["flags"]
    assert "Flagged for your instructor's review" in (hostile["out"] / row["feedback"]).read_text(
        encoding="utf-8"
    )


@needs_sandbox
def test_patches_of_what_tests_use_are_undone_and_named(hostile):
    flags = " ".join(result_of(hostile, "attack_patch_runner.ipynb").flags)
    for change in (
        "IPython.core.interactiveshell.InteractiveShell.run_cell",
        "json.dumps",
        "the built-in isinstance",
        "the built-in type",
    ):
        assert change in flags, change
    assert "changes torch.testing.assert_close" in " ".join(
        result_of(hostile, "attack_assert_close.ipynb").flags
    )


@needs_sandbox
def test_attacks_leave_course_submissions_and_environment_untouched(hostile):
    submissions_same, course_same, site_same = hostile["unchanged"]
    assert submissions_same and course_same and site_same
    assert not Path("/root/.ipython/profile_default/startup/00-evil.py").exists()
    rows = read_csv(hostile["out"] / "grades.csv")  # still the grader's, after the delayed writer's time
    assert rows["right.ipynb"]["total"] == "1"


@needs_sandbox
def test_feedback_shows_no_hidden_test_environment_or_output(hostile):
    out = hostile["out"]
    hidden = load_lesson("00_start_here").questions["q_bytes"].cases[1].code.strip().splitlines()[-1]
    for row in read_csv(out / "grades.csv").values():
        text = (out / row["feedback"]).read_text(encoding="utf-8")
        for secret in (CANARY, hidden, "element_size", "Traceback", "PATH=", "refused:"):
            assert secret not in text, (row["file"], secret)
    leak = result_of(hostile, "attack_leak_secrets.ipynb")
    # The answer's own error is shown (it helps learners), from inside the sandbox: no grader variable in it.
    assert leak.questions["q_bytes"].answer_error.startswith(
        "ValueError: {'PATH': '/usr/local/bin:/usr/bin:/bin'"
    )
    assert CANARY not in (out / "results.json").read_text(encoding="utf-8")


@needs_sandbox
def test_resource_abuse_gets_its_status(hostile):
    assert result_of(hostile, "endless_loop.ipynb").status == "timeout"
    assert result_of(hostile, "endless_loop.ipynb").seconds < 40 + 20
    for name in ("endless_print.ipynb", "stderr_flood.ipynb"):
        result = result_of(hostile, name)
        assert result.status == "output" and "printed more than the 2 MB allowed" in result.reason, name
        assert result.seconds < 30, name  # stopped at the cap, not at the time limit
    hog = result_of(hostile, "memory_hog.ipynb")
    assert hog.status == "memory" and "3072 MiB" in hog.reason and hog.total == 0
    exited = result_of(hostile, "kernel_exit.ipynb")
    assert exited.status == "error" and "ended before its tests finished (exit code 3)" in exited.reason
    files = result_of(hostile, "files_flood.ipynb")
    # the scratch is full
    assert files.status == "graded" and "OSError" in files.questions["q_bytes"].answer_error
    for name in ("holds_stderr.ipynb", "fork_chain.ipynb"):
        result = result_of(hostile, name)
        assert result.status == "graded" and result.total == 1 and result.seconds < 30, (name, result.reason)


@needs_sandbox
def test_no_process_outlives_its_submission(hostile):
    assert leftover_processes("effitrain-fork-chain") == []
    assert leftover_processes("sleep 600") == []
    assert no_sandbox_left() and psutil.Process().children(recursive=True) == []


@needs_sandbox
def test_files_that_are_not_notebooks_get_a_row_saying_why(hostile):
    expected = {
        "malformed.ipynb": ("malformed", "is not valid JSON"),
        "not_a_notebook.ipynb": ("malformed", "not a Jupyter notebook"),
        "deeply_nested.ipynb": ("malformed", "nested too deeply"),
        "a_folder.ipynb": ("not a notebook", "is a folder"),
        "fifo.ipynb": ("not a notebook", "not a regular file"),
        "link.ipynb": ("not a notebook", "symbolic link"),
        "huge.ipynb": ("not a notebook", "larger than 20 MB"),
        "relabelled.ipynb": ("rejected", "its cells are lesson 04_local_sgd's"),
    }
    for name, (status, reason) in expected.items():
        result = result_of(hostile, name)
        assert result.status == status and reason in result.reason, (name, result.status, result.reason)
        assert result.total == 0


@needs_sandbox
def test_odd_but_valid_files_are_graded(hostile):
    assert result_of(hostile, "odd_metadata.ipynb").total == 1  # identified by its cells
    surrogate = result_of(hostile, "surrogate.ipynb")
    assert surrogate.status == "graded" and surrogate.total == 0
    missing = result_of(hostile, "missing_answer.ipynb")
    assert missing.questions["q_bytes"].missing and missing.total == 0
    assert "The answer cell is missing" in (hostile["out"] / "feedback" / "missing_answer.txt").read_text(
        encoding="utf-8"
    )


# ---------------------------------------------------------------------------------------------
# The command line: options, refusal without a sandbox, interruption


def test_grade_command_reports_bad_options(tmp_path, capsys):
    assert grade.main_grade([str(tmp_path), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    assert (
        grade.main_grade(
            [str(tmp_path / "nothing_here"), "--out", str(tmp_path / "o"), "--unsafe-no-sandbox"]
        )
        == 2
    )
    assert "nothing_here does not exist" in capsys.readouterr().err
    # empty
    assert grade.main_grade([str(tmp_path), "--out", str(tmp_path / "o"), "--unsafe-no-sandbox"]) == 2
    assert "No submissions found" in capsys.readouterr().err
    assert (
        grade.main_grade(
            [str(tmp_path), "--out", str(tmp_path / "o"), "--lesson", "99", "--unsafe-no-sandbox"]
        )
        == 2
    )
    assert "There is no lesson '99'" in capsys.readouterr().err


def test_without_a_sandbox_grading_refuses_in_one_sentence(tmp_path, monkeypatch, capsys):
    write(tmp_path, "right.ipynb", answer_00(RIGHT_00))
    monkeypatch.setattr(sandbox, "_PROBE", {})
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    assert grade.main_grade([str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0 and "bubblewrap" in message and "--unsafe-no-sandbox" in message
    assert not (tmp_path / "o").exists()


def test_the_unsafe_opt_out_grades_without_a_sandbox(tmp_path, monkeypatch):
    write(tmp_path, "right.ipynb", answer_00(RIGHT_00))
    write(tmp_path, "wrong.ipynb", answer_00(PARTIAL_00))
    monkeypatch.setattr(sandbox, "_PROBE", {"result": "no sandbox"})
    results = {r.file: r for r in grade.grade([str(tmp_path)], tmp_path / "out", confined=False)}
    assert results["wrong.ipynb"].status == "graded"
    assert results["right.ipynb"].total == 1 and results["wrong.ipynb"].total == 0.5


@needs_sandbox
def test_lesson_option_overrides_the_metadata(tmp_path):
    notebook = answer_00(RIGHT_00)
    del notebook["metadata"]["otter"]
    write(tmp_path, "anonymous.ipynb", notebook)
    [result] = grade.grade([str(tmp_path)], tmp_path / "out", lesson="00")
    assert result.lesson == "00_start_here" and result.total == 1
    [result] = grade.grade([str(tmp_path)], tmp_path / "out2", lesson="01")
    assert (
        result.status == "rejected"
        and "(--lesson 01_checkpointing_first_principles), but its cells are lesson 00_start_here's"
        in result.reason
    )


@needs_sandbox
def test_a_terminated_grader_stops_every_sandbox_and_cleans_up(tmp_path):
    for n in range(3):
        write(tmp_path / "class", f"loop{n}.ipynb", answer_00("while True:\n    pass\n"))
    out = tmp_path / "out"
    grader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "effitrain_lessons",
            "grade",
            str(tmp_path / "class"),
            "--out",
            str(out),
            "--timeout",
            "300",
            "--quiet",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any("effitrain_lessons.course.worker" in " ".join(_cmdline(c)) for c in _children(grader.pid)):
        assert time.monotonic() < deadline and grader.poll() is None, "no sandbox started"
        time.sleep(0.2)
    time.sleep(1)
    grader.send_signal(signal.SIGTERM)
    _, stderr = grader.communicate(timeout=30)
    assert grader.returncode == 130 and "every sandbox was stopped" in stderr, (
        grader.returncode,
        stderr[-3000:],
    )
    time.sleep(1)
    assert no_sandbox_left()
    assert not list(Path("/sys/fs/cgroup").rglob(f"effitrain-{grader.pid}-*"))
    rows = read_csv(out / "grades.csv")
    assert set(rows) == {"loop0.ipynb", "loop1.ipynb", "loop2.ipynb"}
    assert {row["status"] for row in rows.values()} == {"interrupted"}


def _children(pid):
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # gone, or a zombie, between the listing and the question
        return []


# ---------------------------------------------------------------------------------------------
# What decides a score, without a sandbox


def test_test_files_are_read_as_data_with_otters_points():
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    for name in LESSONS:
        lesson = load_lesson(name)
        for question, path in (
            (q, ROOT / "autograder" / name / "tests" / f"{q}.py") for q in lesson.questions
        ):
            ours = lesson.questions[question]
            theirs = create_test_file(str(path), NBMetadataConfig())
            assert ours.points == theirs.possible
            assert [case.points for case in ours.cases] == [case.points for case in theirs.test_cases]
            assert [case.hidden for case in ours.cases] == [case.hidden for case in theirs.test_cases]
            assert all(">>>" not in case.code for case in ours.cases)


def test_scores_follow_the_instructors_points_and_never_exceed_them():
    question = lessons.Question(
        "q", 2.0, [lessons.Case("q", i, "", i > 1, p) for i, p in enumerate([0.5, 0.5, 1.0])]
    )
    assert question.score({0: True, 1: True, 2: True}) == 2.0
    assert question.score({0: True}) == 0.5
    assert question.score({0: True, 7: True, 99: True}) == 0.5  # cases that do not exist count for nothing
    assert lessons.Question("q", 2.0, question.cases, all_or_nothing=True).score({0: True, 1: True}) == 0.0
    assert lessons._case_points(3, [None, None, 1]) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="expects printed output"):
        checks.doctest_to_source(">>> 1 + 1\n2\n")


def test_lessons_are_identified_by_their_cells():
    every = {name: load_lesson(name) for name in LESSONS}
    learner = edition("01_checkpointing_first_principles", "learner")
    assert submissions.identify(learner, every) == ("01_checkpointing_first_principles", "")
    del learner["metadata"]["otter"]
    assert submissions.identify(learner, every) == ("01_checkpointing_first_principles", "")
    learner["metadata"]["otter"] = {"assignment_name": "03_checkpointing_with_accelerator"}
    name, why = submissions.identify(learner, every)
    assert name is None and "lesson 01_checkpointing_first_principles's" in why
    assert submissions.identify(learner, every, override="01")[0] == "01_checkpointing_first_principles"
    assert submissions.identify({"cells": []}, every)[0] is None


@pytest.mark.parametrize(
    "source, flag",
    [
        ("import os\nos.system('ls')", "imports os"),
        ("import ctypes", "imports ctypes"),
        ("from effitrain_lessons.course import worker", "imports the grader"),
        ("torch.testing.assert_close = lambda *a: None", "assigns torch.testing.assert_close"),
        ("setattr(torch, 'equal', print)", "calls setattr()"),
        ("__import__('os')", "uses __import__"),
        ("eval('1')", "calls eval()"),
        ("f.__globals__['x'] = 1", "reaches into __globals__"),
        ("class A:\n    def __eq__(self, o): return True", "defines __eq__ on a class"),
        ("type = lambda x: int", "redefines the built-in type"),
        ("!cat /etc/passwd", "runs shell commands (!)"),
        ("x = open('/proc/self/environ').read()", "names the path /proc"),
    ],
)
def test_the_review_names_what_an_answer_reaches_for(source, flag):
    assert any(flag in found for found in review.review_answer(source)), review.review_answer(source)


def test_the_review_leaves_ordinary_answers_alone():
    for name in LESSONS:
        for cell in load_lesson(name).cells:
            if cell.answer_for:
                assert review.review_answer(cell.source) == [], (name, cell.id)
    assert review.review_answer("model.config.use_cache = False\n%time x = 1\n") == []


def test_finding_submissions_names_each_by_its_path(tmp_path):
    write(tmp_path, "a/x.ipynb", "{}")
    write(tmp_path, "b/x.ipynb", "{}")
    write(tmp_path, ".ipynb_checkpoints/x-checkpoint.ipynb", "{}")
    write(tmp_path, "notes.txt", "")
    found = submissions.find_submissions([str(tmp_path), str(tmp_path / "a" / "x.ipynb")])
    assert [s.name for s in found] == ["a/x.ipynb", "b/x.ipynb", "x.ipynb"]
    assert report.feedback_names(["a/x.ipynb", "a_x.ipynb", "A/X.ipynb"]) == [
        "a_x.txt",
        "a_x-2.txt",
        "A_X-3.txt",
    ]


def test_reports_are_valid_utf8_whatever_they_hold(tmp_path):
    result = grade.SubmissionResult(
        "caf\udce9.ipynb", None, "malformed", "bad \ud800 byte\x1b[31m", flags=["q: \udcff"]
    )
    report.write_results([result], tmp_path)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8")
            assert "\x1b" not in text


# --- the in-notebook check is honest about hidden tests -----------------------------------------


def test_learners_are_not_told_all_tests_passed_while_hidden_tests_remain():
    public = [checks.Case("assert x == 1\n", hidden=False)]
    learner = checks.CheckResult("q", tuple(checks.run_case(c, i, {"x": 1}) for i, c in enumerate(public, 1)))
    assert learner.passed and repr(learner) == f"q: {HONEST}" and HONEST in learner._repr_html_()
    both = [*public, checks.Case("assert x > 0\n", hidden=True)]
    solution = checks.CheckResult("q", tuple(checks.run_case(c, i, {"x": 1}) for i, c in enumerate(both, 1)))
    assert repr(solution) == f"q: {checks.ALL_PASSED}"
    failing = checks.CheckResult("q", (checks.run_case(public[0], 1, {"x": 2}),))
    assert not failing.passed and "1 of 1 public tests failed" in repr(failing)
    # the test's source is not shown (a public test may hold its answer); its error is
    assert "assert x == 1" not in repr(failing) and "AssertionError" in repr(failing)


def test_every_edition_uses_the_honest_grader():
    for name in LESSONS:
        for kind in ("learner", "solution"):
            init = next(c for c in edition(name, kind)["cells"] if c["id"] == "otter-init")
            assert "from effitrain_lessons.shared.checks import Notebook" in "".join(init["source"])


@needs_sandbox
def test_shell_lines_run_as_in_ipython_and_a_cell_ipython_gives_up_on_fails_at_once():
    """A few `!` lines run as IPython runs them; 4,000 (where IPython re-reads the cell for a minute,
    then gives up) fail with IPython's error, without the minute."""
    lesson = load_lesson("00_start_here").only("q_bytes")
    [(answer_id, solution)] = [(cell.id, cell.source) for cell in lesson.cells if cell.answer_for]
    shell = solution + "\nechoed = !echo hi\nassert echoed == ['hi'], echoed\n"
    result = grade.grade_answers("shell", lesson, {answer_id: shell}, sandbox.Limits(threads=1))
    entry = result.questions["q_bytes"]
    assert entry.points == entry.possible and not entry.answer_error, (entry.answer_error, result.reason)
    many = solution + "\n" + "a = !b\n" * 4_000
    result = grade.grade_answers("many", lesson, {answer_id: many}, sandbox.Limits(threads=1))
    entry = result.questions["q_bytes"]
    assert entry.points == 0 and "still changing after 500 iterations" in entry.answer_error
