"""Lesson 04's self-check questions; `lesson_quiz("04")` shows them.

They live here, not in the lesson's cells, so that the answers are not in view; every prompt,
choice and `why` is marked `N_` for the catalog and translated where the quiz shows it.
"""

from __future__ import annotations

from effitrain_lessons.shared.i18n import N_
from effitrain_lessons.shared.quiz import Question

QUESTIONS: tuple[Question, ...] = (
    Question(
        N_("What does Local SGD average between the processes every K steps?"),
        [N_("the gradients"), N_("the model's parameters"), N_("the losses")],
        answer=1,
        why=N_(
            "Each process trains on its own for K calls of `local_sgd.step()`, "
            "then the processes average their parameters, one all-reduce per parameter tensor."
        ),
    ),
    Question(
        N_('Which process is the slide\'s "driver node" in data parallel training?'),
        [
            N_("rank 0, which collects the gradients and sends back the average"),
            N_("none: an all-reduce is symmetric, every process sends and receives"),
            N_("the fastest process"),
        ],
        answer=1,
        why=N_(
            "DDP all-reduces the gradients peer to peer, and LocalSGD the parameters: every process ends "
            "with the same average."
        ),
    ),
    Question(
        N_("`LocalSGD` in a run with one process:"),
        [
            N_("averages every K steps as usual"),
            N_("does nothing: there is no other copy to average with"),
            N_("raises an error"),
        ],
        answer=1,
        why=N_(
            "With one process the averaging is skipped; a launch that starts fewer processes than you "
            "meant trains without any."
        ),
    ),
    Question(
        N_("Raising K from 4 to 16 for the same number of steps:"),
        [
            N_("about a quarter of the synchronizations, and the copies drift further apart in between"),
            N_("4 times the synchronizations"),
            N_("the same loss whatever K, for free"),
        ],
        answer=0,
        why=N_(
            "Fewer averages mean less communication; the price is the "
            "drift between them, which can raise the loss: section 4 weighs it."
        ),
    ),
    Question(
        N_(
            "A loop calls `local_sgd.step()` once after its batch loop instead of once per batch "
            "(12 batches, `local_sgd_steps=4`). The processes average:"
        ),
        [
            N_("3 times, as with the call in the batch loop, and once more on exit"),
            N_("once, when the LocalSGD block exits"),
            N_("never: LocalSGD then all-reduces the gradients instead"),
        ],
        answer=1,
        why=N_(
            "`LocalSGD` counts its own `step()` calls: one call never reaches K, so only the "
            "average on exit is left."
        ),
    ),
    Question(
        N_(
            "A link's latency per call grows and its bandwidth stays. The K from which Local SGD "
            "is faster than data parallel:"
        ),
        [
            N_("grows: an average pays the latency once per call, 26 calls, a data-parallel step once"),
            N_("falls: Local SGD communicates less often"),
            N_("stays: only the bytes count"),
        ],
        answer=0,
        why=N_(
            "In section 5's model an average costs 26 latencies plus the bytes, a step of data "
            "parallel one latency plus the same bytes: the more the latency weighs, the larger K "
            "must be."
        ),
    ),
)
