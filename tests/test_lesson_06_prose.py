"""The figures lesson 06's text writes in words are the ones its cells compute.

The cells print their numbers from the run; the markdown around them quotes a few (about 24 GiB,
micro-batches of 18, ...). They come from the planner, which is arithmetic on bundled configs, and
from measurements that do not vary between runs (saved bytes), so they can be checked here: a
change to the planner that moves one of them fails this test instead of leaving the lesson wrong.
"""

import json
from functools import partial
from pathlib import Path

import pytest
import torch

from effitrain_lessons.shared.memory import record_saved_tensors
from effitrain_lessons.shared.tables import format_bytes
from effitrain_lessons.will_it_fit import plan

MASTER = Path(__file__).resolve().parents[1] / "lessons" / "06_will_it_fit.ipynb"
GiB = 2**30
BERT, GPU = "bert-base-uncased", "colab-T4"
QUESTION = dict(batch=32, seq=512, attention="eager")  # section 3's baseline


@pytest.fixture(scope="module")
def text() -> str:
    cells = json.loads(MASTER.read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_the_answer_for_the_t4(text):
    eager = plan.estimate(BERT, **QUESTION)
    sdpa = plan.estimate(BERT, **{**QUESTION, "attention": "sdpa"})
    assert not eager.fits(GPU) and sdpa.fits(GPU)
    assert f"the step needs {format_bytes(eager.total)}. It does not fit." in text
    assert f"the same step needs {format_bytes(sdpa.total)}, and fits." in text
    assert f"- BERT-base at batch 32, sequence 512: {format_bytes(eager.total)} with eager attention" in text
    assert f"{format_bytes(sdpa.total)} with SDPA" in text


def test_what_each_lever_buys(text):
    base = plan.estimate(BERT, **QUESTION)
    cheapest_optimizer = min(
        plan.estimate(BERT, **QUESTION, optimizer=o).total for o in ("adamw-8bit", "sgd")
    )
    assert f"The optimizer's levers save at most {format_bytes(base.total - cheapest_optimizer)}" in text
    assert f"small next to {format_bytes(base.bytes_of('activations'))} of activations" in text
    checkpointed = plan.largest_micro_batch(BERT, GPU, **QUESTION, checkpointing=True)
    assert f"Micro-batches of up to {checkpointed} fit." in text
    sdpa = plan.estimate(BERT, **{**QUESTION, "attention": "sdpa"})
    assert f"that alone saves {format_bytes(base.total - sdpa.total)}." in text
    k = plan.smallest_accumulation(BERT, GPU, **QUESTION)
    assert f"{k} micro-batches of {32 // k} fit" in text
    assert (
        f"the largest micro-batch that fits stays {plan.largest_micro_batch(BERT, GPU, **QUESTION)}." in text
    )


def test_the_cpu_measurement_against_the_paper(text):
    # section 2: one layer of the 2-layer BERT-base-shaped model at s = 128, b = 2 (vocabulary 2,048)
    s, b = 128, 2
    shape = plan.model_shape(BERT)
    layer = sum(
        t.size({"s": s, "b": b, "h": shape.hidden, "f": shape.intermediate, "a": shape.heads})
        for t in plan.layer_terms(shape, plan.Settings(batch=b, seq=s, attention="eager", device="cpu"))
    )
    above = layer / (2 * plan.korthikanti_layer_bytes(s, b, shape.hidden, shape.heads)) - 1
    assert f"the measurement is {above:.0%} above twice the paper's formula".replace("%", " %") in text
    assert f"twice Korthikanti et al.'s formula plus {above:.0%}".replace("%", " %") in text
    # two norms, mean and 1/std
    assert "4,096 bytes of layer-norm statistics" in text and 2 * 2 * s * b * 4 == 4096
    # "The activations are 5.04 KiB apart": what the whole model saves against the estimate's count
    model = plan.build(BERT, attention="eager", num_hidden_layers=1, vocab_size=2048)
    inputs = {"input_ids": torch.randint(2048, (b, s)), "labels": torch.zeros(b, dtype=torch.long)}
    with record_saved_tensors(model) as log:
        model(**inputs)
    _, config = plan._read_config(BERT)
    counted = plan.estimate(
        {**config, "num_hidden_layers": 1, "vocab_size": 2048},
        batch=b,
        seq=s,
        attention="eager",
        device="cpu",
    ).bytes_of("activations")
    assert f"The activations are {format_bytes(log.total_bytes - counted)} apart" in text


def test_keeping_the_matrix_products(text):
    from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

    from effitrain_lessons.will_it_fit.recompute import bert_layer, layer_input, measure_recompute

    layer = bert_layer(seed=0)
    x = layer_input(layer, batch=4, seq=128, seed=0)
    products = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)

    def keep(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in products else CheckpointPolicy.PREFER_RECOMPUTE

    plain = measure_recompute(layer, x, "plain")
    selective = measure_recompute(
        lambda x: checkpoint(
            layer, x, use_reentrant=False, context_fn=partial(create_selective_checkpoint_contexts, keep)
        ),
        x,
        "selective",
        parameters=layer,
    )
    assert "keeping the products keeps about half of the layer's activations for no extra FLOP" in text
    assert 0.4 < selective.saved_bytes / plain.saved_bytes < 0.6 and selective.flops == plain.flops


def test_recomputing_the_attention_core(text):
    # Korthikanti et al.'s selective recomputation, as the lesson writes it: a checkpoint around the
    # attention function transformers calls
    from torch.utils.checkpoint import checkpoint
    from transformers import AttentionInterface
    from transformers.models.bert.modeling_bert import eager_attention_forward

    from effitrain_lessons.will_it_fit.recompute import bert_layer, layer_input, measure_recompute

    def recompute_attention_core(module, query, key, value, attention_mask, **kwargs):
        return checkpoint(
            eager_attention_forward, module, query, key, value, attention_mask, use_reentrant=False, **kwargs
        )

    AttentionInterface.register("test_recompute_core", recompute_attention_core)
    layer = bert_layer(seed=0)
    x = layer_input(layer, batch=4, seq=128, seed=0)
    plain = measure_recompute(layer, x, "plain")
    core = measure_recompute(bert_layer(seed=0, attention="test_recompute_core"), x, "core")
    kept, more = core.saved_bytes / plain.saved_bytes, core.flops / plain.flops - 1
    # what it no longer keeps: the scores, the dropout mask and the dropped scores, a*s*s*b fp32 each
    assert plain.saved_bytes - core.saved_bytes == 3 * 4 * 4 * 128 * 128 * 4
    assert f"Korthikanti's policy keeps {kept:.0%} for {more:.1%} more FLOPs".replace("%", " %") in text
    assert (
        f"Recomputing the attention core kept {kept:.0%} for {more:.1%} more FLOPs".replace("%", " %") in text
    )


def test_what_fp16_mixed_precision_buys_on_the_t4(text):
    # the planner models torch.autocast: fp16 alone does not fit a T4, and the 16 bits save far less
    # than half of the activations
    fp32 = plan.estimate(BERT, **QUESTION)
    fp16 = plan.estimate(BERT, **QUESTION, precision="fp16")
    assert not fp16.fits(GPU) and fp16.bytes_of("16-bit weight copies") > 0
    assert f"**fp16 mixed precision** alone does not fit: {format_bytes(fp16.total)}." in text
    before, after = format_bytes(fp32.bytes_of("activations")), format_bytes(fp16.bytes_of("activations"))
    assert f"The activations go from {before} to {after}, not to half." in text
    assert fp16.bytes_of("activations") > 0.6 * fp32.bytes_of("activations")
    assert "2 + 4 + 2 + 8" not in text.split("is another scheme: ZeRO's")[1]
    assert "nearly halves" not in text and "with fp16 and a loss scaler" not in text
