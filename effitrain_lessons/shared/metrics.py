"""The slides' metrics, accuracy and F1, computed offline (lessons 2 and 3).

Two lines of NumPy each, checked against scikit-learn's in the tests: importing scikit-learn
would add about 3 s to every lesson and training process that reports them.
"""

from __future__ import annotations

import numpy as np

from effitrain_lessons.shared.i18n import _, phrase


def compute_metrics(eval_pred) -> dict[str, float]:
    """Accuracy and F1 (of the positive class, as GLUE reports for MRPC) from `(logits, labels)`.

    Accepts what `Trainer` passes (an `EvalPrediction`) or a plain `(logits, labels)` pair;
    logits are `[n, num_labels]` scores, labels are `[n]` class ids.
    """
    try:
        logits, labels = eval_pred
    except (TypeError, ValueError):
        raise ValueError(
            _("compute_metrics expects a (logits, labels) pair, as Trainer passes it.")
        ) from None
    if isinstance(logits, tuple):  # models that return more than logits
        logits = logits[0]
    logits, labels = np.asarray(logits), np.asarray(labels)
    if logits.ndim != 2 or labels.ndim != 1 or len(logits) != len(labels):
        raise ValueError(
            phrase(
                "Expected logits of shape [n, num_labels] and labels of shape [n]; "
                "got {logits} and {labels}.",
                logits=logits.shape,
                labels=labels.shape,
            )
        )
    predictions = logits.argmax(axis=-1)
    true_positives = np.sum((predictions == 1) & (labels == 1))
    predicted_or_actual = np.sum(predictions == 1) + np.sum(labels == 1)  # = 2 TP + FP + FN
    return {
        "accuracy": float(np.mean(predictions == labels)) if len(labels) else 0.0,
        "f1": float(2 * true_positives / predicted_or_actual) if predicted_or_actual else 0.0,
    }


def majority_baseline(labels) -> float:
    """Accuracy of always predicting the most common label: what a model must beat (lesson 2)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        raise ValueError(_("majority_baseline needs at least one label."))
    return float(np.bincount(labels).max() / labels.size)
