"""A name imported from the module it has left (effitrain_lessons.moved): a learner's notebook written
against the old place still runs, gets the object, and reads once, in its language, where it went."""

import importlib
import warnings

import pytest

from effitrain_lessons import i18n
from effitrain_lessons.moved import SCRIPT

OLD_PLACES = ("viz", "checkpointing", "local_sgd", "device", "quiz", "data")
MOVED = [
    (old, name, place)
    for old in OLD_PLACES
    for name, place in importlib.import_module(f"effitrain_lessons.{old}").MOVED.items()
]


def imported(statement: str) -> tuple[dict, list[warnings.WarningMessage]]:
    """Run `statement` as a notebook cell would; what it bound, and every warning it raised."""
    namespace = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning counted, not only the first at this line
        exec(compile(statement, "<cell>", "exec"), namespace)
    return namespace, caught


def test_every_old_place_forwards_what_it_held():
    assert {old for old, _name, _place in MOVED} == set(OLD_PLACES)
    # every figure, widget and colour table
    assert len([1 for old, _name, _place in MOVED if old == "viz"]) == 23


@pytest.mark.parametrize("old, name, place", [m for m in MOVED if not m[2].endswith(SCRIPT)])
def test_an_old_import_gives_the_object_and_one_warning_that_says_where_it_went(old, name, place):
    namespace, caught = imported(f"from effitrain_lessons.{old} import {name}")
    assert namespace[name] is getattr(importlib.import_module(place), name)
    assert [w.category for w in caught] == [FutureWarning]
    assert str(caught[0].message) == (
        f"{name} moved to {place}: import it from there; the old place goes in the next minor version."
    )
    assert caught[0].filename == "<cell>"  # it points at the learner's line, not at the package


def test_the_sentence_is_in_the_lessons_language(monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")  # what a Turkish edition's use_language("tr") does
    namespace, caught = imported("from effitrain_lessons.viz import plot_sync_timeline")
    assert namespace["plot_sync_timeline"].__module__ == "effitrain_lessons.local_sgd_figures"
    assert [str(w.message) for w in caught] == [
        "plot_sync_timeline artık effitrain_lessons.local_sgd_figures modülünde: oradan içe aktarın; eski "
        "yer bir sonraki ara sürümde kaldırılacak."
    ]


def test_a_name_that_left_the_package_says_where_it_went(monkeypatch):
    with pytest.raises(
        ImportError, match=r"train_tokenizer moved out of the package, to tools/make_course_data\.py"
    ):
        imported("from effitrain_lessons.data import train_tokenizer")
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")
    with pytest.raises(
        ImportError,
        match=r"train_tokenizer paketten çıktı; şimdi kursun deposundaki "
        r"tools/make_course_data\.py betiğinde",
    ):
        imported("from effitrain_lessons.data import train_tokenizer")


def test_a_name_that_never_was_there_is_missing_as_usual():
    from effitrain_lessons import viz

    assert not hasattr(viz, "plot_everything")
    with pytest.raises(ImportError, match="cannot import name 'plot_everything'"):
        imported("from effitrain_lessons.viz import plot_everything")
    _namespace, caught = imported("import effitrain_lessons.viz")
    assert caught == []  # importing the old module itself says nothing: only a moved name does
