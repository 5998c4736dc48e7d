"""Lesson 08's self-check questions; `lesson_quiz("08")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("Why does bf16 train without a loss scaler, while fp16 needs one?"),
        [
            N_("bf16 has fp32's range: small gradients do not round to zero"),
            N_("bf16 has more digits than fp16"),
            N_("bf16's matrix products run in fp32"),
        ],
        answer=0,
        why=N_(
            "bf16 keeps fp32's 8 exponent bits and gives up digits; fp16 keeps more digits but its "
            "smallest value is about 6e-8, and values below half of it become zero."
        ),
    ),
    Question(
        N_("Under torch.autocast, what does a Linear layer save for its backward pass?"),
        [
            N_("its input, cast to 16 bits, and a 16-bit copy of its weight"),
            N_("its input in fp32 and nothing else"),
            N_("its output in 16 bits"),
        ],
        answer=0,
        why=N_(
            "The backward pass needs the input for the weight's gradient and the weight for the "
            "input's gradient; autocast saves both in the type the product ran in."
        ),
    ),
    Question(
        N_(
            "A torch.amp step with AdamW: how many bytes does it hold a parameter once the step is "
            "over, and where are the 16-bit weights?"
        ),
        [
            N_(
                "16: fp32 weights, fp32 gradients and two moments; the 16-bit copies live only from "
                "forward to backward"
            ),
            N_("8: 16-bit weights and gradients, 4 for the moments"),
            N_("12: the fp32 weights are dropped after the cast"),
        ],
        answer=0,
        why=N_(
            "torch.amp keeps the model in fp32; autocast casts the weights on the fly, and the copies "
            "saved for backward go once the backward pass has used them."
        ),
    ),
)
