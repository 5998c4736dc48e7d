"""What one process holds when a training step is sharded: ZeRO-1, ZeRO-2 and ZeRO-3, measured.

For the lesson on sharding and for the planner's per-GPU lines (`will_it_fit.plan`, `--gpus`,
`--sharding`). `measure_sharding(build_model, inputs, stage, num_processes)` runs one AdamW step of
the model `build_model()` returns in `num_processes` real processes (gloo on the CPU, forked by
`effitrain_lessons.shared.processes`) and counts, in each process, the bytes of its parameters,
gradients and optimizer state from what that process holds itself (a `DTensor`'s `.to_local()`):

- "none": data parallel. Every process holds the whole model, all its gradients (all-reduced by
  hand after backward, as DDP would) and the whole AdamW state.
- "zero1": `torch.distributed.optim.ZeroRedundancyOptimizer` around AdamW. Whole parameters and
  whole gradients everywhere; each process keeps the state of its own parameters only, which the
  optimizer assigns whole, largest first, each to the process with the fewest elements so far.
- "zero2": FSDP2, `fully_shard(block, reshard_after_forward=False)` on each transformer block, then on
  the root. Every parameter, its gradient and its state are cut on dim 0 into `num_processes` chunks
  of ceil(dim0 / N) rows (`torch.chunk`: the last processes get fewer rows, or none; FSDP2 pads their
  storage to the same size).
- "zero3": the same with `reshard_after_forward=True`.

What "holds" means: what is resident once the step is over, after `optimizer.step()`. There FSDP2 keeps
only the shards in both its modes; the modes differ between forward and backward. So each process also
reports `gathered`: the bytes of whole parameters FSDP2 has all-gathered and still holds once forward
is done (where the saved activations peak). With `reshard_after_forward=False` that is every
parameter, the whole model again on top of the shards (the ZeRO-2 of Rajbhandari et al. 2020 keeps
whole parameters); with `True` it is none: each block, and the root, frees its whole parameters after
its forward and gathers them again in backward, one block at a time (and the next one prefetched);
that passing gather is not counted. The AdamW step counts are plain scalar tensors, whole in every
process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from effitrain_lessons.shared.i18n import _, phrase

STAGES = ("none", "zero1", "zero2", "zero3")


@dataclass(frozen=True)
class ProcessHolding:
    """The bytes one process holds at the end of a sharded step (and `gathered`: whole parameters
    still all-gathered once forward is done; 0 without FSDP2)."""

    rank: int
    parameters: int
    gradients: int
    optimizer_state: int
    gathered: int = 0

    @property
    def states(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state


@dataclass(frozen=True)
class ShardingResult:
    """What each of `num_processes` processes held after one step at `stage`, and the most any held."""

    stage: str
    num_processes: int
    processes: tuple[ProcessHolding, ...]

    def most(self, what: str) -> int:
        """The most any process holds of `what` ("parameters", "gradients", "optimizer_state",
        "gathered", "states")."""
        return max(getattr(process, what) for process in self.processes)

    @property
    def parameters(self) -> int:
        return self.most("parameters")

    @property
    def gradients(self) -> int:
        return self.most("gradients")

    @property
    def optimizer_state(self) -> int:
        return self.most("optimizer_state")

    @property
    def gathered(self) -> int:
        return self.most("gathered")

    @property
    def busiest(self) -> int:
        """The rank that holds the most in parameters, gradients and state together (the first such)."""
        return max(self.processes, key=lambda process: (process.states, -process.rank)).rank


def check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise ValueError(
            phrase(
                "sharding must be one of {allowed}, got {value!r}.", allowed=", ".join(STAGES), value=stage
            )
        )


def local_bytes(tensor: torch.Tensor) -> int:
    """Bytes of the part of `tensor` this process holds: a DTensor's local shard, else the tensor."""
    from torch.distributed.tensor import DTensor

    if isinstance(tensor, DTensor):
        tensor = tensor.to_local()
    return tensor.numel() * tensor.element_size()


def blocks_of(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated transformer blocks: the children of the model's largest `nn.ModuleList`
    (BERT's `encoder.layer`, GPT-2's `transformer.h`, Llama's `model.layers`)."""
    lists = [module for module in model.modules() if isinstance(module, torch.nn.ModuleList)]
    if not lists:
        return []
    largest = max(lists, key=lambda layers: sum(p.numel() for p in layers.parameters()))
    return list(largest)


def held_by(model: torch.nn.Module, optimizer) -> tuple[int, int, int]:
    """The bytes of parameters, gradients and optimizer state this process holds itself (a DTensor by
    its local shard; ZeroRedundancyOptimizer by the state of its own parameters)."""
    weights = list({id(p): p for p in model.parameters()}.values())
    gradients = sum(local_bytes(p.grad) for p in weights if p.grad is not None)
    # ZeroRedundancyOptimizer keeps its own process's state in the optimizer it wraps
    state = getattr(optimizer, "optim", optimizer).state
    held = sum(local_bytes(t) for s in state.values() for t in s.values() if isinstance(t, torch.Tensor))
    return sum(local_bytes(p) for p in weights), gradients, held


def _step(build_model: Callable, inputs: dict, stage: str) -> list[dict]:
    """One process's step (run in a worker): build, shard as `stage` says, one AdamW step, count."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = build_model()
    if stage in ("zero2", "zero3"):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (world,))
        again = stage == "zero3"
        for block in blocks_of(model):
            fully_shard(block, mesh=mesh, reshard_after_forward=again)
        fully_shard(model, mesh=mesh, reshard_after_forward=again)
    if stage == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    outputs = model(**inputs)
    # a dict (a transformers ModelOutput is one): FSDP2 finds the tensors in it to hook backward on
    loss = outputs["loss"]
    # whole parameters FSDP2 all-gathered and still holds now that forward is done
    gathered = 0
    if stage in ("zero2", "zero3"):
        gathered = sum(p.numel() * p.element_size() for p in model.parameters() if not isinstance(p, DTensor))
    loss.backward()
    if stage in ("none", "zero1"):  # data parallel: every process averages every gradient
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world
    optimizer.step()
    parameters, gradients, state = held_by(model, optimizer)
    return [
        {
            "rank": rank,
            "parameters": parameters,
            "gradients": gradients,
            "optimizer_state": state,
            "gathered": gathered,
        }
    ]


def measure_sharding(
    build_model: Callable[[], torch.nn.Module],
    inputs: dict,
    stage: str = "zero3",
    num_processes: int = 2,
    timeout: float = 60.0,
) -> ShardingResult:
    """Run one AdamW step of `build_model()` (a model whose output is a dict with a "loss", as a
    `transformers` model's is) on `inputs` in
    `num_processes` real processes, sharded as `stage` says ("none", "zero1", "zero2", "zero3"), and
    return what each process held at the end of the step (see the module's docstring)."""
    from effitrain_lessons.shared.processes import start_workers

    check_stage(stage)
    reports = start_workers(lambda: _step(build_model, inputs, stage), num_processes, timeout)
    processes = tuple(ProcessHolding(**per_rank[0]) for per_rank in reports)
    return ShardingResult(stage, num_processes, processes)


def describe_holding(result: ShardingResult) -> str:
    """One sentence: the most one process holds, and which process it is."""
    return phrase(
        "{stage} on {n} processes: process {rank} holds the most, {parameters:,} B of parameters, "
        "{gradients:,} B of gradients and {state:,} B of optimizer state.",
        stage=_("data parallel") if result.stage == "none" else result.stage,
        n=result.num_processes,
        rank=result.busiest,
        parameters=result.parameters,
        gradients=result.gradients,
        state=result.optimizer_state,
    )
