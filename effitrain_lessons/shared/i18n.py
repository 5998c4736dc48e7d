"""The language the lessons speak: English, or Turkish (the deck's language) in the Turkish editions.

A lesson's setup cell calls `use_language("en")` or `use_language("tr")`. From then on what the
package shows (tables, figure titles and labels, widgets, check results, the quiz, error sentences)
and what the lesson's cells print through `say` and `phrase` is in that language. The language is
kept in the environment (`EFFITRAIN_LANGUAGE`), so the processes a lesson starts (the Local SGD
workers, `torchrun`, the grader's worker) speak it too.

The Turkish text lives in one gettext catalog, `locale/tr/LC_MESSAGES/effitrain_lessons.po` (its
compiled `.mo` beside it, written by `effitrain build`); `effitrain extract` adds every new English
message to it. In the package, a message is marked `_("...")` where it is shown, or `N_("...")`
where it is defined before a language is known (a constant), and translated with `_` when shown.

In a lesson cell:

    say("tiny_bert has {n:,} parameters", n=n_parameters)      # print, in the notebook's language
    title = phrase("{k} processes", k=NUM_PROCESSES)           # the same sentence, as a string

The template is English and the values are filled in with `str.format`, after translation.

Numbers follow the reader's conventions. English fills them in with `str.format` itself, so the
English edition prints what Python prints. Turkish writes thousands with a dot, decimals with a comma
and the percent sign first (3.000, 0,05, %15): `format_number` keeps Python's digits and rounding
(the format spec chooses them, as in English) and lets Babel (CLDR's `tr` locale) write them. So
`{n:,}` prints 1.234.567, `{x:.2f}` 0,05, `{x:.0%}` %15, `{x:g}` 0,0001 (an exponent stays `1e-05`).
A plain `{n}` prints an int without grouping in both languages ("2048" is unambiguous in both);
a template that wants the thousands marked says `{n:,}`. Anything else (text, `!r`) is filled in
as `str.format` fills it.
"""

from __future__ import annotations

import contextlib
import contextvars
import gettext as _gettext
import numbers
import os
import re
import string
from decimal import Decimal
from functools import cache
from pathlib import Path

LANGUAGES = {"en": "English", "tr": "Türkçe"}
DEFAULT = "en"
ENVIRONMENT = "EFFITRAIN_LANGUAGE"
DOMAIN = "effitrain_lessons"
LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"  # effitrain_lessons/locale
_SPEAKING: contextvars.ContextVar[str | None] = contextvars.ContextVar("effitrain_speaking", default=None)


def use_language(code: str) -> None:
    """Speak `code` ("en" or "tr") from now on, in this process and the ones it starts."""
    if code not in LANGUAGES:
        known = ", ".join(f"{key!r} ({name})" for key, name in LANGUAGES.items())
        raise ValueError(f"The lessons speak {known}, not {code!r}: call use_language with one of those.")
    os.environ[ENVIRONMENT] = code


def language() -> str:
    """The language in use: the one `speaking` or `use_language` chose, else English."""
    code = _SPEAKING.get() or os.environ.get(ENVIRONMENT, DEFAULT)
    return code if code in LANGUAGES else DEFAULT


@contextlib.contextmanager
def speaking(code: str):
    """Speak `code` in this thread only, for the `with` block (the grader judges several learners'
    cases at once, each in the language of their notebook)."""
    token = _SPEAKING.set(code)
    try:
        yield
    finally:
        _SPEAKING.reset(token)


@cache
def _catalog(code: str) -> _gettext.NullTranslations:
    return _gettext.translation(DOMAIN, LOCALE_DIR, languages=[code], fallback=True)


def translator(code: str | None = None):
    """The gettext function of language `code` (default: the one in use), for text written for
    someone other than this process's reader (the grader writes each learner's feedback in the
    language of their notebook)."""
    code = language() if code is None else code
    if code == DEFAULT or code not in LANGUAGES:
        return str
    return _catalog(code).gettext


def _(message: str) -> str:
    """`message` (English) in the language in use; itself where the catalog has no translation."""
    return translator()(message)


def N_(message: str) -> str:
    """Mark `message` for the catalog without translating it yet (for constants)."""
    return message


# Python's format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<grouping>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?",
    re.DOTALL,
)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@cache
def _percent_pattern(code: str) -> str:
    from babel import Locale

    return Locale.parse(code).percent_formats[None].pattern


def format_number(value, spec: str = "", code: str | None = None) -> str:
    """`format(value, spec)` written as a reader of language `code` (default: the one in use) reads
    numbers. English: exactly `format(value, spec)`. Turkish: the same digits (Python rounds, as in
    English), written by Babel: `format_number(0.15, ".0%")` -> "%15", `format_number(1234567, ",")`
    -> "1.234.567", `format_number(0.05, ".2f")` -> "0,05". Specs that do not write a decimal number
    (`x`, `b`, `c`, `o`, zero padding) are Python's in every language."""
    code = language() if code is None else code
    parts = _SPEC.fullmatch(spec)
    if (
        code == DEFAULT
        or code not in LANGUAGES
        or not _is_number(value)
        or parts is None
        or parts["type"] in {"b", "c", "o", "s", "x", "X"}
        or parts["zero"]
        or parts["align"] == "="
        or (parts["alt"] and parts["type"] != "%")
    ):
        return format(value, spec)
    from babel.numbers import format_decimal, format_percent

    kind = parts["type"] or ""
    precision = f".{parts['precision']}" if parts["precision"] is not None else ""
    # Python writes the digits; Babel writes them the reader's way
    text = format(value, f"{parts['sign'] or ''}{parts['z'] or ''}{precision}{kind}")
    sign = text[0] if text[0] in "+ " else ""
    body = text[len(sign) :]
    digits = re.fullmatch(r"(-?)(\d+)(?:\.(\d*))?(%|[eE][-+]\d+)?", body)
    if digits is None:  # inf, nan
        return format(value, spec)
    minus, whole, fraction, suffix = digits.groups()
    fraction = fraction or ""
    number = Decimal(f"{minus}{whole}.{fraction}" if fraction else f"{minus}{whole}")
    grouping = "#,##0" if parts["grouping"] else "0"
    if fraction:
        grouping += "." + "0" * len(fraction)
    if suffix == "%":
        pattern = _percent_pattern(code).replace("#,##0", grouping)
        written = format_percent(number / 100, pattern, locale=code)
    else:
        written = format_decimal(number, grouping, locale=code) + (suffix or "")
    written = sign + written
    if parts["width"]:
        written = format(written, f"{parts['fill'] or ' '}{parts['align'] or '>'}{parts['width']}")
    return written


class _NumberFormatter(string.Formatter):
    """`str.format` that writes numbers as language `code` reads them (`format_number`)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def format_field(self, value, format_spec: str) -> str:
        if _is_number(value):
            return format_number(value, format_spec, self.code)
        return super().format_field(value, format_spec)


def fill(template: str, values: dict, code: str | None = None) -> str:
    """`template` (already in language `code`) with `values` filled in: `str.format` in English,
    numbers written as a reader of `code` reads them otherwise."""
    code = language() if code is None else code
    if code == DEFAULT or code not in LANGUAGES:
        return template.format(**values)
    return _NumberFormatter(code).vformat(template, (), values)


def phrase(template: str, /, **values) -> str:
    """`template` in the language in use, with `values` filled in (`str.format`, numbers the
    reader's way)."""
    code = language()
    return fill(translator(code)(template), values, code)


def nphrase(singular: str, plural: str, n: int, /, **values) -> str:
    """`singular` or `plural`, whichever `n` asks for in the language in use, with `n` and `values`
    filled in."""
    code = language()
    if code == DEFAULT:
        chosen = singular if n == 1 else plural
    else:
        chosen = _catalog(code).ngettext(singular, plural, n)
    return fill(chosen, {"n": n, **values}, code)


def say(template: str, /, **values) -> None:
    """Print `template` in the language in use, with `values` filled in: a lesson's `print`."""
    print(phrase(template, **values))


class Sentence(str):
    """An English sentence that remembers its template and values, so that it can be said again in
    another language later (the grader records why a submission failed in English for the
    instructor, and tells the learner in the language of their notebook)."""

    template: str
    values: dict

    def __new__(cls, template: str, /, **values) -> Sentence:
        sentence = super().__new__(cls, template.format(**values))
        sentence.template, sentence.values = template, values
        return sentence

    # copied or pickled (dataclasses.asdict copies), it is made again from its parts
    def __getnewargs_ex__(self):
        return (self.template,), dict(self.values)

    def in_language(self, code: str) -> str:
        values = {key: in_language(value, code) for key, value in self.values.items()}
        return fill(translator(code)(self.template), values, code)


def in_language(text: str, code: str) -> str:
    """`text` in language `code`: a Sentence is translated, any other text is returned as it is."""
    return text.in_language(code) if isinstance(text, Sentence) else text
