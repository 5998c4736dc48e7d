"""Lesson 09's self-check questions; `lesson_quiz("09")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_(
            "A model fits one GPU's memory for its weights, but not with its gradients and AdamW's state. "
            "Which ZeRO stage is the least that can help, and what does it split?"
        ),
        [
            N_("stage 1: the optimizer state, 8 of the 16 bytes a parameter"),
            N_("stage 3: only the parameters"),
            N_("none: checkpointing shrinks the gradients and the optimizer state"),
        ],
        answer=0,
        why=N_(
            "AdamW's two moments are half of the 16 bytes; stage 1 splits them among the processes. "
            "Checkpointing only shrinks the activations, which depend on the batch."
        ),
    ),
    Question(
        N_("What does fully_shard's reshard_after_forward=True change against False?"),
        [
            N_(
                "each block's whole parameters are freed after its forward pass and gathered again "
                "in the backward pass: less memory, more communication"
            ),
            N_("the gradients are no longer split"),
            N_("the optimizer state is kept whole in every process"),
        ],
        answer=0,
        why=N_(
            "Between steps both keep only the pieces; with True a process holds one block's whole "
            "parameters at a time, at the cost of a second all-gather per block (ZeRO-3)."
        ),
    ),
    Question(
        N_(
            "Four processes saved a sharded checkpoint with torch.distributed.checkpoint. "
            "Can 8 processes load it?"
        ),
        [
            N_("yes: each process reads the parts of the files its own pieces need"),
            N_("no: a sharded checkpoint loads only into the same number of processes"),
            N_("only after one process gathers the whole model and saves it again"),
        ],
        answer=0,
        why=N_(
            "Each process writes its pieces with a description of where they lie in the whole "
            "tensor; loading asks for the pieces of the new split, whatever the number of processes."
        ),
    ),
)
