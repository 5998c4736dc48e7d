"""Lesson 8's measurements of mixed precision: what fp32, bf16 and fp16 keep of a value (and each
format's range and step), what `record_saved` and `OpRecorder` see autograd save for backward and how
they name it, the bytes a block saves in fp32 and under CPU autocast against their closed forms (the
lesson's MLPBlock and its exercise's DeepMLP), what a `torch.amp` step holds a parameter, the gradient
values fp16 zeroes, the times table, and the two figures."""

import contextlib
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from torch import nn

from effitrain_lessons.mixed_precision import figures as mp_figures
from effitrain_lessons.mixed_precision import measure as mp
from effitrain_lessons.shared.timing import Times

MASTER = Path(__file__).resolve().parents[1] / "lessons" / "08_mixed_precision.ipynb"


class MLPBlock(nn.Module):
    """The lesson's block: pre-LN, Linear up, GELU, Linear down, and the residual."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up, self.down = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class DeepMLP(nn.Module):
    """The exercise's block: three Linear layers, a GELU after each of the first two, no norm."""

    def __init__(self, width, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, width)

    def forward(self, x):
        gelu = nn.functional.gelu
        return x + self.fc3(gelu(self.fc2(gelu(self.fc1(x)))))


def one_sentence(message: str) -> bool:
    return message[:1].isalpha() and message.endswith(".") and ". " not in message and "\n" not in message


def rows_by_label(table) -> dict[str, list[str]]:
    return {row[0]: list(row[1:]) for row in table.rows}


# ---------------------------------------------------------------------------------------------
# 1. What 16 bits keep


def test_fp16_overflows_and_underflows_where_bf16_keeps_the_value():
    kept = mp.roundtrips([70_000, 1e-8, 1 + 2**-8, math.pi])
    assert kept.values == (70_000.0, 1e-8, 1 + 2**-8, math.pi)
    assert set(kept.kept) == {"fp32", "bf16", "fp16"}
    # 70,000: above fp16's largest value (65,504); bf16 keeps it to its 8 bits of digits
    assert kept.kept["fp16"][0] == math.inf
    assert kept.kept["bf16"][0] == 70_144.0 and kept.kept["fp32"][0] == 70_000.0
    # 1e-8: below fp16's smallest value (2**-24, about 6e-8): zero; bf16 has fp32's range
    assert kept.kept["fp16"][1] == 0.0
    assert kept.kept["bf16"][1] == pytest.approx(1e-8, rel=2**-8) and kept.kept["bf16"][1] != 1e-8
    # 1 + 2**-8: under bf16's step after 1 (2**-7), within fp16's (2**-10)
    assert kept.kept["bf16"][2] == 1.0 and kept.kept["fp16"][2] == 1 + 2**-8 == kept.kept["fp32"][2]
    assert kept.kept["bf16"][3] == kept.kept["fp16"][3] == 3.140625
    table = kept.table()
    assert list(table.columns) == ["written", "read back: fp32", "bf16", "fp16"]
    assert [list(row) for row in table.rows[:2]] == [
        ["70000", "70000", "70144", "inf"],
        ["1e-08", "1e-08", "1.00117e-08", "0"],
    ]
    assert repr(kept) == str(table) and not repr(kept).startswith("Roundtrips(")


def test_the_table_gives_each_formats_range_and_step():
    rows = rows_by_label(mp.roundtrips([1.0]).table())  # columns: fp32, bf16, fp16
    assert list(rows)[1:] == ["largest", "smallest normal", "smallest above 0", "step after 1"]
    assert rows["largest"] == ["3.40282e+38", "3.38953e+38", "65504"]
    assert rows["smallest normal"] == ["1.17549e-38", "1.17549e-38", "6.10352e-05"]  # fp16: 2**-14
    assert rows["smallest above 0"] == ["1.4013e-45", "9.18355e-41", "5.96046e-08"]  # 2**-149, -133, -24
    assert rows["step after 1"] == ["1.19209e-07", "0.0078125", "0.000976562"]  # 2**-23, -7, -10


def test_the_smallest_value_above_zero_is_found_by_halving():
    assert mp._smallest(torch.float16) == 2**-24
    assert mp._smallest(torch.bfloat16) == 2**-133
    assert mp._smallest(torch.float32) == 2**-149
    # the figure's lines are the same values the table gives
    assert mp_figures.THRESHOLDS["fp16-smallest"][1] == mp._smallest(torch.float16)
    assert mp_figures.THRESHOLDS["fp16-normal"][1] == torch.finfo(torch.float16).tiny == 2**-14


# ---------------------------------------------------------------------------------------------
# 2. What autocast saves: op by op


TOKENS, WIDTH, HIDDEN = 16, 8, 32


def test_a_linear_under_bf16_autocast_saves_its_input_cast_and_a_copy_of_its_weight():
    torch.manual_seed(0)
    layer = nn.Linear(WIDTH, HIDDEN)
    x = torch.randn(TOKENS, WIDTH, requires_grad=True)
    with mp.record_saved(layer, x) as log, torch.autocast("cpu", dtype=torch.bfloat16):
        layer(x)
    assert log.entries == [
        mp.Saved("input, cast", torch.bfloat16, (TOKENS, WIDTH), 2 * TOKENS * WIDTH),
        mp.Saved("weight copy", torch.bfloat16, (WIDTH, HIDDEN), 2 * WIDTH * HIDDEN),  # the transpose
    ]
    assert log.copy_bytes == 2 * WIDTH * HIDDEN and log.activation_bytes == 2 * TOKENS * WIDTH
    assert log.total_bytes == 2 * (TOKENS + HIDDEN) * WIDTH
    assert log.described() == "input, cast bf16 (16x8); weight copy bf16 (8x32)"


def test_a_layernorm_on_fp32_saves_its_input_and_two_statistics():
    norm = nn.LayerNorm(WIDTH)
    x = torch.randn(TOKENS, WIDTH, requires_grad=True)
    with mp.record_saved(norm, x) as log, torch.autocast("cpu", dtype=torch.bfloat16):
        norm(x)
    assert log.entries == [
        mp.Saved("input", torch.float32, (TOKENS, WIDTH), 4 * TOKENS * WIDTH),
        mp.Saved("statistics", torch.float32, (TOKENS, 1), 4 * TOKENS),  # the mean
        mp.Saved("statistics", torch.float32, (TOKENS, 1), 4 * TOKENS),  # the inverse deviation
    ]
    assert log.copy_bytes == 0  # its weight and bias are the parameters themselves


def test_a_parameter_itself_is_never_counted():
    layer = nn.Linear(WIDTH, HIDDEN)
    x = torch.randn(TOKENS, WIDTH, requires_grad=True)
    with mp.record_saved(layer, x) as log:  # fp32: addmm saves the weight itself, for x's gradient
        layer(x)
    assert log.entries == [mp.Saved("input", torch.float32, (TOKENS, WIDTH), 4 * TOKENS * WIDTH)]
    with mp.record_saved(None, x) as blind:  # told no module, it cannot know the weight for one
        layer(x)
    assert blind.total_bytes == 4 * TOKENS * WIDTH + 4 * WIDTH * HIDDEN


def test_each_storage_is_counted_once():
    x = torch.randn(TOKENS, WIDTH, requires_grad=True)
    with mp.record_saved(None, x) as log:
        x * x  # saves x twice
        torch.mm(x, x.t())  # saves x and a view of it
    assert log.entries == [mp.Saved("input", torch.float32, (TOKENS, WIDTH), 4 * TOKENS * WIDTH)]
    with mp.record_saved() as nothing:
        with torch.no_grad():
            x * x
    assert nothing.entries == [] and nothing.total_bytes == 0 and nothing.described() == "nothing"


@pytest.mark.parametrize("dtype", [None, torch.bfloat16])
def test_recording_changes_nothing_in_the_step(dtype):
    def step(record: bool):
        torch.manual_seed(1)
        block = MLPBlock(WIDTH, HIDDEN)
        x = torch.randn(TOKENS, WIDTH, requires_grad=True)
        with mp.record_saved(block, x) if record else contextlib.nullcontext() as log:
            with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
                out = block(x)
        out.float().square().mean().backward()
        return out.detach(), [x.grad, *(p.grad for p in block.parameters())], log

    plain, plain_grads, _ = step(record=False)
    recorded, recorded_grads, log = step(record=True)
    assert log.total_bytes > 0
    assert torch.equal(plain, recorded) and plain.dtype == recorded.dtype
    assert len(plain_grads) == len(recorded_grads) == 7  # x, the norm's two, two per Linear
    assert all(torch.equal(a, b) for a, b in zip(plain_grads, recorded_grads))


def lesson_ops(recorder: mp.OpRecorder) -> None:
    """Section 2's five ops, small."""
    torch.manual_seed(0)
    x = torch.randn(TOKENS, WIDTH, requires_grad=True)
    h = torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    for name, op, given in [
        ("Linear", nn.Linear(WIDTH, HIDDEN), x),
        ("LayerNorm on fp32", nn.LayerNorm(WIDTH), x),
        ("GELU on fp32", nn.GELU(), x),
        ("GELU on 16 bits", nn.GELU(), h),
        ("Softmax on 16 bits", nn.Softmax(dim=-1), h),
    ]:
        with recorder.record(name, op, given), torch.autocast("cpu", dtype=torch.bfloat16):
            op(given)


def test_the_op_table_names_what_each_op_returned_and_saved():
    ops = mp.OpRecorder()
    lesson_ops(ops)
    table = ops.table().table()
    assert list(table.columns) == ["op", "returns", "saved for backward", "bytes"]
    assert [list(row) for row in table.rows] == [
        ["Linear", "bf16", "input, cast bf16 (16x8); weight copy bf16 (8x32)", "768 B"],
        [
            "LayerNorm on fp32",
            "fp32",
            "input fp32 (16x8); statistics fp32 (16x1); statistics fp32 (16x1)",
            "640 B",
        ],
        ["GELU on fp32", "fp32", "input fp32 (16x8)", "512 B"],
        ["GELU on 16 bits", "bf16", "input bf16 (16x32)", "1.00 KiB"],
        ["Softmax on 16 bits", "bf16", "output bf16 (16x32)", "1.00 KiB"],
    ]
    assert [log.total_bytes for _, _, log in ops.rows] == [768, 640, 512, 1024, 1024]
    assert "each storage once; a parameter itself is not counted" in table.notes
    assert repr(ops) == str(table) and ops._repr_html_() == table._repr_html_()


def test_the_recorder_refuses_an_op_that_is_not_a_module():
    ops = mp.OpRecorder()
    x = torch.randn(4, 4, requires_grad=True)
    with pytest.raises(TypeError) as refused:
        with ops.record("relu", torch.relu, x):
            torch.relu(x)
    message = str(refused.value)
    assert one_sentence(message) and "torch.nn.Module" in message and "builtin_function_or_method" in message
    assert ops.rows == []


def test_the_recorder_refuses_an_op_that_did_not_run_inside_the_block():
    ops, gelu = mp.OpRecorder(), nn.GELU()
    x = torch.randn(4, 4, requires_grad=True)
    with pytest.raises(ValueError) as refused:
        with ops.record("GELU later", gelu, x):
            x * 2
    message = str(refused.value)
    assert one_sentence(message) and message.startswith("GELU later: ") and "did not run" in message
    assert ops.rows == [] and not gelu._forward_hooks  # its hook is gone: a later record starts clean
    with ops.record("GELU", gelu, x):
        gelu(x)
    assert [name for name, _, _ in ops.rows] == ["GELU"]


# ---------------------------------------------------------------------------------------------
# 2. What autocast saves: a whole block


def test_compare_saved_needs_a_log():
    with pytest.raises(ValueError) as refused:
        mp.compare_saved({})
    assert one_sentence(str(refused.value)) and "record_saved" in str(refused.value)


def test_compare_saved_gives_each_log_as_a_share_of_the_first():
    torch.manual_seed(0)
    block = MLPBlock(64, 256)  # the lesson's block: autocast keeps 60 % of fp32's bytes
    x = torch.randn(512, 64, requires_grad=True)
    with mp.record_saved(block) as in_fp32:
        block(x)
    with mp.record_saved(block) as in_autocast, torch.autocast("cpu", dtype=torch.bfloat16):
        block(x)
    assert in_autocast.total_bytes / in_fp32.total_bytes == pytest.approx(0.601, abs=0.001)
    table = mp.compare_saved({"fp32": in_fp32, "autocast": in_autocast}).table()
    assert list(table.columns) == [
        "forward pass",
        "activations",
        "16-bit weight copies",
        "saved for backward",
        "of the first row",
    ]
    assert [row[4] for row in table.rows] == ["100%", "60%"]
    assert [row[2] for row in table.rows] == ["0.00 MiB", "0.06 MiB"]  # 4 x 64 x 256 bytes
    assert table.rows[0][1] == table.rows[0][3] == mp.in_mib(512 * (8 * 64 + 8 * 256 + 8))
    # a first log of nothing gives no share rather than a division by zero
    empty = mp.compare_saved({"nothing": mp.SavedLog(), "autocast": in_autocast}).table()
    assert [row[4] for row in empty.rows] == ["-", "-"]


def mlp_fp32(t, w, h):
    return t * (8 * w + 8 * h + 8)  # LayerNorm's input and two statistics, up's input, GELU's, down's


def mlp_autocast(t, w, h):
    # the norm's fp32 input and statistics; up's input cast, GELU's and down's inputs in 16 bits
    return t * (6 * w + 4 * h + 8), 4 * w * h  # activations, and a 16-bit copy of each weight


@pytest.mark.parametrize("tokens, width, hidden", [(1, 8, 8), (8, 16, 64), (100, 32, 96)])
def test_a_block_saves_its_closed_form_in_fp32_and_under_autocast(tokens, width, hidden):
    torch.manual_seed(tokens)
    block, x = MLPBlock(width, hidden), torch.randn(tokens, width)
    fp32 = mp.saved_bytes(block, x)
    assert fp32.total_bytes == mlp_fp32(tokens, width, hidden) and fp32.copy_bytes == 0
    activations, copies = mlp_autocast(tokens, width, hidden)
    for dtype in (torch.bfloat16, torch.float16):  # on the CPU, both 2 bytes in the same places
        mixed = mp.saved_bytes(block, x, dtype)
        assert (mixed.activation_bytes, mixed.copy_bytes) == (activations, copies), dtype
        assert {e.dtype for e in mixed.entries if e.role == "weight copy"} == {dtype}
    assert not x.requires_grad  # saved_bytes measures a copy of the input, not the caller's tensor


def deep_mlp_bytes(t, w, h):
    return t * (2 * w + 8 * h) + 4 * w * h + 2 * h**2


def lesson_answer():
    """The solution's predicted_autocast_bytes, from the master."""
    cells = {cell.get("id"): "".join(cell["source"]) for cell in json.loads(MASTER.read_text())["cells"]}
    namespace: dict = {}
    exec(compile(cells["q1-answer"], "<q1-answer>", "exec"), namespace)  # noqa: S102 - the course's own cell
    return namespace["predicted_autocast_bytes"]


@pytest.mark.parametrize(
    "tokens, width, hidden", [(300, 48, 192), (8, 64, 256), (1000, 32, 96), (64, 128, 512)]
)
def test_the_exercises_block_saves_what_the_solution_predicts(tokens, width, hidden):
    torch.manual_seed(3)
    log = mp.saved_bytes(DeepMLP(width, hidden), torch.randn(tokens, width), torch.bfloat16)
    assert log.copy_bytes == 4 * width * hidden + 2 * hidden**2  # one 16-bit copy of each weight
    assert log.activation_bytes == tokens * (2 * width + 8 * hidden)
    assert log.total_bytes == deep_mlp_bytes(tokens, width, hidden) == lesson_answer()(tokens, width, hidden)


def test_saved_by_tokens_measures_each_count_in_fp32_and_under_autocast():
    tokens = [1, 4, 32]
    measured = mp.saved_by_tokens(lambda: MLPBlock(16, 64), tokens, 16, torch.bfloat16)
    assert list(measured) == ["tokens", "fp32", "activations", "weight copies"]
    assert measured["tokens"] == tokens
    assert measured["fp32"] == [mlp_fp32(t, 16, 64) for t in tokens]
    assert measured["activations"] == [mlp_autocast(t, 16, 64)[0] for t in tokens]
    assert measured["weight copies"] == [4 * 16 * 64] * 3  # whatever the tokens
    # with one token autocast keeps more than fp32: the copies
    assert measured["activations"][0] + measured["weight copies"][0] > measured["fp32"][0]
    assert measured["activations"][-1] + measured["weight copies"][-1] < measured["fp32"][-1]
    assert mp.saved_by_tokens(lambda: MLPBlock(16, 64), tokens, 16, torch.float16) == measured


# ---------------------------------------------------------------------------------------------
# 3. What a torch.amp step holds a parameter


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Embedding(50, 32),
        nn.Linear(32, 128),
        nn.GELU(),
        nn.LayerNorm(128),
        nn.Linear(128, 32),
        nn.Linear(32, 50),
    )


def test_held_per_parameter_needs_the_gradients():
    model = small_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with pytest.raises(ValueError) as refused:
        mp.held_per_parameter(model, optimizer, mp.SavedLog())
    assert one_sentence(str(refused.value)) and "held_per_parameter" in str(refused.value)
    ids = torch.randint(0, 50, (2, 8))
    model(ids).sum().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    with pytest.raises(ValueError, match="before zero_grad"):
        mp.held_per_parameter(model, optimizer, mp.SavedLog())


def test_a_torch_amp_step_holds_16_bytes_a_parameter_and_the_copies_on_top():
    model = small_model()
    ids = torch.randint(0, 50, (4, 16), generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    with mp.record_saved(model) as forward, torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    held = mp.held_per_parameter(model, optimizer, forward)

    n = sum(p.numel() for p in model.parameters())
    tensors = len(list(model.parameters()))
    linear = sum(m.weight.numel() for m in model if isinstance(m, nn.Linear))
    assert held.parameters == n and held.dtype == torch.float16
    assert held.weights == held.gradients == 4 * n  # torch.amp keeps the model in fp32
    # AdamW's two fp32 moments (and at most its step counts, 4 bytes a tensor)
    assert held.optimizer_state in (8 * n, 8 * n + 4 * tensors)
    assert held.copies == 2 * linear  # only the Linear layers' weights: not the embedding, norm, biases
    rows = rows_by_label(held.table())
    assert rows["weights"][0] == rows["gradients"][0] == "4.00"
    assert rows["AdamW's two moments"] == ["8.00", "8"]
    assert rows["fp16 weight copies, forward to backward"] == [f"{2 * linear / n:.2f}", "-"]
    assert rows["total"][0] == f"{16 + 2 * linear / n:.2f}"
    assert held.table().notes == [f"{n:,} parameters; each storage once"]


# ---------------------------------------------------------------------------------------------
# 4. The gradient values fp16 zeroes


def test_count_zeroed_counts_zeros_only_where_fp32_has_none():
    reference = {"a": torch.tensor([1.0, 0.0, 2.0, 3.0]), "b": torch.tensor([[1e-9, 5.0]])}
    settings = {
        "fp16": {"a": torch.tensor([1.0, 0.0, 0.0, 3.0]), "b": torch.tensor([[0.0, 5.0]])},  # 2 zeroed
        "as a list": [torch.tensor([0.0, 0.0, 2.0, 3.0]), torch.tensor([[1e-9, 5.0]])],  # 1
        "the same": list(reference.values()),  # 0
        "in 16 bits": [torch.zeros(4, dtype=torch.float16), torch.ones(1, 2, dtype=torch.bfloat16)],  # 3
    }
    zeroed = mp.count_zeroed(reference, settings)
    # (zeroed, non-zero in fp32, zeroed though fp16 could hold the fp32 value: 1e-9 it could not)
    assert zeroed.counted == {
        "fp16": (2, 5, 1),
        "as a list": (1, 5, 1),
        "the same": (0, 5, 0),
        "in 16 bits": (3, 5, 3),
    }
    assert zeroed.zeroed("fp16") == 2
    table = zeroed.table()
    assert list(table.columns) == [
        "gradients",
        "zero where fp32's are not",
        "of",
        "share",
        "of them, large enough for fp16 in fp32",
    ]
    assert [list(row) for row in table.rows][:3] == [
        ["fp16", "2", "5", "40.0%", "1 (50%)"],
        ["as a list", "1", "5", "20.0%", "1 (100%)"],
        ["the same", "0", "5", "0.0%", "0"],
    ]
    assert repr(zeroed) == str(table)
    # a list of the reference's own gradients in their order, None left out on both sides
    listed = mp.count_zeroed(
        [torch.ones(3), None, torch.ones(2)], {"half": [torch.zeros(3), None, torch.ones(2)]}
    )
    assert listed.counted == {"half": (3, 5, 3)}


def test_count_zeroed_refuses_gradients_of_another_model():
    with pytest.raises(ValueError) as refused:
        mp.count_zeroed([torch.ones(6)], {"other": [torch.ones(3)]})
    message = str(refused.value)
    assert one_sentence(message) and message.startswith("other: 3 gradient values, but fp32 has 6")


def test_gradient_magnitudes_keeps_the_size_of_every_nonzero_value():
    magnitudes = mp.gradient_magnitudes([torch.tensor([-2.0, 0.0]), None, torch.tensor([[1e-30, 0.0, 3.0]])])
    assert magnitudes.tolist() == pytest.approx([2.0, 1e-30, 3.0], rel=1e-6)
    assert mp.gradient_magnitudes({"w": torch.zeros(5)}).numel() == 0


# ---------------------------------------------------------------------------------------------
# 5. Time


def test_the_times_table_gives_each_ratio_to_the_first_and_names_the_clock(monkeypatch):
    fast = Times((0.010, 0.011, 0.012), (0.010, 0.011, 0.012), "cpu")
    slow = Times((0.020, 0.022, 0.024), (0.021, 0.022, 0.023), "cpu")
    monkeypatch.setattr(mp, "cpu_bf16_instructions", lambda: True)
    shown = mp.precision_times({"fp32": fast, "bf16": slow}, "a block")
    table = shown.table()
    assert table.title == "a block"
    assert list(table.columns) == ["step", "time: median (middle half)", "against the first row"]
    assert [list(row) for row in table.rows] == [
        ["fp32", fast.milliseconds(), str(fast / fast)],
        ["bf16", slow.milliseconds(), str(slow / fast)],
    ]
    assert str(shown.ratio("bf16")) == str(slow / fast) and str(slow / fast).startswith("2.00x")
    assert table.notes == [
        "3 steps each, in turns, after a warm-up; CPU time",
        "this CPU has bf16 instructions (avx512_bf16 or amx_bf16)",
    ]
    monkeypatch.setattr(mp, "cpu_bf16_instructions", lambda: False)
    assert (
        table.notes[1]
        != shown.table().notes[1]
        == "this CPU has no bf16 instructions (avx512_bf16 or amx_bf16)"
    )
    monkeypatch.setattr(mp, "cpu_bf16_instructions", lambda: None)
    assert len(shown.table().notes) == 1  # it cannot tell: it says nothing
    monkeypatch.setattr(mp, "cpu_bf16_instructions", lambda: True)
    on_gpu = mp.precision_times(
        {"fp32": Times((0.01,), (0.01,), "wall"), "bf16": Times((0.005,), (0.005,), "wall")}
    )
    # a GPU's clock; and nothing about the CPU's instructions
    assert on_gpu.table().notes == ["1 step each, in turns, after a warm-up; wall time after a synchronize"]
    assert on_gpu.table().title is None


def test_cpu_bf16_instructions_reads_the_cpus_flags(monkeypatch):
    assert mp.cpu_bf16_instructions() in (True, False, None)

    def cpuinfo(flags):
        import io

        return lambda *args, **kwargs: io.StringIO(f"processor\t: 0\nflags\t\t: fpu sse2 {flags}\n")

    monkeypatch.setattr(mp, "open", cpuinfo("avx2 amx_bf16"), raising=False)
    assert mp.cpu_bf16_instructions() is True
    monkeypatch.setattr(mp, "open", cpuinfo("avx512_bf16"), raising=False)
    assert mp.cpu_bf16_instructions() is True
    monkeypatch.setattr(mp, "open", cpuinfo("avx2 avx512f"), raising=False)
    assert mp.cpu_bf16_instructions() is False

    def missing(*args, **kwargs):
        raise FileNotFoundError("/proc/cpuinfo")

    monkeypatch.setattr(mp, "open", missing, raising=False)
    assert mp.cpu_bf16_instructions() is None


# ---------------------------------------------------------------------------------------------
# The figures


MEASURED = {
    "tokens": [4, 8, 32],
    "fp32": [2592, 5184, 20736],
    "activations": [1440, 2880, 11520],
    "weight copies": [4096, 4096, 4096],
}


def by_gid(ax, gid):
    return [artist for artist in ax.get_children() if artist.get_gid() == gid]


def test_the_tokens_figure_draws_fp32_as_a_line_over_autocasts_two_areas():
    fig = mp_figures.plot_saved_by_tokens(MEASURED, title="With few tokens, autocast keeps more")
    ax = fig.axes[0]
    (line,) = by_gid(ax, "fp32")
    assert list(line.get_xdata()) == MEASURED["tokens"]
    assert list(line.get_ydata()) == pytest.approx([b / 2**20 for b in MEASURED["fp32"]])
    (activations,) = by_gid(ax, "activations")
    (copies,) = by_gid(ax, "weight copies")
    # the copies stacked on the activations: from the activations up to their sum
    tops = copies.get_paths()[0].vertices[:, 1]
    assert tops.max() == pytest.approx((11520 + 4096) / 2**20) and tops.min() == pytest.approx(1440 / 2**20)
    assert activations.get_paths()[0].vertices[:, 1].max() == pytest.approx(11520 / 2**20)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_title() == "With few tokens, autocast keeps more"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "autocast: activations",
        "autocast: 16-bit weight copies",
        "fp32: saved for backward",
    ]
    assert mp_figures.plot_saved_by_tokens(MEASURED).axes[0].get_title() == ""


def test_the_gradient_figure_draws_fp16s_thresholds_and_the_scaled_one():
    values = torch.tensor([1e-9, 1e-6, 0.0, 1e-3])
    fig = mp_figures.plot_gradient_magnitudes(values, scale=2.0**16, title="Where the gradients lie")
    ax = fig.axes[0]
    bars = by_gid(ax, "gradients")
    assert bars and sum(bar.get_height() for bar in bars) == 3  # the zero left out
    (smallest,) = by_gid(ax, "fp16-smallest")
    (normal,) = by_gid(ax, "fp16-normal")
    (scaled,) = by_gid(ax, "scaled")
    assert smallest.get_xdata()[0] == pytest.approx(-24 * math.log10(2))
    assert normal.get_xdata()[0] == pytest.approx(-14 * math.log10(2))
    assert scaled.get_xdata()[0] == pytest.approx(-40 * math.log10(2))  # 2**-24 / 2**16
    assert ax.get_title() == "Where the gradients lie"
    unscaled = mp_figures.plot_gradient_magnitudes([1e-3]).axes[0]
    assert not by_gid(unscaled, "scaled") and by_gid(unscaled, "fp16-smallest")


def test_the_figures_translate_their_words_and_pass_the_title_through(monkeypatch):
    monkeypatch.setattr(mp_figures, "_", lambda text: f"<{text}>")
    tokens = mp_figures.plot_saved_by_tokens(MEASURED, title="a title").axes[0]
    assert tokens.get_title() == "<a title>"
    assert tokens.get_xlabel() == "<tokens in the step>"
    assert [t.get_text() for t in tokens.get_legend().get_texts()][-1] == "<fp32: saved for backward>"
    gradients = mp_figures.plot_gradient_magnitudes([1e-3], title="another").axes[0]
    assert gradients.get_title() == "<another>" and gradients.get_ylabel() == "<gradient values>"


@pytest.mark.parametrize("measured", [{}, {"tokens": []}])
def test_the_tokens_figure_refuses_nothing_measured(measured):
    with pytest.raises(ValueError) as refused:
        mp_figures.plot_saved_by_tokens(measured)
    assert one_sentence(str(refused.value)) and "saved_by_tokens" in str(refused.value)


@pytest.mark.parametrize("magnitudes", [[], torch.zeros(3)])
def test_the_gradient_figure_refuses_no_nonzero_value(magnitudes):
    with pytest.raises(ValueError) as refused:
        mp_figures.plot_gradient_magnitudes(magnitudes)
    assert one_sentence(str(refused.value)) and "non-zero" in str(refused.value)
