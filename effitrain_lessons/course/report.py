"""What grading leaves for the instructor and the learners: grades.csv, feedback/, results.json.

What these files guarantee, whatever the submissions contained or their processes reported:

- **Valid, one-line text.** Every name and message is valid UTF-8 (undecodable bytes and lone
  surrogates become escapes) and `clean` escapes what a terminal, a spreadsheet or an editor would
  act on instead of showing: C0 and C1 control characters and DEL (`\\n`, `\\x1b`, `\\x85`), the
  Unicode line and paragraph separators, and the bidirectional marks, embeddings, overrides and
  isolates (`\\u202e`). The same escaped form of a file's name is in all three files and in the
  console summary of `effitrain grade`.
- **Bounded size.** At most `MAX_FLAGS` flags of `FLAG_CHARS` characters per submission, then one
  entry that says how many more were reported ("… and 39,950 more flags (cap reached)"); at most
  `MAX_MESSAGES` public-test messages of `MESSAGE_CHARS` characters per question, `MAX_NOTES` notes
  of `NOTE_CHARS`, reasons and answer errors of `MESSAGE_CHARS`. A submission's row, feedback and
  record stay a few kilobytes, whatever it did.
- **No formula cells.** A `grades.csv` cell whose text starts with `=`, `+`, `-`, `@`, a tab or a
  carriage return gets a leading `'` (OWASP's advice for CSV injection), in every column. Points and
  totals are never negative, so they stay numbers.
- **Feedback says what a learner may know**: points per question, how many public and hidden tests
  ran and passed, why public tests failed (the first few messages), and what was flagged, each flag
  as its question and a phrase from a fixed vocabulary (`FLAG_PHRASES`): the text of a flag may come
  from the learner's own process, which could have copied a hidden test from memory, so it reaches
  only the instructor's files. Never hidden test code, which hidden case failed (`hidden_failed`,
  in results.json only), tracebacks from inside hidden tests, notes, or anything the notebook
  printed. A message that quotes a line of a hidden test (however it is spaced or split) is
  withheld: a second guard, for a submission that copied one from memory into its error.
- **Every submission gets its files**: each file is written to a temporary name and renamed, and
  every submission gets a feedback file of its own, named after its path (made unique).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import unicodedata
from pathlib import Path

from effitrain_lessons.course import review, worker
from effitrain_lessons.course.submissions import readable
from effitrain_lessons.shared.i18n import N_, in_language, translator

MAX_FLAGS = 50
FLAG_CHARS = 200
MAX_MESSAGES = 20  # public-test messages per question
MESSAGE_CHARS = 500  # a public-test message, an answer error, a reason
MAX_NOTES = 20
NOTE_CHARS = 600
MAX_HIDDEN_FAILED = 1000
FEEDBACK_MESSAGES = 3  # public-test messages per question that a learner reads
SECRET_LINE_CHARS = 12  # a hidden test's line this long (spaces left out) is never shown to a learner

# C0 and C1 controls, DEL, the Arabic letter mark, LRM and RLM, the line and paragraph separators,
# bidi embeddings and overrides (U+202A-U+202E) and isolates (U+2066-U+2069).
ESCAPED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
OVERFLOW = re.compile(r"… and (\d[\d,]*) more flags \(cap reached\)")


def _escape(match: re.Match) -> str:
    character = match.group()
    if character in SHORT_ESCAPES:
        return SHORT_ESCAPES[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text, limit: int | None = None) -> str:
    """`text` as one line of printable, valid UTF-8 (see the module's docstring), cut to `limit`
    characters (the last one `…`) when it is longer."""
    text = ESCAPED.sub(_escape, readable(str(text)))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def cell(text) -> str:
    """`text` cleaned for a `grades.csv` cell, with a leading `'` if a spreadsheet would read it
    as a formula."""
    text = clean(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def number(value: float) -> str:
    return f"{value:g}"


# ---------------------------------------------------------------------------------------------
# Bounds


def overflow_note(count: int) -> str:
    """The entry that ends a submission's flags once `MAX_FLAGS` are listed."""
    return f"… and {count:,} more flags (cap reached)"


def unlisted_flags(flags: list[str]) -> int:
    """How many flags `flags` counts beyond those it lists (0 below the cap)."""
    matches = [OVERFLOW.fullmatch(flag) for flag in flags]
    counted = sum(int(m.group(1).replace(",", "")) for m in matches if m)
    return counted + max(0, sum(m is None for m in matches) - MAX_FLAGS)


def add_flag(flags: list[str], entry: str) -> None:
    """Add `entry` (cleaned, cut) to `flags` unless it is there, or count it once `MAX_FLAGS` are
    listed. The count keeps no copy of what it counts, so a flood of flags costs no memory."""
    entry = clean(entry, FLAG_CHARS)
    if entry in flags:
        return
    if len(flags) < MAX_FLAGS:
        flags.append(entry)
    elif len(flags) == MAX_FLAGS:
        flags.append(overflow_note(1))
    else:
        flags[-1] = overflow_note(unlisted_flags(flags) + 1)


def bounded_flags(flags: list[str]) -> list[str]:
    """`flags` as `add_flag` would have kept them: at most `MAX_FLAGS`, then the count of the rest."""
    listed = [clean(flag, FLAG_CHARS) for flag in flags if not OVERFLOW.fullmatch(flag)]
    more = unlisted_flags(flags)
    return listed[:MAX_FLAGS] + ([overflow_note(more)] if more else [])


def bounded(texts: list[str], number_: int, chars: int) -> list[str]:
    return [clean(text, chars) for text in texts[:number_]]


def _record(result, feedback: str) -> dict:
    """`result` as a results.json record: every text cleaned and bounded, file names as in grades.csv."""
    record = dataclasses.asdict(result)
    record.update(
        file=clean(result.file),
        reason=clean(result.reason, MESSAGE_CHARS),
        flags=bounded_flags(result.flags),
        notes=bounded(result.notes, MAX_NOTES, NOTE_CHARS),
        total=result.total,
        possible=result.possible,
        feedback=feedback,
    )
    for question in record["questions"].values():
        question.update(
            name=clean(question["name"]),
            public_messages=bounded(question["public_messages"], MAX_MESSAGES, MESSAGE_CHARS),
            answer_error=clean(question["answer_error"], MESSAGE_CHARS),
            hidden_failed=[int(i) for i in question.get("hidden_failed", [])[:MAX_HIDDEN_FAILED]],
        )
    return record


# ---------------------------------------------------------------------------------------------
# Writing


def feedback_names(files: list[str]) -> list[str]:
    """One safe, unique file name per submission, made from its path."""
    names, taken = [], set()
    for file in files:
        stem = re.sub(r"\.ipynb$", "", file, flags=re.IGNORECASE)
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._").lstrip("-") or "submission"
        base = base[:120]
        name, n = f"{base}.txt", 1
        while name.lower() in taken:
            n += 1
            name = f"{base}-{n}.txt"
        taken.add(name.lower())
        names.append(name)
    return names


def write_results(results, out: Path, secrets: dict[str, set[str]] | None = None) -> None:
    """Write grades.csv, feedback/ and results.json for `results` into `out`.

    `secrets` maps a lesson's name to the lines of its hidden tests (`hidden_lines`; default: those
    of the course this package runs from): a learner's message that holds one is withheld.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if secrets is None:
        secrets = _course_secrets({result.lesson for result in results if result.lesson})
    questions = sorted({question for result in results for question in result.questions})
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(
        [
            cell(text)
            for text in ["file", "lesson", *questions, "total", "possible", "status", "reason", "flags"]
        ]
        + ["feedback"]
    )
    names = feedback_names([result.file for result in results])
    for result, name in zip(results, names):
        cells = [cell(number(result.questions[q].points)) if q in result.questions else "" for q in questions]
        writer.writerow(
            [
                cell(result.file),
                cell(result.lesson or ""),
                *cells,
                cell(number(result.total)),
                cell(number(result.possible)),
                cell(result.status),
                cell(clean(result.reason, MESSAGE_CHARS)),
                cell("; ".join(bounded_flags(result.flags))),
                f"feedback/{name}",
            ]
        )
    _write(out / "grades.csv", table.getvalue())
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    for result, name in zip(results, names):
        _write(feedback / name, feedback_text(result, secrets.get(result.lesson or "", set())))
    records = [_record(result, f"feedback/{name}") for result, name in zip(results, names)]
    _write(out / "results.json", json.dumps(records, indent=1, ensure_ascii=False, default=str))


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(readable(text), encoding="utf-8")
    os.replace(temporary, path)


def _course_secrets(lessons: set[str]) -> dict[str, set[str]]:
    from effitrain_lessons.course.lessons import load_lesson

    found = {}
    for name in lessons:
        try:
            found[name] = hidden_lines(load_lesson(name))
        except Exception:  # noqa: BLE001 - a lesson of another course: nothing known to withhold
            continue
    return found


def _plain(text: str) -> str:
    """`text` without spaces and invisible characters, for finding a quoted line however it is split."""
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c)[0] not in "CZ")


def hidden_lines(lesson) -> set[str]:
    """The lines of `lesson`'s hidden tests that no public test holds, at least `SECRET_LINE_CHARS`
    long, as `_plain` writes them."""

    def lines(hidden: bool) -> set[str]:
        cases = [case for question in lesson.questions.values() for case in question.cases]
        code = "\n".join(case.code for case in cases if case.hidden is hidden)
        return {_plain(line.strip().removeprefix(">>> ").removeprefix("... ")) for line in code.splitlines()}

    return {line for line in lines(True) - lines(False) if len(line) >= SECRET_LINE_CHARS}


# ---------------------------------------------------------------------------------------------
# Feedback

# What a learner reads for a flag: the grader's own phrases, chosen by the flag's form. A phrase's
# {name} is filled only with a name from a fixed list (a module, a built-in, a dunder), never with
# text a submission chose.
FLAG_PHRASES = {
    "grader": N_("imports the grader"),
    "import *": N_("imports everything from a module"),
    "import": N_("imports {name}"),
    "import other": N_("imports a system module"),
    "writes": N_("writes a file outside its folder"),
    "reads": N_("reads another process's private files"),
    "changes": N_("changes a module or class the tests rely on (it was put back)"),
    "assigns": N_("assigns or deletes an attribute of a module"),
    "replaces the module": N_("replaces a module the tests rely on (it was put back)"),
    "built-in": N_("redefines the built-in {name}"),
    "built-ins": N_("replaces __builtins__"),
    "calls": N_("calls {name}()"),
    "reaches into": N_("reaches into {name}"),
    "defines": N_("defines {name} on a class"),
    "metaclass": N_("defines a class with a metaclass"),
    "uses": N_("uses {name}"),
    "shell": N_("runs shell commands (!)"),
    "magic": N_("runs a magic"),
    "path": N_("names the path {name}"),
    "nested": N_("is nested too deeply to read"),
    "unasked": N_("a message arrived that the grader did not ask for"),
    "through": N_("reaches {name} through another module"),
    "gc": N_("walks the garbage collector's objects"),
    "call stack": N_("reads the call stack"),
    "computed": N_("reads or sets an attribute by a computed name"),
    "built at run time": N_("builds a class or function at run time"),
    "torch modes": N_("uses torch's function or dispatch modes"),
    "import machinery": N_("reaches the import machinery"),
    "relabels": N_("relabels a function or class"),
    "torch internals": N_("reaches torch internals"),
    "global hook": N_("registers a global hook"),
    "trace": N_("sets a trace function"),
    "shell object": N_("uses the IPython shell"),
    "by hand": N_("calls a special method by hand"),
    "saved-tensor hooks": N_("uses saved-tensor hooks"),
    "random state": N_("saves or restores the random generator's state"),
    "hook": N_("registers a hook"),
    "threads": N_("runs threads or processes"),
    "replaces a method": N_("replaces a method on a model"),
    "course measurement": N_("uses the course's own measurement"),
    "too long": N_("is too long to review in time"),
    "more": N_("and more flags of the same kinds"),
    "unexpected": N_("something the grader did not expect"),
}
# The worker's audit phrases (worker.REACH), for the catalog: shown as they are.
REACH_PHRASES = (
    N_("sets a trace function"),
    N_("sets a profile function"),
    N_("adds an audit hook"),
    N_("reads other threads' frames"),
    N_("walks the garbage collector's objects"),
    N_("walks object referrers"),
    N_("walks object referents"),
    N_("loads a C library"),
    N_("looks up a C symbol"),
    N_("reads raw memory"),
    N_("starts a program"),
    N_("runs a shell command"),
    N_("replaces the process"),
    N_("forks the process"),
    N_("sends a signal"),
    N_("starts a terminal"),
    N_("opens a network connection"),
    N_("listens on a socket"),
    N_("builds code objects"),
    N_("loads marshalled code"),
    N_("registers a monitoring callback"),
    N_("changes the working folder"),
    N_("deletes files"),
    N_("moves files"),
    N_("deletes folders"),
)
NAMED = {
    "import": review.SYSTEM_MODULES,
    "through": review.SYSTEM_MODULES,
    "built-in": review.BUILTIN_NAMES,
    "calls": review.RISKY_CALLS,
    "reaches into": review.INTERNALS,
    "defines": review.COMPARISON_DUNDERS,
    "uses": frozenset({"__builtins__", "__import__"}),
    "path": frozenset(review.PATH_MARKERS),
}
FLAG_FORMS = [  # (pattern, kind): the first that matches the whole flag decides
    (r"imports the grader \(.*\)", "grader"),
    (r"(names|reaches) the grader \(.*\)", "grader"),
    (r"reaches (?P<name>\w+) through another module", "through"),
    (r"reads the call stack \(.*\)", "call stack"),
    (r"(reads|sets) an attribute by a computed name", "computed"),
    (r"builds a (class|function) at run time", "built at run time"),
    (r"defines a torch function mode|uses torch's override machinery \(.*\)", "torch modes"),
    (r"leaves a torch (function|dispatch) mode on", "torch modes"),
    (r"defines an import finder|reaches the import machinery \(.*\)", "import machinery"),
    (r"relabels a (class|function)", "relabels"),
    (r"reaches torch internals \(.*\)", "torch internals"),
    (r"registers a global hook \(.*\)|registers torch kernels \(torch\.library\)", "global hook"),
    (r"sets a trace function \(.*\)", "trace"),
    (r"walks the garbage collector \(.*\)", "gc"),
    (r"uses the IPython shell( \(.*\))?", "shell object"),
    (r"calls \w+ by hand", "by hand"),
    (r"uses saved-tensor hooks \(.*\)", "saved-tensor hooks"),
    (r"saves or restores the random generator's state \(.*\)", "random state"),
    (r"registers a hook \(.*\)", "hook"),
    (r"runs threads or processes \(.*\)", "threads"),
    (r"replaces a method on a model \(.*\)", "replaces a method"),
    (r"uses the course's own measurement \(.*\)", "course measurement"),
    (r"is too long to review in time", "too long"),
    (r"and \d+ more", "more"),
    (r"imports \* from .*", "import *"),
    (r"imports (?P<name>.+)", "import"),
    (r"writes .*", "writes"),
    (r"reads .*", "reads"),
    (r"(changes|removes|adds) \S+", "changes"),
    (r"(assigns|deletes) \S+", "assigns"),
    (r"replaces the module \S+", "replaces the module"),
    (r"redefines the built-in (?P<name>\S+)", "built-in"),
    (r"replaces __builtins__", "built-ins"),
    (r"calls (?P<name>\w+)\(\)", "calls"),
    (r"reaches into (?P<name>\w+)", "reaches into"),
    (r"defines (?P<name>\w+) on a class", "defines"),
    (r"defines a class with a metaclass", "metaclass"),
    (r"uses (?P<name>\w+)", "uses"),
    (r"runs shell commands \(!\)", "shell"),
    (r"runs (the magic %\S*|a magic)", "magic"),
    (r"names the path (?P<name>\S+)", "path"),
    (r"is nested too deeply to read", "nested"),
    (r"a message arrived that the grader did not ask for", "unasked"),
]


def flag_phrase(what: str) -> tuple[str, dict]:
    """The phrase (an English template from `FLAG_PHRASES` or worker.REACH) and its values that a
    learner reads for the flag `what`."""
    what = what.removesuffix(" during a test").removesuffix(" before a test")
    if what in worker.REACH.values():
        return what, {}
    for pattern, kind in FLAG_FORMS:
        match = re.fullmatch(pattern, what)
        if match is None:
            continue
        name = match.groupdict().get("name")
        if kind in NAMED and name not in NAMED[kind]:
            return FLAG_PHRASES["import other" if kind == "import" else "unexpected"], {}
        return FLAG_PHRASES[kind], {"name": name} if name else {}
    return FLAG_PHRASES["unexpected"], {}


def feedback_flags(result) -> list[tuple[str, str, dict]]:
    """Each flag of `result` as (question, phrase, values), each at most once: the question is one
    of the result's (else ""), the phrase from `flag_phrase`."""
    shown = []
    for flag in bounded_flags(result.flags)[:MAX_FLAGS]:
        if OVERFLOW.fullmatch(flag):
            continue
        question, separator, what = flag.partition(": ")
        if question == "report":  # the grader's label for a message it did not ask for
            question = ""
        elif not separator or question not in result.questions:
            question, what = "", flag
        phrase, values = flag_phrase(what)
        entry = (question, phrase, values)
        if entry not in shown:
            shown.append(entry)
    return shown


def feedback_text(result, secrets: set[str] = frozenset()) -> str:
    """What a learner reads, in the language of their notebook: points per question, which tests ran,
    why public tests failed, flags. A message that holds one of `secrets` (`hidden_lines`) is
    withheld."""
    language = getattr(result, "language", "en")
    _ = translator(language)

    def said(text, limit: int = MESSAGE_CHARS) -> str:
        text = in_language(text, language)[: 2 * limit]  # what is shown, and more
        plain = _plain(text)
        if any(line in plain for line in secrets):
            return _("(withheld: it quotes a hidden test)")
        return clean(text, limit)

    lines = [
        _("{file}: {total} of {possible} points ({lesson})").format(
            file=clean(result.file),
            total=number(result.total),
            possible=number(result.possible),
            lesson=clean(result.lesson or _("lesson unknown")),
        )
    ]
    if result.status != "graded" or result.reason:
        lines.append(_("Note: {reason}.").format(reason=said(result.reason) or clean(result.status)))
    for question in result.questions.values():
        lines.append("")
        lines.append(
            _("{question}: {points} of {possible} points").format(
                question=clean(question.name),
                points=number(question.points),
                possible=number(question.possible),
            )
        )
        if question.missing:
            lines.append(
                "  " + _("The answer cell is missing from the submission (it was deleted or its id changed).")
            )
        if question.answer_error:
            lines.append(
                "  " + _("Your answer cell raised {error}").format(error=said(question.answer_error))
            )
        if question.public_total or question.hidden_total:
            lines.append(
                "  "
                + _("public tests: {passed} of {total} passed").format(
                    passed=question.public_passed, total=question.public_total
                )
            )
            lines.append(
                "  "
                + _("hidden tests: {passed} of {total} passed").format(
                    passed=question.hidden_passed, total=question.hidden_total
                )
            )
        else:
            lines.append("  " + _("no test ran"))
        messages = [m for m in question.public_messages[:MAX_MESSAGES] if str(m).strip()]
        for message in messages[:FEEDBACK_MESSAGES]:
            lines.append("  " + said(str(message).strip()))
    if result.flags:
        lines.append("")
        lines.append(_("Flagged for your instructor's review (the score is unchanged):"))
        for question, phrase, values in feedback_flags(result):
            text = _(phrase).format(**values)
            lines.append(f"  {clean(question)}: {text}" if question else f"  {text}")
        more = unlisted_flags(result.flags)
        if more:
            lines.append("  " + _("… and {count} more flags, not listed (cap reached)").format(count=more))
    return "\n".join(lines) + "\n"
