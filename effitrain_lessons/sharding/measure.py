"""Sharding a training step across processes, measured in each: lesson 9's launch, counters and tables.

The lesson writes every way of spreading a step in its cells, with PyTorch's own calls: data
parallel (`DistributedDataParallel`), ZeRO-1 (`ZeroRedundancyOptimizer`), ZeRO-2 and ZeRO-3 (FSDP2's
`fully_shard`, `reshard_after_forward` False and True), with and without checkpointing, and saving
with `torch.distributed.checkpoint`. Each is a *setup*: a function that takes the freshly built model
and returns `(model, optimizer)`. This module runs them and measures from outside:

- `sharded_steps(setups, ...)` is the function each process of a launch runs (Accelerate's
  `notebook_launcher`, the package's `Launching`): every setup in turn, a few AdamW steps each on
  the process's own share of the data.
- `ProcessWatch`, a dispatch mode, is active from the model's build to the end of its last step. It
  counts every storage an op makes until it is freed (`shared.memory.LiveStorages`: the process's
  tensor bytes, and their peak within a step), and every collective call PyTorch's c10d runs, with
  the size of the whole tensor it works on (all-reduce: the tensor; all-gather: what it gathers;
  reduce-scatter: what it reduces; broadcast: the tensor).
- After each step's `optimizer.step()`, each process counts what it holds itself: parameters,
  gradients and optimizer state, a `DTensor` by its local shard (`shared.sharding.held_by`).

The tables read the last step (the first builds the optimizer's state). What a process sends is
taken from the counted calls as a ring algorithm sends it: (N - 1) / N of the tensor for an
all-gather, a reduce-scatter or a broadcast, twice that for an all-reduce (a reduce-scatter, then an
all-gather). The time on a link comes from the same alpha-beta model as lesson 4's simulated links
(`Link.seconds`), computed, not slept.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

import torch
from torch.utils._pytree import tree_flatten

from effitrain_lessons.shared.distributed_runs import Launching, Link
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.memory import LiveStorages, plain_tensors
from effitrain_lessons.shared.sharding import held_by
from effitrain_lessons.shared.tables import Table, format_bytes

# What each c10d operation does, and which of its arguments is the whole tensor it works on
COLLECTIVES = {
    "c10d.allreduce_.default": ("all-reduce", 0),
    "c10d._allgather_base_.default": ("all-gather", 0),
    "c10d.allgather_.default": ("all-gather", 0),
    "c10d.allgather_into_tensor_coalesced_.default": ("all-gather", 0),
    "c10d._reduce_scatter_base_.default": ("reduce-scatter", 1),
    "c10d.reduce_scatter_.default": ("reduce-scatter", 1),
    "c10d.reduce_scatter_tensor_coalesced_.default": ("reduce-scatter", 1),
    "c10d.broadcast_.default": ("broadcast", 0),
}
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast")
_COLLECTIVE_OF: dict = {}  # each operation seen, and what COLLECTIVES says of it (() for no collective)
# The setups lesson 9's cells name, for the catalog: the tables show a setup's name in the lesson's
# language (a name the catalog lacks shows as it is)
SETUP_NAMES = (
    N_("data parallel"),
    N_("checkpointing"),
    N_("ZeRO-3 + checkpointing"),
    N_("FSDP2, False (≈ZeRO-2)"),
    N_("FSDP2, True (ZeRO-3)"),
    N_("ZeRO-1 in buckets"),
)
LABELS = (N_("all-reduce"), N_("all-gather"), N_("reduce-scatter"), N_("broadcast"))


def ring_share(kind: str, num_processes: int) -> float:
    """The share of a collective's whole tensor that each process sends, in a ring."""
    share = (num_processes - 1) / num_processes
    return 2 * share if kind == "all-reduce" else share


def _tensor_bytes(value) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor))


class ProcessWatch(LiveStorages):
    """The tensor bytes this process holds (`now`, and `peak` since `start_step`) and every collective
    call since `start_step` (`calls`: (kind, bytes of the whole tensor))."""

    def __init__(self, before=()) -> None:
        super().__init__(before)
        self.calls: list[tuple[str, int]] = []

    def start_step(self) -> None:
        self._forget_freed()
        self.peak = self.now
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        known = _COLLECTIVE_OF.get(func)
        if known is None:
            known = _COLLECTIVE_OF[func] = COLLECTIVES.get(str(func), ())
        if known:
            kind, whole = known
            self.calls.append((kind, _tensor_bytes(args[whole])))
        return super().__torch_dispatch__(func, types, args, kwargs)


@dataclass
class StepCounts:
    """What one process counted in one setup (see the module's docstring)."""

    setup: str
    rank: int
    num_processes: int
    parameters: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    gathered: int = 0  # whole parameters FSDP2 still holds once forward is done
    whole_parameters: int = 0  # the model's parameters, all of them (a DTensor counts whole)
    tensors: int = 0  # the model's parameter tensors
    held_before: int = 0  # tensor bytes at the start of the last step
    peak: int = 0  # the most tensor bytes at once during the last step
    calls: list = field(default_factory=list)  # [kind, bytes] of the last step
    losses: list = field(default_factory=list)
    probe_loss: float | None = None  # the loss on the probe batch, after everything
    optimizer_sum: float = 0.0  # |every value of the optimizer's moments|, summed over all processes

    @property
    def states(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state


def _share(batch: Mapping[str, torch.Tensor], rank: int, world: int) -> dict[str, torch.Tensor]:
    """This process's rows of `batch`: data parallel gives each process its own."""
    return {name: rows[rank::world] for name, rows in batch.items()}


def _state_sum(model: torch.nn.Module, optimizer) -> float:
    """The size of every value of the optimizer's moments, summed over the processes, each value once:
    equal for one state however it is split. A state every process holds whole (data parallel)
    counts in process 0 only."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    split = hasattr(optimizer, "optim") or any(isinstance(p, DTensor) for p in model.parameters())
    state = getattr(optimizer, "optim", optimizer).state
    total = torch.zeros((), dtype=torch.float64)
    if not split and dist.get_rank() != 0:
        state = {}
    for values in state.values():
        for value in values.values():
            # AdamW's moments, not its step counts: those are whole in every process
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                for local in plain_tensors(value):
                    total += local.double().abs().sum()
    dist.all_reduce(total)
    return total.item()


def sharded_steps(
    setups: Mapping[str, Callable],
    build_model: Callable[[], torch.nn.Module],
    batch: Mapping[str, torch.Tensor],
    steps: int = 2,
    probe: Mapping[str, torch.Tensor] | None = None,
    before: Callable | None = None,
    after: Callable | None = None,
) -> list[dict]:
    """In this process of a launch: each setup in turn on a fresh `build_model()`, `steps` AdamW steps
    on this process's rows of `batch`, measured (`StepCounts`, as dicts). `before(model, optimizer)`
    runs after the setup, before the steps (a load); `after(model, optimizer)` after them (a save);
    `probe`: a batch every process scores, the same in each, once everything is done."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    if not dist.is_initialized():
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = _share(batch, rank, world)
    reports = []
    for name, setup in setups.items():
        counts = StepCounts(name, rank, world)
        watch = ProcessWatch(before=[*mine.values(), *(probe or {}).values()])
        with watch:
            model, optimizer = setup(build_model())
            if before is not None:
                before(model, optimizer)
            counts.parameters, counts.gradients, counts.optimizer_state = held_by(model, optimizer)
            weights = list({id(p): p for p in model.parameters()}.values())
            counts.whole_parameters, counts.tensors = sum(p.numel() for p in weights), len(weights)
            sharded = any(isinstance(p, DTensor) for p in model.parameters())
            for _step in range(steps):
                watch.start_step()
                counts.held_before = watch.now
                loss = model(**mine)["loss"]
                if sharded:  # whole parameters FSDP2 gathered and still holds now
                    counts.gathered = sum(
                        p.numel() * p.element_size() for p in model.parameters() if not isinstance(p, DTensor)
                    )
                loss.backward()
                optimizer.step()
                counts.parameters, counts.gradients, counts.optimizer_state = held_by(model, optimizer)
                counts.peak, counts.calls = watch.peak, [list(call) for call in watch.calls]
                counts.losses.append(loss.item())
                optimizer.zero_grad(set_to_none=True)
            if after is not None:
                after(model, optimizer)
        counts.optimizer_sum = _state_sum(model, optimizer)
        if probe is not None:
            with torch.no_grad():
                counts.probe_loss = model(**probe)["loss"].item()
        reports.append(asdict(counts))
        del model, optimizer
        loss = None
        gc.collect()
        dist.barrier()
    return reports


class launching_setups(Launching):
    """A launch of lesson 9's setups with Accelerate's own `notebook_launcher`:

        with launching_setups(SETUPS, build_model, batch) as measured:
            notebook_launcher(measured, num_processes=2, use_port=measured.port)
        results = measured.results

    Each process runs `sharded_steps` with these arguments; `results` holds what every process
    counted (`Sharded`). The time limit, failures in one sentence and no process left behind are
    `Launching`'s."""

    def __init__(self, setups: Mapping[str, Callable], build_model, batch, timeout: float = 120.0, **options):
        if not setups or not all(callable(setup) for setup in setups.values()):
            raise TypeError(
                _("Give the launch a dict of setups: a name for each, and a function that takes the model.")
            )
        super().__init__(timeout)
        self.setups, self.build_model, self.batch, self.options = dict(setups), build_model, batch, options
        self.results: Sharded | None = None

    def __enter__(self):
        measured = super().__enter__()
        measured.results = self.results = None
        return measured

    def _job(self) -> list[dict]:
        return sharded_steps(self.setups, self.build_model, self.batch, **self.options)

    def _collect(self, per_rank: list[list[dict]]) -> None:
        self.results = self._measured.results = Sharded(
            [[StepCounts(**reports[i]) for reports in per_rank] for i in range(len(self.setups))]
        )


@dataclass
class Sharded:
    """What a launch counted: for each setup, one `StepCounts` per process (rank order)."""

    runs: list[list[StepCounts]]

    def __add__(self, other: Sharded) -> Sharded:
        return Sharded(self.runs + other.runs)

    def run(self, setup: str, num_processes: int | None = None) -> list[StepCounts]:
        for run in self.runs:
            if run[0].setup == setup and num_processes in (None, run[0].num_processes):
                return run
        raise KeyError(phrase("No setup named {name!r} was measured.", name=setup))

    def most(self, setup: str, what: str = "states", num_processes: int | None = None) -> int:
        """The most any one process held of `what`: "parameters", "gradients", "optimizer_state",
        "states" (the three), "gathered", "peak"."""
        return max(getattr(counts, what) for counts in self.run(setup, num_processes))

    def holding(self) -> Table:
        """Per setup, the most any one process holds once the step is over, and its share of what one
        process holds alone (16 bytes a parameter and AdamW's step counts, as data parallel holds)."""
        rows = []
        for run in self.runs:
            first = run[0]
            busiest = max(c.states for c in run)
            alone = 16 * first.whole_parameters + 4 * first.tensors
            rows.append(
                (
                    _(first.setup),
                    first.num_processes,
                    format_bytes(max(c.parameters for c in run)),
                    format_bytes(max(c.gradients for c in run)),
                    format_bytes(max(c.optimizer_state for c in run)),
                    format_bytes(busiest),
                    format_number(busiest / alone, ".0%"),
                    format_bytes(max(c.gathered for c in run)),
                )
            )
        return Table(
            [
                N_("setup"),
                N_("processes"),
                N_("parameters"),
                N_("gradients"),
                N_("optimizer state"),
                N_("busiest process"),
                N_("share of data parallel"),
                N_("gathered after forward"),
            ],
            rows,
            title=N_("What a process holds once an AdamW step is over (the most any one holds)"),
            notes=[
                N_(
                    "Counted in each process from the tensors it holds itself, a sharded tensor by its "
                    "own piece. Gathered after forward: whole parameters still held when the forward "
                    "pass ends."
                )
            ],
        )

    def per_process(self) -> dict[int, dict[str, dict[str, list[int]]]]:
        """For the figure: per number of processes, per setup, each process's parameters, gradients,
        optimizer state, and the whole parameters it held after forward."""
        parts = ("parameters", "gradients", "optimizer_state", "gathered")
        out: dict[int, dict[str, dict[str, list[int]]]] = {}
        for run in self.runs:
            out.setdefault(run[0].num_processes, {})[run[0].setup] = {
                part: [getattr(c, part) for c in run] for part in parts
            }
        return out

    def communication(self, links: Mapping[str, Link] = ()) -> Table:
        """Per setup: the collective calls of one step, what each process sends (ring), and that
        step's communication on each of `links`, computed from the calls."""
        links = dict(links)
        rows = []
        for run in self.runs:
            first = run[0]
            n = first.num_processes
            calls = [(kind, nbytes) for kind, nbytes in first.calls]
            counts = ", ".join(
                f"{sum(1 for k, _b in calls if k == kind)} {_(kind)}"
                for kind in KINDS
                if any(k == kind for k, _b in calls)
            )
            sent = sum(nbytes * ring_share(kind, n) for kind, nbytes in calls)
            times = [
                phrase(
                    "{ms} ms",
                    ms=format_number(1000 * sum(link.seconds(b * ring_share(k, n)) for k, b in calls), ".0f"),
                )
                for link in links.values()
            ]
            rows.append((_(first.setup), n, counts or "-", len(calls), format_bytes(sent), *times))
        return Table(
            [
                N_("setup"),
                N_("processes"),
                N_("collective calls in a step"),
                N_("calls"),
                N_("process 0 sends"),
                *[phrase("link {name}, computed", name=name) for name in links],
            ],
            rows,
            title=N_("What one step communicates, counted in process 0, and its time on each link"),
            notes=[
                N_(
                    "The times are computed from the calls with lesson 04's link model, one call after "
                    "the other, not measured."
                ),
                *[
                    phrase("link {name}: {link}", name=name, link=link.describe())
                    for name, link in links.items()
                ],
            ],
        )

    def peaks(self) -> Table:
        """Per setup, the most tensor memory any one process held at once during a step, and how much
        less than the first setup's."""
        rows, first_peak = [], None
        for run in self.runs:
            first = run[0]
            peak = max(c.peak for c in run)
            first_peak = peak if first_peak is None else first_peak
            rows.append(
                (
                    _(first.setup),
                    first.num_processes,
                    format_bytes(max(c.held_before for c in run)),
                    format_bytes(peak),
                    format_bytes(first_peak - peak) if peak != first_peak else "-",
                )
            )
        return Table(
            [
                N_("setup"),
                N_("processes"),
                N_("held between steps"),
                N_("peak during a step"),
                N_("peak below the first row's"),
            ],
            rows,
            title=N_("The peak of a step, in the busiest process"),
            notes=[
                N_(
                    "Every storage the process's operations made since the model was built, counted "
                    "until freed."
                )
            ],
        )


def state_table(model: torch.nn.Module, optimizer) -> Table:
    """What this process holds after a step, part by part, and per parameter."""
    count = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    parts = dict(zip(LABELS_STATE, held_by(model, optimizer)))
    rows = [(_(part), format_bytes(n), format_number(n / count, ".2f")) for part, n in parts.items()]
    total = sum(parts.values())
    rows.append((_("together"), format_bytes(total), format_number(total / count, ".2f")))
    return Table(
        [N_("part"), N_("bytes"), N_("bytes per parameter")],
        rows,
        title=phrase("One process, after an AdamW step: {count:,} parameters", count=count),
    )


LABELS_STATE = (N_("parameters"), N_("gradients"), N_("optimizer state"))


def reloaded(saved: Sharded, loaded: Sharded) -> Table:
    """A sharded checkpoint saved by one launch and loaded by another: in each process, what it holds
    and its loss on the probe batch, and every optimizer state value summed over the processes."""
    rows = []
    for name, result in ((N_("saved"), saved), (N_("loaded"), loaded)):
        for counts in result.runs[0]:
            rows.append(
                (
                    _(name),
                    f"{counts.rank} / {counts.num_processes}",
                    format_bytes(counts.parameters),
                    format_bytes(counts.optimizer_state),
                    format_number(counts.probe_loss, ".6f"),
                    format_number(counts.optimizer_sum, ".6g"),
                )
            )
    return Table(
        [
            N_("checkpoint"),
            N_("process"),
            N_("parameters"),
            N_("optimizer state"),
            N_("loss on the probe batch"),
            N_("sum of |AdamW's moments|, all processes"),
        ],
        rows,
        title=N_("A sharded checkpoint, saved by one number of processes and loaded by another"),
    )
