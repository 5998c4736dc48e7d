"""The Turkish editions: complete catalogs, the same code as the English editions, Turkish prose.

- Every catalog translates every message of the English, and holds nothing the English no longer says
  (`effitrain extract` would change nothing but references).
- A catalog that falls behind fails the build, naming the lesson, the cell and the sentence: an entry
  removed (missing), an English sentence changed (stale, before and after `effitrain extract`).
- Every code cell of a Turkish edition is its English cell token for token, comments aside (the setup
  cell differs in its string literals only: its message and the language it chooses); so do the code
  fences of the markdown.
- A Turkish edition's markdown holds no English sentence (outside code, links' paper titles, quotes).
"""

from __future__ import annotations

import ast
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import polib
import pytest

from effitrain_lessons.course import build, translate
from effitrain_lessons.course.lessons import ROOT, edition_paths, lesson_names

LESSONS = lesson_names()
# Words that only English prose has: a Turkish sentence never needs them (an API name is in backticks).
# ("not" and "bit" are Turkish words too; "Run" is JupyterLab's menu, named as the learner sees it.)
ENGLISH_WORDS = {
    "the",
    "and",
    "of",
    "to",
    "is",
    "are",
    "with",
    "this",
    "that",
    "for",
    "from",
    "by",
    "it",
    "you",
    "we",
    "but",
    "when",
    "which",
    "each",
    "every",
    "your",
    "its",
    "what",
    "how",
    "than",
    "then",
    "only",
    "one",
    "two",
    "into",
    "does",
    "here",
    "there",
    "where",
}


def notebook(name: str, kind: str) -> dict:
    return json.loads((ROOT / edition_paths(name)[kind]).read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else text


def code_tokens(code: str, blank_strings: bool = False) -> list[tuple[int, str]]:
    """`code`'s tokens without its comments and the line breaks that end no statement (a translated
    comment may take two lines); with `blank_strings`, adjacent string literals are one string whose
    value is left out (a translated message may be cut into literals elsewhere)."""
    tokens = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        if blank_strings and token.type == tokenize.STRING:
            if tokens and tokens[-1] == (tokenize.STRING, "<string>"):
                continue
            tokens.append((tokenize.STRING, "<string>"))
        else:
            tokens.append((token.type, token.string))
    return tokens


def string_values(code: str) -> list[str]:
    """The values of `code`'s strings, adjacent literals joined as Python joins them."""
    values, pieces = [], []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.STRING:
            pieces.append(ast.literal_eval(token.string))
        elif token.type not in (tokenize.COMMENT, tokenize.NL) and pieces:
            values.append("".join(pieces))
            pieces = []
    return values


def fences(markdown: str) -> list[str]:
    return re.findall(r"(?ms)^ {0,3}```[^\n]*\n(.*?)^ {0,3}```", markdown)


def fence_tokens(code: str) -> list:
    try:
        return code_tokens(code)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # a shell snippet: its lines without comments
        return [re.sub(r"(^|\s)#.*$", "", line).rstrip() for line in code.split("\n")]


def english_words(markdown: str) -> list[str]:
    """The English words of `markdown`'s prose (or of a page's text): code, URLs, link texts and italic
    titles (papers'), quotes (a library's message is quoted) and the strings of a printed Python value
    (the data set's English sentences) left out."""
    text = re.sub(r"(?ms)^ {0,3}```.*?^ {0,3}```", " ", markdown)
    text = re.sub(r"\*([^*]{1,200})\*", lambda m: " " if _title_case(m.group(1)) else m.group(0), text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", " ", text)
    text = re.sub(r"https?://\S+", " ", text)
    text = re.sub(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|\u00ab[^\u00bb]*\u00bb", " ", text)
    # a Python value's strings, as a dict of data prints them
    text = re.sub(r"([{\[(,:]) ?'[^'\n]*'", r"\1 ", text)
    return [word for word in re.findall(r"\w+", text) if word.lower() in ENGLISH_WORDS]


def _title_case(text: str) -> bool:
    words = re.findall(r"[^\W\d_]+", text)
    return len(words) >= 2 and sum(w[0].isupper() for w in words) >= 0.6 * len(words)


# ---------------------------------------------------------------------------------------------
# The catalogs


@pytest.mark.parametrize("name", [*LESSONS, None], ids=[*LESSONS, "runtime"])
def test_every_catalog_translates_exactly_what_the_english_says(name):
    if name is None:
        path, messages, label = (
            ROOT / translate.PACKAGE_CATALOG,
            translate.runtime_messages(ROOT),
            translate.PACKAGE_CATALOG,
        )
    else:
        master = json.loads((ROOT / "lessons" / f"{name}.ipynb").read_text(encoding="utf-8"))
        path, messages, label = (
            translate.catalog_path(ROOT, name),
            translate.lesson_messages(master, name),
            name,
        )
    catalog = translate.read_catalog(path)
    assert messages, label
    problems = translate.problems(catalog, messages, label)
    assert not problems, "\n".join(problems[:20] + ["Run `make catalogs`, translate, then `make notebooks`."])
    unused = translate.unused(catalog, messages)
    assert not unused, f"{label} holds entries no English uses (run `make catalogs`): {unused[:5]}"


def test_the_compiled_catalog_is_the_committed_one():
    assert (ROOT / translate.PACKAGE_MO).read_bytes() == translate.compiled_runtime_catalog(ROOT), (
        "run `make notebooks`: it compiles the runtime catalog"
    )


@pytest.fixture()
def course_copy(tmp_path) -> Path:
    """The masters, catalogs and package sources, in a folder of their own (the checkout stays as it is)."""
    shutil.copytree(ROOT / "lessons", tmp_path / "lessons")
    shutil.copytree(
        ROOT / "effitrain_lessons",
        tmp_path / "effitrain_lessons",
        ignore=shutil.ignore_patterns("__pycache__", "course_data"),
    )
    return tmp_path


def run_build(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "effitrain_lessons", "build", "--course", str(course), "--check", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_a_removed_entry_fails_the_build_naming_lesson_cell_and_sentence(course_copy):
    name = LESSONS[-1]
    path = translate.catalog_path(course_copy, name)
    catalog = polib.pofile(str(path), wrapwidth=100)
    removed = next(entry for entry in catalog if len(entry.msgid) > 40)
    catalog.remove(removed)
    catalog.save(str(path))
    finished = run_build(course_copy, name[:2], "--language", "tr")
    assert finished.returncode == 2, finished.stdout + finished.stderr
    assert f"lesson {name}" in finished.stderr and f"cell {removed.msgctxt}: missing" in finished.stderr, (
        finished.stderr
    )
    assert " ".join(removed.msgid.split())[:40] in finished.stderr


def test_a_changed_english_sentence_fails_the_build_until_it_is_translated_again(course_copy):
    name = LESSONS[1]
    master_path = course_copy / "lessons" / f"{name}.ipynb"
    master = json.loads(master_path.read_text(encoding="utf-8"))
    cell = next(c for c in master["cells"] if c["cell_type"] == "markdown" and len(source(c)) > 200)
    block = translate.markdown_blocks(source(cell))[-1]
    changed = block + " One sentence more."
    cell["source"] = source(cell).replace(block, changed)
    master_path.write_text(json.dumps(master, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    finished = run_build(course_copy, name[:2], "--language", "tr")
    assert finished.returncode == 2 and f"lesson {name}" in finished.stderr
    assert f"cell {cell['id']}: stale" in finished.stderr, finished.stderr

    # `effitrain extract` gives the old translation back, marked fuzzy, with the English it translated
    extracted = subprocess.run(
        [sys.executable, "-m", "effitrain_lessons", "extract", "--course", str(course_copy)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert extracted.returncode == 0, extracted.stderr
    entry = polib.pofile(str(translate.catalog_path(course_copy, name))).find(changed, msgctxt=cell["id"])
    assert entry is not None and "fuzzy" in entry.flags and entry.previous_msgid == block and entry.msgstr
    finished = run_build(course_copy, name[:2], "--language", "tr")
    assert finished.returncode == 2 and f"cell {cell['id']}: stale" in finished.stderr, finished.stderr

    # translated again (the fuzzy flag removed), it builds: only the Turkish editions' bytes differ
    catalog = polib.pofile(str(translate.catalog_path(course_copy, name)), wrapwidth=100)
    fixed = catalog.find(changed, msgctxt=cell["id"])
    fixed.flags.remove("fuzzy")
    fixed.previous_msgid = None
    catalog.save(str(translate.catalog_path(course_copy, name)))
    finished = run_build(course_copy, name[:2], "--language", "tr")
    assert "stale" not in finished.stderr and "missing:" not in finished.stderr, finished.stderr


# ---------------------------------------------------------------------------------------------
# The editions


@pytest.mark.parametrize("kind", ["learner", "solution"])
@pytest.mark.parametrize("name", LESSONS)
def test_a_turkish_edition_runs_the_english_code_token_for_token(name, kind):
    english, turkish = notebook(name, kind), notebook(name, f"{kind}_tr")
    assert [(c["id"], c["cell_type"]) for c in english["cells"]] == [
        (c["id"], c["cell_type"]) for c in turkish["cells"]
    ]
    assert english["metadata"]["otter"] == {
        **turkish["metadata"]["otter"],
        "tests": english["metadata"]["otter"]["tests"],
    }
    assert (
        turkish["metadata"]["effitrain"]["language"] == "tr"
        and english["metadata"]["effitrain"]["language"] == "en"
    )
    compared = 0
    for en, tr in zip(english["cells"], turkish["cells"]):
        if en["cell_type"] == "code":
            setup = en["id"] == build.SETUP_CELL_ID
            assert code_tokens(source(en), blank_strings=setup) == code_tokens(
                source(tr), blank_strings=setup
            ), f"{name} {kind}: cell {en['id']} has other code in Turkish"
            compared += 1
        elif en["cell_type"] == "markdown":
            assert [fence_tokens(f) for f in fences(source(en))] == [
                fence_tokens(f) for f in fences(source(tr))
            ], f"{name} {kind}: the code in cell {en['id']}'s markdown differs in Turkish"
        else:
            assert source(en) == source(tr), f"{name} {kind}: raw cell {en['id']} differs"
    assert compared >= 5
    setup_en, setup_tr = source(english["cells"][0]), source(turkish["cells"][0])
    differ = [(a, b) for a, b in zip(string_values(setup_en), string_values(setup_tr)) if a != b]
    assert len(differ) == 2 and differ[-1][1] == "tr"  # the message and the language


@pytest.mark.parametrize("name", LESSONS)
def test_a_turkish_edition_has_no_english_prose(name):
    turkish = notebook(name, "learner_tr")
    found = {
        cell["id"]: words
        for cell in turkish["cells"]
        if cell["cell_type"] == "markdown"
        if (words := english_words(source(cell)))
    }
    assert not found, f"{name}: English words in the Turkish markdown: {found}"
    english = notebook(name, "learner")
    assert (
        sum(bool(english_words(source(c))) for c in english["cells"] if c["cell_type"] == "markdown") >= 5
    ), "the detector finds the English of the English edition"
