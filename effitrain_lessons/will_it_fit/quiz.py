"""Lesson 06's self-check questions; `lesson_quiz("06")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("Which change leaves the activations a training step saves for backward as they are?"),
        [
            N_("checkpointing every layer"),
            N_("SDPA (fused) attention instead of eager"),
            N_("SGD instead of AdamW"),
            N_("bf16 mixed precision"),
        ],
        answer=2,
        why=N_(
            "The optimizer's state depends on the parameters only; the activations depend on the batch, "
            "the sequence, the attention, the precision and checkpointing (section 4's bars)."
        ),
    ),
    Question(
        N_(
            "With full checkpointing, what does a transformer "
            "layer keep between the forward and the backward pass?"
        ),
        [
            N_("nothing at all"),
            N_("its input: 2·s·b·h bytes in 16 bits"),
            N_("its matrix products' outputs"),
            N_("its a·s·s attention scores"),
        ],
        answer=1,
        why=N_(
            "Checkpoint keeps the layer's input and recomputes the rest in the backward pass: "
            "Korthikanti et al.'s s·b·h·(34 + 5·a·s/h) becomes 2·s·b·h."
        ),
    ),
    Question(
        N_("Why does the 5·a·s/h term of Korthikanti et al.'s formula matter at long sequences?"),
        [
            N_(
                "it grows with s², the rest with s: for BERT-base at s = 512 it is 40, more than the other 34"
            ),
            N_("it counts the optimizer's state, which grows with the sequence"),
            N_("it matters only at short sequences"),
        ],
        answer=0,
        why=N_(
            "The a score matrices of s × s per sequence (the softmax's output, its dropout mask) grow "
            "with the square of the sequence; fused attention (SDPA) keeps none of them."
        ),
    ),
    Question(
        N_("Gradient accumulation 4, at the same effective batch, trades:"),
        [
            N_(
                "time for memory: four smaller forward and backward passes per step, a quarter of the "
                "activations, the same update"
            ),
            N_("accuracy for memory: the update is that of a smaller batch"),
            N_("memory for time: fewer, larger steps"),
        ],
        answer=0,
        why=N_(
            "The micro-batches' gradients add up to the whole batch's (each "
            "loss scaled by 1/4); parameters, gradients and optimizer state "
            "stay as they are, the activations shrink four times."
        ),
    ),
)
