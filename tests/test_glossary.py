"""One term per concept in the Turkish edition: no rejected variant from the glossary in a Turkish text.

`lessons/tr/SOZLUK.md`'s table "Bir kavram, bir terim" names, for each concept, the chosen term and the
rejected variants (in backticks, written as stems). A learner reads Turkish in the lessons' catalogs
(`lessons/tr/*.po`), in the package's messages (the runtime catalog) and in `README.tr.md`: none of them
may hold a rejected variant, as a whole word or as a stem followed by Turkish suffixes, in any case,
outside code spans. The chosen terms are masked first (`not defteri` holds the rejected `defter`).
The table "Bir kez izin verilenler" lets a form through at most that many times in one lesson's catalog
(`ödünleşim (trade-off)`, the glossed first use), never in the README or the package's messages.

The glossary's number rules are held here too, in what a learner reads outside code: a byte unit's suffix
follows how it is read (MiB "mebibayt": MiB'tan, never MiB'den), a multiplier in prose is "1,28 kat" (never
"x1,28" or "1,28x"), Python's `1e-3` stays code, a lesson writes its four-digit numbers one way (1.024 or
1024), and no line of a lesson's markdown starts with "4. " unless the English starts a list there (Markdown
would draw a numbered list).
"""

from __future__ import annotations

import json
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
    for concept in (
        "function",
        "mode",
        "notebook",
        "backward pass",
        "et al.",
        "peak",
        "learning rate",
        "attention core",
        "saved-tensor hooks",
        "device",
        "rank",
        "baseline",
        "explorer",
        "plain step",
        "simulated link",
        "crossover",
        "token",
        "batch of N",
    ):
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
        "Korthikanti vd. yalnızca dikkat\nçekirdeğini yeniden hesaplar.",
        "Kaydedilen tensör kancalarıyla ölçer.",
        "Her cihaz bir kopya tutar.",
        "Her süreç kendi sırasını (rank) yazdırır.",
        "Taban çizgimiz bu kayıptır.",
        "Gezgin bir L4'te açılır.",
        "Sade adıma göre; FLOP / sade; sade bloğunkiyle aynı.",
        "Benzetilen bağlantıda ölçülen.",
        "Kesişim noktası K = 8'dir.",
        "64 tokenlik pencereler; sonraki tokenı.",
        "16'lık 2 mikro grup sığar; 32'lik gruplar.",
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
        "Dikkat özünü yeniden hesaplar; birleşik çekirdek; çekirdek (kernel) başlatma.",
        "Saklanan tensör kancalarıyla; aygıt belleği; rank 0; her sürecin rank değeri.",
        "Temel ayar; hiçbir şey öğrenmemiş bir model; çoğunluk tabanı; keşif aracı.",
        "Düz adıma göre; sadece düz blok; benzetilmiş bağlantı; başabaş noktası.",
        "64 token'lık pencereler; sonraki token'ı; tokenizer; 16 satırlık 2 mikro grup; 8 dizilik grup.",
        "4'lük gradyan biriktirme; grup boyutu 32.",
    ],
)
def test_a_chosen_term_passes(sample):
    assert not offences(sample, TERMS, ALLOWED), offences(sample, TERMS, ALLOWED)


# --- numbers and lines, as the glossary's "Sayılar" says ---------------------------------------------

LINK_TARGET = re.compile(r"\]\([^)]*\)|https?://\S+")
# a byte unit with a suffix: its vowels follow how the unit is read ("mebibayt": MiB'tan, MiB'a, MiB'ın);
# a lone B is also the α-β model's bytes and lesson 01's tensor B ("B'yi"), so only prefixed units count
UNIT_SUFFIX = re.compile(r"(?<![\w])[kKMGT]i?B'([a-zçğıöşü]+)")
FRONT_VOWELS = re.compile(r"[eiöü]")
# a multiplier in prose: "1,28 kat", never "x1,28" or "1,28x" (a product of sizes, "8 x 64", keeps its spaces)
MULTIPLIER = re.compile(r"(?<![\w.,])x\d|(?<![\w.,])\d+(?:,\d+)?x(?!\w)")
E_NOTATION = re.compile(r"(?<![\w.,])\d+(?:,\d+)?e-?\d+(?!\w)")
PLAIN_FOUR = re.compile(r"(?<![\w.,'])[1-9]\d{3}(?![\w]|[.,]\d)")
GROUPED_FOUR = re.compile(r"(?<![\w.,'])[1-9]\.\d{3}(?![\w]|[.,]\d)")
YEARS = range(1990, 2031)
# a paragraph line that Markdown reads as an item of a numbered list (also inside a quote)
LIST_LINE = re.compile(r"^(?:>\s?)*\s{0,3}\d+[.)](?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"```.*?```", re.DOTALL)


def prose(text: str) -> str:
    """What a learner reads as prose: no code spans or blocks, no link targets."""
    return LINK_TARGET.sub("]", CODE.sub(" ", text))


def unit_suffixes(text: str) -> list[str]:
    """Byte units whose suffix is read letter by letter (MiB'den, MiB'ye, MiB'nin)."""
    return [m.group(0) for m in UNIT_SUFFIX.finditer(prose(text)) if FRONT_VOWELS.search(m.group(1))]


def number_style(text: str) -> list[str]:
    """Multipliers written x1,28 or 1,28x and Python's 1e-3, outside code."""
    text = prose(text)
    return [m.group(0) for pattern in (MULTIPLIER, E_NOTATION) for m in pattern.finditer(text)]


def four_digit_styles(text: str) -> tuple[set[str], set[str]]:
    """The four-digit numbers written without grouping (not years) and with it (1.024)."""
    text = prose(text)
    plain = {m.group(0) for m in PLAIN_FOUR.finditer(text) if int(m.group(0)) not in YEARS}
    return plain, {m.group(0) for m in GROUPED_FOUR.finditer(text)}


def list_lines(english: str, turkish: str) -> list[str]:
    """Lines of `turkish` that Markdown starts a numbered list with, where `english` starts none."""
    if LIST_LINE.search(FENCE.sub("", english)):
        return []
    text = FENCE.sub("", turkish)
    return [text[m.start() :].split("\n", 1)[0] for m in LIST_LINE.finditer(text)]


def markdown_entries(path: Path):
    """The entries of a lesson's catalog that are markdown prose (not code comments, not inside a fence)."""
    master = json.loads((ROOT / "lessons" / f"{path.stem}.ipynb").read_text(encoding="utf-8"))
    cells = {
        cell.get("id"): FENCE.sub("", "".join(cell["source"]))
        for cell in master["cells"]
        if cell["cell_type"] == "markdown"
    }
    for entry in polib.pofile(str(path)):
        source = cells.get(entry.msgctxt)
        if entry.msgstr and source is not None and entry.msgid.splitlines()[0] in source:
            yield entry


@pytest.mark.parametrize("path", LESSON_CATALOGS, ids=lambda path: path.name)
def test_a_lesson_writes_units_multipliers_and_numbers_one_way(path):
    texts = list(catalog_texts(path))
    found = [f"unit suffix {form!r}" for text in texts for form in unit_suffixes(text)]
    found += [
        f"{form!r} (a multiplier is '1,28 kat'; 1e-3 is code)"
        for text in texts
        for form in number_style(text)
    ]
    plain, grouped = set(), set()
    for text in texts:
        p, g = four_digit_styles(text)
        plain |= p
        grouped |= g
    if plain and grouped:
        found.append(f"four-digit numbers both ways: {sorted(plain)} and {sorted(grouped)}")
    assert not found, f"{path.relative_to(ROOT)} (lessons/tr/SOZLUK.md, Sayılar):\n" + "\n".join(found)


def test_the_package_messages_read_units_as_words():
    found = [form for text in catalog_texts(RUNTIME_CATALOG) for form in unit_suffixes(text)]
    assert not found, f"{RUNTIME_CATALOG.relative_to(ROOT)}: unit suffixes read letter by letter: {found}"


@pytest.mark.parametrize("path", LESSON_CATALOGS, ids=lambda path: path.name)
def test_no_turkish_paragraph_line_starts_a_numbered_list_the_english_does_not(path):
    found = [
        f"{entry.msgctxt}: {line!r}"
        for entry in markdown_entries(path)
        for line in list_lines(entry.msgid, entry.msgstr)
    ]
    assert not found, (
        f"{path.relative_to(ROOT)}: lines Markdown draws as a numbered list (begin with a word instead):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Bu, saklanan 20,83 MiB'den fazladır; 3,29 MiB'ye indirir; 2,39 MiB'nin yanında.", 3),
        ("Bu, saklanan 20,83 MiB'tan fazladır; 3,29 MiB'a indirir; 1 GiB'ın altında; 0,3 MB'ı; B'yi.", 0),
        ("`x.to('MiB'den')` kod olarak kalır.", 0),
    ],
)
def test_unit_suffixes_follow_how_the_unit_is_read(text, found):
    assert len(unit_suffixes(text)) == found, unit_suffixes(text)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("FLOP x1,33 değil, x1,22 olur.", 2),
        ("Süre 1,333x uzadı; lr 1e-3 ile.", 2),
        ("FLOP 1,22 katına çıkar; 8 x 64 token; `lr=1e-3`; 2 x s x b x 4 bayt; 3,5 kat.", 0),
    ],
)
def test_multipliers_in_words_and_python_numbers_as_code(text, found):
    assert len(number_style(text)) == found, number_style(text)


def test_four_digit_numbers_are_told_apart_from_years_sections_and_links():
    text = (
        "f = 3072 ve 2.048 token'lık; Douillard vd. (2023); 4.1. bölüm; torch 2.13; 15.360 MiB; "
        "[makale](https://arxiv.org/abs/2311.08105); `vocab_size=2048`; %12,5; 1024'te."
    )
    assert four_digit_styles(text) == ({"3072", "1024"}, {"2.048"})


@pytest.mark.parametrize(
    ("english", "turkish", "found"),
    [
        ("Section 4 estimated it.", "4. bölüm bunu kestirdi.", 1),
        ("> It is lesson 04's.", "> 04. dersinkidir.", 1),
        ("Lesson 04's loop.", "Yerel SGD'nin döngüsü (04. ders).", 0),
        ("1. draw\n2. count", "1. çizin\n2. sayın", 0),
        ("Ways 1 and 2 agree:\n\n```python\nx = 1\n```", "Birinci ve ikinci yol:\n\n```python\n1. x\n```", 0),
    ],
)
def test_a_numbered_line_is_found_only_where_the_english_has_no_list(english, turkish, found):
    assert len(list_lines(english, turkish)) == found
