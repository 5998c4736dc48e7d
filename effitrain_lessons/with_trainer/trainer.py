"""Lesson 2: what a plain `transformers.Trainer` does inside `train()`, measured from outside.

The lesson writes its `TrainingArguments(...)` and `Trainer(...)` in cells, as a learner would in
their own project; `StepMeter` is the callback they pass (`callbacks=[meter]`). It measures a few of
the micro-batches `Trainer` really trains on (the activations autograd saves, the FLOPs), times the
others, counts the rows of each optimizer step, and reads the peak GPU memory: so "checkpointing is
on" is shown by what autograd kept during `train()`, not by a flag, and nothing in the training
changes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from transformers import TrainerCallback

# Lesson 2 imports what it fine-tunes from here, beside the callback that measures it.
from effitrain_lessons.shared.finetuning import TINY, LessonData, fresh_model, learning_rate_for, lesson_data  # noqa: F401
from effitrain_lessons.shared.i18n import _, phrase
from effitrain_lessons.shared.memory import StepReport, count_step
from effitrain_lessons.shared.timing import Clock


@dataclass
class MicroBatch:
    """One measured micro-batch of a real training step (forward + backward)."""

    saved_bytes: int
    saved_tensors: int
    flops: int
    forward_flops: int
    checkpointing: bool  # whether the model was checkpointing while it ran


class StepMeter(TrainerCallback):
    """Measure micro-batches `measure` (1-based) of `Trainer.train()` and time the others.

    Pass it as `Trainer(..., callbacks=[meter])`. Measuring (saved-tensor hooks and the FLOP
    counter) slows a micro-batch down, so measured micro-batches are not timed. The first one is
    left out by default: it pays one-off costs. A forward pre-hook on the model marks where a
    micro-batch starts; the callback's `on_substep_end` / `on_pre_optimizer_step` mark where its
    backward pass has ended. After `train()`: `step_report()` (a `memory.StepReport`), `checkpointing`
    (True, False, or None if the measured micro-batches disagree), `rows_per_step` (the rows each
    optimizer step trained on: the effective batch), and `peak_bytes` on CUDA.
    """

    def __init__(self, measure: tuple[int, ...] = (2, 3)):
        if not measure or any(type(i) is not int or i < 1 for i in measure):
            raise ValueError(
                phrase(
                    "measure must name micro-batches by their 1-based number, got {measure!r}.",
                    measure=measure,
                )
            )
        self.measure = tuple(measure)
        self.measured: list[MicroBatch] = []
        self.clock = Clock()  # the micro-batches not measured, timed as every lesson times
        self.rows_per_step: list[int] = []
        self.peak_bytes: int | None = None
        self.device = "cpu"
        self._micro_batches = 0
        self._rows = 0
        self._model = None
        self._hooks: list = []
        self._step: contextlib.ExitStack | None = None  # the measured micro-batch's counters, while it runs
        self._forward: contextlib.ExitStack | None = None
        self._count = None

    # --- Trainer's events ---------------------------------------------------------------------

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._model = model
        self.device = str(args.device)
        self.clock = Clock(args.device)
        self._hooks = [
            model.register_forward_pre_hook(self._micro_batch_starts, with_kwargs=True),
            model.register_forward_hook(self._forward_ends),
        ]
        if args.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(args.device)

    def on_substep_end(self, args, state, control, **kwargs):
        self._micro_batch_ends()

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self._micro_batch_ends()
        self.rows_per_step.append(self._rows)
        self._rows = 0

    def on_train_end(self, args, state, control, **kwargs):
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        if args.device.type == "cuda":
            self.peak_bytes = torch.cuda.max_memory_allocated(args.device)

    # --- the model's hooks ------------------------------------------------------------------------

    def _micro_batch_starts(self, module, args, kwargs):
        if not module.training or not torch.is_grad_enabled():
            return  # an evaluation, not a training micro-batch
        self._micro_batches += 1
        inputs = kwargs.get("input_ids", args[0] if args else None)
        self._rows += len(inputs) if inputs is not None else 0
        if self._micro_batches in self.measure:
            # Two nested measurements: the whole step's FLOPs (open until the backward pass ends)
            # and, inside it, the forward pass's saved tensors (closed by the forward hook).
            self._step = contextlib.ExitStack()
            self._count = self._step.enter_context(count_step())
            self._forward = contextlib.ExitStack()
            self._forward.enter_context(self._count.forward(module))
        else:
            self.clock.start()

    def _forward_ends(self, module, args, output):
        if self._forward is not None:
            self._forward.close()
            self._forward = None

    def _micro_batch_ends(self) -> None:
        if self._step is not None:
            self._step.close()
            self._step = None
            count = self._count
            self.measured.append(
                MicroBatch(
                    saved_bytes=count.saved.total_bytes,
                    saved_tensors=len(count.saved.activations),
                    flops=count.flops,
                    forward_flops=count.forward_flops,
                    checkpointing=bool(getattr(self._model, "is_activation_checkpointing", False)),
                )
            )
        else:
            self.clock.stop()  # nothing if this micro-batch was not timed

    # --- results ---------------------------------------------------------------------------------

    @property
    def micro_seconds(self) -> list[float]:
        """Each timed micro-batch's time, in the order they ran."""
        return list(self.clock.seconds)

    @property
    def checkpointing(self) -> bool | None:
        """Whether the model checkpointed during the measured micro-batches (None if they disagree)."""
        states = {m.checkpointing for m in self.measured}
        return states.pop() if len(states) == 1 else None

    def step_report(self) -> StepReport:
        """The measured micro-batches, summarised: saved bytes and FLOPs of the last one measured
        (the same for every micro-batch of one shape), and the times of the others (the first two
        of them left out as warm-up: median and spread)."""
        if not self.measured:
            raise RuntimeError(
                _("Nothing was measured yet: train with this callback first (at least 2 micro-batches).")
            )
        if not self.clock.seconds:
            raise RuntimeError(_("Every micro-batch was measured, so none was timed: measure fewer of them."))
        last = self.measured[-1]
        return StepReport(
            saved_bytes=last.saved_bytes,
            saved_tensors=last.saved_tensors,
            flops=last.flops,
            forward_flops=last.forward_flops,
            times=self.clock.times(),
            peak_bytes=self.peak_bytes,
            device=self.device,
            training=True,
        )
