"""Lesson 6's planner held against measurement: what `plan.estimate` predicts, counted on real models.

Parameters, gradients and optimizer state are compared exactly with the tensors a real optimizer
step leaves; saved activations within 10 % of what autograd saves (`record_saved_tensors`, as
lesson 1 measures), over a grid of shapes of small BERT, GPT-2 and Llama models built from the
bundled configs. The GPU check (tools/gpu_check.py) is tested in test_gpu_check.py.
"""

import functools
import itertools
import math
import re
import socket
from pathlib import Path

import pytest
import torch
import transformers

from effitrain_lessons.shared.memory import record_saved_tensors, storage_key, training_memory
from effitrain_lessons.shared.tables import format_bytes
from effitrain_lessons.will_it_fit import plan

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("bert", "gpt2", "llama")
VOCAB = 300

# Small models of each bundled family: the bundled config with these fields overridden.
SMALL = {
    "bert": (
        "bert-base-uncased",
        {
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 256,
            "vocab_size": VOCAB,
            "max_position_embeddings": 128,
        },
    ),
    "gpt2": (
        "gpt2",
        {
            "n_embd": 64,
            "n_head": 4,
            "vocab_size": VOCAB,
            "n_positions": 128,
            "bos_token_id": 0,
            "eos_token_id": 0,
        },
    ),
    "llama": (
        "llama-3.2-1b-shaped",
        {
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 256,
            "vocab_size": VOCAB,
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
    ),
}
LAYERS = {"bert": "num_hidden_layers", "gpt2": "n_layer", "llama": "num_hidden_layers"}
DROPOUTS = {
    "bert": ("hidden_dropout_prob", "attention_probs_dropout_prob"),
    "gpt2": ("resid_pdrop", "embd_pdrop", "attn_pdrop"),
    "llama": ("attention_dropout",),
}
OPTIMIZERS = {
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-3),
    "sgd-momentum": lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9),
}


def small_config(family: str, layers: int = 2, dropout: bool = True) -> dict:
    """The config dict both the built model and the estimate are made from."""
    name, overrides = SMALL[family]
    _, config = plan._read_config(name)
    return {
        **config,
        **overrides,
        LAYERS[family]: layers,
        **dict.fromkeys(DROPOUTS[family], 0.1 if dropout else 0.0),
    }


def batch_for(family: str, batch: int, seq: int) -> dict:
    ids = torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(0))
    if family == "bert":
        return {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": torch.zeros(batch, dtype=torch.long),
        }
    return {"input_ids": ids, "labels": ids}


def stored_bytes(tensors) -> int:
    """Bytes of the storages behind `tensors`, each storage once."""
    return sum({storage_key(t): t.untyped_storage().nbytes() for t in tensors}.values())


def state_lines(estimate: plan.Estimate) -> dict[str, int]:
    return {
        name: estimate.bytes_of(name)
        for name in ("parameters", "fp32 master weights", "gradients", "optimizer state")
    }


# ---------------------------------------------------------------------------------------------
# Parameters, gradients, optimizer state: exact


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("family", FAMILIES)
def test_fp32_state_is_what_one_real_step_leaves(family, optimizer):
    config = small_config(family)
    model = plan.build(config)
    measured = training_memory(model, batch_for(family, 2, 16), make_optimizer=OPTIMIZERS[optimizer])
    estimate = plan.estimate(config, batch=2, seq=16, optimizer=optimizer, device="cpu")
    assert state_lines(estimate) == {
        "parameters": measured.parameters,
        "fp32 master weights": 0,
        "gradients": measured.gradients,
        "optimizer state": measured.optimizer_state,
    }
    # The same by hand: AdamW keeps two moments a parameter and a 4-byte step count a parameter tensor.
    parameters = list(model.parameters())  # a tied weight (GPT-2's, Llama's) is yielded once
    p, t = sum(w.numel() for w in parameters), len(parameters)
    assert (
        measured.optimizer_state == {"adamw": 2 * 4 * p + 4 * t, "sgd": 0, "sgd-momentum": 4 * p}[optimizer]
    )


def autocast_step(model: torch.nn.Module, batch: dict, dtype=torch.bfloat16) -> dict[str, int]:
    """One step as torch.amp takes it: the forward under `torch.autocast("cpu", dtype)`, backward, an
    AdamW step; the weights, gradients and moments counted after it, and the 16-bit weight copies that
    autocast saved for backward (counted by their storages while the step holds them)."""
    weights = list(model.parameters())
    optimizer = torch.optim.AdamW(weights, lr=1e-3)
    copies = {}

    def pack(tensor):
        # a 16-bit copy of a weight: equal to one of the weights cast, in a storage of its own
        if tensor.dtype == dtype and tensor.dim() == 2:
            for weight in (w for w in weights if w.dim() == 2):
                cast = weight.detach().to(dtype)
                if any(c.shape == tensor.shape and torch.equal(c, tensor) for c in (cast, cast.t())):
                    copies[storage_key(tensor)] = tensor.untyped_storage().nbytes()
                    break
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    assert {w.dtype for w in weights} == {w.grad.dtype for w in weights} == {torch.float32}
    assert not {storage_key(w) for w in weights} & set(copies)
    state = [v for values in optimizer.state.values() for v in values.values() if torch.is_tensor(v)]
    return {
        "parameters": stored_bytes(weights),
        "fp32 master weights": 0,
        "gradients": stored_bytes(w.grad for w in weights),
        "optimizer state": stored_bytes(state),
        "16-bit weight copies": sum(copies.values()),
    }


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("family", FAMILIES)
def test_autocast_state_is_what_one_real_torch_amp_step_leaves(family, dtype):
    """torch.amp keeps fp32 weights, fp32 gradients and fp32 moments (4 + 4 + 8 bytes a parameter), and
    during the step a 16-bit copy of every Linear weight, which autocast saves for backward."""
    config = small_config(family)
    precision = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    measured = autocast_step(plan.build(config), batch_for(family, 2, 16), dtype)
    estimate = plan.estimate(config, batch=2, seq=16, precision=precision, device="cpu")
    assert {
        **state_lines(estimate),
        "16-bit weight copies": estimate.bytes_of("16-bit weight copies"),
    } == measured
    p, t = estimate.model.parameters, estimate.model.tensors
    assert sum(state_lines(estimate).values()) == 16 * p + 4 * t


def mixed_precision_step(model: torch.nn.Module, batch: dict) -> dict[str, int]:
    """One step of mixed precision as ZeRO (Rajbhandari et al. 2020) counts it, 16 bytes a parameter
    with AdamW: bf16 weights and gradients, an fp32 master copy of the weights that AdamW updates
    (its moments in fp32), the result copied back into the bf16 weights."""
    weights = list(model.parameters())
    master = [w.detach().float().requires_grad_() for w in weights]
    optimizer = torch.optim.AdamW(master, lr=1e-3)
    model(**batch).loss.backward()
    for copy, weight in zip(master, weights):
        copy.grad = weight.grad.float()
    optimizer.step()
    with torch.no_grad():
        for copy, weight in zip(master, weights):
            weight.copy_(copy)
            copy.grad = None  # a passing fp32 copy of the bf16 gradient, not kept between steps
    assert {w.dtype for w in weights} == {w.grad.dtype for w in weights} == {torch.bfloat16}
    assert {w.dtype for w in master} == {torch.float32}
    state = [
        value for values in optimizer.state.values() for value in values.values() if torch.is_tensor(value)
    ]
    return {
        "parameters": stored_bytes(weights),
        "fp32 master weights": stored_bytes(master),
        "gradients": stored_bytes(w.grad for w in weights),
        "optimizer state": stored_bytes(state),
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_precision_state_is_what_one_real_step_leaves(family):
    config = small_config(family)
    measured = mixed_precision_step(plan.build(config).to(torch.bfloat16), batch_for(family, 2, 16))
    estimate = plan.estimate(config, batch=2, seq=16, precision="bf16", master_weights=True, device="cpu")
    assert state_lines(estimate) == measured
    p, t = estimate.model.parameters, estimate.model.tensors
    assert sum(measured.values()) == 16 * p + 4 * t


# ---------------------------------------------------------------------------------------------
# Activations: within 10 % of what autograd saves


GRID_LAYERS, GRID_BATCHES, GRID_SEQS = (1, 3), (1, 4), (16, 96)
POINTS = list(
    itertools.product(GRID_LAYERS, GRID_BATCHES, GRID_SEQS, (False, True), ("eager", "sdpa"), (False, True))
)
TOLERANCE = 0.10


def point_id(layers, batch, seq, checkpointing, attention, dropout) -> str:
    return (
        f"L{layers}-b{batch}-s{seq}-{'checkpointed' if checkpointing else 'plain'}-{attention}-"
        f"{'dropout' if dropout else 'no-dropout'}"
    )


@functools.cache
def small_model(family, layers, attention, dropout) -> torch.nn.Module:
    return plan.build(small_config(family, layers, dropout), attention=attention)


@functools.cache
def saved_bytes(family, layers, batch, seq, checkpointing, attention, dropout) -> int:
    """What the forward pass (with its loss) leaves for backward, measured as lesson 1 measures it."""
    model = small_model(family, layers, attention, dropout)
    if checkpointing:
        model.activation_checkpointing_enable()
    else:
        model.activation_checkpointing_disable()
    with record_saved_tensors(model) as log:
        model(**batch_for(family, batch, seq))
    return log.total_bytes


def estimated_bytes(family, layers, batch, seq, checkpointing, attention, dropout) -> int:
    settings = plan.Settings(
        batch=batch, seq=seq, attention=attention, checkpointing=checkpointing, device="cpu"
    )
    return plan.activation_bytes(plan.model_shape(small_config(family, layers, dropout)), settings)["kept"]


@functools.cache
def ratios(family) -> dict[tuple, tuple[int, int]]:
    """(measured, estimated) for every point of the grid."""
    return {point: (saved_bytes(family, *point), estimated_bytes(family, *point)) for point in POINTS}


def ratio_table(family, marked) -> str:
    rows = [f"{'point':42} {'measured':>10} {'estimated':>10}  ratio"]
    for point, (measured, estimated) in ratios(family).items():
        flag = "  <-- beyond 10 %" if point in marked else ""
        rows.append(
            f"{point_id(*point):42} {measured:>10,} {estimated:>10,}  {estimated / measured:.3f}{flag}"
        )
    return "\n".join(rows)


@pytest.mark.parametrize("point", POINTS, ids=[point_id(*point) for point in POINTS])
@pytest.mark.parametrize("family", FAMILIES)
def test_saved_activations_are_estimated_within_10_percent(family, point):
    measured, estimated = ratios(family)[point]
    beyond = [p for p, (m, e) in ratios(family).items() if abs(e / m - 1) > TOLERANCE]
    assert abs(estimated / measured - 1) <= TOLERANCE, (
        f"{family} {point_id(*point)}: estimated {estimated:,} B, measured {measured:,} B "
        f"(ratio {estimated / measured:.3f})\n{ratio_table(family, beyond)}"
    )


RECOMPUTED = list(itertools.product(GRID_BATCHES, GRID_SEQS, ("eager", "sdpa"), (False, True)))


@pytest.mark.parametrize(
    "batch,seq,attention,dropout", RECOMPUTED, ids=[point_id(3, *p[:2], True, *p[2:]) for p in RECOMPUTED]
)
@pytest.mark.parametrize("family", FAMILIES)
def test_one_layer_recomputed_is_one_layer_of_the_plain_run(family, batch, seq, attention, dropout):
    # What one layer saves without checkpointing: the difference between 3 layers and 1, halved.
    per_layer = (
        saved_bytes(family, 3, batch, seq, False, attention, dropout)
        - saved_bytes(family, 1, batch, seq, False, attention, dropout)
    ) / 2
    estimate = plan.estimate(
        small_config(family, 3, dropout),
        batch=batch,
        seq=seq,
        attention=attention,
        checkpointing=True,
        device="cpu",
    )
    recomputed = estimate.bytes_of("one layer recomputed")
    assert abs(recomputed / per_layer - 1) <= TOLERANCE, (
        f"one layer recomputed: estimated {recomputed:,} B, one plain layer measured {per_layer:,.0f} B "
        f"(ratio {recomputed / per_layer:.3f})"
    )


# ---------------------------------------------------------------------------------------------
# The bundled models: parameter counts, offline


PUBLISHED = {  # the models' published parameter counts; BERT's with the 2-label classifier it gets here
    "bert-base-uncased": 109_482_240 + 768 * 2 + 2,
    "bert-large-uncased": 335_141_888 + 1024 * 2 + 2,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "llama-3.2-1b-shaped": 1_235_814_400,  # embeddings tied with the head, as in Llama 3.2 1B
}
MODEL_CLASSES = {
    "bert": (transformers.BertConfig, transformers.BertForSequenceClassification),
    "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel),
    "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
}


def test_every_bundled_model_has_a_published_count():
    assert set(plan.bundled_models()) == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_bundled_parameter_counts_are_exact_and_offline(name, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the planner tried to reach the network for {name}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    plan._shape_of.cache_clear()  # build it here, under the guard
    _, config = plan._read_config(name)
    config_class, model_class = MODEL_CLASSES[config["model_type"]]
    with torch.device("meta"):
        model = model_class(config_class(**{k: v for k, v in config.items() if k != "model_type"}))
    parameters = list(model.parameters())
    shape = plan.model_shape(name)
    assert (shape.parameters, shape.tensors) == (sum(w.numel() for w in parameters), len(parameters))
    assert shape.parameters == PUBLISHED[name]


# ---------------------------------------------------------------------------------------------
# What fits: the solvers and the verdict


def test_largest_micro_batch_fits_and_one_more_does_not():
    for model, gpu, options in (
        ("gpt2", "T4", {"seq": 1024}),
        ("bert-base-uncased", "L4", {"seq": 512}),
        ("gpt2", "A100-80GB", {"seq": 1024, "attention": "eager", "precision": "bf16"}),
    ):
        b = plan.largest_micro_batch(model, gpu, **options)
        assert b >= 1
        assert plan.estimate(model, batch=b, **options).fits(gpu)
        assert not plan.estimate(model, batch=b + 1, **options).fits(gpu)


def test_largest_micro_batch_is_0_when_not_even_one_fits():
    assert not plan.estimate("llama-3.2-1b-shaped", batch=1).fits("T4")
    assert plan.largest_micro_batch("llama-3.2-1b-shaped", "T4") == 0


def test_smallest_accumulation_is_the_least_divisor_that_fits():
    options = {"batch": 48, "seq": 1024}
    k = plan.smallest_accumulation("gpt2", "T4", **options)
    fitting = [
        d for d in range(1, 49) if 48 % d == 0 and plan.estimate("gpt2", accumulation=d, **options).fits("T4")
    ]
    assert k == fitting[0] > 1
    assert plan.smallest_accumulation("gpt2", "T4", batch=1, seq=128) == 1
    assert plan.smallest_accumulation("llama-3.2-1b-shaped", "T4", batch=8) is None


def test_verdict_lists_remedies_that_fit():
    settings = plan.Settings(batch=64, seq=1024, attention="eager")
    verdict = plan.verdict("gpt2", "T4", settings)
    assert not verdict.fits and verdict.remedies
    for text, remedy in verdict.remedies:
        assert remedy.total <= plan.GPUS["T4"], text
        changed = {
            f
            for f in plan.Settings.__dataclass_fields__
            if getattr(remedy.settings, f) != getattr(settings, f)
        }
        assert len(changed) == 1, (text, changed)  # one change at a time
        assert remedy == plan.estimate("gpt2", remedy.settings)
    assert "does not fit" in verdict.sentence() and "accumulation" in verdict.sentence()
    fits = plan.verdict("gpt2", "H100-80GB", batch=8, seq=512)
    assert fits.fits and not fits.remedies
    assert fits.sentence().startswith("H100-80GB: fits")


def test_a_verdict_without_remedies_claims_only_what_it_tried():
    # GPT-2 at batch 64 on 5 GiB: no single change fits, though all of them together would.
    settings = plan.Settings(batch=64, seq=1024, attention="eager")
    verdict = plan.verdict("gpt2", "5GiB", settings)
    assert not verdict.fits and not verdict.remedies
    singles = [plan.estimate("gpt2", settings, **change) for _, change in plan.REMEDIES]
    singles += [plan.estimate("gpt2", settings, accumulation=k) for k in range(2, 65) if 64 % k == 0]
    assert not any(single.fits("5GiB") for single in singles)
    together = plan.Settings(batch=64, seq=1024, precision="bf16", optimizer="adamw-8bit", checkpointing=True)
    assert plan.smallest_accumulation("gpt2", "5GiB", together) is not None
    assert verdict.sentence() == (
        "5GiB: does not fit (176.15 GiB of 5.00 GiB), and no single change the planner knows makes it fit."
    )


@pytest.mark.parametrize(
    "options,says",
    [
        ({"batch": 8, "accumulation": 3}, "choose an accumulation that divides the batch"),
        ({"batch": 0}, "batch must be a whole number of at least 1, got 0"),
        ({"batch": -4}, "batch must be a whole number of at least 1, got -4"),
        ({"seq": 0}, "seq must be a whole number of at least 1"),
        ({"precision": "fp8"}, "precision must be one of fp32, bf16, fp16, got 'fp8'"),
        ({"attention": "flash"}, "attention must be one of eager, sdpa"),
    ],
)
def test_a_wrong_setting_is_one_sentence_that_says_what_to_do(options, says):
    with pytest.raises(ValueError) as refused:
        plan.estimate("gpt2", **options)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value) and str(refused.value).endswith(".")


def test_an_unknown_model_or_gpu_is_named_with_the_known_ones():
    with pytest.raises(
        ValueError, match=r"no model 'gpt-17' here: use one of bert-base-uncased, .*gpt2.*config\.json"
    ):
        plan.estimate("gpt-17")
    with pytest.raises(
        ValueError, match=r"'Z100' is neither a GPU \(T4, .*H100-80GB\) nor a size such as 16GiB"
    ):
        plan.verdict("gpt2", "Z100")


# ---------------------------------------------------------------------------------------------
# Memory sizes


@pytest.mark.parametrize(
    "memory,expected",
    [
        ("T4", 15360 * 2**20),
        ("t4", 15360 * 2**20),
        ("colab-T4", 15360 * 2**20),
        ("A100-80GB", 81920 * 2**20),
        ("16GiB", 16 * 2**30),
        ("16GB", 16 * 10**9),
        ("15360MiB", 15360 * 2**20),
        ("1.5 GiB", 3 * 2**29),
        ("2048", 2048),
        (2048, 2048),
        (1.5e9, 1_500_000_000),
    ],
)
def test_memory_of_reads_presets_sizes_and_numbers(memory, expected):
    assert plan.memory_of(memory) == expected


@pytest.mark.parametrize("memory", ["", "lots", "16 XB", "0GiB", "-3GiB", "GiB", 0, -1, True])
def test_memory_of_refuses_what_is_not_a_size(memory):
    with pytest.raises(ValueError, match=r"GPU|more than 0 bytes"):
        plan.memory_of(memory)


# ---------------------------------------------------------------------------------------------
# The formulas: each line's formula gives the line's bytes

TERM = re.compile(r"(\d+)·([a-zA-Z²]+)·(\d+) B")


def evaluate(formula: str, dims: dict[str, int]) -> int:
    """A line's formula worked out: `8·sbh·4 B` is 8*s*b*h*4, `as²b` is a*s*s*b, `×` a product."""

    def product(match):
        count, letters, nbytes = match.groups()
        letters = re.sub(r"(\w)²", r"\1\1", letters)
        return "*".join([count, nbytes] + [str(dims[letter]) for letter in letters])

    expression = TERM.sub(product, formula).replace("×", "*").replace(" B", "").replace(",", "")
    expression = re.sub(r"\+ 4 \* (\d+) tensors", r"+ 4 * \1", expression)
    expression = re.sub(r"\(SGD\)|\(8-bit moments\)", "", expression)
    assert re.fullmatch(r"[\d\s+*()]+", expression), expression
    return eval(expression, {"__builtins__": {}})


def test_the_activations_formula_worked_by_hand():
    config = small_config("bert", layers=2, dropout=False)
    estimate = plan.estimate(config, batch=2, seq=16, attention="sdpa", device="cpu")
    line = estimate.line("activations")
    assert line.formula == "2 × (8·sbh·4 B + 2·sbf·4 B + 4·sb·4 B + 1·asb·4 B) + 2·sbh·4 B + 1·bh·4 B"
    s, b, h, f, a = 16, 2, 64, 256, 4
    layer = 8 * s * b * h * 4 + 2 * s * b * f * 4 + 4 * s * b * 4 + a * s * b * 4
    assert line.nbytes == 2 * layer + 2 * s * b * h * 4 + b * h * 4 == 281_088


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "options",
    [
        {"device": "cpu"},
        {"attention": "eager"},
        {"checkpointing": True, "attention": "eager"},
        {"precision": "bf16", "optimizer": "sgd-momentum", "checkpointing": True},
        {"precision": "fp16", "master_weights": False, "optimizer": "adamw-8bit"},
        {"optimizer": "sgd"},
    ],
    ids=["cpu", "eager", "checkpointed-eager", "bf16-momentum-checkpointed", "pure-fp16-8bit", "sgd"],
)
def test_every_modelled_line_is_its_formula(family, options):
    estimate = plan.estimate(small_config(family, layers=3), batch=4, seq=32, **options)
    shape = estimate.model
    dims = {
        "s": 32,
        "b": 4,
        "h": shape.hidden,
        "f": shape.intermediate,
        "a": shape.heads,
        "V": shape.vocab,
        "k": shape.kv_hidden,
    }
    for line in estimate.lines:
        if line.modelled:
            assert evaluate(line.formula, dims) == line.nbytes, line
    allowance = estimate.line("not modelled (allowance)").nbytes
    cuda = plan.CUDA_CONTEXT if estimate.settings.device == "cuda" else 0
    assert allowance == math.ceil(plan.UNMODELLED_SHARE * estimate.modelled) + cuda
    assert estimate.total == estimate.modelled + allowance


def test_evaluate_can_fail():
    s, b, h, a = 3, 2, 5, 7
    dims = {"s": s, "b": b, "h": h, "a": a}
    assert evaluate("2 × (1·sbh·4 B) + 1·as²b·2 B", dims) == 2 * s * b * h * 4 + a * s * s * b * 2
    with pytest.raises(AssertionError):
        evaluate("2 × (1·sbh·4 B) + __import__('os')", dims)


def test_an_unknown_setting_and_a_memory_that_is_not_a_number_get_one_sentence():
    with pytest.raises(ValueError, match=r"'batchsize' is not a setting of the estimate: use batch, seq"):
        plan.estimate("gpt2", batchsize=8)
    for memory in (float("nan"), float("inf"), -1, 0):
        with pytest.raises(ValueError, match="The memory must be more than 0 bytes"):
            plan.memory_of(memory)


@pytest.mark.parametrize(
    "gpu,precision",
    [
        ("T4", "fp16"),
        ("colab-T4", "fp16"),
        ("Tesla T4", "fp16"),
        ((7, 5), "fp16"),
        ("Tesla V100-SXM2-16GB", "fp16"),
        ("16GiB", "fp16"),  # a size names no GPU: fp16 with a loss scaler runs on every one
        ("L4", "bf16"),
        ("A100-40GB", "bf16"),
        ("A100-80GB", "bf16"),
        ("NVIDIA A100-SXM4-80GB", "bf16"),
        ("H100-80GB", "bf16"),
        ("NVIDIA H100 80GB HBM3", "bf16"),
        ((9, 0), "bf16"),
    ],
)
def test_the_16_bit_type_follows_the_gpus_capability(gpu, precision):
    assert plan.mixed_precision(gpu) == precision
    assert plan.supports_bf16(gpu) == (precision == "bf16")


def test_a_t4_is_told_fp16_with_a_loss_scaler_never_bf16():
    # 24 x 512, eager: 32 x 512 no longer fits a T4 in fp16 once autocast's rules are counted (issue 47)
    setup = {"batch": 24, "seq": 512, "attention": "eager"}
    t4 = plan.verdict("bert-base-uncased", "T4", **setup)
    texts = [text for text, _ in t4.remedies]
    assert "fp16 mixed precision with a loss scaler (GradScaler)" in texts
    assert not any("bf16" in text for text in texts) and "bf16" not in t4.sentence()
    [(_, fp16)] = [(text, e) for text, e in t4.remedies if "fp16" in text]
    assert fp16.settings.precision == "fp16" and not fp16.settings.master_weights  # torch.amp's scheme
    assert t4.to_dict()["mixed_precision"] == "fp16"
    # asked for bf16 on a T4: the verdict says so, and what to use instead
    asked = plan.verdict("bert-base-uncased", "T4", precision="bf16", **setup)
    assert asked.sentence().endswith(
        "T4 has no bf16: train in fp16 with a loss scaler (GradScaler), the same bytes."
    )
    for gpu, batch in (("A100-40GB", 64), ("H100-80GB", 128)):
        big = plan.verdict("bert-base-uncased", gpu, batch=batch, seq=512, attention="eager")
        assert "bf16 mixed precision" in [text for text, _ in big.remedies], gpu
        assert big.to_dict()["mixed_precision"] == "bf16" and not big.precision_note


def test_effitrain_plans_16_bit_advice_follows_each_gpu(capsys):
    from effitrain_lessons import cli

    arguments = ["plan", "bert-base-uncased", "--batch", "24", "--seq", "512", "--attention", "eager"]
    assert cli.main([*arguments, "--gpu", "T4", "--gpu", "A100-40GB"]) == 0
    out = capsys.readouterr().out
    t4 = next(line for line in out.splitlines() if line.startswith("T4: "))
    assert "fp16 mixed precision with a loss scaler (GradScaler)" in t4 and "bf16" not in t4
    assert cli.main([*arguments, "--gpu", "T4", "--precision", "bf16"]) == 0
    assert "T4 has no bf16: train in fp16 with a loss scaler (GradScaler)" in capsys.readouterr().out


# --- lesson 6's tables: its measurements beside the count (will_it_fit/compare.py) ---------------


def test_the_parts_table_sets_each_measured_part_beside_the_estimate(monkeypatch):
    from effitrain_lessons.shared.i18n import ENVIRONMENT
    from effitrain_lessons.shared.memory import TrainingMemory
    from effitrain_lessons.will_it_fit import compare

    predicted = plan.estimate("gpt2", batch=2, seq=64, device="cpu")
    state = {part: predicted.bytes_of(part) for part in ("parameters", "gradients", "optimizer state")}
    measured = TrainingMemory(
        state["parameters"],
        state["gradients"],
        state["optimizer state"],
        predicted.bytes_of("activations") + 1234,
    )
    table = compare.parts_against_estimate({12: measured}, {12: predicted})
    rows = {row[1]: row for row in table.rows}
    assert list(rows) == ["parameters", "gradients", "optimizer state", "activations"]
    assert rows["parameters"][4] == "+0" and rows["activations"][4] == "+1,234"
    assert rows["gradients"][2] == f"{state['gradients']:,}" == rows["gradients"][3]
    monkeypatch.setenv(ENVIRONMENT, "tr")
    turkish = compare.parts_against_estimate({12: measured}, {12: predicted})
    assert turkish.rows[3][4] == "+1.234"


def test_one_layer_three_ways_against_the_measurement():
    from effitrain_lessons.will_it_fit import compare

    table = compare.layer_against_paper(measured=2000, counted=2000, paper=1800)
    assert [row[1:] for row in table.rows] == [["2,000", "1"], ["2,000", "1.0000"], ["1,800", "0.9000"]]


def test_the_tensors_one_layer_saved_are_grouped_by_shape_the_largest_first():
    from effitrain_lessons.will_it_fit import compare

    layer = torch.nn.Linear(8, 16)
    x = torch.randn(3, 8, requires_grad=True)
    with record_saved_tensors(layer) as log:
        y = torch.tanh(layer(x))  # saves x (for the weight's gradient) and tanh's output
        z = torch.tanh(y + 1)  # and another output of the same shape
    table = compare.layer_tensors(log)
    assert [row[:3] for row in table.rows] == [[(3, 16), "float32", 2], [(3, 8), "float32", 1]]
    assert table.rows[0][3] == f"{2 * 3 * 16 * 4:,}"
    assert table.notes == [f"3 tensors, {(2 * 3 * 16 + 3 * 8) * 4:,} bytes: one layer"]
    del z


def test_the_layer_table_is_the_estimates_terms_and_their_total():
    from effitrain_lessons.shared.tables import format_bytes
    from effitrain_lessons.will_it_fit import compare

    shape = plan.model_shape("bert-base-uncased")
    settings = plan.Settings(batch=32, seq=512, attention="eager")
    table = compare.layer_table(shape, settings)
    terms = plan.layer_terms(shape, settings)
    assert [row[0] for row in table.rows] == [term.what for term in terms]
    layer = plan.activation_bytes(shape, settings)["layer"]
    assert table.notes == [f"one layer: {layer:,} bytes ({format_bytes(layer)})"]


def test_the_mask_gap_counts_the_masks_bytes_beyond_the_papers():
    from effitrain_lessons.will_it_fit import compare

    gap = compare.MaskGap(torch.float32, torch.bool, gap=1000, mask_elements=300, norm_statistics=400)
    assert gap.extra_mask_bytes == 300 * (4 - 2)
    lines = str(gap).splitlines()
    assert lines[0] == "dropout on this CPU saves a torch.float32 mask: 4 bytes an element"
    assert lines[1] == "the fused kernel's mask is torch.bool: 1 byte an element"
    assert lines[3].endswith(": 600 bytes") and lines[4].endswith(": 400 bytes")
    # masks in 16 bits take what the paper counts, twice 1 byte in fp32 terms: no extra bytes
    assert compare.MaskGap(torch.float16, torch.bool, 0, 300, 0).extra_mask_bytes == 0


def test_one_bert_base_layer_at_the_t4s_shape_against_the_paper():
    from effitrain_lessons.will_it_fit import compare

    shape = plan.model_shape("bert-base-uncased")
    settings = plan.Settings(batch=32, seq=512, attention="eager")
    dims = plan.dimensions(shape, settings)
    terms = plan.layer_terms(shape, settings)
    per_layer = sum(term.size(dims) for term in terms)
    assert per_layer == plan.activation_bytes(shape, settings)["layer"]
    scores = sum(term.size(dims) for term in terms if "²" in term.elements)
    paper = 2 * plan.korthikanti_layer_bytes(512, 32, 768, 12)
    scaled = compare.layer_at_scale(shape, settings, per_layer, paper, scores)
    assert str(scaled).splitlines() == [
        "one layer at s = 512, b = 32: 1.62 GiB; twice the paper's 16-bit formula gives 1.73 GiB",
        "the attention scores' share of it: 52% (5 a s / h = 40 against 34)",
        "12 layers: 19.41 GiB",
    ]


def test_the_prediction_is_judged_against_the_estimate():
    from effitrain_lessons.will_it_fit import compare

    answer = plan.estimate("bert-base-uncased", batch=32, seq=512, attention="eager")  # 23.76 GiB

    def judged(prediction, gib, gpu="T4"):
        return str(compare.prediction_feedback(prediction, gib, answer, gpu))

    assert judged(..., ...).startswith("You made no prediction")
    assert "not 'maybe'" in judged("maybe", ...)
    assert judged("does not fit", ...).endswith(": right.")
    wrong = judged("fits", 12).splitlines()
    assert wrong[0].endswith("that it does not fit: not this time.")
    assert wrong[1] == "You guessed 12 GiB; the estimate is 23.8 GiB, 2.0 times your guess."
    assert judged("fits", 0, "A100-80GB").endswith(": right.")  # no guess: no second line


def test_the_lever_table_asks_the_planners_solvers_for_each_lever():
    from effitrain_lessons.will_it_fit import compare

    baseline = {"batch": 32, "seq": 512, "attention": "eager"}
    levers = {"baseline": {}, "checkpointing every layer": {"checkpointing": True}}
    table = compare.lever_table("bert-base-uncased", "colab-T4", baseline, levers)
    assert list(table.columns)[1:3] == ["one step at batch 32", "fits colab-T4"]
    base, checkpointed = table.rows
    assert base[2] == "no" and checkpointed[2] == "yes"
    assert base[3] == plan.largest_micro_batch("bert-base-uncased", "colab-T4", **baseline) == 18
    assert base[4] == plan.smallest_accumulation("bert-base-uncased", "colab-T4", **baseline) == 2
    hopeless = compare.lever_table("bert-large-uncased", "1GiB", baseline, {"baseline": {}})
    assert hopeless.rows[0][3:] == [0, "-", "-"]  # nothing fits 1 GiB, not even one sequence
    # what each lever saves against the first row, the baseline
    saved = (
        plan.estimate("bert-base-uncased", **baseline).total
        - plan.estimate("bert-base-uncased", **baseline, checkpointing=True).total
    )
    assert base[5] == "-" and checkpointed[5] == format_bytes(saved)


def test_bytes_per_parameter_in_each_precision():
    from effitrain_lessons.will_it_fit import compare

    estimates = [
        plan.estimate("bert-base-uncased", batch=32, seq=512, precision=p, attention="eager")
        for p in ("fp32", "bf16")
    ]
    fp32, bf16 = str(compare.bytes_per_parameter(estimates)).splitlines()
    assert fp32.startswith("fp32: 16.00 bytes per parameter") and fp32.endswith("activations 19.51 GiB")
    # torch.amp: 4 + 4 + 8 (the 16-bit weight copies are a line of their own); autocast's activations
    assert bf16.startswith("bf16: 16.00 bytes per parameter") and bf16.endswith("activations 13.84 GiB")
    zero = plan.estimate("gpt2", batch=2, seq=64, precision="bf16", master_weights=True)
    assert str(compare.bytes_per_parameter([zero])).startswith("bf16: 16.0")  # 2 + 4 + 2 + 8, and step counts


def test_every_label_lesson_6_gives_its_settings_and_steps_is_in_the_catalog():
    """The cells name their levers and steps in English; the package shows them translated, so each
    must be a message of the package (else the Turkish edition would show it in English)."""
    import ast
    import json

    from effitrain_lessons.will_it_fit import compare, recompute

    cells = {
        cell["id"]: "".join(cell["source"])
        for cell in json.loads((ROOT / "lessons" / "06_will_it_fit.ipynb").read_text())["cells"]
    }
    labelled = []  # the dict of the levers, and the dict of steps measure_steps measures
    for node in ast.walk(ast.parse(cells["levers"])):
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["levers"]:
            labelled.append(node.value)
    for node in ast.walk(ast.parse(cells["policy-measure"])):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "measure_steps":
            labelled.append(node.args[0])
    assert len(labelled) == 2
    labels = {key.value for found in labelled for key in found.keys if isinstance(key, ast.Constant)}
    assert labels and labels - {"checkpoint(layer, x)"} <= {*compare.LEVER_LABELS, *recompute.STEP_LABELS}
    for precision in ("fp16", "bf16"):  # the levers' f"{sixteen} mixed precision"
        assert f"{precision} mixed precision" in compare.LEVER_LABELS


def test_lesson_6s_tables_speak_turkish_with_turkish_numbers(monkeypatch):
    from effitrain_lessons.shared.i18n import ENVIRONMENT
    from effitrain_lessons.will_it_fit import compare

    monkeypatch.setenv(ENVIRONMENT, "tr")
    baseline = {"batch": 32, "seq": 512, "attention": "eager"}
    levers = {"fp16 mixed precision": {"precision": "fp16"}}
    table = compare.lever_table("bert-base-uncased", "colab-T4", baseline, levers)
    assert table.columns[1:3] == ["grup boyutu 32 ile bir adım", "colab-T4 belleğine sığar mı"]
    assert table.rows[0][:3] == ["fp16 karma hassasiyet", "17,70 GiB", "hayır"]
    gap = compare.MaskGap(torch.float32, torch.bool, gap=1576960, mask_elements=786432, norm_statistics=4096)
    assert str(gap).splitlines()[2] == "ölçülen eksi makalenin iki katı: 1.576.960 bayt"
