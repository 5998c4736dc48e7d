"""What a Turkish learner reads in English is glossed in Turkish, where the lesson shows it (issue 46).

The Turkish editions keep the libraries' own English: `Trainer`'s progress table, the warnings of
transformers and PyTorch, JupyterLab's menu. Each is glossed in one Turkish sentence beside the cell that
shows it. The checks' words read as a Turkish teacher writes them ("görünen test", not "açık test", which
reads as "open"); a transfer exercise says it is a setting the lesson did not show; a lesson says "Hadi
pratik yapalım!" once; and README.tr.md carries README.md's threat model, with the same numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parent.parent
TR = ROOT / "lessons" / "tr"
CATALOGS = sorted(TR.glob("*.po"))
RUNTIME_CATALOG = ROOT / "effitrain_lessons" / "locale" / "tr" / "LC_MESSAGES" / "effitrain_lessons.po"
SITE = next((ROOT / ".venv" / "lib").glob("python*/site-packages"), None)

NEW_SETTING = {"en": "(new setting)", "tr": "(dersin göstermediği bir durum)"}


def catalog(stem: str) -> polib.POFile:
    return polib.pofile(str(next(TR.glob(f"{stem}_*.po"))))


def turkish(stem: str) -> str:
    return "\n".join(entry.msgstr for entry in catalog(stem) if entry.msgstr)


def master_cells(stem: str) -> list[dict]:
    path = next((ROOT / "lessons").glob(f"{stem}_*.ipynb"))
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def prose_before(stem: str, code: str) -> str:
    """The Turkish of the markdown cells between the previous code cell and the first code cell that
    holds `code`: what the learner reads just before that cell runs."""
    cells = master_cells(stem)
    index = next(
        i for i, cell in enumerate(cells) if cell["cell_type"] == "code" and code in "".join(cell["source"])
    )
    ids = []
    for cell in reversed(cells[:index]):
        if cell["cell_type"] == "code":
            break
        ids.append(cell["id"])
    return "\n".join(entry.msgstr for entry in catalog(stem) if entry.msgctxt in ids)


def prose_after(stem: str, code: str) -> str:
    """The Turkish of the markdown cells right after the first code cell that holds `code`."""
    cells = master_cells(stem)
    index = next(
        i for i, cell in enumerate(cells) if cell["cell_type"] == "code" and code in "".join(cell["source"])
    )
    ids = []
    for cell in cells[index + 1 :]:
        if cell["cell_type"] == "code":
            break
        ids.append(cell["id"])
    return "\n".join(entry.msgstr for entry in catalog(stem) if entry.msgctxt in ids)


# --- the libraries' English, glossed where it appears ---------------------------------------------


def test_lesson_02_glosses_the_trainers_own_progress_table_before_it_trains():
    text = " ".join(prose_before("02", "train_output = trainer.train()").split())
    glosses = {
        "Epoch": "dönem",
        "Training Loss": "eğitim kaybı",
        "Validation Loss": "doğrulama kaybı",
        "Accuracy": "doğruluk",
    }
    for english, word in glosses.items():
        assert re.search(rf"\*{english}\*\s+{word}", text), (
            f"lesson 02 does not gloss {english!r} as {word!r}"
        )
    assert "noktayla" in text, "lesson 02 does not say the table's decimals are written with a point"


# (lesson, the code of the cell that shows it, where the gloss sits, the library's words)
WARNINGS = [
    ("01", "use_reentrant=reentrant", "after", "None of the inputs have requires_grad=True"),
    ("01", 'for mode in ("train", "eval")', "before", "is incompatible with gradient checkpointing"),
    ("02", "cached(**train_set[:8])", "before", "is incompatible with gradient checkpointing"),
    ("03", "reentrant_under_ddp(", "after", "Expected to mark a variable ready only once"),
]


@pytest.mark.parametrize(
    ("stem", "code", "where", "words"), WARNINGS, ids=[f"{w[0]}-{w[3][:20]}" for w in WARNINGS]
)
def test_a_library_warning_is_quoted_and_glossed_in_turkish_beside_its_cell(stem, code, where, words):
    text = (prose_after if where == "after" else prose_before)(stem, code)
    text = " ".join(text.split())
    assert words in text, f"lesson {stem} does not quote {words!r} next to the cell that shows it"
    after = text.split(words, 1)[1]
    assert re.search(r"\b(yani|demektir|söyler)\b|:", after[:200], re.IGNORECASE), (
        f"lesson {stem}: {words!r} is not glossed"
    )


@pytest.mark.skipif(SITE is None, reason="no .venv")
def test_the_quoted_warnings_are_the_libraries_own_words():
    sources = {
        "None of the inputs have requires_grad=True": SITE / "torch" / "utils" / "checkpoint.py",
        "`use_cache=True` is incompatible with gradient checkpointing": SITE
        / "transformers"
        / "utils"
        / "generic.py",
    }
    for words, path in sources.items():
        assert words in path.read_text(encoding="utf-8"), f"{path.name} no longer says {words!r}"


def test_lesson_00_glosses_jupyterlabs_english_menu():
    text = " ".join(turkish("00").split())
    assert "**Run > Run All Cells** (Çalıştır > Tüm Hücreleri Çalıştır)" in text


@pytest.mark.parametrize("path", CATALOGS, ids=lambda path: path.stem[:2])
def test_a_lesson_says_lets_practice_once(path):
    text = "\n".join(entry.msgstr for entry in polib.pofile(str(path)))
    assert text.count("Hadi pratik yapalım") <= 1, f"{path.name}: 'Hadi pratik yapalım!' more than once"


def test_lesson_02_says_the_unscaled_loss_would_be_four_times_larger():
    text = " ".join(turkish("02").split())
    assert "4 kat büyük olurdu" in text and "büyük çıkardı" not in text


# --- the checks' words ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CATALOGS, ids=lambda path: path.stem[:2])
def test_a_transfer_exercise_says_the_lesson_did_not_show_its_setting(path):
    entries = [entry for entry in polib.pofile(str(path)) if NEW_SETTING["en"] in entry.msgid]
    assert entries, f"{path.name}: no exercise marked {NEW_SETTING['en']}"
    for entry in entries:
        assert NEW_SETTING["tr"] in " ".join(entry.msgstr.split()), f"{path.name}: {entry.msgstr!r}"
        assert "yeni durum" not in entry.msgstr


def test_the_checks_call_public_tests_visible_not_open():
    entries = [entry for entry in polib.pofile(str(RUNTIME_CATALOG)) if "public test" in entry.msgid]
    assert len(entries) >= 3
    for entry in entries:
        assert "görünen" in entry.msgstr.lower() and "açık test" not in entry.msgstr.lower(), entry.msgstr
    readme = (ROOT / "README.tr.md").read_text(encoding="utf-8")
    assert "açık test" not in readme.lower()


# --- README.tr.md's threat model --------------------------------------------------------------------


def section(text: str, heading: str) -> str:
    body = text.split(heading + "\n", 1)[1]
    return re.split(r"\n#{1,3} ", body, maxsplit=1)[0]


def turkish_number(english: str) -> str:
    """1,234.5 -> 1.234,5"""
    return english.replace(",", "\0").replace(".", ",").replace("\0", ".")


def test_the_turkish_readme_has_the_threat_model_with_the_same_numbers():
    english = section((ROOT / "README.md").read_text(encoding="utf-8"), "### Threat model")
    readme = (ROOT / "README.tr.md").read_text(encoding="utf-8")
    instructors = readme.split("\n## Eğitmenler için\n", 1)[1].split("\n## ", 1)[0]
    assert "\n### Tehdit modeli\n" in instructors, (
        "README.tr.md: no threat model among the instructors' sections"
    )
    ours = section(readme, "### Tehdit modeli")
    numbers = {
        n
        for n in re.findall(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])", english)
        if "," in n or "." in n or int(n) >= 10
    }
    assert numbers, "README.md's threat model has no numbers to compare"
    missing = sorted(
        n for n in numbers if not re.search(rf"(?<![\d.,]){re.escape(turkish_number(n))}(?![\d])", ours)
    )
    assert not missing, f"README.tr.md's threat model lacks, in Turkish form: {missing}"
    # the same parts: each italic lead of the English has a Turkish one
    assert len(re.findall(r"^\*[^*\n]+\*", ours, re.MULTILINE)) == len(
        re.findall(r"^\*[^*\n]+\*", english, re.MULTILINE)
    )
