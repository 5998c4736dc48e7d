"""Lesson 1's plumbing: the A + B = C toy, selective-checkpointing policies, the deep stack.

Used by lesson 1 (gradient checkpointing from first principles). The notebook writes the concept
itself (`checkpoint(...)`, `create_selective_checkpoint_contexts(...)`, `checkpoint_sequential(...)`);
this module gives it something to checkpoint and measures what those calls do, with the step
tracing of `effitrain_lessons.shared.tracing` (`trace_step`: what a step keeps for the backward pass and
what it recomputes, counted; lesson 6 traces its layer with it too):

- the toy A + B = C (`abc`, `ABC_OPS`), and `compare_traces` to set traced cases side by side;
- `keep_ops_policy` and `log_policy`, a selective-checkpointing policy and a record of what it kept;
- `resident_kept_bytes`, a block's activation memory as the kernel counts it (exercise 1's check);
- `deep_stack` and `sweep_segments` measure memory, FLOPs and time against the number of checkpointed
  segments k, to hold them against Chen et al. (2016): memory O(n/k + k), one extra forward pass of
  FLOPs; the times as every lesson takes them (`shared.timing`: warm-up, median, middle half).

Its figures are in `figures` and the lines its cells print in `reports`, beside it: this module
imports no matplotlib.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch.utils._pytree import tree_flatten
from torch.utils.checkpoint import CheckpointPolicy, checkpoint_sequential

from effitrain_lessons.shared import tracing
from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsTable, Table, format_bytes
from effitrain_lessons.shared.timing import REPEATS, WARMUP, Ratio, Times, time_alternating

aten = torch.ops.aten

# ---------------------------------------------------------------------------------------------
# The A + B = C toy


def compute_a(x: torch.Tensor) -> torch.Tensor:
    """A: cheap, one `sin` per element."""
    return torch.sin(x)


def compute_b(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """B: deliberately costly, a (width x width) matrix product: 2 * batch * width**2 FLOPs."""
    return x @ weight


def compute_c(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C: combines A and B. A product, whose gradient needs both A and B (a sum's needs neither)."""
    return a * b


def abc(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The region lesson 1 checkpoints: A and B from x, then C from A and B. Used by lesson 1."""
    a = compute_a(x)
    b = compute_b(x, weight)
    return compute_c(a, b)


def abc_loss(c: torch.Tensor) -> torch.Tensor:
    """The loss of the toy: the sum of C (its gradient needs nothing saved)."""
    return c.sum()


ABC_OPS = {aten.sin.default: "A", aten.mm.default: "B", aten.mul.Tensor: "C", aten.sum.default: "loss"}
"""Each node of the toy named by the op that makes it (ops are what autograd and checkpointing see)."""

B_COSTLY_OP = aten.mm.default
"""The op that makes B: the one worth keeping."""


def abc_source() -> str:
    """The source of the toy's functions, to print in the notebook. Used by lesson 1."""
    return "\n\n".join(inspect.getsource(f) for f in (compute_a, compute_b, compute_c, abc, abc_loss))


def abc_inputs(batch: int = 64, width: int = 256, seed: int = 0) -> dict[str, torch.Tensor]:
    """x (batch x width) and weight (width x width), both leaves that require grad, drawn from `seed`.
    Used by lesson 1."""
    whole_numbers(batch=batch, width=width)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, width, generator=generator).requires_grad_()
    weight = (torch.randn(width, width, generator=generator) / math.sqrt(width)).requires_grad_()
    return {"x": x, "weight": weight}


# ---------------------------------------------------------------------------------------------
# Policies for selective checkpointing


def keep_ops_policy(ops: Iterable) -> Callable:
    """A selective-checkpointing policy: MUST_SAVE for the outputs of `ops`, PREFER_RECOMPUTE for the rest.

    Pass it to `create_selective_checkpoint_contexts`. `ops` are op overloads such as
    `torch.ops.aten.mm.default`. Used by lesson 1.
    """
    if isinstance(ops, torch._ops.OpOverload) or not isinstance(ops, Iterable):
        ops = [ops]
    kept = frozenset(ops)
    for op in kept:
        if isinstance(op, torch._ops.OpOverloadPacket):
            raise TypeError(
                phrase("{op} names a family of overloads: pass one of them, e.g. {op}.default.", op=op)
            )
        if not isinstance(op, torch._ops.OpOverload):
            raise TypeError(
                phrase("keep_ops_policy needs ops such as torch.ops.aten.mm.default, got {op!r}.", op=op)
            )

    def policy(ctx, op, *args, **kwargs) -> CheckpointPolicy:
        return CheckpointPolicy.MUST_SAVE if op in kept else CheckpointPolicy.PREFER_RECOMPUTE

    policy.kept_ops = kept
    return policy


@dataclass
class PolicyLog:
    """What a logged policy answered: the outputs it told selective checkpointing to keep."""

    kept: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)  # (op, shape, bytes)

    @property
    def kept_bytes(self) -> int:
        return sum(nbytes for _op, _shape, nbytes in self.kept)


def log_policy(policy: Callable) -> tuple[Callable, PolicyLog]:
    """Wrap a policy so that the outputs it answers MUST_SAVE or PREFER_SAVE for are recorded.

    A second way (beside `tracing.trace_step`'s `kept`) to see what selective checkpointing caches: the
    cache holds exactly those outputs. Returns the wrapped policy and its log. Used by lesson 1.
    """
    if not callable(policy):
        raise TypeError(
            _("log_policy needs a policy function (ctx, op, *args, **kwargs) -> CheckpointPolicy.")
        )
    log = PolicyLog()

    def logged(ctx, op, *args, **kwargs):
        answer = policy(ctx, op, *args, **kwargs)
        if isinstance(answer, bool):
            answer = CheckpointPolicy.MUST_SAVE if answer else CheckpointPolicy.PREFER_RECOMPUTE
        if answer in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
            for tensor in tree_flatten(ctx.op_output)[0]:
                if isinstance(tensor, torch.Tensor):
                    log.kept.append(
                        (tracing.op_name(op), tuple(tensor.shape), tensor.untyped_storage().nbytes())
                    )
        return answer

    return logged, log


# ---------------------------------------------------------------------------------------------
# Traced steps side by side

CASE_LABELS = (N_("no checkpointing"), N_("keep B (selective)"), N_("my policy"))
"""The names lesson 1's cells give their traced cases, marked for the catalog: `compare_traces` and
`plot_checkpoint_graph` show a case's name through `_`, so these show in the lesson's language, and
a name written as code ("checkpoint(abc, ...)") shows as it is."""


def compare_traces(traces: Mapping[str, tracing.StepTrace], names: Sequence[str] = ("A", "B")) -> Table:
    """A table of traced cases side by side: activation bytes kept, recomputations of `names`, and
    FLOPs relative to the first case. Used by lesson 1."""
    if not traces:
        raise ValueError(_("compare_traces needs at least one trace, e.g. {'no checkpointing': trace}."))
    base = next(iter(traces.values()))
    rows = []
    for label, trace in traces.items():
        counts = [f"{trace.recomputations(n)}x" for n in names]
        # the labels are the caller's (a lesson's dict keys): shown in the lesson's language
        rows.append(
            [
                _(label),
                format_bytes(trace.kept_bytes),
                *counts,
                f"x{format_number(trace.flops / base.flops, '.3f')}",
            ]
        )
    recomputed = [phrase("{name} recomputed", name=n) for n in names]
    return Table(["case", "kept for backward", *recomputed, "FLOPs"], rows)


def two_matmuls(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """relu(x @ w1) @ w2: two matmuls around a cheap ReLU. Used by lesson 1's second exercise."""
    return torch.relu(x @ w1) @ w2


def two_matmuls_inputs(
    batch: int = 32, width: int = 64, hidden: int = 128, seed: int = 0
) -> dict[str, torch.Tensor]:
    """x (batch x width), w1 (width x hidden) and w2 (hidden x width) for `two_matmuls`; w1, w2
    require grad."""
    whole_numbers(batch=batch, width=width, hidden=hidden)
    generator = torch.Generator().manual_seed(seed)
    return {
        "x": torch.randn(batch, width, generator=generator),
        "w1": (torch.randn(width, hidden, generator=generator) / math.sqrt(width)).requires_grad_(),
        "w2": (torch.randn(hidden, width, generator=generator) / math.sqrt(hidden)).requires_grad_(),
    }


# ---------------------------------------------------------------------------------------------
# Blocks and the deep stack


def mlp_block(width: int = 64, hidden: int = 256, seed: int = 0) -> torch.nn.Sequential:
    """A transformer-style MLP block, Linear -> GELU -> Linear, that saves 2 * hidden / width
    times more than its input. Used by lesson 1's first exercise."""
    whole_numbers(width=width, hidden=hidden)
    with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's random state untouched
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, width)
        )


def deep_stack(n_blocks: int = 36, width: int = 256, seed: int = 0) -> torch.nn.Sequential:
    """n blocks of Linear -> Tanh: each block keeps one activation the size of its input, the
    setting of Chen et al.'s O(n/k + k). Used by lesson 1."""
    whole_numbers(n_blocks=n_blocks, width=width)
    with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's random state untouched
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            *[
                torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())
                for _block in range(n_blocks)
            ]
        )


def stack_input(stack: torch.nn.Sequential, batch: int = 64, seed: int = 0) -> torch.Tensor:
    """A batch for `stack` (inputs that do not require grad, like token embeddings of a frozen table).
    Used by lesson 1."""
    whole_numbers(batch=batch)
    width = next(m for m in stack.modules() if isinstance(m, torch.nn.Linear)).in_features
    return torch.randn(batch, width, generator=torch.Generator().manual_seed(seed))


def times_ratio(ratio: Ratio) -> str:
    """A time ratio in the sweep's style, beside its FLOPs: "x1.38 (1.30-1.45)", the median and the
    lowest and highest ratio the two middle halves allow."""
    return phrase(
        "x{median} ({low}-{high})",
        median=format_number(ratio.median, ".2f"),
        low=format_number(ratio.low, ".2f"),
        high=format_number(ratio.high, ".2f"),
    )


@dataclass(frozen=True)
class SegmentsRow:
    """One segment count k of the sweep."""

    k: int
    kept_bytes: int  # activations kept for backward
    flops: int  # forward + backward + recomputation
    times: Times  # the timed steps (shared/timing.py): median and middle half


@dataclass(frozen=True)
class SegmentSweep(ShowsAsTable):
    """`sweep_segments`' result: one row per k, and the references to hold it against."""

    n_blocks: int
    unit_bytes: int  # bytes of one block's activation (batch x width floats)
    rows: tuple[SegmentsRow, ...]

    @property
    def ks(self) -> list[int]:
        return [row.k for row in self.rows]

    def row(self, k: int) -> SegmentsRow:
        for row in self.rows:
            if row.k == k:
                return row
        raise ValueError(phrase("k={k} was not measured: choose one of {ks}.", k=k, ks=self.ks))

    @property
    def baseline(self) -> SegmentsRow:
        """k = 1: one segment, nothing checkpointed."""
        return self.row(1)

    @property
    def best_k(self) -> int:
        """The measured k that keeps the least memory (the smallest such k on a tie)."""
        return min(self.rows, key=lambda row: (row.kept_bytes, row.k)).k

    @property
    def sqrt_n(self) -> float:
        return math.sqrt(self.n_blocks)

    def flops_ratio(self, k: int) -> float:
        return self.row(k).flops / self.baseline.flops

    def time_ratio(self, k: int) -> Ratio:
        """k's time over k = 1's: the ratio of the medians, and the lowest and highest the spreads allow."""
        return self.row(k).times / self.baseline.times

    def memory_ratio(self, k: int) -> float:
        return self.row(k).kept_bytes / self.baseline.kept_bytes

    def describe(self, k: int) -> str:
        """One line of numbers for k, e.g. for the explorer's title."""
        row = self.row(k)
        return phrase(
            "k = {k}: keeps {size} ({share:.0%} of k = 1), FLOPs x{flops:.3f}, time {time}",
            k=k,
            size=format_bytes(row.kept_bytes),
            share=self.memory_ratio(k),
            flops=self.flops_ratio(k),
            time=times_ratio(self.time_ratio(k)),
        )

    def time_against_flops(self, k: int) -> str:
        """Whether the time at k grew more than the FLOPs, by the whole spread of the time ratio, less
        by the whole spread, or the spread holds the FLOPs ratio: one sentence, from this run."""
        time, flops = self.time_ratio(k), self.flops_ratio(k)
        if time.low > flops:
            verdict = N_("at k = {k} the time grew more than the FLOPs: {time} against x{flops}")
        elif time.high < flops:
            verdict = N_("at k = {k} the time grew less than the FLOPs: {time} against x{flops}")
        else:
            verdict = N_("at k = {k} the time's spread holds the FLOPs' growth: {time} against x{flops}")
        return phrase(verdict, k=k, time=times_ratio(time), flops=format_number(flops, ".2f"))

    def table(self) -> Table:
        """Every measured k, relative to k = 1, and which k kept the least against sqrt(n)."""
        rows = [
            (
                k,
                format_bytes(self.row(k).kept_bytes),
                format_number(self.memory_ratio(k), ".0%"),
                f"x{format_number(self.flops_ratio(k), '.3f')}",
                times_ratio(self.time_ratio(k)),
            )
            for k in self.ks
        ]
        notes = [
            phrase(
                "least memory at k = {k}; sqrt(n) = {sqrt_n:g} for n = {n} blocks; "
                "one block's activation: {unit}",
                k=self.best_k,
                sqrt_n=self.sqrt_n,
                n=self.n_blocks,
                unit=format_bytes(self.unit_bytes),
            ),
            _("FLOPs: matrix products, as FlopCounterMode counts them"),
            phrase("time at k = 1: {times}", times=self.baseline.times),
            _(
                "time: median over k = 1's; in parentheses, the lowest to highest ratio "
                "the middle halves allow"
            ),
            self.time_against_flops(self.best_k),
        ]
        return Table(["segments k", "kept for backward", "of k = 1", "FLOPs", "time"], rows, notes=notes)


def chen_memory(n_blocks: int, k: float) -> float:
    """Activations kept with k segments, in block activations: the k - 1 segment inputs checkpoint
    holds (the first is the stack's input, there anyway) plus the n/k of the segment not
    checkpointed. Chen et al. (2016): O(n/k + k), smallest at k = sqrt(n). Used by lesson 1."""
    return n_blocks / k + k - 1


def chen_flops_ratio(k: float) -> float:
    """FLOPs with k segments over FLOPs without: every segment but the last runs forward twice, and
    backward costs about two forwards, so 1 + (1 - 1/k) / 3, about one extra forward (4/3) for large k.
    Used by lesson 1."""
    return 1 + (1 - 1 / k) / 3


def divisors(n: int) -> list[int]:
    """The k that split n blocks into equal segments. Used by lesson 1."""
    whole_numbers(n=n)
    return [k for k in range(1, n + 1) if n % k == 0]


def sweep_segments(
    stack: torch.nn.Sequential,
    x: torch.Tensor,
    segments: Sequence[int] | None = None,
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> SegmentSweep:
    """Measure one training step of `stack` on `x` for each k in `segments` (default: the divisors
    of its length), running it as `checkpoint_sequential(stack, k, x, use_reentrant=False)`.
    k = 1 is the plain stack. Memory and FLOPs come from one traced step per k; the times from
    `warmup` + `repeats` plain steps per k, the k taking turns (shared/timing.py). Used by lesson 1."""
    if not isinstance(stack, torch.nn.Sequential):
        raise TypeError(_("sweep_segments needs a torch.nn.Sequential (e.g. deep_stack(36))."))
    n = len(stack)
    segments = sorted(set(divisors(n) if segments is None else segments) | {1})
    if segments[0] < 1 or segments[-1] > n:
        raise ValueError(
            phrase(
                "Segment counts must be between 1 and the number of blocks ({n}), got {segments}.",
                n=n,
                segments=segments,
            )
        )
    whole_numbers(repeats=repeats)

    def step(k: int) -> Callable[[], None]:
        def run() -> None:
            stack.zero_grad(set_to_none=True)
            checkpoint_sequential(stack, k, x, use_reentrant=False).sum().backward()

        return run

    traces = {
        k: tracing.trace_step(
            lambda x, k=k: checkpoint_sequential(stack, k, x, use_reentrant=False),
            {"x": x},
            parameters=stack,
        )
        for k in segments
    }
    times = time_alternating({str(k): step(k) for k in segments}, x.device, warmup, repeats)
    stack.zero_grad(set_to_none=True)
    rows = tuple(
        SegmentsRow(k=k, kept_bytes=traces[k].kept_bytes, flops=traces[k].flops, times=times[str(k)])
        for k in segments
    )
    return SegmentSweep(n_blocks=n, unit_bytes=x.shape[0] * _width_out(stack) * x.element_size(), rows=rows)


def _width_out(stack: torch.nn.Sequential) -> int:
    return [m for m in stack.modules() if isinstance(m, torch.nn.Linear)][-1].out_features


# ---------------------------------------------------------------------------------------------
# Activation memory as the operating system counts it: exercise 1's check


def _c_library():
    """glibc's `malloc_trim`, or None where there is none (macOS, musl): looked up once, on import."""
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _c_library()
_STATM = "/proc/self/statm"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident_bytes() -> int:
    """The process's resident bytes, once glibc has given every free page back to the kernel."""
    _MALLOC_TRIM(0)
    with open(_STATM, encoding="ascii") as statm:
        return int(statm.read().split()[1]) * _PAGE


def resident_kept_bytes(forward: Callable, x: torch.Tensor, repeats: int = 2) -> int:
    """Bytes the process holds between `forward(x)` and its backward pass, beyond the output: the
    activation memory, read from the operating system's count of the process's resident pages.

    Whatever `forward` does (threads, its own saved-tensor hooks, tensor hooks), what autograd keeps
    stays in memory, and the kernel counts it. Before each reading, glibc gives the pages of freed
    memory back to the kernel (`malloc_trim`), so an activation the forward freed is not counted.
    Choose `x` so that activations are megabytes: the count is in pages. Runs one warm-up step, then
    `repeats` steps, and gives the largest. Where the kernel's count is not readable (not Linux with
    glibc), falls back to `trace_step`'s count. Used by lesson 1's exercise 1.
    """
    if _MALLOC_TRIM is None or not os.path.exists(_STATM):
        return tracing.trace_step(forward, {"x": x}).kept_bytes
    forward(x).sum().backward()  # warm-up: lazy set-up (thread pools, buffers) is not an activation
    kept = []
    for _repeat in range(repeats):
        before = _resident_bytes()
        out = forward(x)
        held = _resident_bytes() - before
        if isinstance(out, torch.Tensor):
            held -= out.numel() * out.element_size()
            out.sum().backward()
        kept.append(held)
        del out
    return max(0, max(kept))
