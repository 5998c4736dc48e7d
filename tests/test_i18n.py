"""effitrain_lessons.shared.i18n: English by default, the catalog's Turkish once a notebook asks for it."""

import copy
import os
import subprocess
import sys

import pytest

from effitrain_lessons.shared import i18n
from effitrain_lessons.shared.tables import Table


@pytest.fixture()
def turkish(monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")  # what use_language("tr") does; undone after the test


def test_english_is_the_default_and_says_every_message_as_written(monkeypatch):
    monkeypatch.delenv(i18n.ENVIRONMENT, raising=False)
    assert i18n.language() == "en"
    assert i18n._("hidden tests: {passed} of {total} passed") == "hidden tests: {passed} of {total} passed"
    assert i18n.phrase("{n:,} parameters", n=12345) == "12,345 parameters"
    assert (
        i18n.nphrase("{n} step", "{n} steps", 1) == "1 step"
        and i18n.nphrase("{n} step", "{n} steps", 3) == "3 steps"
    )


def test_turkish_comes_from_the_catalog_with_the_values_filled_in(turkish, capsys):
    template = "hidden tests: {passed} of {total} passed"
    translated = i18n._(template)
    assert translated != template and "{passed}" in translated and "{total}" in translated
    i18n.say(template, passed=2, total=3)
    assert capsys.readouterr().out == translated.format(passed=2, total=3) + "\n"
    assert i18n._("a sentence no catalog has") == "a sentence no catalog has"  # unknown text passes through


def test_tables_speak_the_language_in_use(turkish):
    table = Table(["validation loss", "synchronizations"], [[0.5, 3]])
    assert i18n._("validation loss") in str(table) and "validation loss" not in str(table)
    assert i18n._("synchronizations") in table._repr_html_()


def test_use_language_sets_what_processes_inherit(monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "en")
    i18n.use_language("tr")
    assert os.environ[i18n.ENVIRONMENT] == "tr" and i18n.language() == "tr"


def test_a_language_the_lessons_do_not_speak_gets_one_sentence():
    with pytest.raises(ValueError, match="use_language with one of those"):
        i18n.use_language("de")


def test_processes_a_lesson_starts_speak_its_language(turkish):
    code = "from effitrain_lessons.shared.i18n import _; print(_('hidden tests: {passed} of {total} passed'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), check=True
    ).stdout
    assert out.strip() == i18n._("hidden tests: {passed} of {total} passed")


def test_a_sentence_is_said_again_in_another_language():
    sentence = i18n.Sentence("did not finish within {limit:g} s (an endless loop?)", limit=60.0)
    assert sentence == "did not finish within 60 s (an endless loop?)"
    assert sentence.in_language("en") == sentence
    turkish = sentence.in_language("tr")
    assert turkish != sentence and "60" in turkish
    assert i18n.in_language("plain text", "tr") == "plain text"
    # its text has braces: copies must not format it again
    braces = i18n.Sentence("{what} of {{x}}", what="a set")
    copied = copy.deepcopy(braces)
    assert (
        copied == "a set of {x}"
        and copied.in_language("en") == "a set of {x}"
        and type(copied) is i18n.Sentence
    )


def test_every_message_a_test_looks_up_is_in_the_catalog():
    """Tests that look for a widget's or a check's words through `translator(...)` name them by
    msgid: a message renamed in the package must fail here, not silently stop matching on a page."""
    import ast
    from pathlib import Path

    import polib

    root = Path(__file__).resolve().parent
    catalog = root.parent / "effitrain_lessons" / "locale" / "tr" / "LC_MESSAGES" / "effitrain_lessons.po"
    msgids = {entry.msgid for entry in polib.pofile(str(catalog)) if not entry.obsolete}
    looked_up = []
    for path in sorted(root.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(
            isinstance(node, ast.ImportFrom) and any(alias.name == "translator" for alias in node.names)
            for node in ast.walk(tree)
        ):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                looked_up.append((path.name, node.args[0].value))
    assert looked_up, "no test looks a message up: the scan is broken"
    missing = [(name, text) for name, text in looked_up if text not in msgids]
    assert not missing, missing
