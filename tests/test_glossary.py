"""One term per concept in the Turkish edition: no rejected variant from the glossary in a Turkish text.

`lessons/tr/SOZLUK.md`'s table "Bir kavram, bir terim" names, for each concept, the chosen term and the
rejected variants (in backticks, written as stems). A learner reads Turkish in the lessons' catalogs
(`lessons/tr/*.po`), in the package's messages (the runtime catalog) and in `README.tr.md`: none of them
may hold a rejected variant, as a whole word or as a stem followed by Turkish suffixes, in any case,
outside code spans. The chosen terms are masked first (`not defteri` holds the rejected `defter`).
The table "Bir kez izin verilenler" lets a form through at most that many times in one lesson's catalog
(`ödünleşim (trade-off)`, the glossed first use), never in the README or the package's messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "lessons" / "tr" / "SOZLUK.md"
RUNTIME_CATALOG = ROOT / "effitrain_lessons" / "locale" / "tr" / "LC_MESSAGES" / "effitrain_lessons.po"
README_TR = ROOT / "README.tr.md"
LESSON_CATALOGS = sorted((ROOT / "lessons" / "tr").glob("*.po"))

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
TICKED = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Term:
    concept: str
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]


def turkish_lower(text: str) -> str:
    """Lower case by Turkish rules (I -> ı, İ -> i), one character for one, so offsets stay."""
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text.replace("İ", "i").replace("I", "ı"))


def _table_rows(markdown: str, heading: str) -> list[list[str]]:
    section = markdown.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[1:]  # the header


def glossary_terms(markdown: str) -> list[Term]:
    terms = []
    for row in _table_rows(markdown, "## Bir kavram, bir terim"):
        concept, chosen, rejected = row[0], row[1], row[2]
        terms.append(Term(concept, tuple(TICKED.findall(chosen)), tuple(TICKED.findall(rejected))))
    return terms


def allowed_once(markdown: str) -> dict[str, int]:
    rows = _table_rows(markdown, "### Bir kez izin verilenler")
    return {TICKED.findall(row[0])[0]: int(row[1]) for row in rows}


def rejected_pattern(variant: str) -> re.Pattern[str]:
    """The variant at the start of a word, followed by any suffix letters."""
    return re.compile(r"(?<!\w)" + re.escape(turkish_lower(variant)) + r"\w*")


def offences(text: str, terms: list[Term], allowed: dict[str, int]) -> list[str]:
    """Every rejected variant in `text` (code spans, chosen terms and the allowed forms left out)."""
    found = []
    prose = re.sub(r"\s+", " ", turkish_lower(CODE.sub(" ", text)))  # a term broken over two lines too
    for form, most in allowed.items():
        words = turkish_lower(form).split()
        pattern = re.compile(r"(?<!\w)" + r"\w*\s+".join(re.escape(word) for word in words))
        count = len(pattern.findall(prose))
        if count > most:
            found.append(f"{form!r} {count} times (at most {most})")
        prose = pattern.sub(" ", prose)
    for term in terms:
        masked = prose
        for chosen in term.chosen:
            masked = re.sub(re.escape(turkish_lower(chosen)), " ", masked)
        for variant in term.rejected:
            for match in rejected_pattern(variant).finditer(masked):
                start, end = max(0, match.start() - 40), match.end() + 40
                context = " ".join(masked[start:end].split())
                found.append(f"{match.group(0)!r} (rejected for {term.concept}: {variant!r}): '…{context}…'")
    return found


def catalog_texts(path: Path):
    for entry in polib.pofile(str(path)):
        for text in [entry.msgstr, *entry.msgstr_plural.values()]:
            if text:
                yield text


MARKDOWN = GLOSSARY.read_text(encoding="utf-8")
TERMS = glossary_terms(MARKDOWN)
ALLOWED = allowed_once(MARKDOWN)


def test_the_glossary_table_names_every_concept_the_editor_counted():
    concepts = " ".join(term.concept for term in TERMS)
    for concept in ("function", "mode", "notebook", "backward pass", "et al.", "peak", "learning rate"):
        assert concept in concepts, f"SOZLUK.md's table has no row for {concept}"
    for term in TERMS:
        assert term.chosen, f"{term.concept}: no chosen term in backticks"
    assert sum(len(term.rejected) for term in TERMS) >= 20


@pytest.mark.parametrize("path", LESSON_CATALOGS, ids=lambda path: path.name)
def test_a_lesson_catalog_uses_the_chosen_terms(path):
    text = "\n\n".join(catalog_texts(path))
    found = [f"{path.relative_to(ROOT)}: {offence}" for offence in offences(text, TERMS, ALLOWED)]
    assert not found, "rejected variants (lessons/tr/SOZLUK.md):\n" + "\n".join(found)


def test_the_package_messages_use_the_chosen_terms():
    found = [
        f"{RUNTIME_CATALOG.relative_to(ROOT)}: {offence}"
        for text in catalog_texts(RUNTIME_CATALOG)
        for offence in offences(text, TERMS, {})
    ]
    assert not found, "rejected variants (lessons/tr/SOZLUK.md):\n" + "\n".join(found)


def test_the_turkish_readme_uses_the_chosen_terms():
    text = README_TR.read_text(encoding="utf-8")
    found = [f"README.tr.md: {offence}" for offence in offences(text, TERMS, {})]
    assert not found, "rejected variants (lessons/tr/SOZLUK.md):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "sample",
    [
        "`tensor_bytes` işlevini yazın.",
        "Bu defterden süreçler başlatın.",
        "Geri geçişte yeniden hesaplanır.",
        "ÖĞRENME HIZINI artırın.",
        "Katmanı kontrol noktasına alın.",
        "Douillard ve ark. (2023)",
        "Veri paralelden uzakta bitti.",
        "Tam değil: başka bir yanıt deneyin.",
        "İletişim ile genelleme arasındaki ödünleşim (trade-off) ve bir ödünleşim (trade-off) daha.",
    ],
)
def test_a_rejected_variant_is_found(sample):
    assert offences(sample, TERMS, ALLOWED), sample


@pytest.mark.parametrize(
    "sample",
    [
        '`fonksiyon` ile `mode="kip"` kod olarak kalır: `tepe`.',
        "Bu not defterinden süreçler başlatın; not defterini çalıştırın.",
        "Veri paralel eğitimden uzakta bitti; veri paralelliği.",
        "Geri yayılımda yeniden hesaplanır; en yüksek öğrenme oranı.",
        "İletişim ile genelleme arasındaki ödünleşim (trade-off).",
        "Ödünleşimi (trade-off) ölçecek.",
        "Satırlar, modül, tepsi değil.",
    ],
)
def test_a_chosen_term_passes(sample):
    assert not offences(sample, TERMS, ALLOWED), offences(sample, TERMS, ALLOWED)
