"""Lesson 05's self-check questions; `lesson_quiz("05")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("What does DiLoCo all-reduce at the end of a round of H inner steps?"),
        [
            N_("the gradients of the last step"),
            N_("the pseudo-gradient: the global parameters minus each process's, averaged"),
            N_("the inner optimizer's moments"),
        ],
        answer=1,
        why=N_(
            "The change of the parameters over the round, averaged over the processes, is what the outer "
            "optimizer steps with; the inner optimizer's state stays in each process."
        ),
    ),
    Question(
        N_("DiLoCo with an outer SGD at learning rate 1 and no momentum is:"),
        [
            N_("Local SGD: the new global parameters are the processes' average"),
            N_("data parallel"),
            N_("no training at all: the outer step cancels the inner ones"),
        ],
        answer=0,
        why=N_(
            "θ − 1 · (θ − mean(θᵢ)) = mean(θᵢ): section 3 measured "
            "the two programs agreeing to float32's rounding."
        ),
    ),
    Question(
        N_(
            "DiLoCo with the paper's outer optimizer stalls at H = 8. Which run tests the hypothesis "
            "that its outer step outgrows the workers' change?"
        ),
        [
            N_("the same H, data and seeds, with a smaller outer learning rate or no momentum"),
            N_("the same outer optimizer at H = 32"),
            N_("the same run with the pseudo-gradient sent in bf16"),
        ],
        answer=0,
        why=N_(
            "Only the size of the outer step changes, so a run that then learns points at it. At H = 32 "
            "the communication and the number of outer steps change too; bf16 changes neither."
        ),
    ),
    Question(
        N_("Bucketing the pseudo-gradient into one flat buffer changes:"),
        [
            N_("the bytes sent per synchronization"),
            N_("the number of all-reduce calls per synchronization, from one per tensor to one"),
            N_("the number of synchronizations"),
        ],
        answer=1,
        why=N_("The same bytes travel in one call instead of 25 here, which saves each call's fixed cost."),
    ),
    Question(
        N_('"500 times less communication" at H = 500 compared with data parallel counts:'),
        [
            N_("synchronizations (and bytes) per training step"),
            N_("compute per training step"),
            N_("the loss reached"),
        ],
        answer=0,
        why=N_(
            "One synchronization every 500 steps instead of every step, each with a full model's bytes; "
            "every worker still computes every step."
        ),
    ),
)
