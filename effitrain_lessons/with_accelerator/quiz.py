"""Lesson 03's self-check questions; `lesson_quiz("03")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_(
            "Inside `accelerator.accumulate(model)` with 2 accumulation steps, what does "
            "`optimizer.step()` do on the first micro-batch?"
        ),
        [
            N_("it updates the weights with half the gradient"),
            N_("nothing: the prepared optimizer skips its step until the last micro-batch"),
            N_("it raises an error"),
        ],
        answer=1,
        why=N_(
            "The prepared optimizer steps only when the gradients are synchronized, on the last "
            "micro-batch; the scheduler follows it."
        ),
    ),
    Question(
        N_("With 2 accumulation steps, a linear schedule sized `len(dataloader) * epochs` ends where?"),
        [N_("at zero"), N_("at half the peak learning rate"), N_("at twice the peak")],
        answer=1,
        why=N_(
            "It counts micro-batches but steps once per optimizer "
            "step, so it gets half way: section 2 measured it."
        ),
    ),
    Question(
        N_("Dropout on, same seed, same batch: the gradients with checkpointing, against those without, are"),
        [
            N_("identical to the last bit"),
            N_("equal within float32 rounding"),
            N_("different: dropout draws new masks when the layer reruns"),
        ],
        answer=0,
        why=N_(
            "Checkpointing restores the random state before it "
            "recomputes, so dropout draws the same masks (section 3)."
        ),
    ),
    Question(
        N_("Two micro-batches of 8, accumulated, against one batch of the same 16 rows: the gradients are"),
        [N_("identical to the last bit"), N_("equal within float32 rounding"), N_("twice as large")],
        answer=1,
        why=N_(
            "The sums run in a different order (two products and an addition), and floating-point "
            "addition is not associative (section 4)."
        ),
    ),
)
