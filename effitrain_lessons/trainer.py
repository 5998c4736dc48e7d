"""Lesson 2: fine-tuning with `transformers.Trainer`, measured from inside its training steps.

`MeasuringTrainer` is a `Trainer` that measures a few of the micro-batches it really trains on
(saved activations, FLOPs) and times every one, so that "checkpointing is on" is shown by what
autograd kept during `train()`, not by a flag. `training_arguments` builds the lesson's
`TrainingArguments` from the course recipe (`models.TRAINING`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import Trainer, TrainingArguments

# Lesson 2 imports what it fine-tunes from here, beside the Trainer that trains it.
from effitrain_lessons.finetuning import TINY, LessonData, fresh_model, lesson_data, learning_rate_for  # noqa: F401
from effitrain_lessons.memory import StepReport, format_bytes, record_saved_tensors
from effitrain_lessons.models import TRAINING


def training_arguments(output_dir: str, checkpointing: bool, model_name: str = TINY, **overrides) -> TrainingArguments:
    """The lesson's `TrainingArguments`: the slide's settings, corrected, plus the course recipe.

    The slide's `evaluation_strategy="epoch"` is spelled `eval_strategy` today, and
    `gradient_checkpointing=True` is `activation_checkpointing=True` (the old name still works but
    warns). Micro-batches of 8 pairs with `gradient_accumulation_steps=4` make the course's
    batch of 32. The learning rate suits `model_name` (`learning_rate_for`). Nothing is saved to
    disk and nothing is reported to an online tracker.
    Keyword arguments override any of these (for example `num_train_epochs=1`).
    """
    accumulation = 4
    settings = dict(
        output_dir=output_dir,
        eval_strategy="epoch",
        activation_checkpointing=checkpointing,
        per_device_train_batch_size=TRAINING["batch_size"] // accumulation,
        gradient_accumulation_steps=accumulation,
        per_device_eval_batch_size=100,
        learning_rate=learning_rate_for(model_name),
        warmup_steps=TRAINING["warmup_ratio"],  # a float below 1 is a fraction of the steps
        num_train_epochs=TRAINING["epochs"],
        logging_strategy="epoch",
        save_strategy="no",
        report_to="none",
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning only helps copies to a GPU
        seed=0,
    )
    settings.update(overrides)
    return TrainingArguments(**settings)


@dataclass
class MicroBatch:
    """One measured micro-batch of a real training step (forward + backward)."""

    saved_bytes: int
    saved_tensors: int
    flops: int
    forward_flops: int
    checkpointing: bool  # whether the model was checkpointing while it ran


class MeasuringTrainer(Trainer):
    """A `Trainer` that measures micro-batches `measure` (1-based) of `train()` and times them all.

    Measuring (saved-tensor hooks and the FLOP counter) slows a micro-batch down, so measured
    micro-batches are not timed; the others are. The first micro-batch is left out by default:
    it pays one-off costs (the first checkpoint call imports parts of torch). After `train()`,
    `step_report()` summarises what was measured as a `memory.StepReport`, and on CUDA
    `peak_bytes` holds `torch.cuda.max_memory_allocated` over the whole training.
    """

    def __init__(self, *args, measure: tuple[int, ...] = (2, 3), **kwargs):
        super().__init__(*args, **kwargs)
        if not measure or any(not isinstance(i, int) or i < 1 for i in measure):
            raise ValueError(f"measure must name micro-batches by their 1-based number, got {measure!r}.")
        self.measure = tuple(measure)
        self.measured: list[MicroBatch] = []
        self.micro_seconds: list[float] = []
        self.peak_bytes: int | None = None
        self._micro_batches = 0
        self._counter: FlopCounterMode | None = None
        self._forward_flops = 0

    def compute_loss(self, model, inputs, *args, **kwargs):
        result = super().compute_loss(model, inputs, *args, **kwargs)
        if self._counter is not None:  # a measured micro-batch: the forward pass is done
            self._forward_flops = self._counter.get_total_flops()
        return result

    def train(self, *args, **kwargs):
        on_cuda = self.args.device.type == "cuda"
        if on_cuda:
            torch.cuda.reset_peak_memory_stats(self.args.device)
        output = super().train(*args, **kwargs)
        if on_cuda:
            self.peak_bytes = torch.cuda.max_memory_allocated(self.args.device)
        return output

    def training_step(self, model, inputs, num_items_in_batch=None):
        self._micro_batches += 1
        if self._micro_batches not in self.measure:
            start = time.perf_counter()
            loss = super().training_step(model, inputs, num_items_in_batch)
            if self.args.device.type == "cuda":
                torch.cuda.synchronize(self.args.device)
            self.micro_seconds.append(time.perf_counter() - start)
            return loss
        counted = self.accelerator.unwrap_model(model)
        with FlopCounterMode(display=False) as counter:
            self._counter = counter
            try:
                with record_saved_tensors(counted) as log:
                    loss = super().training_step(model, inputs, num_items_in_batch)
            finally:
                self._counter = None
        self.measured.append(
            MicroBatch(
                saved_bytes=log.total_bytes,
                saved_tensors=len(log.activations),
                flops=counter.get_total_flops(),
                forward_flops=self._forward_flops,
                checkpointing=bool(getattr(counted, "is_activation_checkpointing", False)),
            )
        )
        return loss

    def step_report(self) -> StepReport:
        """The measured micro-batches, summarised: saved bytes and FLOPs of the last one measured
        (they are the same for every micro-batch of one shape), and the median micro-batch time."""
        if not self.measured:
            raise RuntimeError("Nothing was measured yet: call train() first (with at least 2 micro-batches).")
        if not self.micro_seconds:
            raise RuntimeError("Every micro-batch was measured, so none was timed: measure fewer of them.")
        last = self.measured[-1]
        return StepReport(
            saved_bytes=last.saved_bytes,
            saved_tensors=last.saved_tensors,
            flops=last.flops,
            forward_flops=last.forward_flops,
            seconds=statistics.median(self.micro_seconds),
            peak_bytes=self.peak_bytes,
            device=str(self.args.device),
            training=True,
        )

    def summary(self) -> str:
        """One line: was checkpointing on during the measured micro-batches, and what they saved."""
        if not self.measured:
            return "nothing measured yet"
        states = {m.checkpointing for m in self.measured}
        state = "on" if states == {True} else "off" if states == {False} else "on and off"
        return (
            f"checkpointing {state} during train(); saved activations per micro-batch: "
            f"{format_bytes(self.measured[-1].saved_bytes)}"
        )
