"""Lesson 1's reports: what its cells measured, said in the lesson's language.

The cells run the technique and measure it (`training_memory`, `trace_step`, `log_policy`,
`record_saved_tensors`, a checkpointed step on a frozen input); these functions turn the numbers into
the lines the cells print, through the package catalog, so that a Turkish edition prints them in
Turkish, with Turkish numbers. Each returns the text to `print`. Traced cases side by side are
`checkpointing.compare_traces`; the sweep over k prints itself (`SegmentSweep`).

Used by lesson 1, sections 1, 2 and 4, in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from effitrain_lessons.first_principles.checkpointing import PolicyLog
from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.memory import TrainingMemory
from effitrain_lessons.shared.tables import format_bytes
from effitrain_lessons.shared.tracing import StepTrace


def batch_label(key: int | str) -> str:
    """A measured setting's name: a batch size (an int) as "batch 8", any other label translated."""
    return phrase("batch {n}", n=key) if isinstance(key, int) else _(key)


# Section 1 -------------------------------------------------------------------------------------


def activation_shares(breakdowns: Mapping[int | str, TrainingMemory]) -> str:
    """Each measured step's activations as a share of all it holds, one line per setting:
    "batch 8: activations are 64% of 9.70 MiB". `breakdowns` maps a batch size (or a label) to
    `training_memory`'s result, as `plot_memory_breakdown` takes it."""
    if not breakdowns:
        raise ValueError(_("activation_shares needs at least one measured TrainingMemory, e.g. {8: ...}."))
    return "\n".join(
        phrase(
            "{label}: activations are {share:.0%} of {total}",
            label=batch_label(key),
            share=memory.activations / memory.total,
            total=format_bytes(memory.total),
        )
        for key, memory in breakdowns.items()
    )


# Section 2 -------------------------------------------------------------------------------------


def kept_by_policy(log: PolicyLog, trace: StepTrace) -> str:
    """What selective checkpointing keeps, measured two independent ways: the outputs the policy
    answered MUST_SAVE for (`log_policy`'s log), and what the step still held when the backward pass
    started (`trace_step`). The two lines agree when the trace sees the policy's cache."""
    return "\n".join(
        [
            phrase(
                "the policy kept {kept} -> {kept_bytes}",
                kept=log.kept,
                kept_bytes=format_bytes(log.kept_bytes),
            ),
            phrase(
                "still in memory when the backward pass started: {kept_bytes}",
                kept_bytes=format_bytes(trace.kept_bytes),
            ),
        ]
    )


# Section 4 -------------------------------------------------------------------------------------


def saved_by_mode(saved: Mapping[tuple[str, bool], int]) -> str:
    """Bytes saved for backward in each mode, without and with checkpointing, one line per mode:
    `saved` maps (mode, checkpointing) to bytes, as `record_saved_tensors` counted them, with mode
    "train" or "eval"."""
    modes = list(dict.fromkeys(mode for mode, _checkpointing in saved))
    for mode in modes:
        if (mode, False) not in saved or (mode, True) not in saved:
            raise ValueError(
                phrase("saved_by_mode needs the bytes of {mode}() without and with checkpointing.", mode=mode)
            )
    return "\n".join(
        phrase(
            "{mode:8} saved for backward without checkpointing: {without:>10}, with: {checkpointed:>10}",
            mode=mode + "()",
            without=format_bytes(saved[mode, False]),
            checkpointed=format_bytes(saved[mode, True]),
        )
        for mode in modes
    )


def missing_gradients(missing: Mapping[bool, int], warned: Mapping[bool, Iterable], weights: int) -> str:
    """For each `use_reentrant`, how many of the checkpointed body's `weights` weights got no
    gradient (`missing`), and under it each warning the step raised (`warned`: what
    `warnings.catch_warnings(record=True)` caught, or the messages), the only sign of the loss."""
    lines = []
    for reentrant, count in missing.items():
        lines.append(
            phrase(
                "use_reentrant={reentrant}: {missing} of {weights} weights of the body got no gradient",
                reentrant=reentrant,
                missing=count,
                weights=weights,
            )
        )
        for warning in warned.get(reentrant, ()):
            message = getattr(warning, "message", warning)
            lines.append("    " + phrase('the only sign, a warning: "{message}"', message=message))
    return "\n".join(lines)
