"""Lesson 02's self-check questions; `lesson_quiz("02")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("When does `Trainer` turn gradient checkpointing on?"),
        [N_("when `Trainer(...)` is built"), N_("when `train()` starts"), N_("when `evaluate()` runs")],
        answer=1,
        why=N_(
            "Section 3 printed `False` once the trainer was built and `True` after `train()`: measure "
            "the model after training starts."
        ),
    ),
    Question(
        N_("Same seed, same data: what does checkpointing change in the accuracy and F1 the model reaches?"),
        [
            N_("it lowers them a little, as a price for the memory"),
            N_("nothing: the same operations run on the same inputs"),
            N_("it raises them, as a regularizer would"),
        ],
        answer=1,
        why=N_(
            "Checkpointing recomputes the same values it deleted, so the gradients and the metrics agree "
            "(section 4 measured both runs)."
        ),
    ),
    Question(
        N_("About how many FLOPs does one training step with checkpointing cost, against one without?"),
        [N_("the same"), "4/3", N_("twice")],
        answer=1,
        why=N_("Forward 1, backward about 2, plus one more forward of the layers: (1 + 2 + 1) / (1 + 2)."),
    ),
    Question(
        N_("The slide's `TrainingArguments(..., evaluation_strategy=\"epoch\")` on today's transformers:"),
        [
            N_("works as written"),
            N_("warns that the name is deprecated"),
            N_("raises a TypeError: the argument is now `eval_strategy`"),
        ],
        answer=2,
        why=N_(
            "`evaluation_strategy` was removed in transformers 4.51; "
            "`gradient_checkpointing=True` still works but warns."
        ),
    ),
)
