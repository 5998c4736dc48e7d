"""Each technique measured against its published anchor (the numbers in the course notes).

- Saved activations per transformer layer, without and with full checkpointing, against
  Korthikanti et al. 2022 (arXiv:2205.05198). Their formula counts 16-bit tensors and 1-byte
  dropout masks; these models run in fp32, so the fp32 reference is twice the formula (the notes
  hold the measurements to within 15 % of it). The per-layer figure is measured, not divided out:
  the model is measured at depth L and at depth L/2, and the difference is divided by L/2, which
  removes what lies outside the layers (embeddings, pooler, classifier, loss).
- FLOPs with checkpointing over FLOPs without, against (1 + 2 + 1) / (1 + 2) = 4/3.
- Lesson 1's deep stack: the segment count that keeps the least memory, against sqrt(n).
- Local SGD: synchronizations and bytes all-reduced per process for K in {1, 2, 4, 8, 16},
  against data parallel and against the rules floor(steps / K) + 1 and steps.
- DiLoCo (lesson 5): data parallel, Local SGD and DiLoCo (the paper's outer optimizer) at two H, the
  rule floor(steps / H), and one all-reduce per tensor against one flat buffer at H = 1, against the
  paper's claim of H times less communication than data parallel.
"""

from __future__ import annotations

import torch

from effitrain_lessons.shared.memory import measure_step
from effitrain_lessons.shared.models import tiny_bert
from effitrain_lessons.shared.timing import Ratio, time_alternating
from effitrain_lessons.will_it_fit.plan import korthikanti_checkpointed_layer_bytes, korthikanti_layer_bytes

# (name, config overrides, micro-batch, sequence length); fp32 on the CPU, dropout on (its masks
# are part of Korthikanti's count).
SHAPES = [
    (
        "tiny BERT (4 layers, h=64, a=4)",
        dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=256),
        8,
        32,
    ),
    (
        "BERT-base shape (12 layers, h=768, a=12)",
        dict(
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            vocab_size=30522,
        ),
        8,
        128,
    ),
]


def _measure(overrides: dict, layers: int, batch: int, seq: int, checkpointing: bool):
    model, inputs = _build(overrides, layers, batch, seq, checkpointing)  # non-reentrant, as in the lessons
    report = measure_step(
        model, inputs, warmup=0, repeats=1
    )  # bytes and FLOPs; the time: _time_checkpointing
    del model
    return report


def _build(overrides: dict, layers: int, batch: int, seq: int, checkpointing: bool):
    torch.manual_seed(0)
    model = tiny_bert(**{**overrides, "num_hidden_layers": layers, "max_position_embeddings": max(seq, 128)})
    if checkpointing:
        model.activation_checkpointing_enable()
    model.config.use_cache = False
    model.train()
    generator = torch.Generator().manual_seed(0)
    inputs = {
        "input_ids": torch.randint(5, model.config.vocab_size, (batch, seq), generator=generator),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
        "labels": torch.randint(0, 2, (batch,), generator=generator),
    }
    return model, inputs


def _time_checkpointing(overrides: dict, layers: int, batch: int, seq: int) -> Ratio:
    """A training step's time with full checkpointing over without, as lesson 02 times it: one
    thread, the process's CPU time, the two in turn after a warm-up, median and the range the middle
    halves allow."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        steps = {}
        for checkpointing in (False, True):
            model, inputs = _build(overrides, layers, batch, seq, checkpointing)

            def step(model=model, inputs=inputs):
                model(**inputs).loss.backward()
                model.zero_grad(set_to_none=True)

            steps[checkpointing] = step
        times = time_alternating(steps, warmup=1, repeats=5)
        return times[True] / times[False]
    finally:
        torch.set_num_threads(threads)


def activation_anchors() -> list[dict]:
    rows = []
    for name, overrides, batch, seq in SHAPES:
        layers, h, a = (
            overrides["num_hidden_layers"],
            overrides["hidden_size"],
            overrides["num_attention_heads"],
        )
        half = layers // 2
        full, full_half = (_measure(overrides, n, batch, seq, False) for n in (layers, half))
        ckpt, ckpt_half = (_measure(overrides, n, batch, seq, True) for n in (layers, half))
        time_ratio = _time_checkpointing(overrides, layers, batch, seq)
        per_layer = (full.saved_bytes - full_half.saved_bytes) / (layers - half)
        per_layer_ckpt = (ckpt.saved_bytes - ckpt_half.saved_bytes) / (layers - half)
        formula = 2 * korthikanti_layer_bytes(seq, batch, h, a)  # fp32: twice the 16-bit formula
        formula_ckpt = 2 * korthikanti_checkpointed_layer_bytes(seq, batch, h)
        rows.append(
            {
                "model": name,
                "s": seq,
                "b": batch,
                "h": h,
                "a": a,
                "layers": layers,
                "saved_bytes": full.saved_bytes,
                "saved_bytes_checkpointed": ckpt.saved_bytes,
                "reduction": 1 - ckpt.saved_bytes / full.saved_bytes,
                "layer_bytes": per_layer,
                "layer_bytes_formula": formula,
                "layer_ratio": per_layer / formula,
                "layer_bytes_checkpointed": per_layer_ckpt,
                "layer_bytes_checkpointed_formula": formula_ckpt,
                "layer_ratio_checkpointed": per_layer_ckpt / formula_ckpt,
                "flops": full.flops,
                "flops_checkpointed": ckpt.flops,
                "flops_ratio": ckpt.flops / full.flops,
                "time_ratio": time_ratio.median,
                "time_ratio_low": time_ratio.low,
                "time_ratio_high": time_ratio.high,
            }
        )
    return rows


def segment_anchor() -> dict:
    """Lesson 1's deep stack (36 blocks of Linear + Tanh, width 256, batch 64), every divisor k."""
    from effitrain_lessons.first_principles.checkpointing import deep_stack, stack_input, sweep_segments

    stack = deep_stack(n_blocks=36, width=256, seed=0)
    sweep = sweep_segments(stack, stack_input(stack, batch=64, seed=0))
    best = sweep.row(sweep.best_k)
    nearest = min(sweep.ks, key=lambda k: abs(k - sweep.sqrt_n))
    return {
        "n_blocks": sweep.n_blocks,
        "sqrt_n": sweep.sqrt_n,
        "best_k": sweep.best_k,
        "kept_bytes_best": best.kept_bytes,
        "kept_bytes_at_sqrt_n": sweep.row(nearest).kept_bytes,
        "kept_bytes_k1": sweep.row(1).kept_bytes if 1 in sweep.ks else None,
        "flops_ratio_best": sweep.flops_ratio(sweep.best_k),
        "rows": [{"k": row.k, "kept_bytes": row.kept_bytes, "flops": row.flops} for row in sweep.rows],
    }


def local_sgd_anchor(steps: int = 112, layers: int = 1, num_processes: int = 2) -> list[dict]:
    """Lesson 4's setting (1-layer tiny BERT, 112 micro-batches of 16 per process, 2 processes):
    data parallel and Local SGD for K in {1, 2, 4, 8, 16}, all for the same number of steps."""
    from effitrain_lessons.local_sgd.runs import LocalSGDConfig, summary
    from effitrain_lessons.local_sgd.saved import train
    from effitrain_lessons.shared.distributed_runs import launch

    configs = [LocalSGDConfig(mode="ddp", steps=steps, layers=layers)]
    configs += [LocalSGDConfig(mode="local_sgd", k=k, steps=steps, layers=layers) for k in (1, 2, 4, 8, 16)]
    runs = launch(configs, train, num_processes=num_processes, timeout=900)
    rows = []
    for reports in runs:  # one list of reports per configuration
        row = summary(reports)
        rows.append(
            {
                key: row[key]
                for key in (
                    "run",
                    "k",
                    "steps",
                    "synchronizations",
                    "expected",
                    "allreduce_calls",
                    "megabytes",
                    "eval_loss",
                    "seconds",
                )
            }
        )
    base = rows[0]
    for row in rows:
        row["bytes_vs_dp"] = row["megabytes"] / base["megabytes"]
        row["syncs_vs_dp"] = row["synchronizations"] / base["synchronizations"]
    return rows


def diloco_anchor(
    steps: int = 128, hs: tuple[int, ...] = (8, 32), layers: int = 1, num_processes: int = 2
) -> list[dict]:
    """Lesson 5's setting (1-layer tiny BERT, 128 micro-batches of 16 per process, 2 processes): data
    parallel (two seeds), Local SGD (lesson 4's loop) and DiLoCo (lesson 5's, outer SGD lr 0.7 with
    Nesterov momentum 0.9) at each H, and H = 1 (lr 1, no momentum) with one call per tensor and with
    one flat buffer, over 32 steps."""
    from effitrain_lessons.diloco.runs import DiLoCoConfig, row
    from effitrain_lessons.diloco.saved import train
    from effitrain_lessons.local_sgd.runs import LocalSGDConfig
    from effitrain_lessons.local_sgd.saved import train as local_sgd_train
    from effitrain_lessons.shared.distributed_runs import launch

    plan = [
        (DiLoCoConfig(mode="ddp", steps=steps, layers=layers), train),
        (DiLoCoConfig(mode="ddp", steps=steps, layers=layers, seed=1), train),
    ]
    for h in hs:
        plan += [
            (LocalSGDConfig(mode="local_sgd", k=h, steps=steps, layers=layers), local_sgd_train),
            (DiLoCoConfig(h=h, steps=steps, layers=layers), train),
        ]
    plan += [
        (
            DiLoCoConfig(h=1, outer_lr=1.0, outer_momentum=0.0, bucketed=bucketed, steps=32, layers=layers),
            train,
        )
        for bucketed in (False, True)
    ]
    runs = launch(
        [config for config, _ in plan], [loop for _, loop in plan], num_processes=num_processes, timeout=900
    )
    rows = []
    for reports in runs:
        measured = row(reports)
        rows.append(
            {
                key: measured[key]
                for key in (
                    "run",
                    "steps",
                    "synchronizations",
                    "expected",
                    "allreduce_calls",
                    "calls_per_sync",
                    "megabytes",
                    "kilobytes_per_sync",
                    "ms_per_sync",
                    "ms_per_step",
                    "eval_loss",
                    "seconds",
                )
            }
        )
    per_step = rows[0]["megabytes"] / rows[0]["steps"]
    for measured in rows:
        measured["bytes_per_step_vs_dp"] = (measured["megabytes"] / measured["steps"]) / per_step
    return rows


# Lesson 6's planner against measurement: (name, bundled model, config overrides, micro-batch, sequence).
# Real widths at fewer layers (the count is per layer), fp32 on the CPU, dropout as the config has it.
PLAN_SHAPES = [
    ("BERT-base shape, 2 layers", "bert-base-uncased", dict(num_hidden_layers=2), 4, 128),
    ("BERT-base shape, 4 layers", "bert-base-uncased", dict(num_hidden_layers=4), 2, 256),
    ("GPT-2 small shape, 2 layers", "gpt2", dict(n_layer=2), 2, 256),
    ("GPT-2 small shape, 4 layers", "gpt2", dict(n_layer=4), 1, 512),
    (
        "Llama-3.2-1B shape, 1 layer, h=512",
        "llama-3.2-1b-shaped",
        dict(
            num_hidden_layers=1,
            hidden_size=512,
            intermediate_size=2048,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=64,
            vocab_size=32000,
        ),
        2,
        256,
    ),
]


def _plan_inputs(model, batch: int, seq: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=generator)
    if model.config.model_type == "bert":
        return {
            "input_ids": ids,
            "attention_mask": torch.ones(batch, seq, dtype=torch.long),
            "labels": torch.randint(0, 2, (batch,), generator=generator),
        }
    return {"input_ids": ids, "labels": ids}


def plan_anchor() -> list[dict]:
    """`effitrain_lessons.will_it_fit.plan`'s estimate against the bytes saved for backward (measured as
    lesson 1 measures them) and against tensors counted after a real AdamW step."""
    from effitrain_lessons.shared.memory import record_saved_tensors, training_memory
    from effitrain_lessons.will_it_fit import plan

    rows = []
    for name, bundled, overrides, batch, seq in PLAN_SHAPES:
        _, config = plan._read_config(bundled)
        config = {**config, **overrides}
        for attention in ("eager", "sdpa"):
            for checkpointing in (False, True):
                model = plan.build(config, attention=attention)
                if checkpointing:
                    model.gradient_checkpointing_enable()
                inputs = _plan_inputs(model, batch, seq)
                settings = dict(
                    batch=batch, seq=seq, attention=attention, checkpointing=checkpointing, device="cpu"
                )
                predicted = plan.estimate(config, **settings)
                with record_saved_tensors(model) as log:
                    model(**inputs)
                row = {
                    "model": name,
                    "b": batch,
                    "s": seq,
                    "attention": attention,
                    "checkpointing": checkpointing,
                    "activations_measured": log.total_bytes,
                    "activations_estimated": predicted.bytes_of("activations"),
                    "ratio": predicted.bytes_of("activations") / log.total_bytes,
                }
                if attention == "sdpa" and not checkpointing:
                    states = training_memory(model, inputs)
                    row["states_measured"] = states.parameters + states.gradients + states.optimizer_state
                    row["states_estimated"] = sum(
                        predicted.bytes_of(line) for line in ("parameters", "gradients", "optimizer state")
                    )
                rows.append(row)
                del model
    return rows + plan_autocast_rows()


# Autocast rows (issue 47): bf16 on every shape, fp16 on the first (the CPU saves the same bytes).
AUTOCAST_PRECISIONS = {0: ("bf16", "fp16")}


def _saved_under_autocast(model, inputs: dict, dtype) -> dict[str, int]:
    """Bytes saved for backward under `torch.autocast("cpu", dtype)`, as lesson 08 counts them
    (saved-tensor hooks, each storage once, the fp32 parameters left out), split into the 16-bit
    weight copies and the activations."""
    from effitrain_lessons.mixed_precision.measure import saved_in_forward

    log = saved_in_forward(model, inputs, dtype, "cpu")
    return {"copies": log.copy_bytes, "activations": log.activation_bytes}


def _amp_step_states(model, inputs: dict, dtype) -> int:
    """Weights, gradients and AdamW state after one torch.amp step (forward under autocast)."""
    import copy

    from effitrain_lessons.shared.memory import _unique_bytes

    model = copy.deepcopy(model)
    weights = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(weights, lr=1e-3)
    with torch.autocast("cpu", dtype):
        loss = model(**inputs).loss
    loss.backward()
    optimizer.step()
    state = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return _unique_bytes(weights) + _unique_bytes(p.grad for p in weights) + _unique_bytes(state)


def plan_autocast_rows() -> list[dict]:
    """The planner's 16-bit figures (`precision="bf16"|"fp16"`, `device="cpu"`: autocast's CPU rules)
    against what a forward under `torch.autocast("cpu", ...)` saves for backward: activations and the
    16-bit weight copies together (and each apart), goal within 10 %; torch.amp's fp32 weights, gradients
    and AdamW state against one real step (goal: equal)."""
    from effitrain_lessons.will_it_fit import plan

    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    for index, (name, bundled, overrides, batch, seq) in enumerate(PLAN_SHAPES):
        _, config = plan._read_config(bundled)
        config = {**config, **overrides}
        for precision in AUTOCAST_PRECISIONS.get(index, ("bf16",)):
            for attention in ("eager", "sdpa"):
                for checkpointing in (False, True):
                    model = plan.build(config, attention=attention)
                    if checkpointing:
                        model.gradient_checkpointing_enable()
                    inputs = _plan_inputs(model, batch, seq)
                    predicted = plan.estimate(
                        config,
                        batch=batch,
                        seq=seq,
                        attention=attention,
                        checkpointing=checkpointing,
                        device="cpu",
                        precision=precision,
                    )
                    measured = _saved_under_autocast(model, inputs, dtypes[precision])
                    estimated = predicted.bytes_of("activations") + predicted.bytes_of("16-bit weight copies")
                    row = {
                        "model": name,
                        "precision": precision,
                        "b": batch,
                        "s": seq,
                        "attention": attention,
                        "checkpointing": checkpointing,
                        "activations_measured": measured["activations"] + measured["copies"],
                        "activations_estimated": estimated,
                        "ratio": estimated / (measured["activations"] + measured["copies"]),
                        "copies_measured": measured["copies"],
                        "copies_estimated": predicted.bytes_of("16-bit weight copies"),
                    }
                    if attention == "sdpa" and not checkpointing:
                        row["states_measured"] = _amp_step_states(model, inputs, dtypes[precision])
                        row["states_estimated"] = sum(
                            predicted.bytes_of(line)
                            for line in ("parameters", "gradients", "optimizer state")
                        )
                    rows.append(row)
                    del model
    return rows


# The planner per GPU (`gpus`, `sharding`): (name, bundled model, config overrides). Narrow, a few
# layers, the real vocabularies (30522 and 50257 rows do not split evenly in 4: FSDP2's chunks are uneven).
SHARDING_SHAPES = [
    (
        "BERT-base shape, 2 layers, h=256",
        "bert-base-uncased",
        dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    ),
    ("GPT-2 small shape, 2 layers, h=256", "gpt2", dict(n_layer=2, n_embd=256, n_head=4)),
]
SHARDING_LINES = {"parameters": "parameters", "gradients": "gradients", "optimizer_state": "optimizer state"}


def plan_sharding_rows(batch: int = 2, seq: int = 64) -> list[dict]:
    """The planner's per-GPU lines (`estimate(..., gpus=N, sharding=stage)`) against the most any of N
    real processes holds after one AdamW step (`effitrain_lessons.shared.sharding`: data parallel,
    ZeroRedundancyOptimizer, FSDP2 without and with resharding after forward), N = 2 and 4, fp32. Goal:
    within 10 %. ZeRO-2's whole parameters, held from forward to backward, against what FSDP2 still
    holds gathered once forward is done."""
    from effitrain_lessons.shared.sharding import measure_sharding
    from effitrain_lessons.will_it_fit import plan

    rows = []
    for name, bundled, overrides in SHARDING_SHAPES:
        _, config = plan._read_config(bundled)
        config = {**config, **overrides}
        inputs = _plan_inputs(plan.build(config), batch, seq)
        for gpus in (2, 4):
            for stage in plan.SHARDINGS:
                held = measure_sharding(lambda config=config: plan.build(config), inputs, stage, gpus)
                planned = plan.estimate(config, batch=batch, seq=seq, device="cpu", gpus=gpus, sharding=stage)
                row = {"model": name, "gpus": gpus, "sharding": stage}
                for key, line in SHARDING_LINES.items():
                    row[f"{key}_measured"] = held.most(key)
                    row[f"{key}_planned"] = planned.bytes_of(line)
                    row[f"{key}_ratio"] = planned.bytes_of(line) / held.most(key)
                row["gathered_measured"] = held.gathered
                row["gathered_planned"] = planned.bytes_of("whole parameters, forward to backward")
                rows.append(row)
    return rows
