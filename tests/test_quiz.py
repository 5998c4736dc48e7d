"""The self-check quiz and the public checks' comparison with a measurement."""

import re

import pytest

from effitrain_lessons.shared.checks import check_prediction
from effitrain_lessons.shared.quiz import Question, quiz

ADD = Question("What is `2 + 2`?", ["3", "`4`", "5"], answer=1, why="Two and two make four.")


def parts(widget, number):
    box = widget.children[number]
    prompt, choice, row = box.children
    button, result = row.children
    return prompt, choice, button, result


def test_checking_an_answer_says_right_with_the_reason_or_not_quite_without_it():
    widget = quiz(ADD, Question("Pick b.", ["a", "b"], answer=1, why="It is b."))
    prompt, choice, button, result = parts(widget, 0)
    assert "<code>2 + 2</code>" in prompt.value and choice.options[1] == ("b) 4", 1)
    button.click()
    assert "Pick an answer first." in result.value
    choice.value = 0
    button.click()
    assert "a) Not quite" in result.value and "four" not in result.value
    choice.value = 1
    button.click()
    assert "b) Right. Two and two make four." in result.value
    # each question its own
    assert "Pick an answer" in (parts(widget, 1)[2].click() or parts(widget, 1)[3].value)


def test_the_quiz_prints_as_text_where_widgets_cannot_run():
    assert repr(quiz(ADD)) == "1. What is `2 + 2`?\n   a) 3\n   b) `4`\n   c) 5"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(choices=["only"], answer=0), "at least two choices"),
        (dict(choices=["a", "b"], answer=2), "index of a choice, 0 to 1"),
    ],
)
def test_a_malformed_question_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Question("?", why="", **kwargs)
    with pytest.raises(TypeError, match="quiz takes Question"):
        quiz("What?")


def test_a_prediction_is_compared_with_the_measurement():
    check_prediction("tensor_bytes", 65_536, 65_536)
    check_prediction("ratio", 1.30, 1.333, rel=0.05)
    with pytest.raises(
        AssertionError, match=r"You predicted tensor_bytes = 16,384: that is not what was measured\. 4 bytes"
    ):
        check_prediction("tensor_bytes", 16_384, 65_536, why="4 bytes per float32.")
    with pytest.raises(
        AssertionError, match=r"You predicted tensor_bytes = 262,144: that is not what was measured\."
    ):
        check_prediction("tensor_bytes", 262_144, 65_536)
    with pytest.raises(AssertionError, match="still `...`"):
        check_prediction("tensor_bytes", ..., 65_536)
    with pytest.raises(AssertionError, match="should be a whole number; it is a float"):
        check_prediction("tensor_bytes", 65536.0, 65_536)
    with pytest.raises(AssertionError, match="should be a number; it is a str"):
        check_prediction("tensor_bytes", "65536", 65_536)
    with pytest.raises(
        AssertionError,
        match=r"You predicted recomputed = \{'mm': 1, 'relu': 0\}: that is not what was measured\. "
        r"Not what was measured: 'mm', 'relu'\.",
    ):
        check_prediction("recomputed", {"mm": 1, "relu": 0}, {"mm": 0, "relu": 1})
    check_prediction("peaks", {"a": 1.005, "b": 2.0}, {"a": 1.0, "b": 2.0}, rel=0.01)  # each within rel
    with pytest.raises(AssertionError, match="Not what was measured: 'a'"):
        check_prediction("peaks", {"a": 1.05, "b": 2.0}, {"a": 1.0, "b": 2.0}, rel=0.01)
    with pytest.raises(AssertionError, match="recomputed should be a dict; it is a list"):
        check_prediction("recomputed", [0, 1], {"mm": 0, "relu": 1})


MEASURED = 394_240


def printed_forms(value) -> list[str]:
    """Every way the measurement could be printed: plain, grouped (English, Turkish, spaced), repr."""
    grouped = f"{value:,}"
    return [
        str(value),
        repr(value),
        grouped,
        grouped.replace(",", "."),
        grouped.replace(",", " "),
        f"{value:_}",
    ]


@pytest.mark.parametrize(
    "predicted",
    [394_241, 394_239, 100, 10**9, 394_240.5, 3.5, "394240", None, [394_240], {"bytes": 1}],
    ids=repr,
)
@pytest.mark.parametrize("language", ["en", "tr"])
def test_a_wrong_prediction_is_never_told_the_measurement(predicted, language, monkeypatch):
    from effitrain_lessons.shared import i18n

    monkeypatch.setattr(i18n, "language", lambda: language)
    for measured, rel in ((MEASURED, 0.0), (float(MEASURED), 0.0), (MEASURED, 1e-7)):
        with pytest.raises(AssertionError) as failed:
            check_prediction("layer_bytes", predicted, measured, rel=rel, why="Re-read section 2.2.")
        said = str(failed.value)
        assert "Re-read section 2.2." in said
        for form in printed_forms(measured) + printed_forms(MEASURED):  # as a whole number, not inside one
            assert not re.search(rf"(?<![\w.,]){re.escape(form)}(?!\w|[.,]\d)", said), (form, said)


@pytest.mark.parametrize("language", ["en", "tr"])
def test_a_wrong_number_is_never_told_its_direction(language, monkeypatch):
    """Too high and too low read the same, apart from the learner's own number: a check that said
    which way would let a learner find any answer by halving the distance."""
    from effitrain_lessons.shared import i18n

    monkeypatch.setattr(i18n, "language", lambda: language)
    said = {}
    for predicted in (394_241, 394_239, 3.5, 10**9):
        with pytest.raises(AssertionError) as failed:
            check_prediction("layer_bytes", predicted, 394_240.0, why="Re-read section 2.")
        said[predicted] = re.sub(r"= \S+:", "= N:", str(failed.value))
    assert len(set(said.values())) == 1, said
    for words in ("high", "low", "yüksek", "düşük", "more", "less", "fazla", "az"):
        assert not re.search(rf"\b{words}\b", said[3.5], re.IGNORECASE), said[3.5]
    with pytest.raises(AssertionError) as failed:
        check_prediction("counts", {"mm": 3, "relu": 0}, {"mm": 2, "relu": 1})
    assert "'mm', 'relu'" in str(failed.value) and "2" not in str(failed.value).replace("'", "")


def test_a_wrong_number_in_turkish(monkeypatch):
    from effitrain_lessons.shared import i18n

    monkeypatch.setattr(i18n, "language", lambda: "tr")
    with pytest.raises(AssertionError, match="bir tam sayı olmalı; ama türü float"):
        check_prediction("layer_bytes", 394_240.0, 394_240)


def test_a_failed_check_does_not_print_its_test_source():
    from effitrain_lessons.shared.checks import Case, CheckResult, run_case

    source = "secret = 394240\nassert answer == secret, 'too low'\n"
    result = CheckResult("q", (run_case(Case(source, False), 1, {"answer": 1}),))
    shown = repr(result) + result._repr_html_()
    assert "too low" in shown and "394240" not in shown and "secret" not in shown


def test_a_prediction_that_only_claims_to_be_a_number_fails():
    class Claims:
        __class__ = property(lambda self: int)

        def __eq__(self, other):
            return True

        def __sub__(self, other):
            return self

        def __abs__(self):
            return 0

        def __repr__(self):
            return "Claims()"

    with pytest.raises(AssertionError, match="should be a number"):
        check_prediction("tensor_bytes", Claims(), 65_536)
    with pytest.raises(AssertionError, match="recomputed should be a dict; it is a Claims"):
        check_prediction("recomputed", Claims(), {"mm": 0})


def test_a_lesson_quiz_comes_from_the_package_and_an_unknown_lesson_is_named():
    from effitrain_lessons.first_principles.quiz import QUESTIONS
    from effitrain_lessons.shared.quiz import lesson_quiz

    assert len(lesson_quiz("01").children) == len(QUESTIONS) >= 3
    with pytest.raises(ValueError, match="There is no quiz for lesson '99'; there are quizzes for 00, 01"):
        lesson_quiz("99")
