"""Tests for lesson 3: the Accelerator loop (effitrain_lessons.with_accelerator.train_loop) and what
the lesson proves.

Gradients with and without checkpointing, accumulation against one large batch, the scheduler's
final learning rate for both sizings, and the launchable module on the CPU.
"""

import json
import math
import subprocess
import sys

import pytest
import torch
from accelerate import Accelerator

from effitrain_lessons.shared.data import tokenized_mrpc
from effitrain_lessons.shared.memory import measure_step
from effitrain_lessons.shared.models import tiny_bert
from effitrain_lessons.with_accelerator.saved import train
from effitrain_lessons.with_accelerator.train_loop import (
    LoopConfig,
    checkpointing_under_ddp,
    measure_schedule,
    scheduler_length,
    watch_training,
)
from effitrain_lessons.with_trainer.trainer import fresh_model


@pytest.fixture(scope="module")
def train_rows():
    return tokenized_mrpc()["train"]


def gradients(model):
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}


# --- the scheduler ------------------------------------------------------------------------


def test_scheduler_length_for_both_sizings():
    assert scheduler_length(150, 2, 3, "optimizer") == 225
    assert scheduler_length(151, 2, 3, "optimizer") == 228  # a last, shorter accumulation counts
    assert scheduler_length(150, 2, 3, "slide") == 450
    with pytest.raises(ValueError, match="sizing must be one of"):
        scheduler_length(10, 2, 1, "epochs")


@pytest.mark.parametrize("accumulation", [2, 4])
def test_final_learning_rate_of_both_sizings_in_the_real_loop(accumulation):
    batches, epochs = 24, 2
    optimizer_sized = measure_schedule(
        scheduler_length(batches, accumulation, epochs, "optimizer"), batches, accumulation, epochs
    )
    slide_sized = measure_schedule(
        scheduler_length(batches, accumulation, epochs, "slide"), batches, accumulation, epochs
    )
    assert len(optimizer_sized) == len(slide_sized) == batches // accumulation * epochs
    assert optimizer_sized[-1] == 0.0 and optimizer_sized[-2] > 0.0
    # The prepared scheduler steps once per optimizer step, so the slide's sizing gets
    # 1/accumulation of the way.
    assert slide_sized[-1] == pytest.approx(1 - 1 / accumulation)


def test_measure_schedule_rejects_bad_numbers():
    with pytest.raises(ValueError, match="accumulation must be a whole number of at least 1"):
        measure_schedule(10, 10, 0, 1)


# --- checkpointing and accumulation change memory, not the math -----------------------------


def test_gradients_identical_with_and_without_checkpointing(train_rows):
    torch.manual_seed(0)
    model = tiny_bert()  # dropout on: the recomputation must replay the same masks
    model.config.use_cache = False
    model.train()
    batch = train_rows[:8]
    torch.manual_seed(1)
    plain = measure_step(model, batch)
    before = gradients(model)
    model.activation_checkpointing_enable()
    torch.manual_seed(1)
    checkpointed = measure_step(model, batch)
    after = gradients(model)
    assert before.keys() == after.keys() and len(before) == len(list(model.parameters()))
    for name in before:
        assert torch.equal(before[name], after[name]), name
    assert checkpointed.saved_bytes < 0.1 * plain.saved_bytes
    assert (checkpointed / plain).flops == pytest.approx(4 / 3, abs=0.01)


def test_two_micro_batches_of_8_give_the_gradients_of_one_batch_of_16(train_rows):
    rows = train_rows[:16]
    halves = [{k: v[part] for k, v in rows.items()} for part in (slice(0, 8), slice(8, 16))]
    whole = fresh_model(seed=0)
    whole.train()
    whole(**rows).loss.backward()

    accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
    try:
        micro = accelerator.prepare(fresh_model(seed=0))
        micro.train()
        syncs = []
        for half in halves:
            with accelerator.accumulate(micro):
                accelerator.backward(micro(**half).loss)
                syncs.append(accelerator.sync_gradients)
    finally:
        accelerator.gradient_accumulation_steps = 1
    assert syncs == [False, True]
    for a, b in zip(whole.parameters(), micro.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6)
    # Without the division by the accumulation steps they would be twice as large: the test can tell.
    largest = max(p.grad.abs().max().item() for p in whole.parameters())
    assert largest > 1e-3


# --- the loop (lesson 03's # @save cell), watched from outside -----------------------------------


def test_the_lessons_loop_runs_and_is_watched_from_outside(train_rows):
    model = fresh_model(seed=0)
    with watch_training(model) as run:
        metrics = train(
            model,
            train_rows.select(range(64)),
            tokenized_mrpc()["validation"],
            epochs=2,
            batch_size=16,
            accumulation=2,
            cpu=True,
        )
    # 64 rows, micro-batches of 16, 2 per optimizer step, 2 epochs; the checkpointed layers' recomputation
    # runs the layers, not the model, so it is not counted as a micro-batch.
    assert model.is_activation_checkpointing
    assert run.micro_batches == 8 and run.optimizer_steps == 4
    assert len(run.losses) == len(run.learning_rates) == 4 and all(math.isfinite(loss) for loss in run.losses)
    # linear decay to 0, no warm-up in 4 steps
    assert run.learning_rates == pytest.approx([0.75e-3, 0.5e-3, 0.25e-3, 0.0])
    assert run.eval_rows == 300 and sorted(metrics) == ["accuracy", "f1"]
    assert repr(run) == str(run) and "optimizer steps" in str(run)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(accumulation=0), "accumulation must be a whole number of at least 1"),
        (dict(train_rows=4), "train_rows must be at least one batch"),
    ],
)
def test_bad_config_is_one_clear_error(change, message):
    with pytest.raises(ValueError, match=message):
        LoopConfig(**change).check()


def test_reentrant_checkpointing_under_ddp_fails_with_unused_parameters_and_with_a_layer_run_twice():
    stops = 'stops: "Expected to mark a variable ready only once."'
    assert checkpointing_under_ddp(use_reentrant=True, find_unused_parameters=True) == stops
    assert checkpointing_under_ddp(use_reentrant=True, shared_layer=True) == stops
    assert checkpointing_under_ddp(use_reentrant=True) == "trains"
    assert checkpointing_under_ddp(use_reentrant=False, find_unused_parameters=True) == "trains"
    assert checkpointing_under_ddp(use_reentrant=False, shared_layer=True) == "trains"


def test_reentrant_under_ddp_is_one_row_per_case_and_one_column_per_form(monkeypatch):
    from effitrain_lessons.with_accelerator import train_loop

    calls = []

    def fake(use_reentrant, find_unused_parameters=False, steps=2, shared_layer=False):
        calls.append((use_reentrant, find_unused_parameters, shared_layer))
        return "trains"

    monkeypatch.setattr(train_loop, "checkpointing_under_ddp", fake)
    table = train_loop.reentrant_under_ddp()
    assert list(table.columns) == ["model and DDP", "use_reentrant=True", "use_reentrant=False"]
    assert [row[0] for row in table.rows] == list(train_loop.DDP_CASES)
    assert calls == [
        (r, f, s) for f, s in ((False, False), (True, False), (False, True)) for r in (True, False)
    ]


def test_watch_training_times_each_optimizer_step(train_rows):
    model = fresh_model(seed=0)
    rows = train_rows.select(range(64))
    with watch_training(model) as run:
        train(model, rows, rows.select(range(16)), epochs=1, batch_size=8, accumulation=2, cpu=True)
    assert run.optimizer_steps == 4 and run.micro_batches == 8
    # the first two steps are warm-up: the other two are timed, on this process's CPU clock
    assert run.step_times.steps == 2 and run.step_times.clock == "cpu" and run.step_times.median > 0
    assert str(run.step_times) in str(run.table())


def test_the_module_with_the_notebooks_settings_gives_the_notebooks_run(train_rows, tmp_path):
    """Lesson 03, section 6: the module runs the cell's loop, so with the same settings, seed and
    device it trains the same model to the same losses and metrics as the notebook did."""
    out = tmp_path / "result.json"
    command = [sys.executable, "-m", "effitrain_lessons.with_accelerator.train_loop", "--cpu"]
    command += ["--epochs", "1", "--train-rows", "160", "--threads", "1", "--json", str(out)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    module = json.loads(out.read_text())

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = fresh_model(seed=0)
        with watch_training(model) as run:
            metrics = train(
                model, train_rows.select(range(160)), tokenized_mrpc()["validation"], epochs=1, cpu=True
            )
    finally:
        torch.set_num_threads(threads)
    assert module["losses"] == run.losses
    assert (module["accuracy"], module["f1"]) == (metrics["accuracy"], metrics["f1"])


def test_module_runs_on_the_cpu(tmp_path):
    out = tmp_path / "result.json"
    command = [
        sys.executable,
        "-m",
        "effitrain_lessons.with_accelerator.train_loop",
        "--cpu",
        "--epochs",
        "1",
        "--train-rows",
        "64",
        "--json",
        str(out),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "process 0 of 1: distributed_type=NO, device=cpu" in finished.stdout
    assert "micro-batches                      4" in finished.stdout
    result = json.loads(out.read_text())
    assert result["optimizer_steps"] == 2 and result["eval_rows"] == 300 and 0 <= result["accuracy"] <= 1
    plain = subprocess.run(
        command + ["--no-checkpointing", "--epochs", "2"], capture_output=True, text=True, timeout=300
    )
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert json.loads(out.read_text())["optimizer_steps"] == 4


def test_module_reports_bad_arguments_in_one_line():
    command = [
        sys.executable,
        "-m",
        "effitrain_lessons.with_accelerator.train_loop",
        "--cpu",
        "--accumulation",
        "0",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 2
    assert (
        finished.stderr.strip().splitlines()[-1]
        == "error: accumulation must be a whole number of at least 1, got 0."
    )


def test_module_runs_unchanged_on_two_processes_under_torchrun(tmp_path):
    """Two real CPU processes (gloo): each reports MULTI_CPU, the data is sharded between them, the
    scheduler (sized from the whole data set) still ends at zero, and the metrics see every row once."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "result.json"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(port),
        "-m",
        "effitrain_lessons.with_accelerator.train_loop",
        "--cpu",
        "--epochs",
        "1",
        "--train-rows",
        "128",
        "--json",
        str(out),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-3000:]
    for rank in (0, 1):
        assert f"process {rank} of 2: distributed_type=MULTI_CPU" in finished.stdout
    result = json.loads(out.read_text())
    # 128 rows in micro-batches of 16 are 8 batches, 4 per process: 2 optimizer steps each, and the
    # scheduler, sized for the whole data set's 4 and stepped once per process, reaches 0.
    assert result["num_processes"] == 2 and result["micro_batches"] == 4 and result["optimizer_steps"] == 2
    assert result["learning_rates"] == [0.5e-3, 0.0]
    # 300 validation rows in batches of 100 are 3 batches: each process evaluates 2, one of them repeated
    # so that both have as many; gather_for_metrics drops the repeated rows before the metrics.
    assert result["eval_rows"] == 200


# --- the exercises' public checks compare with what they measure --------------------------------------


def test_wrong_answers_fail_the_public_checks_with_what_was_measured():
    from effitrain_lessons.course import build as editions
    from effitrain_lessons.shared import checks

    grader = checks.Notebook(
        str(editions.ROOT / editions.edition_paths("03_checkpointing_with_accelerator")["learner"])
    )
    unsharded = repr(
        grader.check(
            "q_steps_per_process",
            {"steps_per_process": lambda batches, accumulation, epochs, processes: batches * epochs},
        )
    )
    assert "You predicted steps_per_process(40, 4, 2, 3) = 80: that is not what was measured." in unsharded
    assert "Counted: the optimizer" in unsharded and " 8 " not in unsharded
    half = repr(
        grader.check(
            "q_half_memory",
            {"half_memory": lambda n: {"layers": n // 2, "flops": 1.2}},
        )
    )
    assert 'You predicted half_memory(12)["layers"] = 6: that is not what was measured.' in half
    assert "Re-read section 3" in half
    assert " 7" not in half


def test_fewest_layers_is_measured_on_the_first_layers():
    from effitrain_lessons.with_accelerator.layers import (
        checkpoint_first_layers,
        checkpointable_layers,
        fewest_layers,
        kept_bytes,
    )

    batch = tokenized_mrpc()["train"][:8]
    model = tiny_bert(num_hidden_layers=6, dropout=False)
    model.train()
    plain = kept_bytes(model, batch)
    checkpoint_first_layers(model, 2)
    assert [layer.gradient_checkpointing for layer in checkpointable_layers(model)] == [True] * 2 + [
        False
    ] * 4
    # each checkpointed layer keeps only its input: two of six free about a third
    assert 0.6 < kept_bytes(model, batch) / plain < 0.72
    # half the activations needs more than half the layers: each checkpointed layer still keeps its input
    found = fewest_layers(lambda: tiny_bert(num_hidden_layers=6, dropout=False), batch)
    assert found.layers == 4 and found.flops == pytest.approx(1 + 4 / 18, rel=1e-3)
    with pytest.raises(ValueError, match="count is a whole number of layers from 0 to 6"):
        checkpoint_first_layers(model, 7)


def test_optimizer_steps_on_one_process_counts_a_shard():
    from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process

    # 40 batches on 3 processes: 14 each (the shard rounds up), 4 steps of 4 per epoch (the last of 2)
    assert optimizer_steps_on_one_process(40, 4, 2, 3) == 8
    assert optimizer_steps_on_one_process(40, 4, 2, 3, process_index=2) == 8
    assert optimizer_steps_on_one_process(12, 1, 1, 1) == 12
    with pytest.raises(ValueError, match="process_index"):
        optimizer_steps_on_one_process(10, 2, 1, 2, process_index=2)


# --- what the cells print (with_accelerator.reports) ------------------------------------------


@pytest.fixture
def turkish(monkeypatch):
    from effitrain_lessons.shared import i18n

    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")


def test_schedule_ends_say_how_many_steps_and_where_each_schedule_ends(turkish):
    from effitrain_lessons.shared import i18n
    from effitrain_lessons.with_accelerator.reports import schedule_ends

    schedules = {"optimizer": [1.0, 0.5, 0.0], "slide": [1.0, 0.75, 0.5]}
    assert schedule_ends(schedules).splitlines()[1] == (
        f"{'slide':36} 3 eniyileyici adımı, son öğrenme oranı en yüksek değerin 0,500 katı"
    )
    with i18n.speaking("en"):
        assert schedule_ends(schedules).splitlines()[0] == (
            f"{'optimizer':36} 3 optimizer steps, final learning rate 0.000 x peak"
        )
    with pytest.raises(ValueError, match="en az bir ölçülmüş zamanlama"):
        schedule_ends({"empty": []})


def test_compare_gradients_says_identical_only_when_every_element_is_equal():
    from effitrain_lessons.with_accelerator.reports import compare_gradients

    ones = {"a": torch.ones(3), "b": torch.ones(2, 2)}
    assert compare_gradients(ones, {k: v.clone() for k, v in ones.items()}) == (
        "2 gradient tensors, largest difference 0.0e+00: identical"
    )
    nudged = {"a": torch.tensor([1.0, 1.0, 1.5]), "b": torch.ones(2, 2)}
    # |0.5| over the norm of 7 ones and a 1.5: sqrt(8.25)
    assert compare_gradients(ones, nudged) == (
        f"largest difference 5.0e-01, relative difference of the whole gradient {0.5 / math.sqrt(8.25):.1e}"
    )
    with pytest.raises(ValueError, match="same parameters"):
        compare_gradients(ones, {"a": torch.ones(3)})


def test_accumulation_against_one_batch_reads_models_and_leaves_their_gradients(train_rows):
    from effitrain_lessons.with_accelerator.reports import accumulation_against_one_batch

    rows = train_rows[:8]
    first = {k: v[:4] for k, v in rows.items()}
    whole, micro = fresh_model(seed=0), fresh_model(seed=0)
    whole(**rows).loss.backward()
    micro(**first).loss.backward()
    before = gradients(whole)
    gradient_line, memory_line = accumulation_against_one_batch(whole, micro, first, rows).splitlines()
    assert gradient_line.startswith("largest difference ") and "relative difference" in gradient_line
    assert memory_line.startswith("saved activations: ") and "per micro-batch of 4," in memory_line
    assert memory_line.endswith("for the batch of 8")
    after = gradients(whole)
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_metrics_against_majority_in_turkish(turkish):
    from effitrain_lessons.with_accelerator.reports import metrics_against_majority

    assert metrics_against_majority({"accuracy": 0.83, "f1": 0.8654}, 0.66, rows=300).splitlines() == [
        "doğrulama doğruluğu 0,830   F1 0,865   300 satırda",
        "çoğunluk tabanı     0,660",
    ]


def test_checkpointing_every_n_layers_is_a_table_of_shares_of_the_plain_step():
    from effitrain_lessons.shared.memory import StepReport
    from effitrain_lessons.with_accelerator.reports import checkpointing_every_n_layers

    def step(saved_bytes, flops):
        return StepReport(saved_bytes, 1, flops, flops // 3, 0.1, None, "cpu", True)

    plain = step(10 * 2**20, 300)
    table = checkpointing_every_n_layers({1: step(2**20, 400) / plain, 4: step(8 * 2**20, 330) / plain})
    assert list(table.columns) == ["every n-th layer", "activations kept", "of plain", "FLOPs / plain"]
    assert [list(row) for row in table.rows] == [
        [1, "1.00 MiB", "10%", "1.33"],
        [4, "8.00 MiB", "80%", "1.10"],
    ]


def test_a_nan_gradient_is_never_identical():
    import torch

    from effitrain_lessons.with_accelerator.reports import compare_gradients

    reference = {"w": torch.ones(2), "b": torch.ones(3)}
    broken = {"w": torch.ones(2), "b": torch.tensor([1.0, float("nan"), 1.0])}  # NaN in the last tensor
    assert "identical" not in compare_gradients(reference, broken)
    assert "identical" in compare_gradients(reference, reference)
