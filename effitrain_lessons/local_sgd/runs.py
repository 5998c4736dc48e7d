"""Lesson 4: Local SGD with Accelerate on real processes, with its communication counted from outside.

The training loop is the lesson's own: `train(config, model, train_set)`, slide 9's loop, written in
a `# @save` cell (built into `effitrain_lessons/local_sgd/saved.py`). The lesson runs it with
`effitrain_lessons.shared.distributed_runs`, which lesson 5 shares: `launch(configs, train,
num_processes=2)` forks real worker processes from a notebook (gloo on the CPU), runs that loop for
every configuration in them one after the other, and returns what each process measured: its rank
and `distributed_type`, the losses, and every all-reduce it made, counted by instrumentation around
the loop rather than by formula or by lines in it. This module adds what is lesson 4's own: its
runs' configuration (`LocalSGDConfig`), a run's row (`summary`), the slow-link timings and their
model, and `run_custom_loop`, which counts the communication of the learner's own Accelerate loop in
the exercise. What the lesson prints of its runs is in `reports`, what it draws in `figures`.

The same loop runs as a module under a launcher on many GPUs and machines:

    torchrun --nproc_per_node 8 -m effitrain_lessons.local_sgd.runs --k 8 --steps 200
    accelerate launch --multi_gpu --num_processes 8 -m effitrain_lessons.local_sgd.runs --k 8 --steps 200
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import torch

from effitrain_lessons.shared import distributed_runs, processes
from effitrain_lessons.shared.arguments import command_line, whole_numbers
from effitrain_lessons.shared.i18n import _, phrase


def nothing_learned_loss() -> float:
    """The validation loss of a model that learned nothing but how often each label occurs in the
    training rows (it predicts those frequencies for every pair): the loss a run that broke would end
    near. Lesson 4 draws it as the top of its loss axis, so a few thousandths do not look like a trend."""
    from effitrain_lessons.shared.data import tokenized_mrpc

    splits = tokenized_mrpc()
    frequencies = torch.bincount(splits["train"][:]["labels"]).double()
    frequencies /= frequencies.sum()
    return float(-frequencies.log()[splits["validation"][:]["labels"]].mean())


MODES = ("ddp", "local_sgd")


@dataclass
class LocalSGDConfig(distributed_runs.RunConfig):
    """One run of lesson 4's loop: data parallel (`mode="ddp"`), or Local SGD, which averages the
    parameters every `k` steps. Each field is also an option of `python -m
    effitrain_lessons.local_sgd.runs` (`--k`, `--batch-size`, `--no-cpu`, ...)."""

    mode: str = field(
        default="local_sgd",
        metadata={"choices": MODES, "help": "ddp: gradients every step; local_sgd: parameters every k steps"},
    )
    k: int = field(default=8, metadata={"help": "LocalSGD's local_sgd_steps"})

    @property
    def label(self) -> str:
        if self.mode == "ddp":
            return super().label
        return self.with_accumulation(phrase("Local SGD, K={k}", k=self.k))

    def expected_synchronizations(self) -> int:
        """Data parallel: as `RunConfig` says. LocalSGD averages parameters every k calls of `step()`
        and once more on exit: floor(steps / k) + 1."""
        if self.mode == "ddp":
            return super().expected_synchronizations()
        return self.steps // self.k + 1

    def check(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                phrase("mode must be one of {modes}, got {mode!r}.", modes=MODES, mode=self.mode)
            )
        whole_numbers(k=self.k)
        super().check()


def configured(reports: list[distributed_runs.ProcessReport], **fields) -> bool:
    """Whether the run of `reports` was configured with these `fields` (`mode="ddp"`, `k=8`, ...)."""
    config = distributed_runs.config_of(reports[0])
    return all(getattr(config, name, None) == value for name, value in fields.items())


def pick(
    runs: Sequence[list[distributed_runs.ProcessReport]], **fields
) -> list[distributed_runs.ProcessReport]:
    """The first of `runs` (as a launch returns them) configured with these `fields`:
    `pick(runs, mode="local_sgd", k=8, accumulation=1)`."""
    for reports in runs:
        if configured(reports, **fields):
            return reports
    raise ValueError(phrase("No run has {fields}.", fields=fields))


def summary(reports: list[distributed_runs.ProcessReport]) -> dict:
    """One row of the lesson's results table from the reports of one run (all processes): the shared
    `distributed_runs.summary`, with the run's K (None for data parallel)."""
    row = distributed_runs.summary(reports)
    config = distributed_runs.config_of(reports[0])
    k = config.k if getattr(config, "mode", "ddp") == "local_sgd" else None
    return {"run": row.pop("run"), "k": k, **row}


def link_sweep(
    links: Mapping[str, distributed_runs.Link], ks: Sequence[int], steps: int, **settings
) -> dict[tuple[str, int | None], LocalSGDConfig]:
    """One run per link and K: data parallel (K None) and Local SGD at each K in `ks`, `steps`
    micro-batches each, on the simulated link (`settings`: other RunConfig fields, the same for all)."""
    sweep = {}
    for name, link in links.items():
        for k in (None, *ks):
            mode = {"mode": "ddp"} if k is None else {"mode": "local_sgd", "k": k}
            sweep[name, k] = LocalSGDConfig(
                **mode,
                steps=steps,
                latency_ms=link.latency_ms,
                megabits_per_s=link.megabits_per_s,
                **settings,
            )
    return sweep


def link_milliseconds(report: distributed_runs.ProcessReport, link: distributed_runs.Link) -> float:
    """What `link` adds per step to a run like `report`, if nothing hides it: its time for every
    collective call the run made in the steps `ms_per_step` spans, per step."""
    steps = len(report.step_starts) - 1
    return 1000 * sum(link.seconds(size) for size in report.calls_between(1, steps)) / steps


def predicted_ms_per_step(
    fast: distributed_runs.ProcessReport,
    slow: distributed_runs.ProcessReport,
    link: distributed_runs.Link,
) -> float:
    """The model: the time per step of the same training on this machine's own link (`fast`), plus
    `link`'s time for the collective calls the run on the link counted (`slow`, `link_milliseconds`):
    latency + bytes / bandwidth each, none hidden."""
    return fast.ms_per_step + link_milliseconds(slow, link)


@dataclass
class LinkTiming:
    """Lesson 4's timing on one link: ms per step measured and predicted, and where Local SGD pays."""

    name: str
    link: distributed_runs.Link
    data_parallel: tuple[float, float]  # ms per step: measured, predicted
    local_sgd: dict[int, tuple[float, float]]  # per K: measured, predicted
    model_crossover: float  # the K from which the model has Local SGD faster (inf: never)

    @property
    def measured_crossover(self) -> tuple[int | None, int] | None:
        """(the largest K measured slower, the smallest K measured faster) than data parallel, such
        that every larger K was faster too; (None, K) when even the smallest K was; None when no K was."""
        ks = sorted(self.local_sgd)
        faster = [self.local_sgd[k][0] < self.data_parallel[0] for k in ks]
        for index, k in enumerate(ks):
            if all(faster[index:]):
                return (ks[index - 1] if index else None, k)
        return None

    def describe_crossover(self) -> str:
        found = self.measured_crossover
        if found is None:
            return phrase("no K up to {k}", k=max(self.local_sgd))
        below, at = found
        if below is None:
            return phrase("K = {k} or less", k=at)
        return phrase("between K = {below} and {at}", below=below, at=at)


def fast_runs(measured: Iterable[tuple[LocalSGDConfig, list]]) -> dict:
    """From (configuration, reports) pairs, the first run of each K (None: data parallel) on this
    machine's own link, without accumulation and with DDP's default buckets: the model's compute."""
    fast = {}
    for config, reports in measured:
        plain = config.accumulation == 1 and config.bucket_mb == LocalSGDConfig.bucket_mb
        if plain and not config.link.simulated:
            fast.setdefault(config.k if config.mode == "local_sgd" else None, reports[0])
    return fast


def link_timings(
    links: Mapping[str, distributed_runs.Link],
    sweep: Mapping[tuple[str, int | None], LocalSGDConfig],
    runs: Sequence[list[distributed_runs.ProcessReport]],
    measured_fast: Iterable[tuple[LocalSGDConfig, list]],
) -> list[LinkTiming]:
    """Each link's timing from a `link_sweep` launched in order (`runs`). The model takes its
    compute time from runs of the same K on this machine's own link (`measured_fast`: the
    (configuration, reports) pairs of an earlier launch, see `fast_runs`)."""
    measured = {key: reports[0] for key, reports in zip(sweep, runs)}
    fast = fast_runs(measured_fast)
    timings = []
    for name, link in links.items():
        ks = sorted(k for each, k in sweep if each == name and k is not None)
        missing = [k for k in (None, *ks) if k not in fast]
        if missing:
            raise ValueError(
                phrase(
                    "The model needs a run on this machine's own link for each K; none for {missing}.",
                    missing=missing,
                )
            )
        data_parallel = (
            measured[name, None].ms_per_step,
            predicted_ms_per_step(fast[None], measured[name, None], link),
        )
        local = {
            k: (measured[name, k].ms_per_step, predicted_ms_per_step(fast[k], measured[name, k], link))
            for k in ks
        }
        # the link's time per average: the largest K's calls between its steps, per average there
        largest = measured[name, ks[-1]]
        steps = len(largest.step_starts) - 1
        averages = len([step for step in largest.barrier_steps if 1 <= step <= steps])
        per_average = link_milliseconds(largest, link) * steps / max(1, averages)
        gain = data_parallel[1] - sum(fast[k].ms_per_step for k in ks) / len(ks)
        timings.append(
            LinkTiming(name, link, data_parallel, local, per_average / gain if gain > 0 else math.inf)
        )
    return timings


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

    from effitrain_lessons.shared.data import tokenized_mrpc

    train = tokenized_mrpc()["train"]  # once, here: the forked processes share it

    def job() -> list[dict]:
        from accelerate import Accelerator
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader

        from effitrain_lessons.shared.models import tiny_bert

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
    from effitrain_lessons.local_sgd.saved import train

    return train


def main(argv: list[str] | None = None) -> int:
    """Run lesson 4's loop (its `# @save` cell) in this process under a launcher, counting all-reduces."""
    config = command_line(
        LocalSGDConfig,
        argv,
        prog="python -m effitrain_lessons.local_sgd.runs",
        description="Lesson 04's training with Local SGD (or plain data parallel), counting its "
        "all-reduces. Start it with torchrun or accelerate launch for several processes.",
    )
    return distributed_runs.run_under_launcher(config, _lesson_04_loop)


if __name__ == "__main__":
    sys.exit(main())
