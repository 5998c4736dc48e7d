"""Lesson 7's measurements of a model of one's own: its data, what each choice of blocks keeps and
costs, what a pack hook is handed, and the peak of a step."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.utils.checkpoint import checkpoint

from effitrain_lessons.own_model import figures as own_model_figures
from effitrain_lessons.own_model import measure as own_model
from effitrain_lessons.shared.memory import record_saved_tensors

VOCAB, SEQ = 32, 8


class Block(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Stack(nn.Module):
    """A language model as small as a test affords, with the lesson's `checkpointed` set."""

    def __init__(self, hidden=(32, 128, 64), width=16, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(VOCAB, width)
        self.blocks = nn.ModuleList(Block(width, h) for h in hidden)
        self.head = nn.Linear(width, VOCAB)
        self.checkpointed = set()

    def forward(self, ids):
        x = self.embed(ids)
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if i in self.checkpointed else block(x)
        return self.head(x)


@pytest.fixture(scope="module")
def batch():
    stream = torch.arange(200) % VOCAB
    return own_model.language_model_batches(stream, 4, SEQ, seed=0)[0]


def test_batches_are_windows_and_their_next_tokens():
    stream = torch.arange(100)
    batches = own_model.language_model_batches(stream, 3, 10, count=2, seed=1)
    assert len(batches) == 2
    ids, targets = batches[0]
    assert ids.shape == targets.shape == (3, 10)
    assert torch.equal(targets, ids + 1)  # the stream counts up: the next token is one more
    again = own_model.language_model_batches(stream, 3, 10, count=2, seed=1)
    assert all(torch.equal(a, b) for pair, same in zip(batches, again) for a, b in zip(pair, same))


def test_batches_refuse_a_stream_too_short():
    with pytest.raises(ValueError, match="too few"):
        own_model.language_model_batches(torch.arange(5), 2, 10)


def test_the_course_stream_is_token_ids():
    stream = own_model.token_stream()
    assert stream.dtype == torch.long and stream.dim() == 1 and stream.numel() > 10_000


def test_checkpointing_every_block_keeps_less_computes_more_and_changes_no_gradient(batch):
    model = Stack()
    plain = own_model.measure_choice(model, *batch, label="plain")
    model.checkpointed = {0, 1, 2}
    every = own_model.measure_choice(model, *batch, label="every")
    assert every.saved_bytes < plain.saved_bytes / 2
    assert every.flops > plain.flops
    assert every.seconds is None
    assert set(every.gradients) == set(plain.gradients) == {n for n, _ in model.named_parameters()}
    assert all(torch.equal(every.gradients[n], plain.gradients[n]) for n in plain.gradients)
    assert all(p.grad is None for p in model.parameters())


def test_savings_and_costs_add_up_block_by_block(batch):
    model = Stack()
    plain = own_model.measure_choice(model, *batch)
    alone = {}
    for i in range(3):
        model.checkpointed = {i}
        alone[i] = own_model.measure_choice(model, *batch)
    model.checkpointed = {0, 2}
    both = own_model.measure_choice(model, *batch)
    freed = {i: plain.saved_bytes - alone[i].saved_bytes for i in alone}
    assert freed[1] > freed[2] > freed[0] > 0  # the wider the MLP, the more it frees
    assert plain.saved_bytes - both.saved_bytes == freed[0] + freed[2]
    assert both.flops - plain.flops == sum(alone[i].flops - plain.flops for i in (0, 2))


def test_a_wrapped_model_is_measured_under_the_plain_names(batch):
    model, wrapped = Stack(), Stack()
    apply_activation_checkpointing(
        wrapped, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=lambda m: isinstance(m, Block)
    )
    table = own_model.measure_choices({"plain": model, "wrapped": wrapped}, *batch, rounds=1)
    assert table.baseline.label == "plain"
    assert table.gradient_difference("wrapped") == 0.0
    assert table.point("wrapped").saved_bytes < table.baseline.saved_bytes
    assert all(point.seconds > 0 for point in table.points)
    text = str(table.table())
    assert "plain" in text and "wrapped" in text
    with pytest.raises(KeyError):
        table.point("nothing")


def test_measure_choice_refuses_what_is_not_a_module(batch):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        own_model.measure_choice(lambda ids: ids, *batch)


def test_a_pack_hook_is_handed_activations_and_parameters_apart():
    layer = nn.Linear(8, 4)
    x = torch.randn(3, 8, requires_grad=True)
    with record_saved_tensors(layer) as log:
        torch.tanh(layer(x)).sum()
    sizes = own_model.packed_bytes(log)
    assert sizes["parameters"] == 8 * 4 * 4  # the weight, which addmm saves for x's gradient
    assert sizes["activations"] == (3 * 8 + 3 * 4) * 4  # x, and tanh's output


def test_the_cpu_peak_counts_what_is_alive_at_once_and_not_what_was_there_before():
    held = torch.zeros(2**20)

    def step():
        a = torch.ones(2**18)  # 1 MiB
        b = a * 2  # 2 MiB alive
        del a, b
        c = torch.ones(2**18) + held[: 2**18]  # 2 MiB: the ones, and the sum
        return c.sum()

    peak = own_model.peak_bytes(step, "cpu", held=[held])
    assert 2 * 2**20 <= peak < 2 * 2**20 + 4096


def test_a_view_is_not_counted_twice():
    def step():
        a = torch.ones(2**18)
        return a.view(2, -1), a[:10]

    assert own_model.peak_bytes(step) == 2**20


def test_the_peak_report_and_the_figure(batch):
    report = own_model.PeakReport([("plain", 1000, 1500, 2500)], "cpu")
    assert len(report.table().rows) == 1
    model, every = Stack(), Stack()
    every.checkpointed = {0, 1, 2}
    table = own_model.measure_choices({"plain": model, "every block": every}, *batch, rounds=1)
    fig = own_model_figures.plot_choices(table, title="a title")
    gids = {patch.get_gid() for ax in fig.axes for patch in ax.patches}
    assert gids == {"kept", "time"}
    assert math.isclose(fig.axes[1].get_xlim()[0], 0.0)
