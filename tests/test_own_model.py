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
    assert every.times is None and every.seconds is None
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
    table = own_model.measure_choices({"plain": model, "wrapped": wrapped}, *batch, warmup=1, repeats=3)
    assert table.baseline.label == "plain"
    assert table.gradient_difference("wrapped") == 0.0
    assert table.point("wrapped").saved_bytes < table.baseline.saved_bytes
    # timed as every lesson times: several steps after a warm-up, on the CPU clock
    assert all(point.times.steps == 3 and point.times.clock == "cpu" for point in table.points)
    ratio = table.point("wrapped").times / table.baseline.times
    text = str(table.table())
    assert "plain" in text and "wrapped" in text and str(ratio) in text
    # a cell that ends with the table shows the table, not the dataclass's fields
    assert repr(table) == text and not text.startswith("ChoiceTable(")
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
    assert sizes.parameters == 8 * 4 * 4  # the weight, which addmm saves for x's gradient
    assert sizes.activations == (3 * 8 + 3 * 4) * 4  # x, and tanh's output
    assert str(sizes) == "a pack hook is handed 0.00 MiB of activations and 0.00 MiB of parameters"


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


def test_the_peak_report_and_its_figure():
    report = own_model.PeakReport([("plain", 1000, 1500, 2500), ("every block", 100, 900, 2500)], "cpu")
    assert len(report.table().rows) == 2
    assert repr(report) == str(report.table())  # the table, not the dataclass's fields
    assert report.table().rows[0][1:] == ["0.00 MiB"] * 3  # one unit, MiB
    fig = own_model_figures.plot_peaks(report, title="a title")
    bars = [patch for patch in fig.axes[0].patches]
    assert [bar.get_gid() for bar in bars] == ["kept", "peak-backward", "peak-step"] * 2
    assert [bar.get_width() * 2**20 for bar in bars] == pytest.approx([1000, 1500, 2500, 100, 900, 2500])
    assert math.isclose(fig.axes[0].get_xlim()[0], 0.0)
    with pytest.raises(ValueError, match="at least one step"):
        own_model_figures.plot_peaks(own_model.PeakReport([], "cpu"))


def test_one_blocks_saving_times_the_blocks_against_every_block():
    savings = own_model.BlockSavings(one_block=2**20, blocks=8, every_block=8 * 2**20, block_input=2**17)
    assert str(savings).splitlines() == [
        "one block frees 1.00 MiB; 8 times that is 8.00 MiB; every block frees 8.00 MiB",
        "equal to the byte: yes",
        "a block's input: 0.125 MiB",
    ]
    assert "equal to the byte: no" in str(own_model.BlockSavings(1000, 8, 8001, 0))


def offloaded(model, batch):
    """The lesson's step: a training step whose forward runs under `offload()`, when there is one."""
    ids, targets = batch

    def step(offload):
        model.zero_grad(set_to_none=True)
        if offload is None:
            own_model.next_token_loss(model(ids), targets).backward()
            return
        with offload():
            loss = own_model.next_token_loss(model(ids), targets)
        loss.backward()

    return step


def test_offloads_are_measured_against_the_first_and_a_changed_gradient_is_seen(batch):
    model = Stack()

    def scaled():  # unpack hands back every saved activation doubled: other gradients
        weights = {p.untyped_storage().data_ptr() for p in model.parameters()}

        def unpack(tensor):
            kept = tensor.untyped_storage().data_ptr() in weights or not tensor.is_floating_point()
            return tensor if kept else tensor * 2  # not the weights, nor the targets

        return torch.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, unpack)

    report = own_model.measure_offloads(
        offloaded(model, batch),
        {
            "no offload": None,
            "save_on_cpu": torch.autograd.graph.save_on_cpu,
            "scaled": scaled,
        },
        model,
        warmup=1,
        repeats=2,
    )
    plain, on_cpu, wrong = report.runs
    assert [run.label for run in report.runs] == ["no offload", "save_on_cpu", "scaled"]
    assert plain.same_gradients and on_cpu.same_gradients and not wrong.same_gradients
    assert not wrong.close and wrong.difference > 0  # doubled activations: not float32 rounding
    assert plain.peak > 0 and on_cpu.peak >= plain.peak  # on a CPU, save_on_cpu frees nothing
    assert all(run.times.steps == 2 for run in report.runs)
    assert all(p.grad is None for p in model.parameters())
    lines = str(report).splitlines()
    assert lines[0].startswith("no offload: peak ") and lines[0].endswith("gradients: identical")
    assert "gradients: different (largest difference " in lines[2]
    with pytest.raises(ValueError, match="repeats"):
        own_model.measure_offloads(offloaded(model, batch), {"none": None}, model, repeats=0)


def test_gradients_within_float32_rounding_are_said_so():
    from effitrain_lessons.shared.timing import Times

    times = Times((0.01,), (0.01,), "wall")
    close = own_model.OffloadRun("save_on_cpu", 2**20, times, 3e-9, True)
    assert close.gradients() == "equal within float32 rounding (largest difference 3.0e-09)"


def test_the_parameters_state_is_counted_once_per_parameter():
    model = Stack()
    state = own_model.parameter_state(model)
    assert state.parameter_bytes == 4 * sum(p.numel() for p in model.parameters())
    size = own_model.in_mib(state.parameter_bytes)
    assert str(state).startswith(f"the parameters: {size}; their gradients: {size} more")


def test_every_label_lesson_7_gives_its_choices_is_in_the_catalog():
    """The cells name their choices and offloads in English; the package shows them translated, so
    each must be a message of the package (else the Turkish edition would show it in English)."""
    import ast
    import json
    from pathlib import Path

    master = Path(__file__).resolve().parents[1] / "lessons" / "07_checkpoint_your_own_model.ipynb"
    cells = {cell["id"]: "".join(cell["source"]) for cell in json.loads(master.read_text())["cells"]}
    labels = set()
    for cell in ("measure-ways", "layers", "offload-measure", "peak"):
        for node in ast.walk(ast.parse(cells[cell])):
            if isinstance(node, ast.Dict):
                labels |= {key.value for key in node.keys if isinstance(key, ast.Constant)}
            elif isinstance(node, ast.Tuple) and node.elts and isinstance(node.elts[0], ast.Constant):
                labels.add(node.elts[0].value)
    assert len(labels) == 12 and labels - {"save_on_cpu"} <= set(own_model.CHOICE_LABELS)


def test_the_reports_speak_turkish_with_turkish_numbers(monkeypatch):
    from effitrain_lessons.shared.i18n import ENVIRONMENT

    monkeypatch.setenv(ENVIRONMENT, "tr")
    from effitrain_lessons.shared.timing import Times

    savings = own_model.BlockSavings(one_block=2502656, blocks=8, every_block=20021248, block_input=131072)
    assert str(savings).splitlines()[0] == (
        "bir blok 2,39 MiB boşaltır; bunun 8 katı 19,09 MiB eder; 8 bloğun hepsine birden kontrol noktası "
        "uygulanınca 19,09 MiB boşalır"
    )
    times = Times((2.5,), (2.6,), "cpu")
    report = own_model.OffloadReport(
        [own_model.OffloadRun("to disk (saved-tensor hooks)", 3 * 2**20, times, 0.0, True)]
    )
    assert str(report) == (
        "diske (saklanan tensör kancaları): en yüksek 3,00 MiB, adım 2500,0 ms (2500,0-2500,0), "
        "gradyanlar: özdeş"
    )


def test_a_nan_gradient_is_never_called_identical():
    import math

    import torch

    from effitrain_lessons.own_model.measure import largest_difference

    assert largest_difference([torch.zeros(3), torch.tensor([0.5, -2.0])]) == 2.0
    assert math.isnan(largest_difference([torch.ones(2), torch.tensor([float("nan")])]))
    assert math.isnan(largest_difference([torch.tensor([float("nan")]), torch.ones(2)]))
    assert largest_difference([torch.tensor([float("inf")])]) == math.inf
