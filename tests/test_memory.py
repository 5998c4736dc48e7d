"""The measurement core, checked against cases whose answers can be derived by hand."""

import pytest
import torch

from effitrain_lessons.shared.memory import (
    StepReport,
    format_bytes,
    format_flops,
    measure_step,
    record_saved_tensors,
)
from effitrain_lessons.shared.models import tiny_bert

FLOAT32 = 4


def linear_relu():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU())


def test_linear_relu_saves_its_input_and_relu_output():
    # Linear saves its input x (4 x 16); ReLU saves its output (4 x 32); the weight is a parameter.
    report = measure_step(linear_relu(), torch.randn(4, 16))
    assert report.saved_bytes == (4 * 16 + 4 * 32) * FLOAT32
    assert report.saved_tensors == 2


def test_flops_match_the_matmul_count():
    # forward: 2*b*i*o for x @ W.T; backward: the same again for dW, and again for dx if x needs it.
    b, i, o = 4, 16, 32
    assert measure_step(linear_relu(), torch.randn(b, i)).flops == 2 * (2 * b * i * o)
    report = measure_step(linear_relu(), torch.randn(b, i, requires_grad=True))
    assert report.forward_flops == 2 * b * i * o
    assert report.flops == 3 * (2 * b * i * o)


def test_parameters_and_views_of_them_are_not_activations():
    weight = torch.nn.Parameter(torch.randn(8, 8))
    holder = torch.nn.Module()
    holder.weight = weight
    with record_saved_tensors(holder) as log:
        (torch.randn(3, 8, requires_grad=True) @ weight.t()).sum()
    assert any(entry.is_model_state for entry in log.entries)
    assert log.total_bytes == 3 * 8 * FLOAT32  # only the input


def test_views_of_one_storage_count_once():
    x = torch.randn(10, 10, requires_grad=True)
    with record_saved_tensors() as log:
        y = x.exp()  # saves its output y
        (y * y[:, :5].sum()).sum()  # the product saves y again, and the scalar sum
    assert [entry.storage for entry in log.entries].count(log.entries[0].storage) == 2
    assert log.total_bytes == 10 * 10 * FLOAT32 + FLOAT32  # y once, plus the scalar


def test_gradients_after_measuring_are_one_steps_gradients():
    model = linear_relu()
    x = torch.randn(4, 16, requires_grad=True)
    measure_step(model, x)
    measured = [p.grad.clone() for p in model.parameters()], x.grad.clone()
    model.zero_grad()
    x.grad = None
    model(x).sum().backward()
    for got, want in zip(measured[0], [p.grad for p in model.parameters()]):
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(measured[1], x.grad)


def test_dropout_sees_the_callers_random_state():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5))
    x = torch.randn(16, 8)
    torch.manual_seed(1)
    measure_step(model, x)
    measured = model[0].weight.grad.clone()
    model.zero_grad()
    torch.manual_seed(1)
    model(x).sum().backward()
    torch.testing.assert_close(measured, model[0].weight.grad)


def tiny_batch(seq=32, batch=8, vocab=200):
    generator = torch.Generator().manual_seed(0)
    return {
        "input_ids": torch.randint(5, vocab, (batch, seq), generator=generator),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
        "labels": torch.randint(0, 2, (batch,), generator=generator),
    }


def test_tiny_bert_checkpointing_saves_over_90_percent_for_a_third_more_flops():
    torch.manual_seed(0)
    model = tiny_bert(vocab_size=200)
    batch = tiny_batch()
    plain = measure_step(model, batch)
    model.activation_checkpointing_enable()
    checkpointed = measure_step(model, batch)
    ratio = checkpointed / plain
    assert ratio.saved_reduction > 0.90
    assert ratio.flops == pytest.approx(4 / 3, abs=0.01)
    assert checkpointed.forward_flops == plain.forward_flops


def test_checkpointing_in_eval_mode_keeps_everything():
    torch.manual_seed(0)
    model = tiny_bert(vocab_size=200)
    batch = tiny_batch()
    model.eval()
    plain = measure_step(model, batch)
    model.activation_checkpointing_enable()
    model.eval()
    checkpointed = measure_step(model, batch)
    assert checkpointed.saved_bytes == plain.saved_bytes
    assert not checkpointed.training


def test_reports_print_as_tables_and_compare_as_ratios():
    a = StepReport(1000, 2, 300, 100, 0.010, None, "cpu", True)
    b = StepReport(100, 1, 400, 100, 0.012, None, "cpu", True)
    text = str(b / a)
    assert "0.100x" in text and "90.0% fewer" in text and "1.333x" in text
    assert "saved activations" in str(a) and "1,000 B" in str(a)
    assert (b / a).peak_bytes is None


def test_formats():
    assert format_bytes(768) == "768 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(3 * 2**30) == "3.00 GiB"
    assert format_flops(12288) == "12.29 kFLOP"
    assert format_flops(5) == "5 FLOP"


def test_bad_arguments_get_one_clear_sentence():
    with pytest.raises(TypeError, match="needs a torch.nn.Module"):
        measure_step(lambda x: x, torch.randn(2))
    with pytest.raises(ValueError, match="pass loss_fn"):
        measure_step(_DictOut(), torch.randn(2, 2))
    with torch.no_grad(), pytest.raises(RuntimeError, match="does not require grad"):
        measure_step(linear_relu(), torch.randn(2, 16))


class _DictOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x):
        return {"y": self.linear(x)}
