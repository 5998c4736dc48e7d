"""A lesson's self-check quiz: multiple-choice questions answered with immediate feedback.

What a question is (`Question`: its choices, its answer, the feedback a learner reads) is defined
here; each lesson's questions live in its own package (`effitrain_lessons.<lesson>.quiz`), and
`lesson_quiz("NN")` shows lesson NN's. The quiz shows every prompt, choice, reason and button in the
language in use (`effitrain_lessons.shared.i18n`), so each edition asks them in its own language. Nothing
is graded: a learner checks their own understanding before the graded exercises. Where widgets
cannot run (a static viewer, a script), the quiz prints as text.
"""

from __future__ import annotations

import html
import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from effitrain_lessons.lessons import LESSONS
from effitrain_lessons.shared.i18n import N_, _, phrase

# translated where shown: the language is chosen after import
FEEDBACK = {
    "right": N_("Right."),
    "wrong": N_("Not quite: try another answer."),
    "pick": N_("Pick an answer first."),
}


@dataclass(frozen=True)
class Question:
    """One question: `answer` is the index of the right choice, `why` the sentence shown once it is found."""

    prompt: str
    choices: Sequence[str]
    answer: int
    why: str

    def __post_init__(self) -> None:
        if len(self.choices) < 2:
            raise ValueError(
                phrase(
                    "A question needs at least two choices, got {count}: {prompt!r}.",
                    count=len(self.choices),
                    prompt=self.prompt,
                )
            )
        if not isinstance(self.answer, int) or not 0 <= self.answer < len(self.choices):
            raise ValueError(
                phrase(
                    "answer must be the index of a choice, 0 to {last}, got {answer!r}.",
                    last=len(self.choices) - 1,
                    answer=self.answer,
                )
            )

    def feedback(self, choice: int | None) -> str:
        """What the learner reads after checking `choice` (an index, or None for no answer)."""
        if choice is None:
            return _(FEEDBACK["pick"])
        return f"{_(FEEDBACK['right'])} {_(self.why)}" if choice == self.answer else _(FEEDBACK["wrong"])

    def text(self, number: int) -> str:
        lines = [f"{number}. {_(self.prompt)}"]
        lines += [f"   {letter(i)}) {_(choice)}" for i, choice in enumerate(self.choices)]
        return "\n".join(lines)


def letter(index: int) -> str:
    """The letter a choice is listed under: 0 -> "a"."""
    return chr(ord("a") + index)


CHECK = N_("Check")  # the button's word, translated where shown: the language is chosen after import


def _inline_code(text: str) -> str:
    """`code` in a prompt or choice, as the lesson's markdown writes it, rendered as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def quiz(*questions: Question):
    """Show `questions` as radio buttons, each with a Check button and its feedback.

    Returns the widget (a cell that ends with `quiz(...)` displays it); its plain-text form, shown
    where widgets cannot run, lists the questions and their choices.
    """
    if not questions or not all(isinstance(q, Question) for q in questions):
        raise TypeError(
            _(
                "quiz takes Question(...) objects, "
                "e.g. quiz(Question('2 + 2?', ['3', '4'], answer=1, why='...'))."
            )
        )
    import ipywidgets as widgets

    class Quiz(widgets.VBox):
        def __repr__(self) -> str:
            return "\n\n".join(q.text(i) for i, q in enumerate(questions, 1))

    items = []
    for number, question in enumerate(questions, 1):
        options = [
            (f"{letter(i)}) {_(choice).replace('`', '')}", i) for i, choice in enumerate(question.choices)
        ]
        choice = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
        button = widgets.Button(description=_(CHECK))
        result = widgets.HTML()

        def check(_button, question=question, choice=choice, result=result) -> None:
            colour = "#1a7f37" if choice.value == question.answer else "#cf222e"
            # which click this answers
            picked = "" if choice.value is None else f"{letter(choice.value)}) "
            feedback = _inline_code(question.feedback(choice.value))
            result.value = f"<span style='color: {colour}'>{picked}{feedback}</span>"

        button.on_click(check)
        prompt = widgets.HTML(f"<b>{number}.</b> {_inline_code(_(question.prompt))}")
        items.append(widgets.VBox([prompt, choice, widgets.HBox([button, result])]))
    return Quiz(items)


def lesson_quiz(lesson: str):
    """The quiz of lesson `lesson` ("00", "01", ...), as `quiz` shows it: the questions in its
    package's `quiz` module (`effitrain_lessons.lessons` says which package that is)."""
    found = {each.number: each for each in LESSONS}
    if lesson not in found:
        raise ValueError(
            phrase(
                "There is no quiz for lesson {lesson!r}; there are quizzes for {lessons}.",
                lesson=lesson,
                lessons=", ".join(found),
            )
        )
    return quiz(*importlib.import_module(f"{found[lesson].package}.quiz").QUESTIONS)
