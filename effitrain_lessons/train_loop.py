"""Lesson 3: slide 6's Accelerator loop, made complete, as a module that runs anywhere.

The same code runs in the notebook (`train_loop.run(LoopConfig(...))`), as a script on a CPU
(`python -m effitrain_lessons.train_loop --cpu`), and unchanged on one or many GPUs and machines:

    accelerate launch --num_processes 8 -m effitrain_lessons.train_loop --epochs 3
    torchrun --nproc_per_node 8 -m effitrain_lessons.train_loop --epochs 3

Accelerate reads the launcher's environment (ranks, world size, master address) and shards the
data; the loop itself does not change. Each process prints its rank, `distributed_type` and
`num_processes` at the start, so a run that silently fell back to one process shows it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field

import torch
from torch.utils.data import DataLoader

SIZINGS = ("optimizer", "slide")


@dataclass
class LoopConfig:
    """Everything the loop needs; the defaults are the course recipe on the bundled data."""

    model_name: str = "tiny"  # or a hub name such as "bert-base-uncased" (needs a network)
    source: str = "bundled"  # or "hub" for GLUE MRPC
    epochs: int = 2
    batch_size: int = 16  # per process and micro-batch
    accumulation: int = 2  # slide 6: Accelerator(gradient_accumulation_steps=2)
    learning_rate: float | None = None  # None: 1e-3 for the tiny BERT, 2e-5 for a pretrained hub model
    warmup_ratio: float = 0.1
    checkpointing: bool = True
    scheduler_sizing: str = "optimizer"  # "optimizer": ceil(len / accumulation) * epochs; "slide": len * epochs
    train_rows: int | None = None  # use only the first rows of the training split (quick runs)
    seed: int = 0
    cpu: bool = False  # force the CPU even where a GPU is present
    progress: bool = True  # tqdm bars (on the main process only)

    def check(self) -> None:
        """Raise ValueError with one sentence for a setting the loop cannot use."""
        for name in ("epochs", "batch_size", "accumulation"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}.")
        if self.scheduler_sizing not in SIZINGS:
            raise ValueError(f"scheduler_sizing must be one of {SIZINGS}, got {self.scheduler_sizing!r}.")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}.")
        if self.train_rows is not None and self.train_rows < self.batch_size:
            raise ValueError(f"train_rows must be at least one batch ({self.batch_size}), got {self.train_rows}.")


@dataclass
class LoopResult:
    """What one run of the loop measured (on the main process)."""

    losses: list[float] = field(default_factory=list)  # mean micro-batch loss of each optimizer step
    learning_rates: list[float] = field(default_factory=list)  # after each optimizer step
    scheduler_steps: int = 0  # the length the scheduler was sized to
    optimizer_steps: int = 0
    micro_batches: int = 0
    eval_accuracy: float = float("nan")
    eval_f1: float = float("nan")
    eval_rows: int = 0  # rows gathered for the metrics: every validation row exactly once
    seconds: float = 0.0
    distributed_type: str = ""
    num_processes: int = 1
    checkpointing: bool = False

    @property
    def final_learning_rate(self) -> float:
        return self.learning_rates[-1] if self.learning_rates else float("nan")


def scheduler_length(batches_per_epoch: int, accumulation: int, epochs: int, sizing: str = "optimizer") -> int:
    """How many steps to size the learning-rate scheduler for.

    The scheduler steps once per *optimizer* step, and with accumulation there are
    `ceil(batches / accumulation)` of those per epoch. Slide 6's sizing, `batches * epochs`,
    counts micro-batches, so the schedule only gets `1 / accumulation` of the way.
    """
    if sizing == "optimizer":
        return math.ceil(batches_per_epoch / accumulation) * epochs
    if sizing == "slide":
        return batches_per_epoch * epochs
    raise ValueError(f"sizing must be one of {SIZINGS}, got {sizing!r}.")


def measure_schedule(length: int, batches_per_epoch: int, accumulation: int, epochs: int,
                     warmup_ratio: float = 0.0, learning_rate: float = 1.0) -> list[float]:
    """The learning rate after each optimizer step of a real Accelerate loop, with a linear
    schedule (warm-up, then decay to 0) sized to `length` steps.

    The loop is slide 6's (`accumulate`, `backward`, `optimizer.step`, `scheduler.step` on every
    micro-batch) on a one-weight model and random batches: the schedule depends on how often
    the prepared scheduler steps, not on the model. Uses (and resets the accumulation of) the
    process's shared Accelerate state. Lesson 3 and its exercise measure sizings with it.
    """
    from accelerate import Accelerator
    from transformers import get_linear_schedule_with_warmup

    for name, value in (("length", length), ("batches_per_epoch", batches_per_epoch),
                        ("accumulation", accumulation), ("epochs", epochs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}.")
    accelerator = Accelerator(gradient_accumulation_steps=accumulation, cpu=True)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * length), length)
    loader = DataLoader(torch.randn(batches_per_epoch, 1), batch_size=1)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    rates = []
    for _ in range(epochs):
        for batch in loader:
            with accelerator.accumulate(model):
                accelerator.backward(model(batch).sum())
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                rates.append(scheduler.get_last_lr()[0])
    accelerator.gradient_accumulation_steps = 1
    return rates


def _model_and_data(config: LoopConfig):
    from effitrain_lessons.finetuning import fresh_model, lesson_data

    data = lesson_data(config.model_name, config.source)
    train = data.splits["train"]
    if config.train_rows is not None:
        train = train.select(range(min(config.train_rows, len(train))))
    return fresh_model(config.model_name, seed=config.seed), train, data.splits["validation"]


def run(config: LoopConfig | None = None, accelerator=None) -> LoopResult:
    """Train and evaluate with slide 6's loop, completed. Returns what it measured.

    Pass an `Accelerator` to reuse one (its gradient accumulation is set from `config`);
    otherwise one is created. Accelerate keeps one shared accumulation state per process, so
    two Accelerators alive at once do not keep different settings.
    """
    from accelerate import Accelerator
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from effitrain_lessons.metrics import compute_metrics

    config = config or LoopConfig()
    config.check()
    if accelerator is None:
        accelerator = Accelerator(gradient_accumulation_steps=config.accumulation, cpu=config.cpu)
    else:
        accelerator.gradient_accumulation_steps = config.accumulation
    print(
        f"process {accelerator.process_index} of {accelerator.num_processes}: "
        f"distributed_type={accelerator.distributed_type.value}, device={accelerator.device}",
        flush=True,
    )
    model, train, validation = _model_and_data(config)
    if config.checkpointing:
        model.config.use_cache = False  # BERT keeps no cache; this silences transformers' note
        model.activation_checkpointing_enable()  # gradient_checkpointing_enable() before transformers 5

    generator = torch.Generator().manual_seed(config.seed)
    train_loader = DataLoader(train, batch_size=config.batch_size, shuffle=True, generator=generator)
    eval_loader = DataLoader(validation, batch_size=100)
    from effitrain_lessons.finetuning import learning_rate_for

    learning_rate = config.learning_rate if config.learning_rate is not None else learning_rate_for(config.model_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    # Sized from the dataloader *before* prepare(): the whole data set, whatever the number of processes
    # (the prepared scheduler steps once per process for each optimizer step).
    total = scheduler_length(len(train_loader), config.accumulation, config.epochs, config.scheduler_sizing)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total), total)
    model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
        model, optimizer, train_loader, eval_loader, scheduler
    )

    result = LoopResult(
        scheduler_steps=total,
        distributed_type=accelerator.distributed_type.value,
        num_processes=accelerator.num_processes,
        checkpointing=config.checkpointing,
    )
    start = time.perf_counter()
    step_losses: list[float] = []
    bar = tqdm(total=config.epochs * len(train_loader), desc="training", unit="batch",
               disable=not (config.progress and accelerator.is_local_main_process))
    model.train()
    for _ in range(config.epochs):
        for batch in train_loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)  # divides the loss by the accumulation steps
                optimizer.step()  # steps only when accumulation is complete
                scheduler.step()
                optimizer.zero_grad()
            result.micro_batches += 1
            step_losses.append(loss.item())
            if accelerator.sync_gradients:
                result.optimizer_steps += 1
                result.losses.append(sum(step_losses) / len(step_losses))
                result.learning_rates.append(scheduler.get_last_lr()[0])
                step_losses.clear()
                bar.set_postfix(loss=f"{result.losses[-1]:.3f}", lr=f"{result.learning_rates[-1]:.2e}")
            bar.update()
    bar.close()
    result.seconds = time.perf_counter() - start

    model.eval()
    logits, labels = [], []
    with torch.no_grad():
        for batch in eval_loader:
            outputs = model(**batch)
            # gather_for_metrics collects every process's predictions and drops the rows the
            # sampler repeated to give every process the same number of batches.
            gathered_logits, gathered_labels = accelerator.gather_for_metrics((outputs.logits, batch["labels"]))
            logits.append(gathered_logits.float().cpu())
            labels.append(gathered_labels.cpu())
    metrics = compute_metrics((torch.cat(logits).numpy(), torch.cat(labels).numpy()))
    result.eval_accuracy, result.eval_f1 = metrics["accuracy"], metrics["f1"]
    result.eval_rows = sum(len(chunk) for chunk in labels)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m effitrain_lessons.train_loop",
        description="Lesson 3's Accelerator loop: fine-tune BERT on MRPC-style data with gradient "
        "checkpointing and accumulation. Launch with accelerate launch or torchrun for several processes.",
    )
    defaults = LoopConfig()
    parser.add_argument("--model", default=defaults.model_name, help='"tiny" (offline) or a hub model name')
    parser.add_argument("--source", default=defaults.source, choices=["bundled", "hub"])
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size, help="per process and micro-batch")
    parser.add_argument("--accumulation", type=int, default=defaults.accumulation)
    parser.add_argument("--lr", type=float, default=None, help="default: 1e-3 for tiny, 2e-5 for a hub model")
    parser.add_argument("--no-checkpointing", action="store_true", help="train without activation checkpointing")
    parser.add_argument("--scheduler-sizing", choices=SIZINGS, default=defaults.scheduler_sizing)
    parser.add_argument("--train-rows", type=int, default=None, help="train on the first N rows only")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--cpu", action="store_true", help="use the CPU even if a GPU is present")
    parser.add_argument("--json", default=None, help="write the main process's results to this file")
    args = parser.parse_args(argv)
    config = LoopConfig(
        model_name=args.model, source=args.source, epochs=args.epochs, batch_size=args.batch_size,
        accumulation=args.accumulation, learning_rate=args.lr, checkpointing=not args.no_checkpointing,
        scheduler_sizing=args.scheduler_sizing, train_rows=args.train_rows, seed=args.seed, cpu=args.cpu,
        progress=sys.stderr.isatty(),
    )
    try:
        result = run(config)
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from accelerate import PartialState

    if PartialState().is_main_process:
        print(
            f"{result.optimizer_steps} optimizer steps ({result.micro_batches} micro-batches) in {result.seconds:.1f} s; "
            f"final loss {result.losses[-1]:.4f}, final learning rate {result.final_learning_rate:.2e}; "
            f"validation accuracy {result.eval_accuracy:.3f}, F1 {result.eval_f1:.3f} on {result.eval_rows} rows",
            flush=True,
        )
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(asdict(result), handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
