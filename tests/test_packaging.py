"""What a plain `pip install` gets: the wheel built from this checkout, inspected file by file."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from effitrain_lessons.lessons import LESSONS

ROOT = Path(__file__).resolve().parent.parent
LEARNER_EDITIONS = sorted(
    p.relative_to(ROOT / "notebooks").as_posix()
    for p in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "notebooks" / "tr").glob("*.ipynb")]
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    folder = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(folder),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = folder.glob("effitrain_lessons-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_the_wheel_carries_the_learner_editions_as_they_are_committed(wheel):
    names = wheel.namelist()
    carried = sorted(
        n[len("effitrain_lessons/notebooks/") :]
        for n in names
        if n.startswith("effitrain_lessons/notebooks/") and n.endswith(".ipynb")
    )
    assert carried == LEARNER_EDITIONS and len(carried) >= 10
    # each lesson in English and Turkish
    assert sum(name.startswith("tr/") for name in carried) == len(carried) // 2
    for name in carried:
        assert wheel.read(f"effitrain_lessons/notebooks/{name}") == (ROOT / "notebooks" / name).read_bytes()


def test_the_wheel_carries_the_compiled_turkish_catalog(wheel):
    path = "effitrain_lessons/locale/tr/LC_MESSAGES/effitrain_lessons.mo"
    assert wheel.read(path) == (ROOT / path).read_bytes()


def test_the_wheel_carries_every_lesson_package_and_the_code_the_lessons_save_for_launchers(wheel):
    names = set(wheel.namelist())
    for each in LESSONS:
        folder = ROOT / each.package.replace(".", "/")
        for path in sorted(folder.glob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            assert relative in names and wheel.read(relative) == path.read_bytes(), relative
    saved = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "effitrain_lessons").glob("*/saved.py"))
    assert len(saved) == 3 and all(wheel.read(path) == (ROOT / path).read_bytes() for path in saved)


def test_the_wheel_holds_no_solution_and_no_hidden_test(wheel):
    names = wheel.namelist()
    assert not [n for n in names if "solutions" in n or n.startswith(("autograder", "lessons/", "tests/"))]
    for name in names:
        if name.endswith(".ipynb"):
            notebook = json.loads(wheel.read(name))
            assert not any(
                "otter_assign_solution_cell" in c.get("metadata", {}).get("tags", [])
                for c in notebook["cells"]
            )
            for test in notebook["metadata"]["otter"]["tests"].values():
                assert not any(case["hidden"] for suite in test["suites"] for case in suite["cases"]), name


def test_the_wheel_names_the_runtime_and_the_extras(wheel):
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    text = wheel.read(metadata).decode()
    runtime = [
        line for line in text.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert any("transformers>=5.23" in line for line in runtime)
    assert not any(
        name in line for line in runtime for name in ("jupyterlab", "otter-grader", "pytest", "nbval")
    )
    for extra in ("lab", "instructor", "test"):
        assert f"Provides-Extra: {extra}" in text
