"""Every lesson, run whole: its English solution edition top to bottom, and its prose held to its run.

Each lesson's solution edition runs in a fresh kernel whose working folder is notebooks/solutions/,
as JupyterLab runs it: every cell must run without an error (the solutions' own checks pass).

Then the numbers the lesson's prose quotes are held to what that same run printed. A number that
looks measured (a percentage, a ratio such as 1.52x, a size in KiB/MiB/GiB/MB, a time in ms, a
decimal below 1 such as an accuracy of 0.840) must appear among the numbers the run printed, to the
precision the prose gives it (88 % matches a printed 88.0%). A number that is not a measurement of
this run (a paper's, a slide's, the benchmark machine's, or a setting the lesson chooses, such as a
budget) is listed in ELSEWHERE with where it comes from, and must still be in the prose: one that
left the prose is dropped from the list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from effitrain_lessons import lessons as manifest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "notebooks" / "solutions"

# lesson number -> numbers its prose quotes that are not this run's measurements, as the prose writes
# them, and where each comes from
ELSEWHERE: dict[str, dict[str, str]] = {
    "00": {"5 %": "a setting: exercise 3's tolerance"},
    "01": {
        "25 %": "a setting: exercise 1's threshold",
        "30 %": "Chen et al. 2016, abstract: 48G to 7G with only 30 percent additional running time",
    },
    "02": {
        "1.35x": "BERT-base shape (12 layers, 8 x 128 tokens), 2-core Xeon, torch 2.13, one thread, CPU "
        "time, in turn: 1.35x (1.32x-1.39x), 1.37x (1.35x-1.39x) and 1.32x (1.30x-1.36x) in three runs",
        "10 %": "a setting: the warm-up's share of the optimizer steps",
        "97 %": "the slide's 0.03 accuracy, as a share of labels it disagrees with",
        "1 %": "a setting: exercise 2's tolerance",
        "3 MiB": "a setting: exercise 1's budget",
        "0.03": "the slide's printed accuracy",
        "0.05": "the slide's printed F1",
        "0.66": "the majority share of the bundled validation set, as the run prints it (0.660)",
        "0.68": "the majority share of GLUE MRPC's validation set",
        "0.84": "fine-tuned bert-base-uncased on GLUE MRPC, as published results put it",
        "0.87": "fine-tuned bert-base-uncased on GLUE MRPC, as published results put it",
    },
    "03": {"1 %": "a setting: exercise 2's tolerance"},
    "04": {
        "25 MB": "DDP's default bucket size (bucket_cap_mb), PyTorch's documentation",
        "10 ms": "a setting: exercise 2's link D",
    },
    "05": {"25 MB": "DDP's default bucket size (bucket_cap_mb), PyTorch's documentation"},
    "06": {
        "70 %": "Korthikanti et al. 2022: selective recomputation on GPT-3 175B, activation memory",
        "2.7 %": "Korthikanti et al. 2022: selective recomputation on GPT-3 175B, FLOPs overhead",
        "1 GiB": "a setting: the memory the lesson stays within (Binder's guarantee)",
        "0.1": "a setting: BERT's dropout probability",
    },
    "07": {},
    "08": {"2 %": "a setting: exercise 1's tolerance"},
    "09": {"1 %": "a setting: exercise 1's tolerance"},
}

UNITS = {
    "%": r"\s?%",
    "x": r"x(?![\w])",
    "KiB": r"\s?KiB",
    "MiB": r"\s?MiB",
    "GiB": r"\s?GiB",
    "MB": r"\s?MB",
    "ms": r"\s?ms\b",
}
SIZE_AND_TIME = ("KiB", "MiB", "GiB", "MB", "ms")
NUMBER = r"(?<![\w.,])(\d+(?:\.\d+)?)"
FRACTION = re.compile(r"(?<![\w.,/])(0\.\d+)(?![\d.]*\w)")


def prose_of(master: dict) -> str:
    """The markdown of a master, without code spans, fenced code and link targets."""
    text = "\n".join("".join(cell["source"]) for cell in master["cells"] if cell["cell_type"] == "markdown")
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return text


def quoted_numbers(text: str) -> list[tuple[str, str, str]]:
    """(as written, value, unit) for each measured-looking number in `text`."""
    found = []
    for unit, pattern in UNITS.items():
        for match in re.finditer(NUMBER + pattern, text):
            found.append((match.group(0).strip(), match.group(1), unit))
    for match in FRACTION.finditer(text):
        found.append((match.group(1), match.group(1), ""))
    return found


def printed_numbers(text: str) -> dict[str, set[float]]:
    """Every number the run printed, by unit ("" for a bare number)."""
    text = text.replace(",", "")
    numbers: dict[str, set[float]] = {unit: set() for unit in [*UNITS, ""]}
    for unit, pattern in UNITS.items():
        for match in re.finditer(NUMBER + pattern, text):
            numbers[unit].add(float(match.group(1)))
    for match in re.finditer(r"(?<![\w])(\d+\.\d+)", text):
        numbers[""].add(float(match.group(1)))
    return numbers


def matches(value: str, unit: str, printed: dict[str, set[float]]) -> bool:
    """Whether the run printed `value` in `unit`, to the precision the prose gives it. A table may
    name the unit once, in its header ("MB sent"), so a size or a time may match a printed decimal."""
    decimals = len(value.split(".")[1]) if "." in value else 0
    wanted = float(value)
    candidates = printed[unit] | (printed[""] if unit in SIZE_AND_TIME and decimals else set())
    return any(round(number, decimals) == wanted for number in candidates)


def output_text(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output.get("text", ""))
            elif "data" in output:
                parts.append(output["data"].get("text/plain", ""))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def masters() -> dict[str, dict]:
    return {
        each.number: json.loads((ROOT / "lessons" / each.notebook).read_text(encoding="utf-8"))
        for each in manifest.LESSONS
    }


@pytest.mark.parametrize("lesson", [each.number for each in manifest.LESSONS])
def test_the_lesson_runs_whole_and_its_prose_quotes_what_it_printed(lesson, masters):
    each = manifest.lesson(lesson)
    notebook = nbformat.read(SOLUTIONS / each.notebook, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(SOLUTIONS)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, at the first error

    printed = printed_numbers(output_text(notebook))
    prose = prose_of(masters[lesson])
    elsewhere = ELSEWHERE[lesson]
    unmatched = [
        written
        for written, value, unit in quoted_numbers(prose)
        if written not in elsewhere and not matches(value, unit, printed)
    ]
    assert not unmatched, (
        f"lesson {lesson}'s prose quotes numbers its run did not print: {unmatched}. Print them in the "
        "cell the prose reads, correct the prose, or list a number that is not a measurement in "
        "ELSEWHERE with its source."
    )
    stale = [written for written in elsewhere if written not in prose]
    assert not stale, f"ELSEWHERE lists numbers lesson {lesson}'s prose no longer quotes: {stale}"


def test_the_prose_reader_finds_measured_looking_numbers_and_spares_the_rest():
    text = prose_of(
        {
            "cells": [
                {
                    "cell_type": "markdown",
                    "source": [
                        "Shrinks by 88 % to 2.21 MiB, 1.52x the time, 13 ms a step, accuracy 0.840. "
                        "Slides 3-4, 2 epochs, torch 2.13, `x = 0.5`, [a](https://x.org/0.1%)."
                    ],
                }
            ]
        }
    )
    assert [written for written, _, _ in quoted_numbers(text)] == [
        "88 %",
        "1.52x",
        "2.21 MiB",
        "13 ms",
        "0.840",
    ]
    printed = printed_numbers("saved 2.21 MiB (88.0% fewer), 1.524x, 13.2 ms, 0.8400")
    assert matches("88", "%", printed) and matches("1.52", "x", printed) and matches("0.840", "", printed)
    assert matches("2.2", "MiB", printed)  # to the precision the prose gives
    assert not matches("87", "%", printed) and not matches("2.20", "MiB", printed)
