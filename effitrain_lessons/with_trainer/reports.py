"""Lesson 2's results in words: what its cells measured, said in the lesson's language.

The lesson's cells build `TrainingArguments` and `Trainer`, train, evaluate and measure; the lines
that compare what they measured are written here. Each function takes what a cell measured and
returns a result that prints itself (`print(result)`) in the language in use, or a `Table`. Nothing
here trains or measures.

Used by lesson 2, sections 2 to 8, in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.memory import StepReport, format_bytes, format_flops
from effitrain_lessons.shared.metrics import majority_baseline
from effitrain_lessons.shared.tables import ShowsAsLines, Table

# Section 2 ------------------------------------------------------------------------------------

# What today's transformers refuses of the slide's code, by the argument it names, and the fix.
FIXES = {
    "evaluation_strategy": N_(
        "-> `evaluation_strategy` was renamed `eval_strategy` "
        "(the old name was removed in transformers 4.51)."
    ),
    "tokenizer": N_("-> pass it as processing_class=tokenizer"),
}


@dataclass(frozen=True, repr=False)
class Refusal(ShowsAsLines):
    """A `TypeError` transformers raised, and the fix where the lesson knows it."""

    error: TypeError

    def lines(self) -> list[str]:
        said = [phrase('TypeError: "{message}"', message=self.error)]
        fix = next((fix for name, fix in FIXES.items() if f"'{name}'" in str(self.error)), None)
        return said + ([_(fix)] if fix else [])


def explain_refusal(error: TypeError) -> Refusal:
    """Section 2 and pitfall c: the error an old argument raises today, and what replaces it."""
    return Refusal(error)


@dataclass(frozen=True, repr=False)
class RenamedArgument(ShowsAsLines):
    """The slide's `gradient_checkpointing=True` against today's `activation_checkpointing=True`:
    the warnings each raised while `TrainingArguments` was built, and whether each turns it on."""

    slide_on: bool
    slide_warnings: Sequence
    today_on: bool
    today_warnings: Sequence

    def lines(self) -> list[str]:
        said = [
            phrase('{category}: "{message}"', category=each.category.__name__, message=each.message)
            for each in self.slide_warnings
        ]
        said.append(phrase("with activation_checkpointing=True: {n} warnings", n=len(self.today_warnings)))
        said.append(phrase("both turn it on: {slide} and {today}", slide=self.slide_on, today=self.today_on))
        return said


def compare_argument_names(slide_args, slide_warnings, today_args, today_warnings) -> RenamedArgument:
    """Section 2: the arguments built with the old name and with the new one (`TrainingArguments`),
    each with the warnings caught while it was built (`warnings.catch_warnings(record=True)`)."""
    return RenamedArgument(
        slide_args.activation_checkpointing,
        list(slide_warnings),
        today_args.activation_checkpointing,
        list(today_warnings),
    )


# Section 3 ------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class CheckpointingSeen(ShowsAsLines):
    """Whether the model checkpointed before `train()`, after it, and during it (as `StepMeter`
    measured); a state not given is not shown."""

    before: bool | None = None
    after: bool | None = None
    during: bool | None = None

    def lines(self) -> list[str]:
        said = []
        if self.before is not None:
            said.append(phrase("before train(): {on}", on=self.before))
        if self.after is not None:
            said.append(phrase("after train():  {on}", on=self.after))
        said.append(phrase("during train(): {on}", on=self.during))
        return said


def checkpointing_seen(
    before: bool | None = None, after: bool | None = None, meter=None
) -> CheckpointingSeen:
    """Section 3 (pitfall a): `model.is_activation_checkpointing` read before and after `train()`, and
    what the `StepMeter` measured during it."""
    return CheckpointingSeen(before, after, None if meter is None else meter.checkpointing)


@dataclass(frozen=True, repr=False)
class AgainstBaseline(ShowsAsLines):
    """The fine-tuned model's validation accuracy and F1 against the majority baseline and the slide."""

    accuracy: float
    f1: float
    majority: float

    def lines(self) -> list[str]:
        return [
            phrase("validation accuracy {accuracy:.3f}   F1 {f1:.3f}", accuracy=self.accuracy, f1=self.f1),
            phrase(
                "majority baseline   {majority:.3f}   (always answering the most common label)",
                majority=self.majority,
            ),
            _("the slide printed   0.030   F1 0.050"),
        ]


def against_baseline(metrics: Mapping[str, float], validation_set) -> AgainstBaseline:
    """Section 3: `trainer.evaluate()`'s metrics against what always answering the most common label
    of `validation_set` scores."""
    labels = np.asarray(validation_set[:]["labels"])
    return AgainstBaseline(metrics["eval_accuracy"], metrics["eval_f1"], majority_baseline(labels))


# Section 4 ------------------------------------------------------------------------------------

METRICS = ("eval_loss", "eval_accuracy", "eval_f1")


def compare_steps(plain: StepReport, checkpointed: StepReport) -> Table:
    """Section 4: one micro-batch without and with checkpointing, side by side, and their ratio:
    what it keeps for backward, its FLOPs, and its time (median, and the middle half of the steps)."""
    ratio = checkpointed / plain
    return Table(
        ["per micro-batch", "without checkpointing", "with checkpointing", "with / without"],
        [
            [
                _("saved activations"),
                format_bytes(plain.saved_bytes),
                format_bytes(checkpointed.saved_bytes),
                phrase(
                    "{ratio:.3f}x ({reduction:.1%} fewer bytes)",
                    ratio=ratio.saved_bytes,
                    reduction=ratio.saved_reduction,
                ),
            ],
            [
                _("FLOPs (fwd + bwd)"),
                format_flops(plain.flops),
                format_flops(checkpointed.flops),
                f"{format_number(ratio.flops, '.3f')}x",
            ],
            [_("time"), plain.times.milliseconds(), checkpointed.times.milliseconds(), str(ratio.seconds)],
        ],
    )


@dataclass(frozen=True, repr=False)
class TrainingsCompared(ShowsAsLines):
    """The whole training with and without checkpointing: its time, and the metrics it ended with."""

    seconds: tuple[float, float]  # with, without
    metrics: tuple[Mapping[str, float], Mapping[str, float]]  # with, without

    def lines(self) -> list[str]:
        with_, without = self.seconds
        said = [
            phrase(
                "whole training: {checkpointed:.1f} s with, {plain:.1f} s without "
                "(wall time, one run each: read the step times above for the cost)",
                checkpointed=with_,
                plain=without,
            )
        ]
        for name in METRICS:
            said.append(
                phrase(
                    "{name:14} with {checkpointed:.4f}   without {plain:.4f}",
                    name=name,
                    checkpointed=self.metrics[0][name],
                    plain=self.metrics[1][name],
                )
            )
        return said


def compare_trainings(
    checkpointed_output, checkpointed_metrics: Mapping, plain_output, plain_metrics: Mapping
) -> TrainingsCompared:
    """Section 4: two `trainer.train()` outputs and `trainer.evaluate()` metrics, with checkpointing
    and without."""
    seconds = (checkpointed_output.metrics["train_runtime"], plain_output.metrics["train_runtime"])
    return TrainingsCompared(seconds, (dict(checkpointed_metrics), dict(plain_metrics)))


# Section 5 ------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class AccumulationCounted(ShowsAsLines):
    """What `Trainer` did with gradient accumulation: the effective batch and the optimizer steps the
    lesson's cell worked out, set beside the steps `Trainer` took and the rows `StepMeter` counted in
    each optimizer step."""

    batch: int
    accumulation: int
    processes: int
    effective: int  # worked out in the cell
    steps: int  # measured: trainer.state.global_step
    rows: int
    epochs: float
    expected: int  # worked out in the cell
    rows_per_step: tuple[int, ...]

    def lines(self) -> list[str]:
        epochs = int(self.epochs) if float(self.epochs).is_integer() else self.epochs
        return [
            phrase(
                "effective batch = {batch} x {accumulation} x {processes} = {effective}",
                batch=self.batch,
                accumulation=self.accumulation,
                processes=self.processes,
                effective=self.effective,
            ),
            phrase(
                "optimizer steps measured: {steps}; "
                "expected ceil({rows} / {effective}) x {epochs} = {expected}",
                steps=self.steps,
                rows=self.rows,
                effective=self.effective,
                epochs=epochs,
                expected=self.expected,
            ),
            phrase(
                "rows per optimizer step, counted by the meter: {rows}",
                rows=sorted(set(self.rows_per_step)),
            ),
        ]


def accumulation_counted(trainer, meter, effective: int, expected: int) -> AccumulationCounted:
    """Section 5: the effective batch and the optimizer steps the cell worked out from a trained
    `Trainer`'s arguments, beside the steps it took and what its `StepMeter` counted."""
    args = trainer.args
    return AccumulationCounted(
        batch=args.per_device_train_batch_size,
        accumulation=args.gradient_accumulation_steps,
        processes=args.world_size,
        effective=effective,
        steps=trainer.state.global_step,
        rows=len(trainer.train_dataset),
        epochs=args.num_train_epochs,
        expected=expected,
        rows_per_step=tuple(meter.rows_per_step),
    )


@dataclass(frozen=True, repr=False)
class KeptPerOptimizerStep(ShowsAsLines):
    """What one optimizer step keeps for backward: the whole batch at once, in micro-batches, and in
    checkpointed micro-batches, each against the whole batch."""

    batch: int
    micro_batch: int
    whole: int  # bytes saved
    micro: int
    micro_checkpointed: int

    def lines(self) -> list[str]:
        steps = self.batch // self.micro_batch
        kept = [
            (phrase("batch of {batch}, no accumulation", batch=self.batch), self.whole),
            (phrase("micro-batches of {size} (x {steps})", size=self.micro_batch, steps=steps), self.micro),
            (
                phrase(
                    "micro-batches of {size} (x {steps}), checkpointed", size=self.micro_batch, steps=steps
                ),
                self.micro_checkpointed,
            ),
        ]
        width = max(40, *[len(label) for label, _saved in kept])
        return [
            f"{label:{width}} {format_bytes(saved):>12}  ({format_number(saved / self.whole, '.0%')})"
            for label, saved in kept
        ]


def kept_per_optimizer_step(
    whole: int, micro: int, micro_checkpointed: int, batch: int = 32, micro_batch: int = 8
) -> KeptPerOptimizerStep:
    """Section 5: the bytes `measure_step` saw saved for a batch of `batch` rows at once (`whole`), for
    one micro-batch of `micro_batch` rows (`micro`), and for one checkpointed (`micro_checkpointed`)."""
    return KeptPerOptimizerStep(batch, micro_batch, whole, micro, micro_checkpointed)


# Section 6 ------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class PeakMemory(ShowsAsLines):
    """The GPU's peak memory over the whole training, with checkpointing and without (None off CUDA)."""

    checkpointed: int | None
    plain: int | None

    def lines(self) -> list[str]:
        if self.checkpointed is None or self.plain is None:
            return [
                _(
                    "No CUDA GPU here: peak GPU memory is only measured on a GPU "
                    "(see the parameters at the top)."
                )
            ]
        return [
            phrase(
                "peak GPU memory: {checkpointed} with checkpointing, {plain} without ({ratio:.2f}x)",
                checkpointed=format_bytes(self.checkpointed),
                plain=format_bytes(self.plain),
                ratio=self.checkpointed / self.plain,
            )
        ]


def peak_memory(meter, plain_meter) -> PeakMemory:
    """Section 6: the peak GPU memory two `StepMeter`s read, with checkpointing and without."""
    return PeakMemory(meter.peak_bytes, plain_meter.peak_bytes)


# Section 8 (explore) ---------------------------------------------------------------------------


def splits_table(measured: Sequence[tuple[int, int, StepReport, StepReport]]) -> Table:
    """The explore cell's table: for each split of one optimizer step, `(micro-batch, accumulation
    steps, plain StepReport, checkpointed StepReport)`, what a micro-batch keeps, and the time of
    the optimizer step (one micro-batch's times, times the accumulation steps: the median and the
    middle half of the steps)."""
    rows = [
        [
            f"{micro_batch} x {accumulation}",
            format_bytes(plain.saved_bytes),
            format_bytes(checkpointed.saved_bytes),
            plain.times.scaled(accumulation).milliseconds(),
            checkpointed.times.scaled(accumulation).milliseconds(),
        ]
        for micro_batch, accumulation, plain, checkpointed in measured
    ]
    return Table(
        [
            "micro-batch x steps",
            "kept, plain",
            "kept, checkpointed",
            "optimizer step, plain",
            "optimizer step, checkpointed",
        ],
        rows,
    )
