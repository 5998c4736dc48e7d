"""Checkpointing a model of your own, measured: lesson 7's data, counters and peak memory.

The lesson writes the model and every way of checkpointing it in its cells (`checkpoint(...)` in
`forward`, `apply_activation_checkpointing`, a selective policy, `save_on_cpu`, saved-tensor hooks
that send tensors to disk). This module only feeds and measures them, with the course's own
primitives: `tracing.trace_step` (lesson 1's tracer) counts what a step keeps for the backward
pass and its FLOPs, recomputation included; `memory.record_saved_tensors` sees what a pack hook
receives. Each result prints itself in the lesson's language, so a cell ends with the result.

The peak of a step: on CUDA, `torch.cuda.max_memory_allocated` above what was allocated before.
A CPU has no such counter in PyTorch, so `peak_bytes` counts what the allocator is asked for: every
storage an op makes during the step (views share one), from the op that makes it until the last
reference to it goes. The caching and fragmentation of a real allocator are not in it.

Times are taken as every lesson takes them (`shared/timing.py`): the settings in turns, warm-up
steps, then the median and spread of several steps. Sizes print in MiB, one unit for the lesson.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.data import load_mrpc, load_tokenizer
from effitrain_lessons.shared.device import synchronize
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.memory import LiveStorages, SavedTensorLog
from effitrain_lessons.shared.tables import ShowsAsLines, ShowsAsTable, Table, format_flops
from effitrain_lessons.shared.timing import REPEATS, WARMUP, Times, time_alternating
from effitrain_lessons.shared.tracing import trace_step

WRAPPED = "_checkpoint_wrapped_module."  # what checkpoint_wrapper adds to a parameter's name
# Lesson 3's tolerance for gradients that float32 rounding may change (its accumulation proof)
RTOL, ATOL = 1e-4, 1e-6

# The labels lesson 7's cells give the choices and offloads they measure (English; the tables, the
# figure and the reports show them translated).
CHOICE_LABELS = (
    N_("no checkpointing"),
    N_("1. checkpoint() in forward"),
    N_("2. apply_activation_checkpointing"),
    N_("3a. recompute the attention core"),
    N_("3b. keep the matrix products"),
    N_("every block"),
    N_("every other block"),
    N_("the first half"),
    N_("only the attention"),
    N_("no offload"),
    N_("to disk (saved-tensor hooks)"),
)


def largest_difference(differences) -> float:
    """The largest absolute value in some tensors of differences, NaN if any is NaN (Python's `max`
    would keep an earlier number over a later NaN, and call NaN gradients identical)."""
    largest = 0.0
    for difference in differences:
        value = difference.abs().max().item() if difference.numel() else 0.0
        if math.isnan(value):
            return math.nan
        largest = max(largest, value)
    return largest


def in_mib(n: float, digits: int = 2) -> str:
    """Bytes in MiB, whatever their size ('0.125 MiB', '21.80 MiB'): lesson 7 writes every size in
    one unit."""
    return f"{format_number(n / 2**20, f',.{digits}f')} MiB"


# ---------------------------------------------------------------------------------------------
# The data: the course's sentences as one stream of tokens, cut into windows


def token_stream() -> torch.Tensor:
    """The course's training sentences (both of each pair), tokenized and joined: one long tensor of
    token ids. Used by lesson 7 to train a small language model."""
    rows = load_mrpc()["train"][:]
    tokenizer = load_tokenizer()
    encoded = tokenizer([*rows["sentence1"], *rows["sentence2"]], add_special_tokens=False)["input_ids"]
    return torch.tensor([token for sentence in encoded for token in sentence], dtype=torch.long)


def language_model_batches(
    stream: torch.Tensor, batch: int, seq: int, count: int = 1, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` batches of `batch` windows of `seq` tokens from `stream`, each with its targets: the same
    tokens one place on (next-token prediction). Windows start at random places drawn from `seed`."""
    whole_numbers(batch=batch, seq=seq, count=count)
    if stream.numel() <= seq + 1:
        raise ValueError(
            phrase("The stream has {n} tokens: too few for windows of {seq}.", n=stream.numel(), seq=seq)
        )
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _batch in range(count):
        starts = torch.randint(stream.numel() - seq - 1, (batch,), generator=generator)
        windows = torch.stack([stream[start : start + seq + 1] for start in starts.tolist()])
        batches.append((windows[:, :-1].contiguous(), windows[:, 1:].contiguous()))
    return batches


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each position's logits against the next token."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


# ---------------------------------------------------------------------------------------------
# One way of checkpointing, measured


@dataclass(frozen=True)
class ChoicePoint:
    """One training step of a model (checkpointed one way or not at all), measured."""

    label: str
    saved_bytes: int  # made in the forward pass and still held when the backward starts
    flops: int  # forward + backward, recomputation included (FlopCounterMode: matrix products)
    times: Times | None  # its timed steps (shared/timing.py); None when not timed
    gradients: Mapping[str, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)

    @property
    def seconds(self) -> float | None:
        """The median time of a step; None when not timed."""
        return None if self.times is None else self.times.median


def measure_choice(
    model: torch.nn.Module, ids: torch.Tensor, targets: torch.Tensor, label: str = ""
) -> ChoicePoint:
    """What one training step of `model` on `ids` keeps for the backward pass and its FLOPs (lesson 1's
    `trace_step`), and its gradients, named as in the plain model. Not timed: see `measure_choices`."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            phrase("measure_choice needs a torch.nn.Module, got {kind}.", kind=type(model).__name__)
        )
    trace = trace_step(
        model, {"ids": ids}, parameters=model, loss_fn=lambda logits: next_token_loss(logits, targets)
    )
    model.zero_grad(set_to_none=True)
    gradients = {name.replace(WRAPPED, ""): grad for name, grad in trace.gradients.items() if name != "ids"}
    return ChoicePoint(label, trace.kept_bytes, trace.flops, None, gradients)


def _training_step(model: torch.nn.Module, ids: torch.Tensor, targets: torch.Tensor) -> Callable[[], None]:
    def step() -> None:
        model.zero_grad(set_to_none=True)
        next_token_loss(model(ids), targets).backward()
        model.zero_grad(set_to_none=True)

    return step


@dataclass(frozen=True, repr=False)  # a cell that ends with it shows its table, not its fields
class ChoiceTable(ShowsAsTable):
    """Several ways of checkpointing one model, measured on one batch; the first is the baseline."""

    points: list[ChoicePoint]

    @property
    def baseline(self) -> ChoicePoint:
        return self.points[0]

    def point(self, label: str) -> ChoicePoint:
        for point in self.points:
            if point.label == label:
                return point
        raise KeyError(phrase("No choice is labelled {label!r}.", label=label))

    def gradient_difference(self, label: str) -> float:
        """The largest absolute difference between a choice's gradients and the baseline's (0.0: equal
        bit for bit)."""
        mine, base = self.point(label).gradients, self.baseline.gradients
        if set(mine) != set(base):
            return math.inf
        return largest_difference(mine[name] - base[name] for name in base)

    def table(self) -> Table:
        base = self.baseline
        rows = []
        for point in self.points:
            rows.append(
                [
                    _(point.label),
                    in_mib(point.saved_bytes),
                    format_number(point.saved_bytes / base.saved_bytes, ".0%"),
                    format_number((point.flops - base.flops) / base.flops, "+.1%"),
                    "-" if point.times is None or base.times is None else str(point.times / base.times),
                    format_number(self.gradient_difference(point.label), ".1g"),
                ]
            )
        return Table(
            [
                "choice",
                "kept for backward",
                "of the plain step",
                "recomputed FLOPs",
                "time / plain step",
                "gradients: largest difference",
            ],
            rows,
            notes=[
                phrase(
                    "plain step: {size} kept, {flops}",
                    size=in_mib(base.saved_bytes),
                    flops=format_flops(base.flops),
                ),
                _(
                    "time: the median step over the plain step's median; in parentheses, the range "
                    "the middle halves of the two allow"
                ),
            ],
        )


def measure_choices(
    models: Mapping[str, torch.nn.Module],
    ids: torch.Tensor,
    targets: torch.Tensor,
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> ChoiceTable:
    """`measure_choice` for each model of `models` (label -> model; the first is the baseline), then
    their training steps timed in turns (`timing.time_alternating`: `warmup` untimed rounds, then
    `repeats` timed), so that a burst of other work on a shared machine slows every choice alike.
    Used by lesson 7."""
    points = {label: measure_choice(model, ids, targets, label) for label, model in models.items()}
    steps = {label: _training_step(model, ids, targets) for label, model in models.items()}
    times = time_alternating(steps, ids.device, warmup=warmup, repeats=repeats)
    return ChoiceTable(
        [
            ChoicePoint(label, point.saved_bytes, point.flops, times[label], point.gradients)
            for label, point in points.items()
        ]
    )


@dataclass(frozen=True, repr=False)
class BlockSavings(ShowsAsLines):
    """What checkpointing one block frees, that times the number of blocks, and what checkpointing
    every block frees: with equal blocks the savings add up. And a block's input, which each
    checkpointed block keeps."""

    one_block: int  # bytes no longer kept when one block is checkpointed
    blocks: int
    every_block: int  # bytes no longer kept when every block is
    block_input: int

    def lines(self) -> list[str]:
        return [
            phrase(
                "one block frees {one}; {blocks} times that is {times}; every block frees {every}",
                one=in_mib(self.one_block),
                blocks=self.blocks,
                times=in_mib(self.blocks * self.one_block),
                every=in_mib(self.every_block),
            ),
            phrase(
                "equal to the byte: {same}",
                same=_("yes") if self.blocks * self.one_block == self.every_block else _("no"),
            ),
            phrase("a block's input: {size}", size=in_mib(self.block_input, 3)),
        ]


# ---------------------------------------------------------------------------------------------
# What a pack hook receives


@dataclass(frozen=True, repr=False)
class PackedBytes(ShowsAsLines):
    """The bytes a pack hook is handed in one forward pass: of activations, and of the model's own
    parameters."""

    activations: int
    parameters: int

    def lines(self) -> list[str]:
        return [
            phrase(
                "a pack hook is handed {activations} of activations and {parameters} of parameters",
                activations=in_mib(self.activations),
                parameters=in_mib(self.parameters),
            )
        ]


def packed_bytes(log: SavedTensorLog) -> PackedBytes:
    """The bytes a pack hook is handed in one forward pass, once per call (what `save_on_cpu` copies):
    of activations, and of the model's own parameters, which are in memory anyway."""
    sizes = {"activations": 0, "parameters": 0}
    for entry in log.entries:
        nbytes = math.prod(entry.shape) * torch.empty((), dtype=entry.dtype).element_size()
        sizes["parameters" if entry.is_model_state else "activations"] += nbytes
    return PackedBytes(**sizes)


# ---------------------------------------------------------------------------------------------
# The peak of a step


def peak_bytes(
    step: Callable[[], object], device: torch.device | str = "cpu", held: Iterable[torch.Tensor] = ()
) -> int:
    """The most memory `step()` holds at once beyond what existed before it: on CUDA
    `torch.cuda.max_memory_allocated`, elsewhere the bytes of the storages its ops make and still hold
    (the module's docstring says what that leaves out). `held`: tensors that exist before the step
    (parameters), never counted. What `step` returns is dropped before the end."""
    device = torch.device(device)
    if device.type == "cuda":
        synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    with LiveStorages(held) as counter:
        step()
    return counter.peak


# ---------------------------------------------------------------------------------------------
# Offload, and the state a step adds to its peak


@dataclass(frozen=True)
class OffloadRun:
    """One training step with saved tensors sent somewhere (or kept), measured."""

    label: str  # English, shown translated
    peak: int  # the most the step holds at once beyond the parameters (`peak_bytes`)
    times: Times  # its timed steps (shared/timing.py)
    difference: float  # the largest difference of a gradient element from the first offload's (0: equal)
    close: bool  # every gradient within lesson 3's tolerance of the first offload's (RTOL, ATOL)

    @property
    def same_gradients(self) -> bool:
        """Bit for bit the first offload's gradients."""
        return self.difference == 0

    def gradients(self) -> str:
        """The gradients against the first offload's, in lesson 3's words."""
        if self.same_gradients:
            return _("identical")
        said = phrase("largest difference {difference:.1e}", difference=self.difference)
        if self.close:
            return phrase("equal within float32 rounding ({said})", said=said)
        return phrase("different ({said})", said=said)


@dataclass(frozen=True, repr=False)
class OffloadReport(ShowsAsLines):
    """Each offload's peak, step time and gradients, one line each."""

    runs: list[OffloadRun]

    def lines(self) -> list[str]:
        return [
            phrase(
                "{label}: peak {peak}, step {ms}, gradients: {gradients}",
                label=_(run.label),
                peak=in_mib(run.peak),
                ms=run.times.milliseconds(),
                gradients=run.gradients(),
            )
            for run in self.runs
        ]


def measure_offloads(
    step: Callable[[object], object],
    offloads: Mapping[str, object],
    model: torch.nn.Module,
    device: torch.device | str = "cpu",
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> OffloadReport:
    """For each offload of `offloads` (label -> what `step` takes: the lesson gives a function that
    returns the hooks' context manager, or None for none), `step(offload)` runs one training step of
    `model`: its peak (`peak_bytes`, the parameters not counted) and how far its gradients are from
    the first offload's: their largest difference, and whether all are equal within lesson 3's
    tolerance for float32 rounding. Then the steps are timed in turns (`timing.time_alternating`).
    The model's gradients are reset at the end. Used by lesson 7."""
    device = torch.device(device)
    peaks, differences, close, first = {}, {}, {}, None
    for label, offload in offloads.items():
        peaks[label] = peak_bytes(lambda offload=offload: step(offload), device, held=model.parameters())
        gradients = [p.grad.clone() for p in model.parameters()]
        first = first or gradients
        pairs = list(zip(gradients, first))
        alike = len(gradients) == len(first) and all(a.shape == b.shape for a, b in pairs)
        differences[label] = largest_difference(a - b for a, b in pairs) if alike else math.inf
        close[label] = alike and all(torch.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs)
    times = time_alternating(
        {label: (lambda offload=offload: step(offload)) for label, offload in offloads.items()},
        device,
        warmup=warmup,
        repeats=repeats,
    )
    model.zero_grad(set_to_none=True)
    runs = [
        OffloadRun(label, peaks[label], times[label], differences[label], close[label]) for label in offloads
    ]
    return OffloadReport(runs)


@dataclass(frozen=True, repr=False)
class ParameterState(ShowsAsLines):
    """What a model's parameters take, and what their gradients and AdamW's two moments add."""

    parameter_bytes: int

    def lines(self) -> list[str]:
        return [
            phrase(
                "the parameters: {size}; their gradients: {size} more; AdamW's two moments: {twice}",
                size=in_mib(self.parameter_bytes),
                twice=in_mib(2 * self.parameter_bytes),
            )
        ]


def parameter_state(model: torch.nn.Module) -> ParameterState:
    """The bytes of `model`'s parameters, against their gradients and AdamW's moments. Used by
    lesson 7."""
    return ParameterState(sum(p.numel() * p.element_size() for p in model.parameters()))


@dataclass(frozen=True, repr=False)  # a cell that ends with it shows its table, not its fields
class PeakReport(ShowsAsTable):
    """What a step keeps for the backward pass against the most it holds at once: during the forward
    and backward passes, and with the optimizer's step after them."""

    # (label, kept for the backward pass, peak of forward and backward, peak with the optimizer's step)
    steps: list[tuple[str, int, int, int]]
    device: str

    def table(self) -> Table:
        return Table(
            ["step", "kept for backward", "peak: forward and backward", "peak: with AdamW's first step"],
            [
                [_(label), in_mib(kept), in_mib(backward), in_mib(whole)]
                for label, kept, backward, whole in self.steps
            ],
            notes=[
                phrase("peak: torch.cuda.max_memory_allocated, above the parameters")
                if self.device == "cuda"
                else phrase(
                    "peak: the storages the step's operations make, counted until freed, above the parameters"
                )
            ],
        )
