"""The Turkish editions: the lessons' English text in gettext catalogs, and the masters they make.

Two kinds of catalog, both gettext PO files (Poedit, Weblate and `polib` read them):

- `lessons/tr/NN_<name>.po`, one per lesson, for the text an edition is built with: every block of
  every markdown cell (a paragraph, heading, list or table: the lines between blank lines, outside
  code fences) and every comment in its code (code cells, and code fences inside markdown). An
  entry's context (`msgctxt`) is its cell's id and its `msgid` the English it translates. Code is
  never an entry: a Turkish edition's code is the English code, token for token.
- `effitrain_lessons/locale/tr/LC_MESSAGES/effitrain_lessons.po`, for the text shown while a lesson
  runs: the package's messages (`_`, `N_`, `phrase`, `say`, `nphrase` in its modules) and what the
  lessons' cells show through the package (`say(...)`, `phrase(...)`, a `Table([...])`'s columns,
  a `title=`). Its compiled `.mo` sits beside it and is what `effitrain_lessons.shared.i18n` reads.

`effitrain extract` (`make catalogs`) brings the catalogs in step with the English: a new message
gets an empty entry; a message whose English changed gets its old translation back, marked `fuzzy`,
with the English it translated (`#| msgid`), for the translator to revise; entries no English uses
any more are dropped. `effitrain build` refuses an edition whose catalog lacks an entry (missing) or
has it only as fuzzy (stale), and names the lesson, the cell and the sentence.
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

LANGUAGE = (
    "tr"  # the one translated edition; the editions' languages are effitrain_lessons.shared.i18n.LANGUAGES
)
CATALOG_DIR = "lessons/tr"
PACKAGE_CATALOG = "effitrain_lessons/locale/tr/LC_MESSAGES/effitrain_lessons.po"
PACKAGE_MO = "effitrain_lessons/locale/tr/LC_MESSAGES/effitrain_lessons.mo"
PACKAGE_DIR = "effitrain_lessons"
HEADER = {
    "Project-Id-Version": "effitrain-lessons",
    "Language": "tr",
    "MIME-Version": "1.0",
    "Content-Type": "text/plain; charset=UTF-8",
    "Content-Transfer-Encoding": "8bit",
    "Plural-Forms": "nplurals=2; plural=(n != 1);",
}
# Comments that are instructions to a tool, not text: Otter Assign's, the build's `#@save`, linters'.
DIRECTIVE = re.compile(
    r"(@save|(BEGIN |END )?(SOLUTION|PROMPT)( NO PROMPT)?|HIDDEN|IGNORE|SEED|noqa\b.*|type: .*)"
)
FENCE = re.compile(r"^ {0,3}(```+|~~~+)")
# name -> how many leading message arguments
RUNTIME_CALLS = {"_": 1, "N_": 1, "phrase": 1, "say": 1, "nphrase": 2, "Sentence": 1}
LESSON_CALLS = {"phrase": 1, "say": 1, "nphrase": 2}
FUZZY_MATCH = 0.5  # how alike an old English must be to the new one for its translation to come back, fuzzy


class CatalogError(ValueError):
    """A catalog that cannot build an edition: each line names a lesson, a cell and a message."""


@dataclass(frozen=True)
class Message:
    context: str | None  # the cell id for a lesson's text; None for the runtime catalog
    text: str  # the English
    # references for the translator, space-separated:
    # "lessons/02_x.ipynb#co-try", "effitrain_lessons/shared/plotting.py"
    where: str
    plural: str | None = None


# ---------------------------------------------------------------------------------------------
# What a lesson's cells say


def markdown_blocks(text: str) -> list[str]:
    """The blocks of a markdown cell: runs of lines between blank lines; a code fence is one block."""
    blocks, current, fenced = [], [], None
    for line in text.split("\n"):
        opening = FENCE.match(line)
        if fenced is None and opening:
            fenced = opening.group(1)[0] * 3
        elif fenced is not None and line.strip().startswith(fenced):
            fenced = None
            current.append(line)
            continue
        if fenced is None and not line.strip():
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def is_fence(block: str) -> bool:
    return bool(FENCE.match(block.split("\n", 1)[0]))


def has_words(block: str) -> bool:
    return bool(re.search(r"[^\W\d_]", block))


def comments(code: str) -> list[tuple[int, int, int, str]]:
    """The comments of `code` worth translating: (line, start column, end column, text after `# `).

    Python code is read with `tokenize`; what does not tokenize (a shell snippet in a fence) is read
    line by line, a comment being a `#` at the start of a line or after a space.
    """
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.end[1], token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        found = []
        for number, line in enumerate(code.split("\n"), 1):
            match = re.search(r"(^|\s)(#.*)$", line)
            if match:
                found.append((number, match.start(2), len(line), match.group(2)))
    kept = []
    for line, start, end, raw in found:
        text = raw.lstrip("#").strip()
        if text and has_words(text) and not DIRECTIVE.fullmatch(text):
            kept.append((line, start, end, text))
    return kept


def replace_comments(code: str, translate) -> str:
    """`code` with each comment's text replaced by `translate(text)`; everything else as it was."""
    lines = code.split("\n")
    for line, start, end, text in reversed(comments(code)):
        current = lines[line - 1]
        raw = current[start:end]
        marker = raw[: len(raw) - len(raw.lstrip("#"))] + " "
        lines[line - 1] = current[:start] + marker + translate(text) + current[end:]
    return "\n".join(lines)


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def lesson_messages(master: dict, name: str) -> list[Message]:
    """The messages of one lesson master, in the order a reader meets them."""
    messages = []
    for cell in master["cells"]:
        where = f"lessons/{name}.ipynb#{cell.get('id')}"
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            for block in markdown_blocks(source):
                if is_fence(block):
                    messages += [
                        Message(cell.get("id"), text, where) for *_, text in comments(_fence_body(block))
                    ]
                elif has_words(block):
                    messages.append(Message(cell.get("id"), block, where))
        elif cell["cell_type"] == "code":
            messages += [Message(cell.get("id"), text, where) for *_, text in comments(source)]
    return _unique(messages)


def _fence_body(block: str) -> str:
    lines = block.split("\n")
    return "\n".join(lines[1:-1] if len(lines) > 1 and FENCE.match(lines[-1]) else lines[1:])


def _unique(messages: list[Message]) -> list[Message]:
    seen, unique = set(), []
    for message in messages:
        key = (message.context, message.text)
        if key not in seen:
            seen.add(key)
            unique.append(message)
    return unique


# ---------------------------------------------------------------------------------------------
# What the package and the lessons' cells show while they run


def _calls(tree: ast.AST, names: dict[str, int], where: str) -> list[Message]:
    """The messages of the calls in `tree`, in the order of the source."""
    found = []
    calls = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
    )
    for node in calls:
        func = (
            node.func.id
            if isinstance(node.func, ast.Name)
            else node.func.attr
            if isinstance(node.func, ast.Attribute)
            else None
        )
        strings = [
            a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args
        ]
        if func in names and strings[: names[func]] and all(s is not None for s in strings[: names[func]]):
            plural = strings[1] if names[func] == 2 else None
            found.append(Message(None, strings[0], where, plural))
        if func == "Table" and node.args and isinstance(node.args[0], ast.List):
            found += [
                Message(None, e.value, where)
                for e in node.args[0].elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and has_words(e.value)
            ]
        for keyword in node.keywords:
            if (
                keyword.arg == "title"
                and isinstance(keyword.value, ast.Constant)
                and isinstance(keyword.value.value, str)
            ):
                found.append(Message(None, keyword.value.value, where))
    return found


def runtime_messages(root: Path) -> list[Message]:
    """Every message the runtime catalog must hold: the package's, then the lessons' cells'."""
    root = Path(root)
    messages = []
    for path in sorted((root / PACKAGE_DIR).rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.endswith("/saved.py"):
            continue  # the lessons' saved cells: read from the lessons themselves
        tree = ast.parse(path.read_text(encoding="utf-8"), relative)
        # a file, no line numbers: they move with every edit
        messages += _calls(tree, RUNTIME_CALLS, relative)
    for master in sorted((root / "lessons").glob("[0-9][0-9]_*.ipynb")):
        notebook = json.loads(master.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                tree = ast.parse(_without_magics(cell_source(cell)))
            except SyntaxError:
                continue
            where = f"lessons/{master.name}#{cell.get('id')}"
            messages += _calls(tree, LESSON_CALLS, where)
    # one entry per English message; its references are every place it is used
    merged: dict[tuple[str, str | None], list[Message]] = {}
    for message in messages:
        merged.setdefault((message.text, message.plural), []).append(message)
    return [
        Message(None, text, " ".join(dict.fromkeys(m.where for m in group)), plural)
        for (text, plural), group in merged.items()
    ]


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


# ---------------------------------------------------------------------------------------------
# Catalogs


def catalog_path(root: Path, name: str) -> Path:
    return Path(root) / CATALOG_DIR / f"{name}.po"


def read_catalog(path: Path):
    import polib

    if not Path(path).is_file():
        catalog = polib.POFile(wrapwidth=100)
        catalog.metadata = dict(HEADER)
        return catalog
    return polib.pofile(str(path), wrapwidth=100)


def updated_catalog(catalog, messages: list[Message]):
    """A catalog for `messages`: translations kept, changed English marked fuzzy, unused entries gone."""
    import polib

    old = {(entry.msgctxt, entry.msgid): entry for entry in catalog if not entry.obsolete}
    used = {(message.context, message.text) for message in messages}
    unused = [entry for key, entry in old.items() if key not in used]
    fresh = polib.POFile(wrapwidth=100)
    fresh.metadata = dict(HEADER)
    for message in messages:
        entry = old.get((message.context, message.text))
        if entry is None:
            entry = polib.POEntry(msgctxt=message.context, msgid=message.text, msgstr="")
            if message.plural is not None:
                entry.msgid_plural, entry.msgstr_plural = message.plural, {0: "", 1: ""}
            previous = _closest(message, [e for e in unused if e.msgctxt == message.context])
            if previous is not None and (previous.msgstr or any(previous.msgstr_plural.values())):
                entry.msgstr, entry.flags = previous.msgstr, ["fuzzy"]
                if message.plural is not None and previous.msgstr_plural:
                    entry.msgstr_plural = dict(previous.msgstr_plural)
                entry.previous_msgid = previous.msgid
        entry.occurrences = [(where, "") for where in message.where.split()]
        entry.comment = ""
        fresh.append(entry)
    return fresh


def _closest(message: Message, candidates):
    best, score = None, FUZZY_MATCH
    for entry in candidates:
        ratio = difflib.SequenceMatcher(None, entry.msgid, message.text).ratio()
        if ratio >= score:
            best, score = entry, ratio
    return best


def catalog_text(catalog) -> str:
    return str(catalog).rstrip("\n") + "\n"


def extract(root: Path, only: list[str] | None = None) -> list[str]:
    """Bring every catalog (or those `only` names: a lesson's number or name, or "package") in step
    with the English; return the files written."""
    root = Path(root)
    written = []
    for path, messages, _label in catalogs(root):
        if only and not any(
            path.stem.startswith(name) or (name == "package" and path.stem == "effitrain_lessons")
            for name in only
        ):
            continue
        text = catalog_text(updated_catalog(read_catalog(path), messages))
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path.relative_to(root).as_posix())
    return written


def catalogs(root: Path):
    """Each catalog of the course at `root`, with the English messages it must translate and its label."""
    from effitrain_lessons.course.lessons import LESSONS_DIR, lesson_names

    root = Path(root)
    for name in lesson_names(root):
        master = json.loads((root / LESSONS_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
        yield (
            catalog_path(root, name),
            lesson_messages(master, name),
            f"{CATALOG_DIR}/{name}.po (lesson {name})",
        )
    yield root / PACKAGE_CATALOG, runtime_messages(root), PACKAGE_CATALOG


def problems(catalog, messages: list[Message], label: str) -> list[str]:
    """One line for each message the catalog does not translate: missing (never translated), or stale
    (translated when its English read otherwise: an entry of the same cell that no English uses any more,
    or one `effitrain extract` marked fuzzy)."""
    entries = {(entry.msgctxt, entry.msgid): entry for entry in catalog if not entry.obsolete}
    used = {(message.context, message.text) for message in messages}
    orphaned = {entry.msgctxt for key, entry in entries.items() if key not in used and entry.msgstr}
    found = []
    for message in messages:
        entry = entries.get((message.context, message.text))
        where = f"cell {message.context}" if message.context else message.where
        short = _short(message.text)
        if entry is None:
            if message.context is not None and message.context in orphaned:
                found.append(
                    f"{label}: {where}: stale: the English changed since this cell was translated; "
                    f"no entry for \u201c{short}\u201d"
                )
            else:
                found.append(f"{label}: {where}: missing: no entry for \u201c{short}\u201d")
        elif "fuzzy" in entry.flags:
            found.append(
                f"{label}: {where}: stale: the English changed since \u201c{short}\u201d was translated "
                "(revise the entry and remove its fuzzy flag)"
            )
        elif not (entry.msgstr or (entry.msgstr_plural and all(entry.msgstr_plural.values()))):
            found.append(f"{label}: {where}: missing: \u201c{short}\u201d is not translated")
        elif message.context is None and _fields(entry.msgid) != _fields(
            entry.msgstr or entry.msgstr_plural.get(0, "")
        ):
            found.append(
                f"{label}: {where}: the translation of \u201c{short}\u201d must use the same "
                f"{{fields}} as the English: {sorted(_fields(entry.msgid))}"
            )
    return found


def unused(catalog, messages: list[Message]) -> list[str]:
    """The entries no English uses any more (what `effitrain extract` would drop)."""
    used = {(message.context, message.text) for message in messages}
    return [
        f"{entry.msgctxt or ''}: \u201c{_short(entry.msgid)}\u201d"
        for entry in catalog
        if not entry.obsolete and (entry.msgctxt, entry.msgid) not in used
    ]


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 70 else flat[:67] + "..."


def _fields(text: str) -> set[str]:
    import string

    try:
        return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
    except ValueError:
        return {"<unbalanced braces>"}


# ---------------------------------------------------------------------------------------------
# A Turkish master


def translated_master(master: dict, name: str, root: Path) -> dict:
    """The master with its markdown and comments in Turkish, from `lessons/tr/<name>.po`.

    Raises CatalogError naming every missing or stale entry: a Turkish edition is never built from
    a catalog that has fallen behind the English.
    """
    path = catalog_path(root, name)
    catalog = read_catalog(path)
    label = f"{CATALOG_DIR}/{name}.po (lesson {name})"
    found = problems(catalog, lesson_messages(master, name), label)
    if found:
        raise CatalogError(
            "\n".join(
                found + [f"Run `make catalogs`, translate what is new in {CATALOG_DIR}/, then build again."]
            )
        )
    table = {(entry.msgctxt, entry.msgid): entry.msgstr for entry in catalog if not entry.obsolete}
    result = json.loads(json.dumps(master))
    for cell in result["cells"]:
        context = cell.get("id")
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            blocks = []
            for block in markdown_blocks(source):
                if is_fence(block):
                    lines = block.split("\n")
                    body = replace_comments(_fence_body(block), lambda t, c=context: table[c, t])
                    closing = [lines[-1]] if len(lines) > 1 and FENCE.match(lines[-1]) else []
                    blocks.append(
                        "\n".join([lines[0], body, *closing]) if body else "\n".join([lines[0], *closing])
                    )
                elif has_words(block):
                    blocks.append(table[context, block])
                else:
                    blocks.append(block)
            cell["source"] = "\n\n".join(blocks)
        elif cell["cell_type"] == "code":
            cell["source"] = replace_comments(source, lambda t, c=context: table[c, t])
    return result


# ---------------------------------------------------------------------------------------------
# The compiled runtime catalog


def compiled_runtime_catalog(root: Path) -> bytes:
    """The `.mo` of the runtime catalog, after checking it translates every runtime message."""
    import tempfile

    catalog = read_catalog(Path(root) / PACKAGE_CATALOG)
    found = problems(catalog, runtime_messages(root), PACKAGE_CATALOG)
    if found:
        raise CatalogError(
            "\n".join(found + ["Run `make catalogs`, translate what is new, then build again."])
        )
    with tempfile.TemporaryDirectory(prefix="effitrain-mo-") as temp:
        target = Path(temp) / "catalog.mo"
        catalog.save_as_mofile(str(target))
        return target.read_bytes()


# ---------------------------------------------------------------------------------------------
# `effitrain extract`

DESCRIPTION = (
    "Bring the translation catalogs in step with the English: lessons/tr/*.po for the lessons' text, "
    f"{PACKAGE_CATALOG} for what the package and the lessons' cells show. New messages get empty "
    "entries, changed ones their old translation marked fuzzy; then `effitrain build` names what is "
    "left to translate."
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "only",
        nargs="*",
        help="the catalogs to update: a lesson's number (04) or name, or 'package' (default: all)",
    )
    parser.add_argument(
        "--course",
        type=Path,
        default=None,
        help="the course checkout (default: the one this package runs from)",
    )


def run(args) -> int:
    import sys

    from effitrain_lessons.course.lessons import NO_CHECKOUT, course_root

    root = course_root(args.course)
    if root is None:
        print(NO_CHECKOUT.format(command="effitrain extract"), file=sys.stderr)
        return 2
    written = extract(root, args.only)
    for path in written:
        print(f"{path} (updated)")
    left = []
    for path, messages, label in catalogs(root):
        left += problems(read_catalog(path), messages, label)
    print(f"{len(written)} catalog(s) updated; {len(left)} message(s) to translate or revise.")
    for line in left:
        print("  " + line)
    return 0
