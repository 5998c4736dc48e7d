"""Lesson 1's plumbing: the A + B = C toy, counting recomputations, what a step keeps, the deep stack.

Used by lesson 1 (gradient checkpointing from first principles). The notebook writes the concept
itself (`checkpoint(...)`, `create_selective_checkpoint_contexts(...)`, `checkpoint_sequential(...)`);
this module measures what those calls do:

- `trace_step` runs one forward + backward pass of a function and reports what autograd saved
  (saved-tensor hooks), what the forward left in memory for the backward (tensors made during the
  forward whose storage is still alive when the backward starts: this also sees the cache of
  selective checkpointing, which the hooks cannot), how many times each op ran again during the
  backward (recomputation), the FLOPs, and the gradients.
- `deep_stack` and `sweep_segments` measure memory and compute against the number of checkpointed
  segments k, to hold them against Chen et al. (2016): memory O(n/k + k), one extra forward pass.

How recomputations are counted: a `TorchDispatchMode` is active during the backward pass and counts
the ops that really execute there with grad mode on. Checkpointing reruns the forward with grad mode
on (both variants); the backward formulas themselves run with grad mode off. Selective checkpointing
answers cached ops from its own cache without executing them, so they are (rightly) not counted.
A counter in the Python function would be wrong there: the function body does run again, but the
cached ops inside it return stored results.
"""

from __future__ import annotations

import inspect
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.checkpoint import CheckpointPolicy, checkpoint_sequential

from effitrain_lessons.arguments import whole_numbers
from effitrain_lessons.device import synchronize
from effitrain_lessons.i18n import _, phrase
from effitrain_lessons.memory import count_step, format_bytes, format_flops, storage_key
from effitrain_lessons.tables import ShowsAsTable, Table

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
            raise TypeError(phrase("{op} names a family of overloads: pass one of them, e.g. {op}.default.", op=op))
        if not isinstance(op, torch._ops.OpOverload):
            raise TypeError(phrase("keep_ops_policy needs ops such as torch.ops.aten.mm.default, got {op!r}.", op=op))

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
        return sum(nbytes for _, _, nbytes in self.kept)


def log_policy(policy: Callable) -> tuple[Callable, PolicyLog]:
    """Wrap a policy so that the outputs it answers MUST_SAVE or PREFER_SAVE for are recorded.

    A second way (beside `trace_step`'s `kept`) to see what selective checkpointing caches: the
    cache holds exactly those outputs. Returns the wrapped policy and its log. Used by lesson 1.
    """
    if not callable(policy):
        raise TypeError(_("log_policy needs a policy function (ctx, op, *args, **kwargs) -> CheckpointPolicy."))
    log = PolicyLog()

    def logged(ctx, op, *args, **kwargs):
        answer = policy(ctx, op, *args, **kwargs)
        if isinstance(answer, bool):
            answer = CheckpointPolicy.MUST_SAVE if answer else CheckpointPolicy.PREFER_RECOMPUTE
        if answer in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
            for tensor in tree_flatten(ctx.op_output)[0]:
                if isinstance(tensor, torch.Tensor):
                    log.kept.append((_op_name(op), tuple(tensor.shape), tensor.untyped_storage().nbytes()))
        return answer

    return logged, log


# ---------------------------------------------------------------------------------------------
# Tracing one step


@dataclass(frozen=True)
class TensorRecord:
    """One tensor in a trace: named by its input name, or by the op that made it."""

    name: str
    shape: tuple[int, ...]
    nbytes: int
    made_in_forward: bool  # False for inputs and parameters, which exist before the step


@dataclass
class StepTrace:
    """One forward + backward pass, traced by `trace_step`."""

    saved: list[TensorRecord]  # what autograd's saved-tensor hooks saw, one per storage
    kept: list[TensorRecord]  # tensors made in the forward still in memory when the backward starts
    forward_runs: dict[str, int]  # how many times each op ran in the forward
    recomputed: dict[str, int]  # how many times each op ran again during the backward
    flops: int  # forward + backward (+ recomputation)
    forward_flops: int
    gradients: dict[str, torch.Tensor]  # of the inputs and parameters that require grad

    @property
    def saved_bytes(self) -> int:
        """Bytes the hooks saw that the forward made (inputs and parameters left out)."""
        return sum(r.nbytes for r in self.saved if r.made_in_forward)

    @property
    def kept_bytes(self) -> int:
        """Bytes the forward made that are still held for the backward: the activation memory."""
        return sum(r.nbytes for r in self.kept)

    def recomputations(self, name: str) -> int:
        """How many times the op named `name` ran again during the backward (0 if never)."""
        return self.recomputed.get(name, 0)

    def status(self, name: str) -> str:
        """'recomputed', 'stored' or 'deleted': what happened to the tensor `name` between the passes
        (a value to compare, not a sentence: it is the same in every language)."""
        if self.recomputations(name):
            return "recomputed"
        if any(r.name == name for r in self.kept) or any(r.name == name for r in self.saved):
            return "stored"
        return "deleted"

    def table(self) -> Table:
        """Every tensor held from the forward pass for the backward pass, who holds it, and the totals."""
        hooked = {r.name for r in self.saved}
        rows = []
        for r in self.saved:
            if r.made_in_forward:
                holder = _("autograd (saved-tensor hooks)")
            else:
                holder = _("autograd or checkpoint (not made by the step)")
            rows.append((r.name, str(r.shape), format_bytes(r.nbytes), holder))
        for r in self.kept:
            if r.name not in hooked:
                rows.append((r.name, str(r.shape), format_bytes(r.nbytes), _("something the hooks do not see")))
        again = ", ".join(f"{name} x{count}" for name, count in self.recomputed.items()) or _("nothing")
        notes = [  # the spaces line the values up in English; a translation lines up its own
            phrase("activations kept for backward: {size}", size=format_bytes(self.kept_bytes)),
            phrase("recomputed during backward:    {ops}", ops=again),
            phrase("FLOPs (forward + backward):    {flops}", flops=format_flops(self.flops)),
        ]
        return Table(["tensor", "shape", "bytes", "held by"], rows, notes=notes)

    def __str__(self) -> str:
        return str(self.table())


def compare_traces(traces: Mapping[str, StepTrace], names: Sequence[str] = ("A", "B")) -> Table:
    """A table of traced cases side by side: activation bytes kept, recomputations of `names`, and
    FLOPs relative to the first case. Used by lesson 1."""
    if not traces:
        raise ValueError(_("compare_traces needs at least one trace, e.g. {'no checkpointing': trace}."))
    base = next(iter(traces.values()))
    rows = []
    for label, trace in traces.items():
        counts = [f"{trace.recomputations(n)}x" for n in names]
        # the labels are the caller's (a lesson's dict keys): shown in the lesson's language
        rows.append([_(label), format_bytes(trace.kept_bytes), *counts, f"x{trace.flops / base.flops:.3f}"])
    recomputed = [phrase("{name} recomputed", name=n) for n in names]
    return Table(["case", "kept for backward", *recomputed, "FLOPs"], rows)


def _counted(op) -> bool:
    """Views (t, expand, detach, ...) relabel data without computing: they are not counted as runs."""
    return not getattr(op, "is_view", False)


class _ForwardTensors(TorchDispatchMode):
    """Records every storage the ops make (weakly, so that recording keeps nothing alive), named by
    the op that made it, and counts the ops that ran."""

    def __init__(self, names: Mapping, known: Mapping[tuple[str, int], str]):
        super().__init__()
        self.names = names
        self.known = dict(known)  # storages that existed before: inputs and parameters
        self.made: dict[tuple[str, int], tuple[str, tuple[int, ...], int, StorageWeakRef]] = {}
        self.runs: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not _counted(func):  # a view makes no new storage
            return out
        self.runs[self.names.get(func, _op_name(func))] += 1
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor) or tensor.untyped_storage().nbytes() == 0:
                continue
            key = storage_key(tensor)
            if key in self.known:
                continue
            previous = self.made.get(key)
            if previous is None or previous[3].expired():  # new, or an address reused after a free
                storage = tensor.untyped_storage()
                name = self.names.get(func, _op_name(func))
                self.made[key] = (name, tuple(tensor.shape), storage.nbytes(), StorageWeakRef(storage))
        return out

    def alive(self, exclude: set[tuple[str, int]]) -> list[TensorRecord]:
        return [
            TensorRecord(name, shape, nbytes, True)
            for key, (name, shape, nbytes, ref) in self.made.items()
            if key not in exclude and not ref.expired()
        ]

    def name_of(self, key: tuple[str, int]) -> tuple[str, bool] | None:
        if key in self.known:
            return self.known[key], False
        if key in self.made:
            return self.made[key][0], True
        return None


class _Recomputations(TorchDispatchMode):
    """Counts the ops that execute with grad mode on during the backward pass: recomputation."""

    def __init__(self, names: Mapping):
        super().__init__()
        self.names = names
        self.runs: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.is_grad_enabled() and _counted(func):
            self.runs[self.names.get(func, _op_name(func))] += 1
        return func(*args, **(kwargs or {}))


def trace_step(
    forward: Callable,
    inputs: Mapping[str, torch.Tensor],
    *,
    names: Mapping | None = None,
    parameters: torch.nn.Module | Mapping[str, torch.Tensor] | None = None,
    loss_fn: Callable | None = None,
) -> StepTrace:
    """Run `loss_fn(forward(*inputs.values()))` and its backward once, and trace what happens.

    `inputs` names the tensors passed to `forward`, in order. `names` maps ops to the names they
    give their outputs (e.g. `ABC_OPS`); other outputs are named by their op ("tanh"). Parameters
    (those of `parameters`, or of `forward` itself when it is a module) are, like the inputs, not
    counted as activation memory: they exist before the step. The loss defaults to the sum.
    Gradients are reset before the step, so afterwards `.grad` holds this step's. Used by lesson 1.
    """
    if not callable(forward):
        raise TypeError(phrase("trace_step needs a function or module to run, got {kind}.",
                               kind=type(forward).__name__))
    if not isinstance(inputs, Mapping) or not all(isinstance(t, torch.Tensor) for t in inputs.values()):
        raise TypeError(_("inputs must be a dict of named tensors, e.g. {'x': x}, in the order forward takes them."))
    names = dict(names or {})
    if parameters is None and isinstance(forward, torch.nn.Module):
        parameters = forward
    if isinstance(parameters, torch.nn.Module):
        parameters = dict(parameters.named_parameters())
    parameters = dict(parameters or {})
    leaves = {**inputs, **parameters}
    known = {storage_key(t): name for name, t in leaves.items()}
    for tensor in leaves.values():
        if tensor.is_leaf:
            tensor.grad = None

    tracker = _ForwardTensors(names, known)
    with count_step() as count:
        with count.forward(), tracker:
            output = forward(*inputs.values())
            if not isinstance(output, torch.Tensor):
                raise TypeError(phrase(
                    "The function returned {kind}, not a tensor: make it `return` the result of the step "
                    "(e.g. `return checkpoint(block, x, use_reentrant=False)`).", kind=type(output).__name__))
            loss = (loss_fn or torch.sum)(output)
        if not loss.requires_grad:
            raise RuntimeError(_(
                "The loss does not require grad, so there is no backward pass to trace: give the step "
                "an input or parameter with requires_grad=True (and no torch.no_grad())."
            ))
        del output
        kept = tracker.alive(exclude={storage_key(loss)})
        seed = torch.ones_like(loss)
        with _Recomputations(names) as recomputations:
            loss.backward(seed)

    saved: dict[tuple[str, int], tuple[tuple[int, ...], int]] = {}  # storage -> (shape, bytes)
    for entry in count.saved.entries:
        if entry.nbytes:
            saved.setdefault(entry.storage, (entry.shape, entry.nbytes))
    records = []
    order = {key: i for i, key in enumerate([*known, *tracker.made])}  # inputs first, then as made
    for key, (shape, nbytes) in sorted(saved.items(), key=lambda item: order.get(item[0], len(order))):
        # A tensor neither made in the step nor passed to it came from outside (a global, say).
        name, made = tracker.name_of(key) or (_("(from outside the step)"), False)
        records.append(TensorRecord(name, shape, nbytes, made))
    return StepTrace(
        saved=records,
        kept=kept,
        forward_runs=dict(tracker.runs),
        recomputed=dict(recomputations.runs),
        flops=count.flops,
        forward_flops=count.forward_flops,
        gradients={
            name: t.grad.detach().clone() for name, t in leaves.items() if t.is_leaf and t.grad is not None
        },
    )


def _op_name(op) -> str:
    packet = getattr(op, "overloadpacket", None)
    return getattr(packet, "__name__", None) or str(op)


def two_matmuls(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """relu(x @ w1) @ w2: two matmuls around a cheap ReLU. Used by lesson 1's second exercise."""
    return torch.relu(x @ w1) @ w2


def two_matmuls_inputs(batch: int = 32, width: int = 64, hidden: int = 128, seed: int = 0) -> dict[str, torch.Tensor]:
    """x (batch x width), w1 (width x hidden) and w2 (hidden x width) for `two_matmuls`; w1, w2 require grad."""
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
        return torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, width))


def deep_stack(n_blocks: int = 36, width: int = 256, seed: int = 0) -> torch.nn.Sequential:
    """n blocks of Linear -> Tanh: each block keeps one activation the size of its input, the
    setting of Chen et al.'s O(n/k + k). Used by lesson 1."""
    whole_numbers(n_blocks=n_blocks, width=width)
    with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's random state untouched
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            *[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh()) for _ in range(n_blocks)]
        )


def stack_input(stack: torch.nn.Sequential, batch: int = 64, seed: int = 0) -> torch.Tensor:
    """A batch for `stack` (inputs that do not require grad, like token embeddings of a frozen table).
    Used by lesson 1."""
    whole_numbers(batch=batch)
    width = next(m for m in stack.modules() if isinstance(m, torch.nn.Linear)).in_features
    return torch.randn(batch, width, generator=torch.Generator().manual_seed(seed))


@dataclass(frozen=True)
class SegmentsRow:
    """One segment count k of the sweep."""

    k: int
    kept_bytes: int  # activations kept for backward
    flops: int  # forward + backward + recomputation
    seconds: float  # the fastest of a few plain steps


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

    def seconds_ratio(self, k: int) -> float:
        return self.row(k).seconds / self.baseline.seconds

    def memory_ratio(self, k: int) -> float:
        return self.row(k).kept_bytes / self.baseline.kept_bytes

    def describe(self, k: int) -> str:
        """One line of numbers for k, e.g. for the explorer's title."""
        row = self.row(k)
        return phrase("k = {k}: keeps {size} ({share:.0%} of k = 1), FLOPs x{flops:.3f}, time x{seconds:.2f}",
                      k=k, size=format_bytes(row.kept_bytes), share=self.memory_ratio(k),
                      flops=self.flops_ratio(k), seconds=self.seconds_ratio(k))

    def table(self) -> Table:
        """Every measured k, relative to k = 1, and which k kept the least against sqrt(n)."""
        rows = [(k, format_bytes(self.row(k).kept_bytes), f"{self.memory_ratio(k):.0%}", f"x{self.flops_ratio(k):.3f}",
                 f"x{self.seconds_ratio(k):.2f}") for k in self.ks]
        notes = [phrase("least memory at k = {k}; sqrt(n) = {sqrt_n:g} for n = {n} blocks",
                        k=self.best_k, sqrt_n=self.sqrt_n, n=self.n_blocks),
                 _("FLOPs: matrix products, as FlopCounterMode counts them; time: the fastest of a few steps")]
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
    repeats: int = 3,
) -> SegmentSweep:
    """Measure one training step of `stack` on `x` for each k in `segments` (default: the divisors
    of its length), running it as `checkpoint_sequential(stack, k, x, use_reentrant=False)`.
    k = 1 is the plain stack. On a CPU the steps run on one thread, so that the times are steady.
    Used by lesson 1."""
    if not isinstance(stack, torch.nn.Sequential):
        raise TypeError(_("sweep_segments needs a torch.nn.Sequential (e.g. deep_stack(36))."))
    n = len(stack)
    segments = sorted(set(divisors(n) if segments is None else segments) | {1})
    if segments[0] < 1 or segments[-1] > n:
        raise ValueError(phrase("Segment counts must be between 1 and the number of blocks ({n}), got {segments}.",
                                n=n, segments=segments))
    whole_numbers(repeats=repeats)

    def segmented(k: int) -> Callable:
        return lambda x: checkpoint_sequential(stack, k, x, use_reentrant=False)

    rows = []
    with _one_cpu_thread(x.device):
        for k in segments:
            trace = trace_step(segmented(k), {"x": x}, parameters=stack)
            seconds = []
            for _repeat in range(repeats):  # not `_`: that name is the translation function here
                stack.zero_grad(set_to_none=True)
                synchronize(x.device)
                start = time.perf_counter()
                segmented(k)(x).sum().backward()
                synchronize(x.device)
                seconds.append(time.perf_counter() - start)
            rows.append(SegmentsRow(k=k, kept_bytes=trace.kept_bytes, flops=trace.flops, seconds=min(seconds)))
    stack.zero_grad(set_to_none=True)
    return SegmentSweep(n_blocks=n, unit_bytes=x.shape[0] * _width_out(stack) * x.element_size(), rows=tuple(rows))


@contextmanager
def _one_cpu_thread(device: torch.device) -> Iterator[None]:
    """On a CPU, time on one thread: with several, a busy machine makes them wait for each other
    and the timings measure the machine's other programs, not the step."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _width_out(stack: torch.nn.Sequential) -> int:
    return [m for m in stack.modules() if isinstance(m, torch.nn.Linear)][-1].out_features


