"""Lesson 00's self-check questions; `lesson_quiz("00")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("What does `saved_bytes` count?"),
        [
            N_("every byte the step allocates"),
            N_("the activations autograd keeps from the forward pass for the backward pass"),
            N_("the model's parameters and gradients"),
        ],
        answer=1,
        why=N_(
            "Parameters and their gradients take the same bytes whatever the batch; the saved activations "
            "grow with it, and they are what checkpointing reduces."
        ),
    ),
    Question(
        N_("The step's `flops` are what `FlopCounterMode` counts. Which work is in them?"),
        [
            N_("matrix products (and convolutions, attention)"),
            N_("every operation, activations and dropout included"),
            N_("only the forward pass"),
        ],
        answer=0,
        why=N_(
            "FlopCounterMode counts matrix products, never "
            "elementwise work, in the forward and the backward pass."
        ),
    ),
    Question(
        N_("Why do the lessons train on generated sentence pairs and not on the real MRPC?"),
        [
            N_("the real MRPC is too small"),
            N_("generated data makes checkpointing save more memory"),
            N_("they run offline and in seconds on a CPU, with the real data's columns and task"),
        ],
        answer=2,
        why=N_(
            "The real MRPC needs a network; the generated pairs have its shape, and "
            '`load_mrpc(source="hub")` loads the real one online.'
        ),
    ),
)
