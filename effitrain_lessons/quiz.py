"""A lesson's self-check quiz: multiple-choice questions answered with immediate feedback.

A lesson's questions live in `effitrain_lessons.quizzes` (`Question`, and `QUIZZES` by lesson);
`lesson_quiz("NN")` shows lesson NN's. The quiz shows every prompt, choice, reason and button in the
language in use (`effitrain_lessons.i18n`), so each edition asks them in its own language. Nothing
is graded: a learner checks their own understanding before the graded exercises. Where widgets
cannot run (a static viewer, a script), the quiz prints as text.
"""

from __future__ import annotations

import html
import re

from effitrain_lessons import quizzes
from effitrain_lessons.i18n import N_, _, phrase
from effitrain_lessons.moved import moved_names

CHECK = N_("Check")  # the button's word, translated where shown: the language is chosen after import

# A question is defined beside the questions now (so that the bank imports nothing from here).
MOVED = {"Question": "effitrain_lessons.quizzes"}
__getattr__ = moved_names(__name__, MOVED)


def _inline_code(text: str) -> str:
    """`code` in a prompt or choice, as the lesson's markdown writes it, rendered as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def quiz(*questions: quizzes.Question):
    """Show `questions` as radio buttons, each with a Check button and its feedback.

    Returns the widget (a cell that ends with `quiz(...)` displays it); its plain-text form, shown
    where widgets cannot run, lists the questions and their choices.
    """
    if not questions or not all(isinstance(q, quizzes.Question) for q in questions):
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
            (f"{quizzes.letter(i)}) {_(choice).replace('`', '')}", i)
            for i, choice in enumerate(question.choices)
        ]
        choice = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
        button = widgets.Button(description=_(CHECK))
        result = widgets.HTML()

        def check(_button, question=question, choice=choice, result=result) -> None:
            colour = "#1a7f37" if choice.value == question.answer else "#cf222e"
            # which click this answers
            picked = "" if choice.value is None else f"{quizzes.letter(choice.value)}) "
            feedback = _inline_code(question.feedback(choice.value))
            result.value = f"<span style='color: {colour}'>{picked}{feedback}</span>"

        button.on_click(check)
        prompt = widgets.HTML(f"<b>{number}.</b> {_inline_code(_(question.prompt))}")
        items.append(widgets.VBox([prompt, choice, widgets.HBox([button, result])]))
    return Quiz(items)


def lesson_quiz(lesson: str):
    """The quiz of lesson `lesson` ("00" to "06"), as `quiz` shows it."""
    if lesson not in quizzes.QUIZZES:
        raise ValueError(
            phrase(
                "There is no quiz for lesson {lesson!r}; there are quizzes for {lessons}.",
                lesson=lesson,
                lessons=", ".join(sorted(quizzes.QUIZZES)),
            )
        )
    return quiz(*quizzes.QUIZZES[lesson])
