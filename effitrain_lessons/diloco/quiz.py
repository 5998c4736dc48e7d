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
        N_("Why does DiLoCo with the paper's outer optimizer stall at H = 8 on this model?"),
        [
            N_("it sends too few bytes to learn"),
            N_(
                "its outer step grows to several times the workers' averaged change: momentum keeps "
                "pushing the way earlier rounds went"
            ),
            N_("the workers walk apart and their average cancels out"),
        ],
        answer=1,
        why=N_(
            "Section 4 measured the outer step against the averaged pseudo-gradient: several times it at "
            "H = 8, near it in the runs that learn. DiLoCo at H = 32 sends even fewer bytes and learns."
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
