"""The planner per GPU (`gpus`, `sharding`): its parameter, gradient and optimizer-state lines against
what real processes hold after one AdamW step (`effitrain_lessons.shared.sharding`), for a small
BERT-shaped and a small GPT-shaped model on 2 and 4 processes, fp32, every stage; the command line's
flags; bad input; and `fewest_gpus`, the verdict's "how many GPUs of this kind"."""

import json

import pytest
import torch

from effitrain_lessons import cli
from effitrain_lessons.shared.processes import can_fork
from effitrain_lessons.shared.sharding import measure_sharding
from effitrain_lessons.will_it_fit import plan

TOLERANCE = 0.10  # the goal; the lines are exact where the partitions are modelled

# Narrow, one or two layers; odd vocabularies so that FSDP2's chunks are uneven (ceil(V / N) rows).
CONFIGS = {
    "bert": (
        "bert-base-uncased",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=256,
            vocab_size=1001,
            max_position_embeddings=64,
        ),
    ),
    "gpt2": ("gpt2", dict(n_layer=1, n_embd=64, n_head=4, vocab_size=1003, n_positions=64)),
}
LINES = {"parameters": "parameters", "gradients": "gradients", "optimizer_state": "optimizer state"}


def _config(family: str) -> dict:
    bundled, overrides = CONFIGS[family]
    _, config = plan._read_config(bundled)
    return {**config, **overrides, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0}


def _inputs(config: dict) -> dict:
    ids = torch.randint(0, config["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(0))
    if config["model_type"] == "bert":
        return {"input_ids": ids, "labels": torch.tensor([0, 1])}
    return {"input_ids": ids, "labels": ids}


@pytest.mark.skipif(not can_fork(), reason="the processes are forked (Linux, macOS)")
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_each_stage_plans_what_the_busiest_process_holds(family, n):
    config = _config(family)
    for stage in plan.SHARDINGS:
        held = measure_sharding(lambda: plan.build(config), _inputs(config), stage, n)
        planned = plan.estimate(config, batch=2, seq=16, device="cpu", gpus=n, sharding=stage)
        for attribute, line in LINES.items():
            measured = held.most(attribute)
            assert abs(planned.bytes_of(line) / measured - 1) <= TOLERANCE, (stage, line, measured)
            assert planned.bytes_of(line) == measured  # the partitions are modelled as the code cuts
        # ZeRO-2 (FSDP2 without resharding) holds the whole parameters from forward to backward
        assert planned.bytes_of("whole parameters, forward to backward") == held.gathered
    unsharded = plan.estimate(config, batch=2, seq=16, device="cpu")
    sharded = plan.estimate(config, batch=2, seq=16, device="cpu", gpus=n, sharding="zero3")
    # each GPU runs its own micro-batch: the activations do not shrink
    assert sharded.bytes_of("activations") == unsharded.bytes_of("activations")


def test_the_stages_shard_one_more_line_each_and_say_so():
    lines = ("parameters", "gradients", "optimizer state")
    held = {
        stage: [plan.estimate("gpt2", gpus=4, sharding=stage).bytes_of(line) for line in lines]
        for stage in plan.SHARDINGS
    }
    whole = held["none"]
    assert held["zero1"][:2] == whole[:2] and held["zero1"][2] < whole[2] / 3
    assert held["zero2"][0] < whole[0] / 3 and held["zero2"][1] < whole[1] / 3
    assert held["zero3"] == held["zero2"]  # at the end of the step; ZeRO-2 has its extra line
    assert plan.estimate("gpt2", gpus=4, sharding="zero2").bytes_of("whole parameters, forward to backward")
    title = plan.describe(plan.estimate("gpt2", gpus=4, sharding="zero3"))
    assert title.endswith("per GPU, 4 GPUs, ZeRO-3")
    assert "per GPU" not in plan.describe(plan.estimate("gpt2"))  # one GPU: as before


def test_fewest_gpus_is_the_first_count_that_fits_at_each_stage():
    settings = dict(batch=1, seq=512)
    fewest = plan.fewest_gpus("llama-3.2-1b-shaped", "T4", **settings)
    assert set(fewest) == {"zero1", "zero2", "zero3"}
    for stage, n in fewest.items():
        assert n is not None and n >= 2
        fits = plan.estimate("llama-3.2-1b-shaped", gpus=n, sharding=stage, **settings).fits("T4")
        assert fits and not (
            n > 2 and plan.estimate("llama-3.2-1b-shaped", gpus=n - 1, sharding=stage, **settings).fits("T4")
        )
    assert fewest["zero3"] <= fewest["zero2"] <= fewest["zero1"]
    verdict = plan.verdict("llama-3.2-1b-shaped", "T4", **settings)
    assert not verdict.fits and f"{fewest['zero3']} with ZeRO-3" in verdict.sentence()
    # activations are each GPU's own: no count of GPUs fits them when they alone are too many
    assert plan.fewest_gpus("gpt2", "T4", batch=64, seq=1024, attention="eager") == {
        "zero1": None,
        "zero2": None,
        "zero3": None,
    }


def test_the_command_line_takes_gpus_and_sharding(capsys):
    assert cli.main(["plan", "gpt2", "--gpus", "4", "--sharding", "zero3", "--gpu", "T4", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (
        answer["estimate"]["settings"]["gpus"] == 4 and answer["estimate"]["settings"]["sharding"] == "zero3"
    )
    expected = plan.estimate("gpt2", gpus=4, sharding="zero3")
    assert answer["estimate"]["total_bytes"] == expected.total
    assert cli.main(["plan", "gpt2", "--gpus", "2", "--sharding", "zero1", "--gpu", "T4"]) == 0
    assert "per GPU, 2 GPUs, ZeRO-1" in capsys.readouterr().out


@pytest.mark.parametrize(
    "arguments,says",
    [
        (["--sharding", "zero3"], "ZeRO-3 shards across GPUs, and one GPU has nothing to share"),
        (["--gpus", "0"], "gpus must be a whole number of at least 1, got 0."),
    ],
)
def test_bad_input_gets_one_sentence(arguments, says, capsys):
    assert cli.main(["plan", "gpt2", *arguments]) == 2
    captured = capsys.readouterr()
    assert says in captured.err and len(captured.err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="sharding must be one of none, zero1, zero2, zero3"):
        plan.estimate("gpt2", gpus=2, sharding="zero4")
