"""The slides' metrics, accuracy and F1, computed offline with scikit-learn (lessons 2 and 3)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, f1_score


def compute_metrics(eval_pred) -> dict[str, float]:
    """Accuracy and F1 (of the positive class, as GLUE reports for MRPC) from `(logits, labels)`.

    Accepts what `Trainer` passes (an `EvalPrediction`) or a plain `(logits, labels)` pair;
    logits are `[n, num_labels]` scores, labels are `[n]` class ids.
    """
    try:
        logits, labels = eval_pred
    except (TypeError, ValueError):
        raise ValueError("compute_metrics expects a (logits, labels) pair, as Trainer passes it.") from None
    if isinstance(logits, tuple):  # models that return more than logits
        logits = logits[0]
    logits, labels = np.asarray(logits), np.asarray(labels)
    if logits.ndim != 2 or labels.ndim != 1 or len(logits) != len(labels):
        raise ValueError(
            f"Expected logits of shape [n, num_labels] and labels of shape [n]; got {logits.shape} and {labels.shape}."
        )
    predictions = logits.argmax(axis=-1)
    return {
        "accuracy": float(accuracy_score(labels, predictions)),
        "f1": float(f1_score(labels, predictions, zero_division=0.0)),
    }


def majority_baseline(labels) -> float:
    """Accuracy of always predicting the most common label: what a model must beat (lesson 2)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        raise ValueError("majority_baseline needs at least one label.")
    return float(np.bincount(labels).max() / labels.size)
