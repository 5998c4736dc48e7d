"""Lesson 01's self-check questions; `lesson_quiz("01")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_(
            "With `checkpoint(abc, x, weight, use_reentrant=False)`, "
            "how many times is B computed in one training step?"
        ),
        [
            N_("once"),
            N_("twice: in the forward pass and again in the backward pass"),
            N_("never: checkpoint keeps it"),
        ],
        answer=1,
        why=N_(
            "Checkpoint deletes A and B after the forward pass and "
            "reruns `abc` in the backward pass to get them back."
        ),
    ),
    Question(
        N_(
            "`checkpoint_sequential` cuts 12 layers into 3 segments. Which segment does the "
            "backward pass not recompute?"
        ),
        [
            N_("the first: its input is the step's input"),
            N_("the last: its activations are kept from the forward pass"),
            N_("none: every segment is recomputed once"),
        ],
        answer=1,
        why=N_(
            "The last segment is not checkpointed, so the backward pass starts on its kept "
            "activations; that is why the FLOPs grow x1.22, not x1.33, at k = 3."
        ),
    ),
    Question(
        N_(
            "A chain of 36 equal blocks, checkpointed with `checkpoint_sequential`. Which number of "
            "segments keeps the least activation memory?"
        ),
        ["6", "1", "36"],
        answer=0,
        why=N_(
            "Memory goes as n/k + k - 1, smallest at k = sqrt(36) = 6; k = 36 keeps every block's input, "
            "as much as no checkpointing."
        ),
    ),
    Question(
        N_(
            "You call `model.eval()` on a BERT with checkpointing enabled, then run forward and "
            "backward. What does checkpointing save?"
        ),
        [
            N_("the same as in `train()` mode"),
            N_("everything but the attention"),
            N_("nothing: Hugging Face models checkpoint only while training"),
        ],
        answer=2,
        why=N_("The layers check `self.training` before they checkpoint (section 4 measured it)."),
    ),
)
