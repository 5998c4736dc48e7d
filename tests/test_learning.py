"""The bundled data is learnable: the tiny BERT beats the majority baseline with the course recipe."""

import math

import pytest
import torch
from transformers import get_linear_schedule_with_warmup

from effitrain_lessons.shared.data import tokenized_mrpc
from effitrain_lessons.shared.metrics import compute_metrics, majority_baseline
from effitrain_lessons.shared.models import TRAINING, tiny_bert


def train_and_evaluate(seed: int) -> tuple[float, float]:
    splits = tokenized_mrpc()
    train, validation = splits["train"][:], splits["validation"][:]
    torch.manual_seed(seed)
    model = tiny_bert()
    optimizer = torch.optim.AdamW(model.parameters(), lr=TRAINING["learning_rate"])
    batch, rows = TRAINING["batch_size"], len(train["labels"])
    steps = math.ceil(rows / batch) * TRAINING["epochs"]
    scheduler = get_linear_schedule_with_warmup(optimizer, int(steps * TRAINING["warmup_ratio"]), steps)
    order = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(TRAINING["epochs"]):
        for chunk in torch.randperm(rows, generator=order).split(batch):
            model(**{name: column[chunk] for name, column in train.items()}).loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    model.eval()
    with torch.no_grad():
        logits = model(**{name: column for name, column in validation.items() if name != "labels"}).logits
    labels = validation["labels"].numpy()
    return compute_metrics((logits.numpy(), labels))["accuracy"], majority_baseline(labels)


@pytest.mark.parametrize("seed", [0, 1])
def test_tiny_bert_learns_the_bundled_data_well_above_the_majority_baseline(seed):
    accuracy, majority = train_and_evaluate(seed)
    assert majority == pytest.approx(0.66, abs=0.01)
    # Measured 0.81-0.84 over seeds 0-2; the baseline is 0.66.
    assert accuracy >= majority + 0.12, f"accuracy {accuracy:.3f} vs majority {majority:.3f}"
