"""What to recompute, measured: the activation memory a step keeps against the FLOPs it runs.

Used by lesson 6. The notebook writes the concept itself (a selective-checkpointing policy that
keeps the matrix products' outputs, `torch.compile` under `torch._functorch.config.
activation_memory_budget`); this module measures every choice on one real `BertLayer`, the same
way, so that they can be drawn as one Pareto curve of memory against compute:

- `measure_recompute` measures any eager callable (the plain layer, `checkpoint(...)`, the
  learner's selective wrapper) with `tracing.trace_step` (lesson 1's tracer): the bytes made in
  the forward pass and still held when the backward pass starts (this sees selective
  checkpointing's cache), and the FLOPs of forward + backward, recomputation included.
- `memory_budget_sweep` compiles the layer once per budget and measures each compiled step.

Eager steps are timed as every lesson times them (`shared/timing.py`): in turns, after warm-up
steps, the median and spread of several. A compiled step is not timed: here it runs op by op,
unfused (aot_eager), so its time would say nothing of a real compiled step's.

Why compiled steps are measured differently: while any non-infra `TorchDispatchMode` is active
(`FlopCounterMode`, `trace_step`'s recorders), Dynamo does not run the compiled code: it runs the
function eagerly (torch/_dynamo/convert_frame.py: "non-infra torch dispatch mode present"), so the
counters would measure the eager layer, silently. So the compiled step is measured from inside:

- FLOPs: the compiled forward and backward graphs run inside `memory.count_step` (the mode is
  entered by the graph, after Dynamo has chosen the compiled code), the way torch's own
  `aot_eager_decomp_partition_with_mode` backend runs them in a mode.
- Memory: saved-tensor hooks (`memory.record_saved_tensors`) do fire on the compiled forward: it is
  one autograd Function that hands every tensor it keeps for the backward to `save_for_backward`.
  Hooks add no dispatch mode, so the compiled code runs. (`RecomputePoint.graph_saved_bytes` counts
  the same from the partitioned graphs, as a cross-check.)
- Recomputation: the partitioner copies a forward node into the backward graph under its own name,
  so a backward node named like a forward node is a recomputed op.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import import_module

import torch
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertLayer

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import N_, _, format_number, phrase
from effitrain_lessons.shared.memory import (
    count_step,
    format_bytes,
    format_flops,
    record_saved_tensors,
    storage_key,
)
from effitrain_lessons.shared.tables import ShowsAsTable, Table
from effitrain_lessons.shared.timing import REPEATS, WARMUP, Ratio, Times, time_alternating
from effitrain_lessons.shared.tracing import op_name, trace_step

# The labels lesson 6's cells give the steps they measure (English; `RecomputePoint.name` shows them
# translated).
STEP_LABELS = (N_("no checkpointing"), N_("recompute the attention core"), N_("keep the matrix products"))

BUDGETS = (0.0, 0.25, 0.75, 1.0)
"""The budgets `memory_budget_sweep` compiles by default. Each compile takes about 2 s on a 2-core CPU
(the first in a process 3 to 4 s more), so a lesson affords a few: from all recomputed (0) to the
default (1), with 0.25 (matrix products recomputed too) and 0.75 (only elementwise ops) between."""

# ---------------------------------------------------------------------------------------------
# The layer


def bert_layer(
    hidden: int = 256,
    heads: int = 4,
    intermediate: int = 1024,
    dropout: float = 0.1,
    seed: int = 0,
    attention: str = "eager",
) -> BertLayer:
    """One encoder layer of BERT (transformers' `BertLayer`), in training mode.

    `dropout` is both of BERT's dropout probabilities. `attention` is the attention implementation:
    "eager", or a function registered with `transformers.AttentionInterface` (lesson 6 registers one
    that recomputes the attention core). Weights are drawn from `seed`, so two layers of one seed have
    the same weights; the caller's random state is left as it was. Used by lesson 6.
    """
    whole_numbers(hidden=hidden, heads=heads, intermediate=intermediate)
    if hidden % heads:
        raise ValueError(
            phrase(
                "hidden ({hidden}) must be a multiple of heads ({heads}): each head takes "
                "hidden / heads of the features.",
                hidden=hidden,
                heads=heads,
            )
        )
    if not 0 <= dropout < 1:
        raise ValueError(phrase("dropout is a probability in [0, 1), got {dropout!r}.", dropout=dropout))
    config = BertConfig(
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        attn_implementation=attention,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BertLayer(config).train()


def layer_input(layer: BertLayer, batch: int = 8, seq: int = 128, seed: int = 0) -> torch.Tensor:
    """Hidden states (batch x seq x hidden) for `layer`, drawn from `seed`. They require grad, as the
    output of the layer below would. Used by lesson 6."""
    whole_numbers(batch=batch, seq=seq)
    hidden = layer.attention.self.query.in_features
    return torch.randn(batch, seq, hidden, generator=torch.Generator().manual_seed(seed)).requires_grad_()


# ---------------------------------------------------------------------------------------------
# One point of the curve


@dataclass(frozen=True)
class RecomputePoint:
    """One way of running a training step of the layer, measured."""

    label: str
    saved_bytes: int  # made in the forward pass and held for the backward pass (inputs, parameters excluded)
    flops: int  # forward + backward, recomputation included (FlopCounterMode: matrix products)
    forward_flops: int
    times: Times | None  # its plain steps, timed (shared/timing.py); None: not timed (a compiled step)
    recomputed: Mapping[str, int] = field(default_factory=dict)  # op -> times it ran again in the backward
    budget: float | None = None  # the activation memory budget of a compiled step; None: eager
    redraws_random: bool | None = None  # compiled: the backward draws dropout's random numbers again
    # (so its gradients do not match the forward's masks: pytorch/pytorch#190758); None: eager, not inspected
    graph_saved_bytes: int | None = None  # compiled: the same bytes, read from the partitioned graphs
    gradients: Mapping[str, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)

    @property
    def compiled(self) -> bool:
        return self.budget is not None

    @property
    def seconds(self) -> float:
        """The median time of a step (nan when not timed): the cost `RecomputeCurve` weighs on time."""
        return math.nan if self.times is None else self.times.median

    def name(self) -> str:
        """The label in the lesson's language."""
        if self.compiled:
            return phrase("memory budget {budget:g}", budget=self.budget)
        return _(self.label)  # the caller's label: shown in the lesson's language where the catalog has it


def measure_recompute(
    fn: Callable,
    x: torch.Tensor,
    label: str,
    *,
    parameters: torch.nn.Module | None = None,
    loss_fn: Callable | None = None,
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> RecomputePoint:
    """Measure one training step of `fn(x)` (eager): what it keeps for the backward, its FLOPs, its time
    (`repeats` steps after `warmup`; `repeats=0` leaves it untimed).

    `fn` is the layer itself or a function around it (`checkpoint(layer, x, ...)`, a selective
    policy's wrapper); pass the layer as `parameters` when `fn` is a function, so that its gradients
    are reset and reported. The loss is `loss_fn(output)`, the sum by default. A compiled function is
    refused: the counters would make it run eagerly (use `memory_budget_sweep`). Used by lesson 6.
    """
    if isinstance(fn, torch._dynamo.eval_frame.OptimizedModule) or hasattr(fn, "_torchdynamo_orig_callable"):
        raise TypeError(
            _(
                "measure_recompute measures eager code, and its counters would make a compiled "
                "function run eagerly: measure compiled steps with memory_budget_sweep(layer, x)."
            )
        )
    _check_input(x)
    with torch.random.fork_rng(devices=[]):  # dropout's numbers: the caller's random state untouched
        trace = trace_step(fn, {"x": x}, parameters=parameters, loss_fn=loss_fn)
        times = None
        if repeats:
            step = _plain_step(lambda: fn(x), loss_fn, parameters, x)
            times = time_alternating({label: step}, x.device, warmup=warmup, repeats=repeats)[label]
        _reset_grads(parameters, x)
    return RecomputePoint(
        label=label,
        saved_bytes=trace.kept_bytes,
        flops=trace.flops,
        forward_flops=trace.forward_flops,
        times=times,
        recomputed=dict(trace.recomputed),
        gradients=trace.gradients,
    )


def measure_steps(
    steps: Mapping[str, Callable],
    x: torch.Tensor,
    *,
    parameters: torch.nn.Module | None = None,
    loss_fn: Callable | None = None,
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> list[RecomputePoint]:
    """`measure_recompute` for each step of `steps` (label -> the layer, or a function around it), the
    times taken in turns (`timing.time_alternating`: A, B, A, B, ...), so that on a shared CPU a burst
    of other work slows every step alike, instead of one. A step that is a module is its own
    `parameters`; a function's are `parameters`. Used by lesson 6.
    """
    whole_numbers(repeats=repeats)
    owners = {label: fn if isinstance(fn, torch.nn.Module) else parameters for label, fn in steps.items()}
    points = {
        label: measure_recompute(fn, x, label, parameters=owners[label], loss_fn=loss_fn, repeats=0)
        for label, fn in steps.items()
    }
    plain_steps = {
        label: _plain_step(functools.partial(fn, x), loss_fn, owners[label], x) for label, fn in steps.items()
    }
    with torch.random.fork_rng(devices=[]):
        times = time_alternating(plain_steps, x.device, warmup=warmup, repeats=repeats)
    for label in steps:
        _reset_grads(owners[label], x)
    return [replace(point, times=times[label]) for label, point in points.items()]


def _check_input(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            phrase(
                "x must be the layer's input tensor (layer_input(layer)), got {kind}.", kind=type(x).__name__
            )
        )


def _plain_step(run: Callable, loss_fn: Callable | None, parameters, x: torch.Tensor) -> Callable[[], None]:
    """One plain forward + backward pass, gradients reset before it: what the clock times."""

    def step() -> None:
        _reset_grads(parameters, x)
        (loss_fn or torch.sum)(run()).backward()

    return step


def _reset_grads(parameters: torch.nn.Module | None, x: torch.Tensor) -> None:
    if parameters is not None:
        parameters.zero_grad(set_to_none=True)
    x.grad = None


# ---------------------------------------------------------------------------------------------
# The memory budget knob of torch.compile


def check_budget(budget: object) -> float:
    """`budget` as a float, or one sentence saying what a memory budget is."""
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 <= budget <= 1:
        raise ValueError(
            phrase(
                "A memory budget is a fraction from 0 to 1 (1 keeps what torch.compile keeps "
                "by default, 0 recomputes all it can), got {budget!r}.",
                budget=budget,
            )
        )
    return float(budget)


class _GraphRuns:
    """What torch.compile made of the layer, as it runs: the forward and backward graphs it
    partitioned (kept when compiled), and the FLOPs of each graph run while `counting` is on."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []  # [forward, backward]
        self.counting = False
        self.flops: list[int] = []  # one per graph run while counting: forward, then backward

    def compiler(self, graph: torch.fx.GraphModule, example_inputs) -> Callable:
        """A fw/bw compiler for aot_autograd: keep the graph, run it as torch's backend does (boxed_nop),
        counted when asked."""
        from torch._dynamo.backends.debugging import boxed_nop

        self.graphs.append(graph)
        runner = boxed_nop(graph, example_inputs)

        def run(args):
            if not self.counting:
                return runner(args)
            with count_step() as count:  # entered inside the compiled code: Dynamo has already chosen it
                outputs = runner(args)
            self.flops.append(count.flops)
            return outputs

        run._boxed_call = True
        return run

    def backend(self, gm: torch.fx.GraphModule, example_inputs) -> Callable:
        """torch's aot_eager_decomp_partition (torch/_dynamo/backends/debugging.py): inductor's
        decompositions and its min-cut partitioner, the graphs run eagerly, here through `compiler`."""
        from functorch.compile import min_cut_rematerialization_partition
        from torch._dynamo.backends.common import aot_autograd

        with torch._functorch.config.patch(unlift_effect_tokens=True):
            return aot_autograd(
                fw_compiler=self.compiler,
                bw_compiler=self.compiler,
                decompositions=lambda: import_module("torch._inductor.compile_fx").select_decomp_table(),
                partition_fn=functools.partial(min_cut_rematerialization_partition, compiler="inductor"),
            )(gm, example_inputs)

    def recomputed(self) -> dict[str, int]:
        """Forward ops that the backward graph runs again (a copied node keeps its forward name)."""
        forward, backward = self.graphs
        made = {node.name for node in forward.graph.nodes if node.op == "call_function"}
        again = Counter(
            op_name(node.target)
            for node in backward.graph.nodes
            if node.op == "call_function" and node.name in made and _computes(node.target)
        )
        return dict(again)

    def redraws_random(self) -> bool:
        """Whether the backward graph draws random numbers (a forward random op recomputed, e.g. the
        dropout mask): then it does not see the forward's numbers."""
        backward = self.graphs[1]
        return any(
            node.op == "call_function"
            and torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())
            for node in backward.graph.nodes
        )

    def saved_bytes(self) -> int:
        """Bytes of the tensors the forward graph hands to the backward graph: the backward graph's
        inputs less the incoming gradients (tangents) and the step's own inputs (primals)."""
        backward = self.graphs[1]
        total = 0
        for node in backward.graph.nodes:
            value = node.meta.get("val")
            if (
                node.op == "placeholder"
                and isinstance(value, torch.Tensor)
                and not node.name.startswith(("tangents", "primals"))
            ):
                total += value.untyped_storage().nbytes()
        return total


def _computes(op) -> bool:
    """Views relabel data and getitem picks an output: neither is a computation run again."""
    return isinstance(op, torch._ops.OpOverload) and not op.is_view


@contextmanager
def _fresh_dynamo() -> Iterator[None]:
    """Compile afresh inside the block (Dynamo would reuse its cached graph, compiled under another
    budget, since a budget is no guard), and leave no compiled graph of the layer behind."""
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()


def measure_budget(
    layer: BertLayer,
    x: torch.Tensor,
    budget: float,
    *,
    loss_fn: Callable | None = None,
) -> RecomputePoint:
    """Compile `layer` with the aot_eager_decomp_partition backend under `activation_memory_budget =
    budget`, and measure one training step of it: the bytes the compiled forward hands to its backward
    (the layer's input and parameters excluded, as for an eager step; the loss is outside the compiled
    graph and the default sum saves nothing), the FLOPs of both graphs, the ops the backward runs
    again, and whether it draws random numbers again. It is not timed: this backend runs the graphs
    op by op, unfused, so its time would say nothing of a compiled step's.

    Resets Dynamo before and after (every compiled function's cache is cleared); restores the
    config. The step's random numbers are drawn from the caller's state, and it is left as it was.
    Used by lesson 6 (through `memory_budget_sweep`).
    """
    budget = check_budget(budget)
    _check_input(x)
    loss_fn = loss_fn or torch.sum
    runs = _GraphRuns()
    leaves = {"x": x, **dict(layer.named_parameters())}
    inputs = {storage_key(x)}
    with (
        _fresh_dynamo(),
        torch._functorch.config.patch(activation_memory_budget=budget),
        torch.random.fork_rng(devices=[]),
    ):
        compiled = torch.compile(layer, backend=runs.backend)
        _reset_grads(layer, x)
        # The first call compiles (the hooks add no dispatch mode, so Dynamo compiles and runs the graph)
        # and is the measured step; compiling is not counted: `runs` counts only the graphs' runs.
        runs.counting = True
        with record_saved_tensors(layer) as log:  # the layer's forward only: what it hands to its backward
            output = compiled(x)
        loss = loss_fn(output)
        del output
        loss.backward()
        runs.counting = False
        del loss
        gradients = {name: t.grad.detach().clone() for name, t in leaves.items() if t.grad is not None}
        _reset_grads(layer, x)
    if len(runs.graphs) != 2 or len(runs.flops) != 2:
        raise RuntimeError(
            phrase(
                "torch.compile made {graphs} graphs of the layer, not one forward and one "
                "backward graph: it broke the layer into pieces, or ran it eagerly (as it does "
                "under a dispatch mode such as FlopCounterMode).",
                graphs=len(runs.graphs),
            )
        )
    saved = sum(entry.nbytes for entry in log.activations if entry.storage not in inputs)
    return RecomputePoint(
        label=f"memory budget {budget:g}",
        saved_bytes=saved,
        flops=sum(runs.flops),
        forward_flops=runs.flops[0],
        times=None,
        recomputed=runs.recomputed(),
        budget=budget,
        redraws_random=runs.redraws_random(),
        graph_saved_bytes=runs.saved_bytes(),
        gradients=gradients,
    )


def memory_budget_sweep(
    layer: BertLayer,
    x: torch.Tensor,
    budgets: Iterable[float] = BUDGETS,
    *,
    loss_fn: Callable | None = None,
) -> tuple[RecomputePoint, ...]:
    """`measure_budget` for each budget (each one compiled afresh), in the order given. Used by lesson 6."""
    budgets = [check_budget(budget) for budget in budgets]
    if not budgets:
        raise ValueError(_("memory_budget_sweep needs at least one budget, e.g. budgets=(0.0, 0.5, 1.0)."))
    return tuple(measure_budget(layer, x, budget, loss_fn=loss_fn) for budget in budgets)


# ---------------------------------------------------------------------------------------------
# The curve


@dataclass(frozen=True, repr=False)  # a cell that ends with it shows its table, not its fields
class RecomputeCurve(ShowsAsTable):
    """Measured points, the first one the baseline (no checkpointing). A point is Pareto-optimal when
    no other point keeps fewer bytes for no more FLOPs, or fewer FLOPs for no more bytes (`cost=
    "seconds"`: for no more time, among eager points, whose times compare). A compiled point whose
    backward redraws dropout's random numbers computes wrong gradients: it is never optimal, and it
    rules out no other point."""

    points: tuple[RecomputePoint, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", tuple(self.points))
        if not self.points or not all(isinstance(p, RecomputePoint) for p in self.points):
            raise TypeError(
                _(
                    "RecomputeCurve needs measured points: measure_recompute(...) or "
                    "memory_budget_sweep(...) results, e.g. RecomputeCurve([plain, *sweep])."
                )
            )

    @property
    def baseline(self) -> RecomputePoint:
        return self.points[0]

    def point(self, label: str) -> RecomputePoint:
        for p in self.points:
            if p.label == label:
                return p
        raise KeyError(
            phrase(
                "No point is labelled {label!r}: the labels are {labels}.",
                label=label,
                labels=[p.label for p in self.points],
            )
        )

    def candidates(self, cost: str = "flops") -> list[RecomputePoint]:
        """The points that compete on `cost` ("flops" or "seconds", the median step): right gradients
        only, and for time the timed eager points only (a compiled step is not timed)."""
        if cost not in ("flops", "seconds"):
            raise ValueError(phrase('cost is "flops" or "seconds", got {cost!r}.', cost=cost))
        return [
            p
            for p in self.points
            if not p.redraws_random and (cost == "flops" or (not p.compiled and p.times is not None))
        ]

    def time_ratio(self, point: RecomputePoint) -> Ratio | None:
        """`point`'s time over the baseline's, with the range their spreads allow; None if untimed."""
        if point.times is None or self.baseline.times is None:
            return None
        return point.times / self.baseline.times

    def is_optimal(self, point: RecomputePoint, cost: str = "flops") -> bool:
        rivals = self.candidates(cost)
        return point in rivals and not any(_dominates(other, point, cost) for other in rivals)

    def optimal(self, cost: str = "flops") -> list[RecomputePoint]:
        """The Pareto-optimal points on `cost`, from the least memory to the most."""
        return sorted(
            (p for p in self.points if self.is_optimal(p, cost)),
            key=lambda p: (p.saved_bytes, getattr(p, cost)),
        )

    def same_gradients(self, atol: float = 1e-5) -> bool | None:
        """Whether every eager point's gradients match the baseline's (within `atol`: recomputation
        may add in another order); None when the points carry no gradients to compare. Compiled
        points are left out: a redrawn dropout changes their gradients (`redraws_random`)."""
        base = self.baseline.gradients
        others = [p for p in self.points[1:] if not p.compiled and p.gradients]
        if not base or not others:
            return None
        return all(
            set(p.gradients) == set(base)
            and all(torch.allclose(p.gradients[name], base[name], atol=atol) for name in base)
            for p in others
        )

    def table(self) -> Table:
        base = self.baseline
        rows = []
        for p in self.points:
            again = sum(p.recomputed.values())
            rows.append(
                (
                    p.name(),
                    format_bytes(p.saved_bytes),
                    format_number(_ratio(p.saved_bytes, base.saved_bytes), ".0%"),
                    format_flops(p.flops),
                    format_number(_ratio(p.flops, base.flops) - 1, "+.1%"),
                    "-" if p.times is None or base.times is None else str(p.times / base.times),
                    again,
                    ("*" if self.is_optimal(p) else "") + ("+" if self.is_optimal(p, "seconds") else ""),
                    "!" if p.redraws_random else "",
                )
            )
        notes = [
            _("* Pareto-optimal on FLOPs: no other point keeps less memory for no more FLOPs."),
            _("+ Pareto-optimal on time: no other eager point keeps less memory for no more time."),
            _(
                "FLOPs count matrix products only (FlopCounterMode): recomputing softmax, GELU, dropout or "
                "layer norm costs time but no counted FLOPs."
            ),
            phrase(
                "time: a step's median over {label}'s; in parentheses, the range the middle halves of the "
                "two allow",
                label=base.name(),
            ),
        ]
        same = self.same_gradients()
        if same is not None and not any(p.compiled for p in self.points):
            notes.insert(
                0,
                phrase(
                    "the same gradients as without checkpointing: {same}", same=_("yes") if same else _("no")
                ),
            )
        if any(p.compiled for p in self.points):
            notes.append(
                _(
                    "- a compiled step runs here op by op, unfused (aot_eager): "
                    "its time would say nothing of a compiled step's, so it is not timed."
                )
            )
        if any(p.redraws_random for p in self.points):
            notes.append(
                _(
                    "! the compiled backward draws dropout's random numbers again, so its gradients do not "
                    "match the forward's masks (torch 2.13 on a CPU: pytorch/pytorch#190758)."
                )
            )
        return Table(
            [
                "step",
                "kept for backward",
                "kept / baseline",
                "FLOPs (fwd + bwd)",
                "recomputed FLOPs",
                "time / baseline",
                "ops run again",
                "Pareto",
                "dropout redrawn",
            ],
            rows,
            notes=notes,
        )


def _dominates(a: RecomputePoint, b: RecomputePoint, cost: str = "flops") -> bool:
    a_cost, b_cost = getattr(a, cost), getattr(b, cost)
    return (
        a.saved_bytes <= b.saved_bytes
        and a_cost <= b_cost
        and (a.saved_bytes < b.saved_bytes or a_cost < b_cost)
    )


def _ratio(new: float, base: float) -> float:
    return new / base if base else math.nan
