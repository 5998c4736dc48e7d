"""The planner's 16-bit figures against `torch.autocast` (issue 47): what a forward under autocast saves
for backward on this CPU (activations, fp32 and 16-bit, and the 16-bit weight copies), counted with
saved-tensor hooks at real widths, against `plan.estimate(..., precision="bf16"|"fp16", device="cpu")`;
the CUDA rules labelled predicted; the command line's flags. The state lines (fp32 weights, gradients
and moments as torch.amp keeps them) are held against a real step in test_plan.py."""

import json

import pytest
import torch

from effitrain_lessons.mixed_precision.measure import saved_in_forward
from effitrain_lessons.will_it_fit import plan

TOLERANCE = 0.10  # the goal; the CPU rules are measured to well within it

# Real widths, one layer, short sequences: a few seconds in all. (bundled, overrides, batch, seq)
CASES = {
    "bert": ("bert-base-uncased", {"num_hidden_layers": 1}, 2, 64),
    "gpt2": ("gpt2", {"n_layer": 1, "vocab_size": 8000}, 2, 64),
    "llama": (
        "llama-3.2-1b-shaped",
        {
            "num_hidden_layers": 1,
            "hidden_size": 512,
            "intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "vocab_size": 8000,
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
        2,
        64,
    ),
}


def _inputs(config: dict, batch: int, seq: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, config["vocab_size"], (batch, seq), generator=generator)
    if config["model_type"] == "bert":
        return {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": torch.zeros(batch, dtype=torch.long),
        }
    return {"input_ids": ids, "labels": ids}


def saved_under_autocast(model, inputs: dict, dtype) -> dict[str, int]:
    """Bytes autograd saves for backward under `torch.autocast("cpu", dtype)`, each storage once and
    the fp32 parameters left out, as lesson 08 counts them: {"weight copies": ..., "activations": ...}."""
    log = saved_in_forward(model, inputs, dtype, "cpu")
    return {"weight copies": log.copy_bytes, "activations": log.activation_bytes}


@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "checkpointed"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("family", sorted(CASES))
def test_the_16_bit_plan_is_within_10_percent_of_what_autocast_saves_on_the_cpu(
    family, attention, checkpointing
):
    bundled, overrides, batch, seq = CASES[family]
    _, config = plan._read_config(bundled)
    config = {**config, **overrides}
    model = plan.build(config, attention=attention)
    if checkpointing:
        model.gradient_checkpointing_enable()
    inputs = _inputs(config, batch, seq)
    dtype, precision = (torch.bfloat16, "bf16") if attention == "eager" else (torch.float16, "fp16")
    measured = saved_under_autocast(model, inputs, dtype)
    estimate = plan.estimate(
        config,
        batch=batch,
        seq=seq,
        attention=attention,
        checkpointing=checkpointing,
        precision=precision,
        device="cpu",
    )
    copies, activations = estimate.bytes_of("16-bit weight copies"), estimate.bytes_of("activations")
    assert measured["weight copies"] == copies  # exact: 2 B for each Linear weight autocast cast and saved
    assert activations == pytest.approx(measured["activations"], rel=TOLERANCE)
    assert copies + activations == pytest.approx(sum(measured.values()), rel=TOLERANCE)
    assert not plan.predicted(estimate.settings)


def test_the_weight_copies_are_a_line_of_their_own_and_the_activations_are_split_by_type():
    fp32 = plan.estimate("bert-base-uncased", batch=2, seq=128, device="cpu")
    amp = plan.estimate("bert-base-uncased", batch=2, seq=128, precision="bf16", device="cpu")
    assert fp32.bytes_of("16-bit weight copies") == 0 and plan.activations_by_type(
        fp32.model, fp32.settings
    ).keys() == {"fp32"}
    # BERT-base, 2 x 128 under CPU bf16 autocast: 12 layers x 7,077,888 weights + pooler and classifier
    assert amp.bytes_of("16-bit weight copies") == 2 * (12 * 7_077_888 + 591_360)
    split = plan.activations_by_type(amp.model, amp.settings)
    assert sum(split.values()) == amp.bytes_of("activations") and split["fp32"] > 0 and split["16-bit"] > 0
    assert round((amp.bytes_of("activations") + amp.bytes_of("16-bit weight copies")) / 2**20) == 331
    rows = [row[0].strip() for row in amp.table().rows]
    assert rows[rows.index("activations") + 1 : rows.index("activations") + 3] == ["fp32", "16-bit"]
    # torch.amp's state: fp32 weights, gradients and moments, 16 bytes a parameter (and step counts)
    p, t = amp.model.parameters, amp.model.tensors
    assert [amp.bytes_of(n) for n in ("parameters", "gradients", "optimizer state")] == [
        4 * p,
        4 * p,
        8 * p + 4 * t,
    ]
    assert "bf16 autocast (torch.amp)" in plan.describe(amp)


def test_master_weights_names_the_zero_megatron_scheme():
    zero = plan.estimate("gpt2", batch=2, seq=64, precision="bf16", master_weights=True, device="cpu")
    p = zero.model.parameters
    assert [zero.bytes_of(n) for n in ("parameters", "fp32 master weights", "gradients")] == [
        2 * p,
        4 * p,
        2 * p,
    ]
    assert zero.bytes_of("16-bit weight copies") == 0  # the weights are already 16-bit
    assert "with fp32 master weights (ZeRO)" in plan.describe(zero)
    assert not plan.autocast(zero.settings)


def test_the_cuda_rules_are_the_same_code_and_labelled_predicted():
    cpu = plan.estimate(
        "bert-base-uncased", batch=32, seq=512, precision="fp16", attention="eager", device="cpu"
    )
    cuda = plan.estimate(
        "bert-base-uncased", batch=32, seq=512, precision="fp16", attention="eager", device="cuda"
    )
    assert plan.predicted(cuda.settings) and not plan.predicted(cpu.settings)
    assert "predicted" in plan.describe(cuda) and "predicted" not in plan.describe(cpu)
    assert cuda.to_dict()["predicted"] is True and cpu.to_dict()["predicted"] is False
    # CUDA: softmax in fp32 (its list), dropout masks of one byte; the same weight copies
    split = plan.activations_by_type(cuda.model, cuda.settings)
    assert split["1-byte masks"] > 0 and "1-byte masks" not in plan.activations_by_type(
        cpu.model, cpu.settings
    )
    assert cuda.bytes_of("16-bit weight copies") == cpu.bytes_of("16-bit weight copies")
    # fp32 runs no autocast: nothing predicted
    assert not plan.predicted(plan.estimate("gpt2", device="cuda").settings)


def test_effitrain_plan_takes_precision_device_and_master_weights(capsys):
    from effitrain_lessons import cli

    arguments = ["plan", "bert-base-uncased", "--batch", "2", "--seq", "128", "--gpu", "T4"]
    assert cli.main([*arguments, "--precision", "bf16", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "bf16 autocast (torch.amp)" in out and "16-bit weight copies" in out and "predicted" not in out
    assert cli.main([*arguments, "--precision", "fp16", "--device", "cuda"]) == 0
    assert "predicted" in capsys.readouterr().out
    assert cli.main([*arguments, "--precision", "bf16", "--master-weights", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["estimate"]
    assert data["autocast"] is False and any(line["name"] == "fp32 master weights" for line in data["lines"])
