"""Tiny models, the slides' metrics and device choice."""

import numpy as np
import pytest
import torch
from transformers import BertForSequenceClassification

from effitrain_lessons.shared import device, metrics, models


def test_tiny_bert_is_a_small_bert_classifier():
    model = models.tiny_bert(vocab_size=300)
    assert isinstance(model, BertForSequenceClassification)
    assert model.config.num_hidden_layers == 4 and model.config.hidden_size == 64
    assert sum(p.numel() for p in model.parameters()) < 500_000


def test_tiny_bert_overrides_reach_the_config():
    model = models.tiny_bert(num_labels=3, vocab_size=300, num_hidden_layers=2)
    assert model.config.num_hidden_layers == 2 and model.config.num_labels == 3
    logits = model(input_ids=torch.randint(0, 300, (2, 8))).logits
    assert logits.shape == (2, 3)


def test_tiny_bert_rejects_bad_settings_clearly():
    with pytest.raises(ValueError, match="num_labels must be a whole number of at least 1"):
        models.tiny_bert(num_labels=0, vocab_size=300)
    with pytest.raises(ValueError, match="valid BERT"):
        models.tiny_bert(vocab_size=300, hidden_size=66, num_attention_heads=4)


def test_hub_models_fail_offline_with_one_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match=r"use models.tiny_bert\(\)"):
        models.load("bert-base-uncased")


def test_metrics_on_known_inputs():
    logits = np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])  # predicts 0, 1, 0, 1
    labels = np.array([0, 1, 1, 1])
    result = metrics.compute_metrics((logits, labels))
    assert result["accuracy"] == pytest.approx(0.75)
    assert result["f1"] == pytest.approx(0.8)  # precision 1, recall 2/3


@pytest.mark.parametrize("seed", range(5))
def test_metrics_agree_with_scikit_learn(seed):
    from sklearn.metrics import accuracy_score, f1_score

    generator = np.random.default_rng(seed)
    size = int(generator.integers(1, 40))
    # some seeds predict one class
    logits = generator.normal(size=(size, 2)) + np.array([0.0, generator.normal()])
    labels = generator.integers(0, 2, size) * int(seed != 4)  # seed 4: no positive label
    predictions = logits.argmax(-1)
    result = metrics.compute_metrics((logits, labels))
    assert result["accuracy"] == pytest.approx(accuracy_score(labels, predictions))
    assert result["f1"] == pytest.approx(f1_score(labels, predictions, zero_division=0.0))


def test_metrics_f1_is_zero_without_any_positive():
    assert metrics.compute_metrics((np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0, 0]))) == {
        "accuracy": 1.0,
        "f1": 0.0,
    }


def test_metrics_accept_trainer_eval_predictions():
    from transformers import EvalPrediction

    prediction = EvalPrediction(predictions=(np.eye(2), np.zeros(2)), label_ids=np.array([0, 1]))
    assert metrics.compute_metrics(prediction) == {"accuracy": 1.0, "f1": 1.0}


def test_metrics_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"\[n, num_labels\]"):
        metrics.compute_metrics((np.zeros(3), np.zeros(3)))
    with pytest.raises(ValueError, match="pair"):
        metrics.compute_metrics(np.zeros(3))


def test_majority_baseline():
    assert metrics.majority_baseline([1, 1, 0, 1]) == 0.75
    with pytest.raises(ValueError, match="at least one"):
        metrics.majority_baseline([])


def test_device_prefers_accelerators_and_says_which():
    chosen = device.pick_device()
    if torch.cuda.is_available():
        assert chosen.type == "cuda"
    elif not torch.backends.mps.is_available():
        assert chosen.type == "cpu"
    line = device.describe_device(chosen)
    assert line.startswith(f"Using {chosen.type}") and "\n" not in line


def test_device_errors_say_what_to_do():
    with pytest.raises(ValueError, match="use 'cuda', 'mps', 'cpu'"):
        device.pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="prefer=None"):
            device.pick_device("cuda")


def test_tiny_bert_without_dropout_and_overrides_still_win():
    tiny_bert = models.tiny_bert
    plain = tiny_bert(dropout=False)
    assert plain.config.hidden_dropout_prob == 0.0 and plain.config.attention_probs_dropout_prob == 0.0
    assert tiny_bert().config.hidden_dropout_prob == 0.1
    assert tiny_bert(dropout=False, hidden_dropout_prob=0.2).config.hidden_dropout_prob == 0.2
