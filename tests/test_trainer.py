"""Tests for lesson 2's callback (effitrain_lessons.with_trainer.trainer.StepMeter) and the facts the
lesson teaches.

Short trainings on slices of the bundled data: a few seconds each on a laptop CPU.
"""

import contextlib
import io
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from sklearn.metrics import accuracy_score, f1_score
from transformers import Trainer, TrainingArguments

from effitrain_lessons.shared import i18n
from effitrain_lessons.shared.data import tokenized_mrpc
from effitrain_lessons.shared.memory import StepReport
from effitrain_lessons.shared.metrics import compute_metrics, majority_baseline
from effitrain_lessons.shared.timing import Times
from effitrain_lessons.with_trainer import figures as trainer_figures
from effitrain_lessons.with_trainer import reports
from effitrain_lessons.with_trainer.trainer import StepMeter, fresh_model, learning_rate_for, lesson_data


@pytest.fixture(scope="module")
def splits():
    return tokenized_mrpc()


def quiet_train(trainer):
    with contextlib.redirect_stdout(io.StringIO()):  # Trainer prints its logs when tqdm is off
        return trainer.train()


def lesson_arguments(output_dir, checkpointing=True, **overrides):
    """The lesson's arguments, as its cell writes them (with what a short test run changes)."""
    settings = dict(
        output_dir=str(output_dir),
        eval_strategy="epoch",
        activation_checkpointing=checkpointing,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=4,
        learning_rate=1e-3,
        warmup_steps=0.1,
        num_train_epochs=2,
        logging_strategy="epoch",
        save_strategy="no",
        report_to="none",
        seed=0,
    )
    settings.update(overrides)
    return TrainingArguments(**settings)


def short_trainer(splits, tmp_path, checkpointing, rows=64, meter=None, **overrides):
    settings = dict(num_train_epochs=1, eval_strategy="no", logging_strategy="no", disable_tqdm=True)
    settings.update(overrides)
    trainer = Trainer(
        model=fresh_model(seed=0),
        args=lesson_arguments(tmp_path, checkpointing, **settings),
        train_dataset=splits["train"].select(range(rows)),
        eval_dataset=splits["validation"],
        compute_metrics=compute_metrics,
        callbacks=[meter or StepMeter()],
    )
    return trainer


def meter_of(trainer) -> StepMeter:
    return next(c for c in trainer.callback_handler.callbacks if isinstance(c, StepMeter))


# --- the slide's arguments and today's ----------------------------------------


def test_the_slides_evaluation_strategy_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="evaluation_strategy"):
        TrainingArguments(
            output_dir=str(tmp_path),
            evaluation_strategy="epoch",
            gradient_accumulation_steps=4,
            gradient_checkpointing=True,
        )


def test_the_corrected_slide_arguments_build_and_the_old_name_warns(tmp_path):
    with pytest.warns(FutureWarning, match="activation_checkpointing"):
        old = TrainingArguments(
            output_dir=str(tmp_path),
            eval_strategy="epoch",
            gradient_accumulation_steps=4,
            gradient_checkpointing=True,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = TrainingArguments(
            output_dir=str(tmp_path),
            eval_strategy="epoch",
            gradient_accumulation_steps=4,
            activation_checkpointing=True,
        )
    for args in (old, new):
        assert args.eval_strategy == "epoch"
        assert args.gradient_accumulation_steps == 4
        assert args.activation_checkpointing is True


def test_learning_rate_suits_the_model():
    assert learning_rate_for("tiny") == 1e-3
    assert learning_rate_for("bert-base-uncased") == 2e-5


def test_trainer_takes_processing_class_not_tokenizer(tmp_path, splits):
    data = lesson_data()
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none")
    with pytest.raises(TypeError, match="tokenizer"):
        Trainer(model=fresh_model(), args=args, train_dataset=splits["train"], tokenizer=data.tokenizer)
    assert (
        Trainer(model=fresh_model(), args=args, processing_class=data.tokenizer).processing_class
        is data.tokenizer
    )


# --- checkpointing is really on inside train() ----------------------------------------


def test_checkpointing_is_active_inside_train_by_measurement(tmp_path, splits):
    checkpointed = short_trainer(splits, tmp_path / "with", checkpointing=True)
    plain = short_trainer(splits, tmp_path / "without", checkpointing=False)
    # Trainer turns it on in train(), not when built.
    assert checkpointed.model.is_activation_checkpointing is False
    quiet_train(checkpointed)
    quiet_train(plain)
    assert checkpointed.model.is_activation_checkpointing is True
    with_meter, without_meter = meter_of(checkpointed), meter_of(plain)
    assert [m.checkpointing for m in with_meter.measured] == [True, True] and with_meter.checkpointing is True
    assert [m.checkpointing for m in without_meter.measured] == [
        False,
        False,
    ] and without_meter.checkpointing is False

    with_report, without_report = with_meter.step_report(), without_meter.step_report()
    # Measured inside a training step of the 2-layer model: about 88 % fewer saved bytes (2.2 MiB vs 272 KiB).
    assert with_report.saved_bytes < 0.15 * without_report.saved_bytes
    assert without_report.saved_bytes > 2 * 2**20
    assert (with_report / without_report).flops == pytest.approx(4 / 3, abs=0.01)
    assert with_report.forward_flops == without_report.forward_flops > 0
    assert with_report.peak_bytes is None  # no CUDA here
    # 64 rows in micro-batches of 8, 4 per optimizer step: 2 steps of 32 rows; 6 of the 8 micro-batches timed
    assert with_meter.rows_per_step == [32, 32] and len(with_meter.micro_seconds) == 6


def test_the_meter_counts_the_rows_of_each_optimizer_step_and_ignores_evaluation(tmp_path, splits):
    trainer = short_trainer(
        splits,
        tmp_path,
        checkpointing=False,
        rows=72,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=3,
        eval_strategy="epoch",
    )
    quiet_train(trainer)
    meter = meter_of(trainer)
    assert meter.rows_per_step == [12] * 6 and trainer.state.global_step == 6
    assert len(meter.measured) + len(meter.micro_seconds) == 18  # micro-batches, not evaluation batches


def test_checkpointing_leaves_the_training_unchanged(tmp_path, splits):
    logs = []
    for checkpointing in (True, False):
        trainer = short_trainer(
            splits,
            tmp_path / str(checkpointing),
            checkpointing,
            rows=128,
            num_train_epochs=2,
            logging_strategy="steps",
            logging_steps=1,
        )
        quiet_train(trainer)
        logs.append([entry["loss"] for entry in trainer.state.log_history if "loss" in entry])
    assert len(logs[0]) == 8
    assert logs[0] == pytest.approx(logs[1], rel=1e-5)


def test_the_meter_reports_clear_errors():
    with pytest.raises(RuntimeError, match="train with this callback first"):
        StepMeter().step_report()
    with pytest.raises(ValueError, match="1-based"):
        StepMeter(measure=(0,))
    with pytest.raises(ValueError, match="1-based"):
        StepMeter(measure=(True,))


# --- the metrics -----------------------------------------------------------------------


def test_trainer_metrics_are_accuracy_and_f1_of_its_predictions(tmp_path, splits):
    trainer = short_trainer(splits, tmp_path, checkpointing=False, rows=256)
    quiet_train(trainer)
    with contextlib.redirect_stdout(io.StringIO()):
        metrics = trainer.evaluate()
        prediction = trainer.predict(splits["validation"])
    labels = splits["validation"][:]["labels"].numpy()
    assert np.array_equal(prediction.label_ids, labels)
    predicted = prediction.predictions.argmax(-1)
    assert metrics["eval_accuracy"] == pytest.approx(accuracy_score(labels, predicted))
    assert metrics["eval_f1"] == pytest.approx(f1_score(labels, predicted))
    assert majority_baseline(labels) == pytest.approx(0.66)


# --- pitfall d: accumulation and a loss that ignores num_items_in_batch ---------------------


@pytest.mark.parametrize("accepts", [False, None])
def test_logged_loss_with_accumulation(tmp_path, splits, accepts):
    """One optimizer step of 4 micro-batches of 8 rows, learning rate 0: the logged loss is the mean
    loss over the 32 rows with fresh_model's setting, and 4 times it with transformers' default."""
    model = fresh_model(seed=0)
    if accepts is None:
        del model.accepts_loss_kwargs
    rows = splits["train"].select(range(32))
    with torch.no_grad():
        mean_loss = model(**rows[:]).loss.item()
    args = lesson_arguments(
        tmp_path,
        checkpointing=False,
        num_train_epochs=1,
        learning_rate=0.0,
        warmup_steps=0,
        eval_strategy="no",
        logging_strategy="steps",
        logging_steps=1,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    quiet_train(trainer)
    logged = trainer.state.log_history[0]["loss"]
    scale = 1 if accepts is False else 4
    assert logged == pytest.approx(scale * mean_loss, rel=1e-4)


# --- offline, the hub paths fail with one sentence --------------------------------------------


def test_hub_model_offline_points_to_tiny(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match=r'use MODEL_NAME = "tiny" instead\.$'):
        lesson_data("bert-base-uncased")
    with pytest.raises(RuntimeError, match=r"use models\.tiny_bert\(\) instead\.$"):
        fresh_model("bert-base-uncased")
    with pytest.raises(RuntimeError, match=r'load_mrpc\(source="bundled"\)'):
        lesson_data("tiny", "hub")
    with pytest.raises(ValueError, match="Unknown source"):
        lesson_data("tiny", "glue")


# --- figures ------------------------------------------------------------------------------


def test_lesson_2_figures(tmp_path, splits):
    assert isinstance(trainer_figures.plot_trainer_vs_accelerator(), Figure)
    trainer = short_trainer(splits, tmp_path, checkpointing=False, rows=32)
    quiet_train(trainer)
    report = meter_of(trainer).step_report()
    assert isinstance(trainer_figures.plot_checkpointing_cost(report, report, title="t"), Figure)
    with pytest.raises(TypeError, match="two StepReports"):
        trainer_figures.plot_checkpointing_cost(report, 3)


# --- the exercises' public checks compare with what they measure --------------------------------------


def test_wrong_answers_fail_the_public_checks_and_right_ones_pass():
    from effitrain_lessons.course import build as editions
    from effitrain_lessons.shared import checks

    grader = checks.Notebook(
        str(editions.ROOT / editions.edition_paths("02_checkpointing_with_trainer")["learner"])
    )
    # 3 MiB over the bytes one pair keeps (lesson 00's tiny BERT, dropout on; they grow with the pairs)
    per_pair = {False: 814_612, True: 59_924}
    right = repr(grader.check("q_memory_budget", {"largest_micro_batch": lambda b, c: b // per_pair[c]}))
    assert "failed" not in right, right
    for extra in ({False: 1, True: 0}, {False: 0, True: 1}):
        wrong = repr(
            grader.check(
                "q_memory_budget",
                {"largest_micro_batch": lambda b, c, extra=extra: b // per_pair[c] + extra[c]},
            )
        )
        assert "that is not what was measured" in wrong and "Re-read section" in wrong
        assert "52" not in wrong.replace("= 53", "") and "too " not in wrong

    # two micro-batches of 16, checkpointed: 2 x 2 x the 201.53 MFLOP of section 4's checkpointed 8
    right = repr(grader.check("q_step_flops", {"predicted_mflop": lambda m, a: m * a * 201.53 / 8}))
    assert "failed" not in right, right
    for wrong_mflop in (lambda m, a: m * 201.53 / 8, lambda m, a: "806"):
        wrong = repr(grader.check("q_step_flops", {"predicted_mflop": wrong_mflop}))
        assert "failed" in wrong and "806" not in wrong.replace("'806'", "")


# --- what the lesson prints of its measurements (with_trainer.reports) -----------------------------


@pytest.fixture
def turkish(monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")


def test_a_refusal_names_the_argument_to_use_instead(tmp_path, splits):
    with pytest.raises(TypeError) as renamed:
        TrainingArguments(output_dir=str(tmp_path), evaluation_strategy="epoch")
    said = str(reports.explain_refusal(renamed.value)).splitlines()
    assert said[0].startswith('TypeError: "') and "evaluation_strategy" in said[0]
    assert said[1].startswith("-> `evaluation_strategy` was renamed `eval_strategy`")
    with pytest.raises(TypeError) as moved:
        Trainer(model=fresh_model(), args=TrainingArguments(str(tmp_path)), tokenizer=lesson_data().tokenizer)
    assert str(reports.explain_refusal(moved.value)).endswith("-> pass it as processing_class=tokenizer")
    # an error the lesson knows no fix for is shown alone
    assert (
        str(reports.explain_refusal(TypeError("got an unexpected keyword argument 'colour'"))).count("\n")
        == 0
    )


def test_the_renamed_argument_warns_where_the_new_name_does_not(tmp_path):
    built = []
    for name in ("gradient_checkpointing", "activation_checkpointing"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            built += [TrainingArguments(output_dir=str(tmp_path), **{name: True}), list(caught)]
    said = str(reports.compare_argument_names(*built)).splitlines()
    assert said[0].startswith("FutureWarning: ") and "activation_checkpointing" in said[0]
    assert said[-2:] == ["with activation_checkpointing=True: 0 warnings", "both turn it on: True and True"]


def test_checkpointing_seen_shows_the_states_it_was_given():
    meter = SimpleNamespace(checkpointing=True)
    assert str(reports.checkpointing_seen(False, True, meter)).splitlines() == [
        "before train(): False",
        "after train():  True",
        "during train(): True",
    ]
    assert (
        str(reports.checkpointing_seen(meter=SimpleNamespace(checkpointing=False))) == "during train(): False"
    )


def test_accuracy_is_set_against_the_majority_baseline(splits, turkish):
    said = str(reports.against_baseline({"eval_accuracy": 0.8125, "eval_f1": 0.5}, splits["validation"]))
    majority = majority_baseline(splits["validation"][:]["labels"].numpy())
    assert said.splitlines()[0] == "doğrulama doğruluğu 0,812   F1 0,500"
    assert f"{majority:.3f}".replace(".", ",") in said.splitlines()[1]


def test_the_step_table_puts_the_two_micro_batches_side_by_side_with_the_time_s_spread():
    plain = StepReport(
        4096, 3, 300, 100, Times((0.010, 0.011, 0.012), (0.010, 0.011, 0.012), "cpu"), None, "cpu", True
    )
    checkpointed = StepReport(
        512, 1, 400, 100, Times((0.015, 0.016, 0.018), (0.02,) * 3, "cpu"), None, "cpu", True
    )
    lines = str(reports.compare_steps(plain, checkpointed)).splitlines()
    assert lines[0].split() == [
        "per",
        "micro-batch",
        "without",
        "checkpointing",
        "with",
        "checkpointing",
        "with",
        "/",
        "without",
    ]
    time_row = next(line for line in lines if line.startswith("time"))
    assert "11.0 ms (10.5-11.5)" in time_row and "16.0 ms (15.5-17.0)" in time_row
    assert "1.45x (1.35x-1.62x)" in time_row
    assert "87.5% fewer bytes" in next(line for line in lines if line.startswith("saved activations"))


def test_two_trainings_compare_in_time_and_metrics():
    metrics = {"eval_loss": 0.5, "eval_accuracy": 0.75, "eval_f1": 0.8}
    compared = reports.compare_trainings(
        SimpleNamespace(metrics={"train_runtime": 6.0}),
        metrics,
        SimpleNamespace(metrics={"train_runtime": 4.0}),
        metrics | {"eval_loss": 0.25},
    )
    said = str(compared).splitlines()
    # one run each, in wall time: no ratio, and the step times named as the ones to read
    assert said[0].startswith("whole training: 6.0 s with, 4.0 s without (wall time, one run each")
    assert "x)" not in said[0]
    assert said[1] == "eval_loss      with 0.5000   without 0.2500"
    assert len(said) == 4


def test_accumulation_is_counted_against_the_rule():
    trainer = SimpleNamespace(
        args=SimpleNamespace(
            per_device_train_batch_size=8, gradient_accumulation_steps=4, world_size=1, num_train_epochs=2.0
        ),
        state=SimpleNamespace(global_step=14),
        train_dataset=range(200),
    )
    meter = SimpleNamespace(rows_per_step=[32] * 12 + [8, 8])
    said = str(reports.accumulation_counted(trainer, meter, effective=32, expected=14))
    assert said.splitlines() == [
        "effective batch = 8 x 4 x 1 = 32",
        "optimizer steps measured: 14; expected ceil(200 / 32) x 2 = 14",
        "rows per optimizer step, counted by the meter: [8, 32]",
    ]


def test_what_one_optimizer_step_keeps_is_set_against_the_whole_batch(turkish):
    said = str(reports.kept_per_optimizer_step(4096, 1024, 256, batch=32, micro_batch=8)).splitlines()
    assert said[0].startswith("32 satırlık grup") and said[0].endswith("4,00 KiB  (%100)")
    assert said[1].startswith("8 satırlık mikro grup (x 4)") and said[1].endswith("(%25)")
    assert said[2].endswith("256 B  (%6)")


def test_peak_memory_is_only_measured_on_a_gpu():
    assert str(
        reports.peak_memory(SimpleNamespace(peak_bytes=None), SimpleNamespace(peak_bytes=None))
    ).startswith("No CUDA GPU here")
    said = str(reports.peak_memory(SimpleNamespace(peak_bytes=2048), SimpleNamespace(peak_bytes=4096)))
    assert said == "peak GPU memory: 2.00 KiB with checkpointing, 4.00 KiB without (0.50x)"


def test_the_splits_table_multiplies_a_micro_batchs_time_by_its_steps():
    def step(saved, seconds):
        return StepReport(saved, 1, 1, 1, seconds, None, "cpu", True)

    table = reports.splits_table(
        [(32, 1, step(4096, 0.010), step(1024, 0.015)), (8, 4, step(1024, 0.003), step(256, 0.004))]
    )
    assert [row[0] for row in table.rows] == ["32 x 1", "8 x 4"]
    assert table.rows[1][1:] == ["1.00 KiB", "256 B", "12.0 ms (12.0-12.0)", "16.0 ms (16.0-16.0)"]


def test_the_cost_figure_says_what_was_measured_in_its_title():
    plain = StepReport(4096, 1, 300, 100, 0.01, None, "cpu", True)
    checkpointed = StepReport(480, 1, 400, 100, 0.02, None, "cpu", True)
    title = trainer_figures.plot_checkpointing_cost(plain, checkpointed)._suptitle.get_text()
    assert title == "Checkpointing keeps 12% of the activations for 1.33x the FLOPs"
