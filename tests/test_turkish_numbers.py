"""The Turkish edition writes numbers the Turkish way: 3.000, 0,05, %15; the English edition as before.

At run time `effitrain_lessons.shared.i18n.format_number` (Babel, CLDR's `tr`) writes every number the package
shows a learner: `phrase`/`say` fill-ins, tables, byte sizes, figures' tick labels. In the lessons'
prose (the built Turkish notebooks and README.tr.md) the numbers are written so too. The English
strings below are what the package printed before Turkish numbers existed, so English stays as it was.
"""

import json
import re
from pathlib import Path

import matplotlib
import pytest

from effitrain_lessons.shared import i18n
from effitrain_lessons.shared.i18n import format_number
from effitrain_lessons.shared.tables import Table, format_bytes, format_flops
from effitrain_lessons.will_it_fit import plan

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def turkish(monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")


@pytest.mark.parametrize(
    ("value", "spec", "english", "turkish"),
    [
        (3000, ",", "3,000", "3.000"),
        (1234567, ",", "1,234,567", "1.234.567"),
        (2048, "", "2048", "2048"),  # a plain {n}: no grouping in either language
        (0.05, ".2f", "0.05", "0,05"),
        (0.05, "", "0.05", "0,05"),
        (0.15, ".0%", "15%", "%15"),
        (-0.153, ".1%", "-15.3%", "-%15,3"),
        (-1234.5, ",.1f", "-1,234.5", "-1.234,5"),
        (12.25, ".1f", "12.2", "12,2"),  # Python's rounding (half to even on the binary value), not Babel's
        (2.675, ".2f", "2.67", "2,67"),
        (0.0001, "g", "0.0001", "0,0001"),
        (3.5e-05, ".2g", "3.5e-05", "3,5e-05"),  # the exponent stays Python's
        (1e-05, "g", "1e-05", "1e-05"),
        (3, "+.1f", "+3.0", "+3,0"),
        (12.5, ">8.1f", "    12.5", "    12,5"),
        (255, "x", "ff", "ff"),  # not a decimal number: Python's in every language
        (float("nan"), ".2f", "nan", "nan"),
        (True, "", "True", "True"),
    ],
)
def test_a_number_in_each_language(value, spec, english, turkish):
    assert format_number(value, spec, "en") == english == format(value, spec)
    assert format_number(value, spec, "tr") == turkish


def test_phrase_say_nphrase_and_sentences_fill_in_turkish_numbers(turkish, capsys):
    template = "{n:,} parameters, {share:.0%} of them, loss {loss:.2f}"
    assert i18n.phrase(template, n=1234567, share=0.15, loss=0.05) == (
        "1.234.567 parameters, %15 of them, loss 0,05"  # the catalog lacks it: English words
    )
    i18n.say("{x:g}", x=0.0001)
    assert capsys.readouterr().out == "0,0001\n"
    assert i18n.nphrase("{n} step of {x:.1f}", "{n} steps of {x:.1f}", 3, x=0.25) == "3 steps of 0,2"
    sentence = i18n.Sentence("{size:,} bytes, {share:.0%}", size=3000, share=0.5)
    assert str(sentence) == "3,000 bytes, 50%"  # the record the instructor reads: English
    assert sentence.in_language("tr") == "3.000 bytes, %50"
    assert sentence.in_language("en") == "3,000 bytes, 50%"


def test_english_prints_what_it_printed_before():
    assert i18n.phrase("{n:,} parameters", n=12345) == "12,345 parameters"
    assert (format_bytes(1536), format_bytes(1000), format_bytes(4.5 * 2**30)) == (
        "1.50 KiB",
        "1,000 B",
        "4.50 GiB",
    )
    assert format_flops(12288) == "12.29 kFLOP"
    assert str(Table(["a", "b"], [[0.5, 3]])).splitlines()[2] == "0.5  3"
    estimate = str(plan.estimate("bert-base-uncased", batch=32, seq=512, attention="eager"))
    assert "parameters                417.65 MiB  4 B × 109,483,778" in estimate
    assert "not modelled (allowance)  2.61 GiB    10% × 21.15 GiB + 512.00 MiB" in estimate
    assert plan.verdict("bert-base-uncased", "T4", batch=32, seq=512, attention="eager").sentence() == (
        "T4: does not fit (23.76 GiB of 15.00 GiB). Any one of these changes alone would make it fit:"
        " checkpointing; fused (SDPA) attention; accumulation 2 (micro-batches of 16)."
    )


def test_checks_show_a_learners_number_the_learners_way(turkish):
    from effitrain_lessons.shared.checks import _show

    assert (_show(1234567), _show(0.05), _show("a")) == ("1.234.567", "0,05", "'a'")


def test_the_planners_printed_table_in_turkish(turkish):
    estimate = str(plan.estimate("bert-base-uncased", batch=32, seq=512, attention="eager"))
    assert "417,65 MiB  4 B × 109.483.778" in estimate
    assert "%10 × 21,15 GiB + 512,00 MiB" in estimate
    assert "23,76 GiB" in estimate and "23.76" not in estimate and "109,483" not in estimate
    assert (
        "23,76 GiB"
        in plan.verdict("bert-base-uncased", "T4", batch=32, seq=512, attention="eager").sentence()
    )
    assert format_bytes(1536) == "1,50 KiB" and format_bytes(1000) == "1.000 B"
    assert format_flops(12288) == "12,29 kFLOP"
    assert str(Table(["a", "b"], [[0.5, 3]])).splitlines()[2] == "0,5  3"


@pytest.fixture(scope="module")
def sweep():
    from effitrain_lessons.first_principles.checkpointing import deep_stack, stack_input, sweep_segments

    stack = deep_stack(n_blocks=12, width=32, seed=0)
    return sweep_segments(stack, stack_input(stack, batch=8, seed=0))


def tick_labels(fig) -> list[list[str]]:
    fig.canvas.draw()
    return [[t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes]


def steady(sweep):
    """The sweep with times that follow its FLOPs: the figure's ticks then do not depend on the machine."""
    from dataclasses import replace

    from effitrain_lessons.shared.timing import Times

    def times(row):
        seconds = (1e-3 * row.flops / sweep.baseline.flops,) * 3
        return Times(seconds, seconds, "cpu")

    return replace(sweep, rows=tuple(replace(row, times=times(row)) for row in sweep.rows))


def test_lesson_1s_segments_figure_and_table_in_each_language(sweep, monkeypatch):
    from effitrain_lessons.first_principles.figures import plot_segments_tradeoff

    sweep = steady(sweep)
    english = tick_labels(plot_segments_tradeoff(sweep))
    assert english[1] == ["0.95", "1.00", "1.05", "1.10", "1.15", "1.20", "1.25", "1.30", "1.35", "1.40"]
    assert "x1.000" in str(sweep) and "100%" in str(sweep)
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")
    turkish = tick_labels(plot_segments_tradeoff(sweep))
    assert turkish[1] == ["0,95", "1,00", "1,05", "1,10", "1,15", "1,20", "1,25", "1,30", "1,35", "1,40"]
    assert turkish[0] == english[0]  # whole numbers: the same in both
    table = str(sweep)
    assert "x1,000" in table and "%100" in table and "x1.000" not in table and "100%" not in table


# Turkish text a learner reads, outside code: a number followed by "%" ("15 %", "15%"), a thousands
# comma ("3,000": a Turkish reader reads three), a dot decimal ("0.05").
PERCENT_AFTER = re.compile(r"\d\s?%")
THOUSANDS_COMMA = re.compile(r"(?<![\d,.x×])[1-9]\d{0,2}(?:,\d{3})+(?![\d,])")  # x1,000 is a ratio: 1,000
# a ratio's x may touch it: x1.22, 0.9x
DOT_DECIMAL = re.compile(r"(?:(?<![\w./])|(?<=\bx))(?<![A-Za-z]-)\d+(?:\.\d+)+(?!(?!x\b)\w|\.\d)")
TURKISH_THOUSANDS = re.compile(r"[1-9]\d{0,2}(?:\.\d{3})+")  # 3.000, 1.234.567: not a dot decimal
CODE = re.compile(r"```.*?```|`[^`\n]*`|<code>.*?</code>|\$[^$\n]+\$", re.DOTALL)
LINK_TARGET = re.compile(r"\]\([^)]*\)|https?://\S+|arXiv:\S+|\barxiv\.org\S*")
# not quantities: section numbers ("### 2.1", "2.3. bölüm"), versions ("torch 2.13")
NOT_QUANTITIES = re.compile(
    r"^#+ [\d.]+|\b\d+\.\d+\.? bölüm"
    r"|\b(?:torch|PyTorch|Python|transformers|accelerate|datasets|Babel)\s[\d.]+\d",
    re.MULTILINE,
)


def wrong_numbers(text: str) -> list[str]:
    text = NOT_QUANTITIES.sub("", LINK_TARGET.sub("]", CODE.sub("", text)))
    found = []
    for pattern in (PERCENT_AFTER, THOUSANDS_COMMA, DOT_DECIMAL):
        found += [
            text[max(0, m.start() - 30) : m.end() + 10]
            for m in pattern.finditer(text)
            if not (pattern is DOT_DECIMAL and TURKISH_THOUSANDS.fullmatch(m[0]))
        ]
    return found


def prose_of(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "\n\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "markdown"
    )


@pytest.mark.parametrize(
    "notebook", sorted((ROOT / "notebooks" / "tr").glob("*.ipynb")), ids=lambda p: p.stem
)
def test_turkish_lesson_prose_writes_turkish_numbers(notebook):
    assert wrong_numbers(prose_of(notebook)) == []


def test_readme_tr_writes_turkish_numbers():
    assert wrong_numbers((ROOT / "README.tr.md").read_text()) == []


def test_the_prose_check_catches_english_numbers_and_spares_code():
    assert wrong_numbers("3,000 çift, 15 % daha az, 0.05 kayıp") != []
    assert len(wrong_numbers("3,000 çift, 15 % daha az, 0.05 kayıp")) == 3
    assert wrong_numbers("3.000 çift, %15 daha az, 0,05 kayıp, `lr=1e-3`, `0.05`, x1,000") == []
    assert len(wrong_numbers("x1.22 ve 0.9x ile 9x")) == 2
    assert wrong_numbers("2.3. bölüm, torch 2.13, x1,22 ve 0,9x") == []


@pytest.mark.notebooks
def test_lesson_1s_turkish_solution_edition_prints_turkish_numbers(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    edition = next((ROOT / "notebooks" / "tr" / "solutions").glob("01_*.ipynb"))
    notebook = nbformat.read(edition, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    printed = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            if (
                output.get("name") == "stderr"
                or text.startswith(("<Figure", "<IPython"))
                or "Slider(" in text
            ):
                continue  # warnings from libraries, and objects' reprs, are not the lesson's numbers
            printed.append(text)
    text = "\n".join(printed)
    assert "%" in text and "," in text  # it printed percentages and decimals
    assert wrong_numbers(text) == []


def test_lesson_5s_outer_lr_slider_writes_its_options_the_readers_way(shown, monkeypatch):
    from matplotlib.figure import Figure

    from effitrain_lessons.diloco.figures import diloco_explorer

    def lr_slider(box):
        return box.children[0].children[1]

    english = lr_slider(diloco_explorer(lambda h, lr: Figure(), Figure(), outer_lr=0.7))
    # the labels the English edition printed, str(0.1) ... str(1.0); the values stay numbers
    assert [label for label, _ in english.options] == ["0.1", "0.3", "0.5", "0.7", "1.0"]
    assert [value for _, value in english.options] == [0.1, 0.3, 0.5, 0.7, 1.0] and english.value == 0.7
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")
    turkish = lr_slider(diloco_explorer(lambda h, lr: Figure(), Figure(), outer_lr=0.7))
    assert [label for label, _ in turkish.options] == ["0,1", "0,3", "0,5", "0,7", "1,0"]
    assert turkish.value == 0.7 and turkish.label == "0,7"
