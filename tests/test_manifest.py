"""The manifest (`effitrain_lessons.lessons`) is the one list of lessons.

Every place that lists lessons reads it or is held against it here: the masters in lessons/, each
lesson's package, graded questions and figures, lesson 00's course map, the READMEs' lesson tables,
`pyproject.toml`'s packages, `effitrain info --lessons --json`. And a lesson added to it is picked up
by the layer rules, the browser and benchmark lists and the course map check, while a lesson left
out of it fails loudly (a fixture course of one more lesson shows both).
"""

import ast
import dataclasses
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from effitrain_lessons import lessons as manifest
from effitrain_lessons.course import lessons as editions
from effitrain_lessons.lessons import LESSONS, Lesson, lesson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))


def code_of(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def markdown_of(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_the_manifest_lists_exactly_the_masters_in_order():
    assert [each.file for each in LESSONS] == editions.lesson_names(ROOT), (
        "every master in lessons/ is a lesson of effitrain_lessons/lessons.py, and the other way round"
    )
    assert [each.number for each in LESSONS] == [f"{n:02d}" for n in range(len(LESSONS))]
    for each in LESSONS:
        assert each.file == f"{each.number}_{each.file.split('_', 1)[1]}"
        assert re.fullmatch(r"[a-z][a-z0-9_]*", each.slug), each.slug


@pytest.mark.parametrize("each", LESSONS, ids=lambda each: each.number)
def test_each_lesson_has_its_package_quiz_questions_and_figures(each):
    for folder in ("lessons", "notebooks", "notebooks/solutions", "notebooks/tr", "notebooks/tr/solutions"):
        assert (ROOT / folder / each.notebook).is_file(), f"{folder}/{each.notebook}"
    importlib.import_module(each.package)
    questions = importlib.import_module(f"{each.package}.quiz").QUESTIONS
    assert len(questions) >= 2, f"{each.package}.quiz asks {len(questions)} question(s)"

    graded = sorted(p.stem for p in (ROOT / "autograder" / each.file / "tests").glob("*.py"))
    assert sorted(each.questions) == graded, "the manifest's questions are the autograder's"
    master = code_of(ROOT / "lessons" / each.notebook)
    cells = json.loads((ROOT / "lessons" / each.notebook).read_text(encoding="utf-8"))["cells"]
    raw = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "raw")
    asked = re.findall(r"^# BEGIN QUESTION\s*\nname: (\w+)", raw, re.M)
    assert list(dict.fromkeys(asked)) == list(each.questions), "in the order the lesson asks them"

    if each.figures:
        figures = importlib.import_module(f"{each.package}.figures")
    for name in each.figures:
        assert callable(getattr(figures, name, None)), f"{each.package}.figures has no {name}"
        assert f"{name}(" in master, f"lesson {each.number}'s cells never call {name}"


@pytest.mark.parametrize(
    "edition, words", [("en", ("", "about {m} min")), ("tr", ("tr/", "yaklaşık {m} dk"))]
)
def test_lesson_00s_course_map_is_the_manifest(edition, words):
    folder, minutes = words
    text = markdown_of(ROOT / "notebooks" / folder / LESSONS[0].notebook)
    assert course_map(text, edition) == [
        (each.number, each.title_en if edition == "en" else each.title_tr, each.notebook, each.minutes)
        for each in LESSONS[1:]
    ]


def course_map(text: str, edition: str) -> list[tuple[str, str, str, int]]:
    """The course map's entries: (number, title, notebook, minutes)."""
    unit = r"about\s+(\d+)\s+min" if edition == "en" else r"yaklaşık\s+(\d+)\s+dk"
    pattern = rf"^- \[(\d\d) · ([^\]]+)\]\(([\w.]+)\),\s+{unit}"
    return [(n, title, link, int(m)) for n, title, link, m in re.findall(pattern, text, re.M)]


@pytest.mark.parametrize(
    "readme, folder, minutes",
    [("README.md", "notebooks/", "about {m} min"), ("README.tr.md", "notebooks/tr/", "yaklaşık {m} dk")],
)
def test_the_readmes_lesson_tables_are_the_manifest(readme, folder, minutes):
    rows = re.findall(
        r"^\| \[(\d\d) ([^\]]+)\]\(([^)]+)\)[^|]*\| ([^|]+) \|", (ROOT / readme).read_text(), re.M
    )
    title = "title_en" if readme == "README.md" else "title_tr"
    assert rows == [
        (each.number, getattr(each, title), f"{folder}{each.notebook}", minutes.format(m=each.minutes))
        for each in LESSONS
    ]


def test_pyproject_ships_every_lesson_package():
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    lesson_packages = [p for p in packages if p.count(".") == 1 and p.split(".")[1] not in manifest.__name__]
    assert sorted(each.package for each in LESSONS) == sorted(
        p
        for p in lesson_packages
        if p not in ("effitrain_lessons.course", "effitrain_lessons.shared")
        and p != "effitrain_lessons.notebooks"
    )


def test_effitrain_info_prints_the_manifest_as_json():
    done = subprocess.run(
        [sys.executable, "-m", "effitrain_lessons", "info", "--lessons", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    table = json.loads(done.stdout)
    assert [row["number"] for row in table] == [each.number for each in LESSONS]
    for row, each in zip(table, LESSONS):
        assert {row["slug"], row["package"], row["notebook"]} == {each.slug, each.package, each.notebook}
        assert row["package"] == f"effitrain_lessons.{each.slug}"


def test_a_lesson_is_found_by_number_file_or_slug_and_an_unknown_one_says_which_there_are():
    assert lesson("4") is lesson("04") is lesson("04_local_sgd") is lesson("local_sgd") is LESSONS[4]
    with pytest.raises(ValueError, match="the lessons are 00, 01"):
        lesson("99")


# ---------------------------------------------------------------------------------------------
# One list: a lesson added to the manifest is picked up everywhere; one left out fails loudly

EXTRA = Lesson(
    "08",
    "shapes",
    "08_shapes",
    "Shapes",
    "Şekiller",
    minutes=10,
    questions=("q_area",),
    figures=("plot_area",),
)


@pytest.fixture
def course_of_nine(tmp_path, monkeypatch):
    """A package tree with one lesson more than the course: its package, figures and quiz, and a
    manifest that lists it."""
    package = tmp_path / "effitrain_lessons"
    (package / "shared").mkdir(parents=True)
    (package / "shared" / "__init__.py").write_text("")
    (package / "shared" / "area.py").write_text("def area(r):\n    return 3.14159 * r * r\n")
    for each in LESSONS:
        (package / each.slug).mkdir()
        (package / each.slug / "__init__.py").write_text("")
    (package / "shapes").mkdir()
    (package / "shapes" / "__init__.py").write_text("")
    (package / "shapes" / "figures.py").write_text(
        "from effitrain_lessons.shared.area import area\n\n\ndef plot_area():\n    return area(1)\n"
    )
    (package / "shapes" / "quiz.py").write_text("QUESTIONS = ()\n")
    lessons = (*LESSONS, EXTRA)
    monkeypatch.setattr(manifest, "LESSONS", lessons)
    return package, lessons


def test_a_lesson_added_to_the_manifest_is_picked_up_by_the_layer_rules(course_of_nine):
    import test_layers

    package, lessons = course_of_nine
    assert test_layers.layer_of("effitrain_lessons.shapes.figures", lessons) == "08"
    assert test_layers.layer_of("effitrain_lessons.shapes.figures", LESSONS) is None  # the real manifest
    assert test_layers.unplaced(["effitrain_lessons.shapes.figures"], LESSONS) == ["shapes.figures"]
    assert test_layers.unplaced(["effitrain_lessons.shapes.figures"], lessons) == []
    assert "shapes" in test_layers.lesson_folders(package)
    assert sorted(test_layers.lesson_folders(package)) == sorted(each.slug for each in lessons)


def test_a_lesson_added_to_the_manifest_is_picked_up_by_the_browser_and_benchmark_lists(course_of_nine):
    import test_browser

    import lessons as bench_lessons

    _package, lessons = course_of_nine
    assert "08_shapes.ipynb" in test_browser.lesson_notebooks()
    assert "08_shapes" in [each.file for each in bench_lessons.lessons_to_run()]
    assert len(test_browser.lesson_notebooks()) == len(lessons)


def test_a_lesson_added_to_the_manifest_is_expected_on_the_course_map(course_of_nine):
    _package, lessons = course_of_nine
    text = markdown_of(ROOT / "notebooks" / LESSONS[0].notebook)
    expected = [(each.number, each.title_en, each.notebook, each.minutes) for each in lessons[1:]]
    assert course_map(text, "en") != expected  # the real map does not list lesson 08: the check fails
    assert course_map(text, "en") == expected[:-1]


def test_a_master_left_out_of_the_manifest_fails_loudly(tmp_path):
    (tmp_path / "lessons").mkdir()
    for each in LESSONS:
        (tmp_path / "lessons" / each.notebook).write_text("{}")
    (tmp_path / "lessons" / "08_shapes.ipynb").write_text("{}")
    listed = [each.file for each in LESSONS]
    assert editions.lesson_names(tmp_path) != listed
    assert editions.saved_path("08_shapes") is None
    master = {
        "cells": [{"cell_type": "code", "id": "area", "metadata": {}, "source": "# @save\nX = 1\n"}],
        "metadata": {},
    }
    (tmp_path / "lessons" / "08_shapes.ipynb").write_text(json.dumps(master))
    from effitrain_lessons.course import build

    with pytest.raises(ValueError, match="not in the course's manifest"):
        build.render_lesson(tmp_path / "lessons" / "08_shapes.ipynb", ("en",))


def test_the_manifest_is_plain_data():
    fields = {f.name for f in dataclasses.fields(Lesson)}
    assert {"number", "slug", "title_en", "title_tr", "questions", "figures", "budget_s"} <= fields
    tree = ast.parse(Path(manifest.__file__).read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(
        (n.module or "").startswith(("__future__", "dataclasses")) for n in imports if n.module
    ) and all(isinstance(n, ast.ImportFrom) for n in imports), (
        "the manifest imports nothing heavy: tests, benchmarks and the command line all read it"
    )
