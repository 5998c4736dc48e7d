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
"""

from __future__ import annotations

import contextlib
import contextvars
import gettext as _gettext
import os
from functools import cache
from pathlib import Path

LANGUAGES = {"en": "English", "tr": "Türkçe"}
DEFAULT = "en"
ENVIRONMENT = "EFFITRAIN_LANGUAGE"
DOMAIN = "effitrain_lessons"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
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


def phrase(template: str, /, **values) -> str:
    """`template` in the language in use, with `values` filled in (`str.format`)."""
    return _(template).format(**values)


def nphrase(singular: str, plural: str, n: int, /, **values) -> str:
    """`singular` or `plural`, whichever `n` asks for in the language in use, with `n` and `values`
    filled in."""
    code = language()
    if code == DEFAULT:
        chosen = singular if n == 1 else plural
    else:
        chosen = _catalog(code).ngettext(singular, plural, n)
    return chosen.format(n=n, **values)


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
        return translator(code)(self.template).format(**values)


def in_language(text: str, code: str) -> str:
    """`text` in language `code`: a Sentence is translated, any other text is returned as it is."""
    return text.in_language(code) if isinstance(text, Sentence) else text
