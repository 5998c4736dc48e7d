"""`effitrain_lessons.shared.sharding`: one AdamW step in 2 and 4 real processes (gloo on the CPU),
and the bytes each process holds at the end of it, from its own shards. Data parallel holds
everything everywhere; ZeRO-1 (ZeroRedundancyOptimizer) keeps each tensor's state whole on one
process; FSDP2 (ZeRO-2 and ZeRO-3) cuts every tensor on dim 0, so an uneven tensor leaves the first
process the most."""

import multiprocessing

import pytest
import torch

from effitrain_lessons.shared import sharding
from effitrain_lessons.shared.processes import can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="the processes are forked (Linux, macOS)")


class Stack(torch.nn.Module):
    """Blocks of `width` x `width` Linear layers and a head of `out` rows; its output is a dict with a
    "loss", as a `transformers` model's is (FSDP2 finds the tensors to hook backward on in it)."""

    def __init__(self, width: int, out: int, blocks: int = 2):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(blocks))
        self.head = torch.nn.Linear(width, out)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return {"loss": self.head(x).square().mean()}


def _run(width: int, out: int, stage: str, n: int) -> sharding.ShardingResult:
    return sharding.measure_sharding(lambda: Stack(width, out), {"x": torch.ones(4, width)}, stage, n)


def _whole(width: int, out: int) -> tuple[int, int]:
    """(bytes of the fp32 parameters, tensors) of `Stack(width, out)`."""
    model = Stack(width, out)
    return 4 * sum(p.numel() for p in model.parameters()), len(list(model.parameters()))


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_holds_everything_in_every_process(n):
    held = _run(16, 16, "none", n)
    weights, tensors = _whole(16, 16)
    assert len(held.processes) == n
    for process in held.processes:
        # AdamW: two fp32 moments a parameter and one fp32 step count a tensor
        assert (process.parameters, process.gradients, process.optimizer_state) == (
            weights,
            weights,
            2 * weights + 4 * tensors,
        )
        assert process.gathered == 0


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("stage", ["zero2", "zero3"])
def test_fsdp2_holds_exactly_its_share_of_an_evenly_divisible_model(stage, n):
    held = _run(16, 16, stage, n)  # every tensor has 16 rows: halves and quarters are exact
    weights, tensors = _whole(16, 16)
    for process in held.processes:
        assert process.parameters == process.gradients == weights // n
        assert process.optimizer_state == 2 * weights // n + 4 * tensors  # the step counts stay whole
    # reshard_after_forward=False keeps the whole parameters it gathered from forward to backward
    assert held.gathered == (weights if stage == "zero2" else 0)


@pytest.mark.parametrize("n", [2, 4])
def test_zero1_shares_the_optimizer_state_and_keeps_parameters_and_gradients_whole(n):
    held = _run(16, 16, "zero1", n)
    weights, tensors = _whole(16, 16)
    assert all(p.parameters == p.gradients == weights for p in held.processes)
    # whole tensors: together the processes hold the state once, the busiest at least its share
    assert sum(p.optimizer_state for p in held.processes) == 2 * weights + 4 * tensors
    assert held.optimizer_state >= (2 * weights + 4 * tensors) / n


def test_an_uneven_tensor_leaves_the_first_process_the_most():
    # The head has 5 rows: on 2 processes torch.chunk gives 3 rows and 2, so process 0 holds more
    # than half of it, and the most any process holds is process 0's.
    held = _run(8, 5, "zero3", 2)
    first, second = held.processes
    head_row = 4 * (8 + 1)  # one row of the head: 8 weights and a bias
    assert first.parameters - second.parameters == head_row
    assert held.parameters == first.parameters and held.busiest == 0
    weights, _tensors = _whole(8, 5)
    assert held.parameters == (weights + head_row) // 2  # more than half: ceil(5 / 2) rows
    assert "process 0 holds the most" in sharding.describe_holding(held)


def test_no_process_is_left_behind():
    _run(8, 8, "zero3", 2)
    assert multiprocessing.active_children() == []


def test_a_stage_it_does_not_know_gets_one_sentence():
    with pytest.raises(ValueError, match="sharding must be one of none, zero1, zero2, zero3, got 'zero4'"):
        _run(8, 8, "zero4", 2)
