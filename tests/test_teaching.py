"""The teaching standard every lesson meets, read from the committed editions: a main path of at most
1,500 prose words (the machinery folds into `<details>` blocks), a "Next" link as the last cell, lesson
00's map of the whole course, and a graded exercise that needs transfer to a setting the lesson did
not show."""

import json
import re
from pathlib import Path

import pytest

from effitrain_lessons.course import build as editions

LESSONS = editions.lesson_names()
NOTEBOOKS = editions.ROOT / "notebooks"
EDITIONS = {"learner": NOTEBOOKS, "solutions": NOTEBOOKS / "solutions", "tr": NOTEBOOKS / "tr"}
MAIN_PATH_WORDS = 1500
# The tag a transfer exercise's heading carries, in each language.
NEW_SETTING = {"en": "(new setting)", "tr": "(dersin göstermediği bir durum)"}


def markdown(path: Path) -> list[str]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown"]


def main_path_words(texts: list[str]) -> int:
    """Prose words outside collapsed blocks: `<details>` blocks, code (fenced or inline) and link
    targets do not count; a word is a run of Latin letters."""
    text = "\n".join(texts)
    for pattern in (r"(?is)<details>.*?</details>", r"(?s)```.*?```", r"`[^`]*`", r"\]\([^)]*\)"):
        text = re.sub(pattern, " ", text)
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*", text))


def test_main_path_words_skips_details_code_and_link_targets():
    texts = [
        "One two three.\n\n<details><summary>How we measured</summary>\n\nfour five six\n</details>",
        "```python\nseven = eight\n```\nA `nine` [link](https://ten.example/eleven)",
    ]
    assert main_path_words(texts) == 5  # One two three A link


@pytest.mark.parametrize("name", LESSONS)
def test_main_path_is_at_most_1500_prose_words(name):
    words = main_path_words(markdown(NOTEBOOKS / f"{name}.ipynb"))
    assert words <= MAIN_PATH_WORDS, (
        f"{name}: {words} prose words on the main path; fold how it is measured into <details> blocks"
    )


def following(name: str) -> str:
    """The lesson a lesson's "Next" link points to: the one after it, or back to the map after the last."""
    index = LESSONS.index(name)
    return LESSONS[index + 1] if index + 1 < len(LESSONS) else LESSONS[0]


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("name", LESSONS)
def test_every_lesson_ends_with_a_next_link(edition, name):
    notebook = json.loads((EDITIONS[edition] / f"{name}.ipynb").read_text(encoding="utf-8"))
    last = notebook["cells"][-1]
    target = f"{following(name)}.ipynb"
    assert last["cell_type"] == "markdown", f"{edition}/{name}: the last cell is not the Next link"
    text = "".join(last["source"])
    assert f"]({target})" in text, f"{edition}/{name}: the last cell does not link {target}"
    assert (EDITIONS[edition] / target).exists()


@pytest.mark.parametrize("edition", ["learner", "tr"])
def test_lesson_00_maps_every_lesson_with_its_reading_time(edition):
    texts = markdown(EDITIONS[edition] / f"{LESSONS[0]}.ipynb")
    links = [f"]({name}.ipynb)" for name in LESSONS[1:]]
    course_map = next((text for text in texts if all(link in text for link in links)), None)
    assert course_map, f"{edition}: lesson 00 has no cell that links every other lesson"
    times = re.findall(r"(\d+)\s*(?:min|dk)", course_map)
    assert len(times) >= len(LESSONS) - 1, f"{edition}: the map gives {len(times)} reading times"


def questions(path: Path) -> list[tuple[str, list[str]]]:
    """Each exercise heading's text and the test cells of the question after it."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    found, heading, tests, in_tests = [], None, [], False
    for cell in notebook["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith("### Exercise"):
            heading, tests = text.splitlines()[0], []
        elif cell["cell_type"] == "raw" and text.startswith("# BEGIN TESTS"):
            in_tests = True
        elif cell["cell_type"] == "raw" and text.startswith("# END TESTS"):
            in_tests = False
            if heading:
                found.append((heading, tests))
                heading = None
        elif in_tests and cell["cell_type"] == "code":
            tests.append(text)
    return found


@pytest.mark.parametrize("name", LESSONS)
def test_each_lesson_has_a_graded_transfer_exercise_with_a_hidden_case(name):
    master = editions.ROOT / editions.LESSONS_DIR / f"{name}.ipynb"
    transfer = [(heading, tests) for heading, tests in questions(master) if NEW_SETTING["en"] in heading]
    assert transfer, f'{name}: no "### Exercise ... {NEW_SETTING["en"]}" heading over a graded question'
    for heading, tests in transfer:
        hidden = [test.startswith("# HIDDEN") for test in tests]
        assert any(hidden), f"{name}: {heading} has no hidden test"
        assert not all(hidden), f"{name}: {heading} has no public check"


@pytest.mark.parametrize("name", LESSONS)
def test_the_turkish_edition_tags_the_same_transfer_exercises(name):
    english = [line for line in markdown(NOTEBOOKS / f"{name}.ipynb") if NEW_SETTING["en"] in line]
    turkish = [line for line in markdown(NOTEBOOKS / "tr" / f"{name}.ipynb") if NEW_SETTING["tr"] in line]
    assert len(turkish) == len(english), f"{name}: {len(english)} tagged in English, {len(turkish)} Turkish"
