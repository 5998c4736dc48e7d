"""Lesson 4: Local SGD with Accelerate on real processes, with its communication counted from outside.

The training loop is the lesson's own: `train(config, model, train_set)`, slide 9's loop, written in
a `# @save` cell (built into `effitrain_lessons/lesson_code/lesson_04.py`). The lesson runs it with
`effitrain_lessons.distributed_runs`, which lesson 5 shares: `launch(configs, train,
num_processes=2)` forks real worker processes from a notebook (gloo on the CPU), runs that loop for
every configuration in them one after the other, and returns what each process measured: its rank
and `distributed_type`, the losses, and every all-reduce it made, counted by instrumentation around
the loop rather than by formula or by lines in it. This module adds what is lesson 4's own: the
results table, where the processes' parameters agreed step by step, and `run_custom_loop`, which
counts the communication of the learner's own Accelerate loop in the exercise. Its figures are in
`local_sgd_figures`.

The same loop runs as a module under a launcher on many GPUs and machines:

    torchrun --nproc_per_node 8 -m effitrain_lessons.local_sgd --k 8 --steps 200
    accelerate launch --multi_gpu --num_processes 8 -m effitrain_lessons.local_sgd --k 8 --steps 200
"""

from __future__ import annotations

import sys
from dataclasses import asdict

import torch

from effitrain_lessons import distributed_runs, processes
from effitrain_lessons.arguments import command_line
from effitrain_lessons.i18n import _, format_number
from effitrain_lessons.moved import moved_names
from effitrain_lessons.tables import Table

# Names that lived here until lesson 5 came to share them: where each one is now.
MOVED = {
    **{
        name: "effitrain_lessons.distributed_runs"
        for name in (
            "MODES",
            "RunConfig",
            "ProcessReport",
            "EXIT",
            "fingerprint",
            "measured_run",
            "config_of",
            "summary",
            "launch",
            "run_under_launcher",
        )
    },
    **{name: "effitrain_lessons.processes" for name in ("can_fork", "start_workers")},
}
__getattr__ = moved_names(__name__, MOVED)


def agreement(reports: list[distributed_runs.ProcessReport], steps: int | None = None) -> str:
    """One character per step: '=' where every process held bit-identical parameters after the
    step, '.' where they differed."""
    fingerprints = [report.fingerprints[:steps] for report in reports]
    return "".join("=" if len(set(step)) == 1 else "." for step in zip(*fingerprints))


def nothing_learned_loss() -> float:
    """The validation loss of a model that learned nothing but how often each label occurs in the
    training rows (it predicts those frequencies for every pair): the loss a run that broke would end
    near. Lesson 4 draws it as the top of its loss axis, so a few thousandths do not look like a trend."""
    from effitrain_lessons.data import tokenized_mrpc

    splits = tokenized_mrpc()
    frequencies = torch.bincount(splits["train"][:]["labels"]).double()
    frequencies /= frequencies.sum()
    return float(-frequencies.log()[splits["validation"][:]["labels"]].mean())


def _yes_no(answer: bool) -> str:
    return _("yes") if answer else _("NO")  # NO in capitals: the answer that needs looking into


def results(runs: list[list[distributed_runs.ProcessReport]]) -> Table:
    """Lesson 4's results table: one row per run, as counted in process 0."""
    rows = []
    for reports in runs:
        row = distributed_runs.summary(reports)
        rows.append(
            [
                row["run"],
                row["steps"],
                row["synchronizations"],
                row["expected"],
                row["allreduce_calls"],
                format_number(row["megabytes"], ".2f"),
                row["gradient_allreduces"],
                format_number(row["eval_loss"], ".4f"),
                format_number(row["eval_accuracy"], ".3f"),
                format_number(row["ms_per_step"], ".1f"),
                _yes_no(row["same_in_every_process"]),
                _yes_no(row["equal_at_end"]),
            ]
        )
    return Table(
        [
            "run",
            "steps",
            "synchronizations",
            "rule",
            "all-reduce calls",
            "MB sent",
            "gradient all-reduces",
            "validation loss",
            "validation accuracy",
            "ms per step",
            "same counts in every process",
            "identical parameters at the end",
        ],
        rows,
        notes=[
            _(
                "synchronizations: rounds of communication counted in process 0; rule: the optimizer steps "
                "for data parallel, floor(steps / K) + 1 for Local SGD (the + 1 is the average on exit); MB "
                "sent: all-reduced by process 0."
            )
        ],
    )


def run_custom_loop(
    loop, batches: int = 12, num_processes: int = 2, batch_size: int = 8, timeout: float = 120.0
) -> list[distributed_runs.ProcessReport]:
    """Run `loop(accelerator, model, optimizer, dataloader)` in real processes and count its
    communication (lesson 4's exercise checks a learner's loop with it).

    Each process gets `batches` batches of a 1-layer tiny BERT's training data; a step is one
    forward pass of the model. Returns one `ProcessReport` per process.
    """
    if not callable(loop):
        raise TypeError(
            _("run_custom_loop needs a function loop(accelerator, model, optimizer, dataloader).")
        )

    from effitrain_lessons.data import tokenized_mrpc

    train = tokenized_mrpc()["train"]  # once, here: the forked processes share it

    def job() -> list[dict]:
        from accelerate import Accelerator
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader

        from effitrain_lessons.models import tiny_bert

        accelerator = Accelerator(cpu=True)
        report = distributed_runs.ProcessReport(
            rank=accelerator.process_index,
            num_processes=accelerator.num_processes,
            distributed_type=accelerator.distributed_type.value,
            config={},
        )
        torch.manual_seed(0)
        model = tiny_bert(num_hidden_layers=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        counter = distributed_runs.CommunicationCounter(report)

        def count_step(module, args, kwargs):
            counter.step += 1

        model.register_forward_pre_hook(count_step, with_kwargs=True)
        rows = train.select(range(batches * batch_size * accelerator.num_processes))
        loader = DataLoader(rows, batch_size=batch_size)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        if isinstance(model, DistributedDataParallel):
            model.register_comm_hook(None, counter.ddp_hook)
        with counter.watching_loop(), counter.counting_all_reduce():
            loop(accelerator, model, optimizer, loader)
        accelerator.wait_for_everyone()
        report.final_fingerprint = distributed_runs.fingerprint(model)
        return [asdict(report)]

    per_rank = processes.start_workers(job, num_processes, timeout)
    return [distributed_runs.ProcessReport(**per_rank[rank][0]) for rank in range(num_processes)]


def _lesson_04_loop():
    from effitrain_lessons.lesson_code.lesson_04 import train

    return train


def main(argv: list[str] | None = None) -> int:
    """Run lesson 4's loop (its `# @save` cell) in this process under a launcher, counting all-reduces."""
    config = command_line(
        distributed_runs.RunConfig,
        argv,
        prog="python -m effitrain_lessons.local_sgd",
        description="Lesson 04's training with Local SGD (or plain data parallel), counting its "
        "all-reduces. Start it with torchrun or accelerate launch for several processes.",
    )
    return distributed_runs.run_under_launcher(config, _lesson_04_loop)


if __name__ == "__main__":
    sys.exit(main())
