"""The committed lesson editions: up to date with lessons/, clean, and their exercise checks work offline.

`effitrain build` (effitrain_lessons.course.build) makes, from each Otter Assign master in lessons/,
a learner edition (notebooks/), a solution edition (notebooks/solutions/) and the autograder
material (autograder/). nbval runs every edition top to bottom; these tests check the rest.
"""

import json
import math
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import effitrain_lessons
from effitrain_lessons import checks, colab
from effitrain_lessons.course import build as editions

ROOT = editions.ROOT
LESSONS = editions.lesson_names()
SAMPLE = "00_start_here"  # the orientation lesson: its exercise needs no earlier cell
EDITIONS = [(name, kind) for name in LESSONS for kind in ("learner", "solution")]
MACHINE_PATHS = ("/root/", "/tmp/", "/work/", "/home/", "C:\\\\")
SOLUTION_TAG, ANSWER_TAG = "otter_assign_solution_cell", "otter_answer_cell"


def RIGHT_BYTES(shape, dtype):  # lesson 00's exercise, solved
    return math.prod(shape) * dtype.itemsize


def FLOAT32_ONLY_BYTES(shape, dtype):  # right for the public case, wrong for the hidden dtypes
    return math.prod(shape) * 4


def read(name: str, kind: str) -> dict:
    return json.loads((ROOT / editions.edition_paths(name)[kind]).read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"])


def test_there_is_a_lesson_and_it_has_an_exercise():
    assert SAMPLE in LESSONS
    assert read(SAMPLE, "learner")["metadata"]["otter"]["tests"], "the sample lesson lost its exercise"


def test_committed_editions_are_up_to_date():
    differences = editions.build(check=True)
    assert differences == [], "run `make notebooks` and commit: " + ", ".join(map(str, differences))


def test_the_check_reports_a_modified_a_missing_and_an_extra_file(tmp_path):
    for folder in ("lessons", "notebooks", "autograder"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns(".OTTER_LOG", ".ipynb_checkpoints"))
    paths = editions.edition_paths(SAMPLE)
    learner = tmp_path / paths["learner"]
    learner.write_text(learner.read_text(encoding="utf-8").replace("def tensor_bytes(shape, dtype):", "def tensor_bytes(shape, dtype):  # edited"), encoding="utf-8")
    hidden_tests = sorted((tmp_path / paths["autograder"] / "tests").glob("*.py"))
    hidden_tests[0].unlink()
    (tmp_path / paths["autograder"] / "stray.txt").write_text("left over\n")

    found = {(d.path, d.reason) for d in editions.build(check=True, root=tmp_path, lessons=[SAMPLE])}

    assert found == {
        (paths["learner"], "stale"),
        (hidden_tests[0].relative_to(tmp_path).as_posix(), "missing"),
        (f"{paths['autograder']}/stray.txt", "extra"),
    }
    assert editions.build(check=True, root=tmp_path, lessons=[SAMPLE]), "check mode must not write"


def test_building_twice_gives_the_same_bytes():
    source_path = ROOT / "lessons" / f"{SAMPLE}.ipynb"
    assert editions.render_lesson(source_path) == editions.render_lesson(source_path)


@pytest.mark.parametrize("name, kind", EDITIONS)
def test_editions_are_clean(name, kind):
    text = (ROOT / editions.edition_paths(name)[kind]).read_text(encoding="utf-8")
    notebook = json.loads(text)
    for marker in MACHINE_PATHS:
        assert marker not in text, f"a machine path ({marker}) in the {kind} edition of {name}"
    assert set(notebook["metadata"]) <= {"kernelspec", "language_info", "otter", "accelerator"}
    assert notebook["metadata"]["language_info"] == {"name": "python"}  # no interpreter version
    ids = [cell["id"] for cell in notebook["cells"]]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids)
    for cell in notebook["cells"]:
        assert set(cell["metadata"]) <= set(editions.CELL_METADATA_KEPT)
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    # Ids come from the source where the cell does; the cells the build adds get fixed ones.
    assert ids[:2] == ["setup", "otter-init"]
    lesson_ids = {cell["id"] for cell in json.loads((ROOT / "lessons" / f"{name}.ipynb").read_text())["cells"]}
    for cell in notebook["cells"][2:]:
        derived = re.fullmatch(r"check-.+|(code|markdown|raw)-[0-9a-f]{10}(-\d+)?", cell["id"])
        assert cell["id"] in lesson_ids or derived, cell["id"]


@pytest.mark.parametrize("name, kind", EDITIONS)
def test_every_edition_starts_with_the_setup_cell(name, kind):
    first = read(name, kind)["cells"][0]
    assert first["cell_type"] == "code"
    assert source(first) == editions.setup_cell_source()
    assert 'if "google.colab" in sys.modules:' in source(first)
    # On Colab: this very version of the package (the one whose lessons hold the tests), runtime only.
    assert (
        'subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--report", str(report), '
        f'"effitrain-lessons=={effitrain_lessons.__version__}"], check=True)'
    ) in source(first)
    assert "[" not in colab.PIP_REQUIREMENT  # no extras: Colab gets the runtime alone
    assert not re.search(r"^\s*[%!]", source(first), flags=re.MULTILINE), "no IPython magics"
    second = read(name, kind)["cells"][1]
    assert source(second).endswith(f'from effitrain_lessons.checks import Notebook\ngrader = Notebook("{name}.ipynb")')


def test_the_setup_cell_says_in_one_sentence_what_to_do_without_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "effitrain_lessons", None)  # makes the import fail
    with pytest.raises(ImportError) as raised:
        exec(editions.setup_cell_source(), {})
    message = str(raised.value)
    assert "not installed" in message and "make lab" in message and "pip install" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def solution_lines(notebook: dict) -> list[str]:
    """The code the solution edition has and the learner edition must not (markers stripped)."""
    lines, inside = [], False
    for cell in notebook["cells"]:
        if SOLUTION_TAG not in cell["metadata"].get("tags", []):
            continue
        for line in source(cell).splitlines():
            if line.rstrip().endswith("# END SOLUTION"):
                inside = False
            elif inside or line.rstrip().endswith("# SOLUTION"):
                code = re.sub(r"\s*# ?SOLUTION$", "", line).strip()
                if code:
                    lines.append(code)
            elif "# BEGIN SOLUTION" in line:
                inside = True
    return lines


@pytest.mark.parametrize("name", LESSONS)
def test_learner_edition_has_no_solutions_and_no_hidden_tests(name):
    learner_text = (ROOT / editions.edition_paths(name)["learner"]).read_text(encoding="utf-8")
    learner, solution = read(name, "learner"), read(name, "solution")
    solutions = solution_lines(solution)
    hidden = [
        case["code"]
        for test in solution["metadata"]["otter"]["tests"].values()
        for suite in test["suites"]
        for case in suite["cases"]
        if case["hidden"]
    ]
    if name == SAMPLE:
        assert "return math.prod(shape) * dtype.itemsize" in solutions and hidden
    # Lines the lesson also shows outside its solutions (the slide's code, say) are not leaks.
    shown = "\n".join(
        source(cell) for cell in solution["cells"] if SOLUTION_TAG not in cell["metadata"].get("tags", [])
    )
    for line in solutions:
        if line in shown:
            continue
        assert json.dumps(line)[1:-1] not in learner_text, f"solution code in the learner edition: {line}"
    assert not any(SOLUTION_TAG in c["metadata"].get("tags", []) for c in learner["cells"])
    assert any(ANSWER_TAG in c["metadata"].get("tags", []) for c in learner["cells"]) == bool(solutions)
    for test in learner["metadata"]["otter"]["tests"].values():
        for suite in test["suites"]:
            assert not any(case["hidden"] for case in suite["cases"])
    for code in hidden:
        assert json.dumps(code)[1:-1] not in learner_text


# Runs the setup cell, otter's init cell, the answer cells and the check cells of two editions, each
# in a fresh kernel whose working folder holds a copy of the edition (as under nbval or JupyterLab),
# side by side, and prints what each `grader.check` displayed. Started in a namespace without a network where the
# machine allows it, so the checks are shown to need none.
EXECUTE = textwrap.dedent(
    """
    import asyncio, json, shutil, sys, tempfile
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    TAGS = {"otter_answer_cell", "otter_assign_solution_cell"}

    async def run(edition, folder):
        shutil.copy(edition, Path(folder) / edition.name)
        notebook = nbformat.read(edition, as_version=4)
        notebook.cells = [
            cell for cell in notebook.cells
            if cell.cell_type == "code"
            and (cell.id in ("setup", "otter-init") or TAGS & set(cell.metadata.get("tags", []))
                 or cell.source.startswith("grader.check("))
        ]
        client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": folder}})
        await client.async_execute()
        return {
            cell.source: "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
            for cell in notebook.cells if cell.source.startswith("grader.check(")
        }

    async def main(editions):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            results = await asyncio.gather(*(run(e, f) for e, f in zip(editions, (a, b))))
        return {str(e): r for e, r in zip(editions, results)}

    print(json.dumps(asyncio.run(main([Path(p) for p in sys.argv[1:3]]))))
    """
)


def without_network() -> list[str]:
    if shutil.which("unshare") and shutil.which("ip"):
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
            return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"']
    return []  # no namespace here: the checks read the notebook's metadata, never a URL


def test_exercise_checks_fail_unanswered_and_pass_with_the_solution_offline():
    paths = editions.edition_paths(SAMPLE)
    learner, solution = ROOT / paths["learner"], ROOT / paths["solution"]
    done = subprocess.run(
        [*without_network(), sys.executable, "-c", EXECUTE, str(learner), str(solution)],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])

    learner_checks, solution_checks = results[str(learner)], results[str(solution)]
    assert list(learner_checks) == list(solution_checks) == ['grader.check("q_bytes")']
    unanswered, answered = learner_checks['grader.check("q_bytes")'], solution_checks['grader.check("q_bytes")']
    assert unanswered.startswith("q_bytes: 1 of 1 public tests failed.") and "AssertionError" in unanswered
    assert answered == f"q_bytes: {checks.ALL_PASSED}"  # public and hidden tests


def test_autograder_material_holds_the_hidden_test(tmp_path):
    from otter.test_files import create_test_file
    from otter.nbmeta_config import NBMetadataConfig

    folder = ROOT / editions.edition_paths(SAMPLE)["autograder"]
    assert {"run_autograder", "run_otter.py", "setup.sh", "environment.yml", "otter_config.json"} <= {
        p.name for p in folder.iterdir()
    }
    assert editions.PIP_REQUIREMENT in (folder / "environment.yml").read_text()
    assert json.loads((folder / "otter_config.json").read_text())["assignment_name"] == SAMPLE

    test_file = folder / "tests" / "q_bytes.py"
    test = create_test_file(str(test_file), NBMetadataConfig())
    assert any(case.hidden for case in test.test_cases)
    test.run({"tensor_bytes": RIGHT_BYTES})
    assert test.passed_all
    test = create_test_file(str(test_file), NBMetadataConfig())
    test.run({"tensor_bytes": FLOAT32_ONLY_BYTES})
    assert test.passed_all_public and not test.passed_all  # only the hidden test catches it

    # Packed for `otter grade -a` / Gradescope: same folder, same bytes.
    first = editions.pack_autograder(SAMPLE, tmp_path / "a.zip")
    second = editions.pack_autograder(SAMPLE, tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        assert "tests/q_bytes.py" in archive.namelist()


def test_where_the_notebook_is_not_on_disk_the_checks_use_the_installed_lesson(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as on Colab: the kernel's folder holds no notebook
    grader = checks.Notebook(f"{SAMPLE}.ipynb")
    assert grader.path == checks.installed_lessons() / f"{SAMPLE}.ipynb"
    assert grader.path.read_bytes() == (ROOT / editions.edition_paths(SAMPLE)["learner"]).read_bytes()
    assert not any(case.hidden for case in grader.tests["q_bytes"])  # the learner edition's tests only
    assert grader.check("q_bytes", {"tensor_bytes": RIGHT_BYTES}).passed
    assert not grader.check("q_bytes", {"tensor_bytes": 8.0}).passed
    with pytest.raises(FileNotFoundError, match="effitrain lab"):
        checks.Notebook("99_no_such_lesson.ipynb")


def test_on_colab_the_setup_cell_says_what_pip_changed_and_what_it_kept(tmp_path):
    report = {"install": [{"metadata": {"name": "effitrain-lessons", "version": effitrain_lessons.__version__}},
                          {"metadata": {"name": "transformers", "version": "5.24.0"}}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    summary = colab.install_summary(tmp_path / "report.json").splitlines()
    assert summary[0] == f"Installed effitrain-lessons {effitrain_lessons.__version__}."
    assert summary[1] == "Added or upgraded for it: transformers 5.24.0."
    assert summary[2].startswith("Kept as Colab has them: torch ") and summary[-1].startswith("Using ")
    (tmp_path / "coloured.json").write_text("\x1b[1m{\x1b[0m")
    unreadable = colab.install_summary(tmp_path / "coloured.json").splitlines()
    assert unreadable[0] == f"effitrain-lessons {effitrain_lessons.__version__} is installed (pip left no report of what it changed)."


def _cell(kind, source, cell_id):
    return {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}


def test_saved_cells_become_the_lessons_module_in_order():
    master = {"cells": [
        _cell("code", "#@save\nimport math\n\ndef area(r):\n    return math.pi * r * r\n", "area"),
        _cell("code", "print(area(1))", "not-saved"),
        _cell("markdown", "#@save is only a mark in code cells", "prose"),
        _cell("code", "#@save\nUNIT = 'cm'", "unit"),
    ]}
    text = editions.saved_module("07_shapes", master).decode()
    assert text.startswith("# AUTOGENERATED by `effitrain build` from lessons/07_shapes.ipynb: do not edit.")
    assert text.index("# cell area") < text.index("# cell unit") and "print(area(1))" not in text
    namespace = {}
    exec(compile(text, "lesson_07.py", "exec"), namespace)
    assert round(namespace["area"](1), 5) == 3.14159 and namespace["UNIT"] == "cm"
    assert editions.saved_module("07_shapes", {"cells": master["cells"][1:3]}) is None
    assert editions.edition_paths("07_shapes")["saved"] == "effitrain_lessons/lesson_code/lesson_07.py"


@pytest.mark.parametrize("cells, message", [
    ([_cell("raw", "# BEGIN QUESTION\nname: q_x", "q"), _cell("code", "#@save\nx = 1", "answer")], "inside a question"),
    ([_cell("code", "#@save\n%timeit x = 1", "magic")], "not plain Python"),
])
def test_a_saved_cell_must_be_plain_python_outside_questions(cells, message):
    with pytest.raises(ValueError, match=message):
        editions.saved_module("07_shapes", {"cells": cells})


def test_a_wrong_answer_fails_the_public_check_with_what_was_measured():
    grader = checks.Notebook(str(ROOT / editions.edition_paths(SAMPLE)["learner"]))
    elements_only = repr(grader.check("q_bytes", {"tensor_bytes": lambda shape, dtype: math.prod(shape)}))
    assert "1 of 1 public tests failed" in elements_only
    assert "You predicted tensor_bytes((8, 32, 64), torch.float32) = 16,384; the measurement is 65,536." in elements_only
    assert "a float32 takes 4 bytes" in elements_only
    unanswered = repr(grader.check("q_bytes", {"tensor_bytes": lambda shape, dtype: None}))
    assert "should be a number, like 65,536; it is NoneType" in unanswered
