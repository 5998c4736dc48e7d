"""Lesson 07's self-check questions; `lesson_quiz("07")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_(
            "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block)) and "
            "checkpoint(block, x, use_reentrant=False) in forward, on every Block: what differs?"
        ),
        [
            N_("nothing measured: the same bytes kept, the same FLOPs, the same gradients"),
            N_("the wrapper keeps less, because it wraps from outside"),
            N_("the wrapper's gradients differ slightly"),
        ],
        answer=0,
        why=N_(
            "Both run each Block under the same non-reentrant checkpoint; the wrapper only changes "
            "where the call is written (and the parameters' names)."
        ),
    ),
    Question(
        N_("On a machine without a GPU, what does torch.autograd.graph.save_on_cpu() free?"),
        [
            N_("nothing: host and device memory are the same memory, so nothing moves"),
            N_("all the saved activations"),
            N_("the parameters' copies"),
        ],
        answer=0,
        why=N_(
            "It copies what autograd saves to the CPU; a tensor already there stays where it is. "
            "To free memory on a CPU the saved tensors must go somewhere else, such as a disk."
        ),
    ),
    Question(
        N_(
            "Every block is checkpointed and the saved bytes are small. What can still decide "
            "whether a training step fits?"
        ),
        [
            N_("the gradients, the optimizer's state and the block rebuilt in the backward pass"),
            N_("nothing: the saved bytes are the peak"),
            N_("only the parameters"),
        ],
        answer=0,
        why=N_(
            "The peak of a step adds what the saved bytes never show: the block recomputed during "
            "the backward pass, a gradient per parameter and, on the first step, AdamW's two moments."
        ),
    ),
)
