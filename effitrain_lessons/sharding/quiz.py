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
            "In fp32, a model's weights and gradients fit one GPU, but not with AdamW's state as well. "
            "What is the least sharding that can help?"
        ),
        [
            N_("ZeRO-2: the gradients must be split before the state can be"),
            N_("ZeRO-1: it splits the optimizer state"),
            N_("ZeRO-3: only it splits the parameters"),
        ],
        answer=1,
        why=N_(
            "AdamW's two moments are half of the 16 bytes in fp32; ZeRO-1 splits them among the "
            "processes. Checkpointing shrinks only the activations, which depend on the batch."
        ),
    ),
    Question(
        N_("What does fully_shard's reshard_after_forward=True change against False?"),
        [
            N_("the gradients are no longer split among the processes after backward"),
            N_("the optimizer state is kept whole in every process"),
            N_("each block is freed after forward and gathered again"),
        ],
        answer=2,
        why=N_(
            "Between steps both keep only the pieces. With True a process holds about one block's "
            "whole parameters at a time during the step, at the cost of a second all-gather per block."
        ),
    ),
    Question(
        N_(
            "Predict: with 8 processes, what share of data parallel's bytes does ZeRO-1 leave the busiest "
            "process, for a model with many small tensors?"
        ),
        [
            N_("about 12 %: each process keeps an eighth of weights, gradients and state"),
            N_("about 50 %: only the optimizer state goes"),
            N_("about 56 %: only the state shrinks, to an eighth"),
        ],
        answer=2,
        why=N_(
            "4 + 4 bytes a parameter stay in every process; of AdamW's 8 bytes, an eighth: 9 of 16 "
            "bytes, about 56 %. Whole tensors spread evenly when none is large."
        ),
    ),
)
