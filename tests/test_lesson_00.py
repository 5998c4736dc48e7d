"""Lesson 00: what its text says about the saved bytes holds, and its third exercise grades a
prediction by measuring (the same tokens in another shape), never a number copied or measured."""

import json
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from effitrain_lessons.course.lessons import ROOT, edition_paths, read_test_file
from effitrain_lessons.shared import checks
from effitrain_lessons.shared.memory import measure_step, record_saved_tensors
from effitrain_lessons.shared.models import tiny_bert
from effitrain_lessons.start_here.figures import plot_saved_by_shape

LESSON = "00_start_here"
MASTER = ROOT / "lessons" / f"{LESSON}.ipynb"


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return tiny_bert()


def random_batch(model, sequences, tokens):  # the lesson's section 4 helper
    return {
        "input_ids": torch.randint(0, model.config.vocab_size, (sequences, tokens)),
        "attention_mask": torch.ones(sequences, tokens, dtype=torch.long),
        "labels": torch.randint(0, 2, (sequences,)),
    }


def saved(model, sequences, tokens) -> int:
    with record_saved_tensors(model) as log:
        model(**random_batch(model, sequences, tokens))
    return log.total_bytes


def two_point_prediction(model):
    """Exercise 3's solution: a part per token and a part per pair of tokens, from section 4's two steps."""
    short, long = saved(model, 8, 32), saved(model, 8, 64)
    per_pair = (long - 2 * short) / (8 * (64**2 - 2 * 32**2))
    per_token = (short / 8 - per_pair * 32**2) / 32
    return lambda sequences, tokens: sequences * (per_token * tokens + per_pair * tokens**2)


def test_twice_the_tokens_save_more_than_twice_the_bytes(model):
    # section 4: "Twice the tokens, more than twice the bytes"
    assert saved(model, 8, 64) > 2.2 * saved(model, 8, 32)
    assert measure_step(model, random_batch(model, 8, 32), warmup=0, repeats=1).saved_bytes == saved(
        model, 8, 32
    )


@pytest.mark.parametrize("shape", [(32, 8), (2, 128), (64, 4), (4, 100)])
def test_the_exercise_has_an_answer_within_its_tolerance_and_a_naive_one_misses(model, shape):
    predict = two_point_prediction(model)
    measured = saved(model, *shape)
    assert abs(predict(*shape) - measured) <= 0.02 * measured  # the check allows 5 %
    per_token_only = saved(model, 8, 32) * shape[0] * shape[1] / (8 * 32)
    assert abs(per_token_only - measured) > 0.1 * measured


def run_test_file(question, namespace):
    path = ROOT / edition_paths(LESSON)["autograder"] / "tests" / f"{question}.py"
    cases = [checks.Case(case.code, case.hidden) for case in read_test_file(path).cases]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return checks.CheckResult(
            question, tuple(checks.run_case(c, i, namespace) for i, c in enumerate(cases, 1))
        )


def exercise_3_namespace(model, predicted):
    return {
        "torch": torch,
        "model": model,
        "random_batch": lambda sequences, tokens: random_batch(model, sequences, tokens),
        "predicted_saved_bytes": predicted,
    }


def test_exercise_3_passes_a_prediction_and_fails_a_copy_a_guess_or_a_measurement(model):
    right = run_test_file("q_trade_places", exercise_3_namespace(model, two_point_prediction(model)))
    assert right.passed
    public = saved(model, 32, 8)
    copied = run_test_file("q_trade_places", exercise_3_namespace(model, lambda sequences, tokens: public))
    assert copied.public_passed and not copied.passed  # the hidden shapes catch it
    guessed = repr(
        run_test_file(
            "q_trade_places",
            exercise_3_namespace(model, lambda sequences, tokens: 6515076 * sequences * tokens / 256),
        )
    )
    assert "that is not what was measured" in guessed and "Re-read section 4" in guessed
    assert str(public) not in guessed and f"{public:,}" not in guessed
    measured = repr(
        run_test_file(
            "q_trade_places",
            exercise_3_namespace(model, lambda sequences, tokens: saved(model, sequences, tokens)),
        )
    )
    assert "predicted_saved_bytes ran a model" in measured
    unanswered = repr(run_test_file("q_trade_places", exercise_3_namespace(model, lambda *shape: None)))
    assert "should be a number" in unanswered


def test_the_explore_figure_draws_the_measurement_and_the_prediction_beside_it():
    measured = {(64, 4): 5_000_000, (8, 32): 6_500_000, (2, 128): 11_000_000}
    open_before = plt.get_fignums()  # another test in this worker may have left one open
    figure = plot_saved_by_shape(measured, predicted=lambda sequences, tokens: 1e6 * sequences)
    assert plt.get_fignums() == open_before  # closed: the notebook shows it once
    ax = figure.axes[0]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["64 × 4", "8 × 32", "2 × 128"]
    assert "The same 256 tokens: 2 × 128 saves x2.20 what 64 × 4 saves" == ax.get_title()
    assert [line.get_label() for line in ax.get_lines()] == ["your prediction"]
    # an unanswered exercise (None), or one that fails, leaves the measurement alone
    for unanswered in (None, lambda sequences, tokens: None, lambda sequences, tokens: 1 / 0):
        assert not plot_saved_by_shape(measured, predicted=unanswered).axes[0].get_lines()
    with pytest.raises(ValueError, match="at least one measured shape"):
        plot_saved_by_shape({})


def test_the_text_says_what_mixed_precision_keeps_in_16_bits():
    text = " ".join(
        "".join(cell["source"]) for cell in json.loads(MASTER.read_text(encoding="utf-8"))["cells"]
    )
    assert "the 2-byte type mixed-precision training keeps activations in" not in text
    assert "`float16`" in text and "not every activation" in text
