"""What grading leaves for the instructor and the learners: grades.csv, feedback/, results.json.

Everything is written whatever the submissions contained: text is made valid UTF-8 (lone
surrogates and control characters escaped), each file is written to a temporary name and renamed,
and every submission gets a feedback file of its own, named after its path (made unique).
Feedback says what a learner may know: points per question, how many public and hidden tests ran
and passed, why public tests failed, and what was flagged for review; never hidden test code,
tracebacks from inside hidden tests, or anything the notebook printed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import asdict
from pathlib import Path

from effitrain_lessons.course.submissions import readable
from effitrain_lessons.i18n import in_language, translator

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean(text) -> str:
    """`text` as printable, valid UTF-8: lone surrogates and control characters become escapes."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", readable(str(text)))


def number(value: float) -> str:
    return f"{value:g}"


def feedback_names(files: list[str]) -> list[str]:
    """One safe, unique file name per submission, made from its path."""
    names, taken = [], set()
    for file in files:
        stem = re.sub(r"\.ipynb$", "", file, flags=re.IGNORECASE)
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "submission"
        base = base[:120]
        name, n = f"{base}.txt", 1
        while name.lower() in taken:
            n += 1
            name = f"{base}-{n}.txt"
        taken.add(name.lower())
        names.append(name)
    return names


def write_results(results, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    questions = sorted({question for result in results for question in result.questions})
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(
        ["file", "lesson", *questions, "total", "possible", "status", "reason", "flags", "feedback"]
    )
    names = feedback_names([result.file for result in results])
    for result, name in zip(results, names):
        cells = [number(result.questions[q].points) if q in result.questions else "" for q in questions]
        writer.writerow(
            [
                clean(result.file),
                result.lesson or "",
                *cells,
                number(result.total),
                number(result.possible),
                result.status,
                clean(result.reason),
                clean("; ".join(result.flags)),
                f"feedback/{name}",
            ]
        )
    _write(out / "grades.csv", table.getvalue())
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    for result, name in zip(results, names):
        _write(feedback / name, feedback_text(result))
    records = []
    for result, name in zip(results, names):
        record = asdict(result)
        record.update(total=result.total, possible=result.possible, feedback=f"feedback/{name}")
        records.append(record)
    _write(out / "results.json", json.dumps(records, indent=1, ensure_ascii=False, default=str))


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(readable(text), encoding="utf-8")
    os.replace(temporary, path)


def feedback_text(result) -> str:
    """What a learner reads, in the language of their notebook: points per question, which tests ran,
    why public tests failed, flags."""
    language = getattr(result, "language", "en")
    _ = translator(language)

    def said(text) -> str:
        return clean(in_language(text, language))

    lines = [
        _("{file}: {total} of {possible} points ({lesson})").format(
            file=clean(result.file),
            total=number(result.total),
            possible=number(result.possible),
            lesson=result.lesson or _("lesson unknown"),
        )
    ]
    if result.status != "graded" or result.reason:
        lines.append(_("Note: {reason}.").format(reason=said(result.reason) or result.status))
    for question in result.questions.values():
        lines.append("")
        lines.append(
            _("{question}: {points} of {possible} points").format(
                question=question.name, points=number(question.points), possible=number(question.possible)
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
        for message in question.public_messages[:3]:
            if message:
                lines.append("  " + clean(message.strip())[:500])
    if result.flags:
        lines.append("")
        lines.append(_("Flagged for your instructor's review (the score is unchanged):"))
        lines += [f"  {clean(flag)}" for flag in result.flags]
    return "\n".join(lines) + "\n"
