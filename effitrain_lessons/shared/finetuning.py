"""What lessons 2 and 3 fine-tune, and on what: the model, its data and its learning rate.

Kept apart from `trainer` so that lesson 3's loop (and its module run in a fresh process) does not
import `transformers.Trainer`, which it never uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from effitrain_lessons.shared.i18n import phrase
from effitrain_lessons.shared.models import TRAINING, tiny_bert

TINY = "tiny"


@dataclass
class LessonData:
    """What a lesson trains on: the tokenizer and model-ready splits for one model and source."""

    model_name: str
    source: str
    tokenizer: object
    splits: object  # datasets.DatasetDict with train / validation / test


def lesson_data(model_name: str = TINY, source: str = "bundled") -> LessonData:
    """Tokenizer and splits for `model_name` ("tiny", or a hub name such as "bert-base-uncased")
    and `source` ("bundled" or "hub"). A hub model brings its own tokenizer (needs a network)
    and sequences of up to 128 tokens; the tiny BERT uses the course tokenizer and 32 tokens."""
    from effitrain_lessons.shared.data import SOURCES, load_tokenizer, tokenized_mrpc

    if source not in SOURCES:
        raise ValueError(
            phrase('Unknown source {source!r}: use source="bundled" or source="hub".', source=source)
        )
    if model_name == TINY:
        tokenizer, max_length = load_tokenizer(), 32
    else:
        from transformers import AutoTokenizer

        from effitrain_lessons.shared.hub import require_hub

        require_hub(phrase("the tokenizer of {model!r}", model=model_name), 'MODEL_NAME = "tiny"')
        tokenizer, max_length = AutoTokenizer.from_pretrained(model_name), 128
    splits = tokenized_mrpc(tokenizer, max_length=max_length, source=source)
    return LessonData(model_name, source, tokenizer, splits)


FINE_TUNING_LAYERS = 2  # the tiny model of lessons 2 and 3


def fresh_model(model_name: str = TINY, seed: int = 0):
    """A new model to fine-tune, the same for the same seed.

    "tiny" is `models.tiny_bert` with 2 encoder layers and dropout off, so that lessons 2 and 3
    train it twice over within a minute on a laptop CPU: 2 epochs of the bundled data take it to
    about 0.84 validation accuracy, as 3 epochs do the 4-layer one. On a CPU, drawing dropout masks
    takes about a third of the tiny model's step, and checkpointing draws them twice; 2 epochs do
    not need dropout. Hub names load pretrained weights (network).
    `accepts_loss_kwargs = False` tells Trainer that BERT's classification loss ignores
    `num_items_in_batch`, so Trainer divides each micro-batch's loss by the accumulation steps
    itself; without it the logged loss (and the gradient) of a step is the *sum* of its
    micro-batches' mean losses (lesson 2, pitfalls).
    """
    from effitrain_lessons.shared.models import load

    torch.manual_seed(seed)
    if model_name == TINY:
        model = tiny_bert(num_hidden_layers=FINE_TUNING_LAYERS, dropout=False)
    else:
        model = load(model_name)
    model.accepts_loss_kwargs = False
    return model


# for pretrained hub models such as bert-base-uncased (BERT paper: 2e-5 to 5e-5)
FINE_TUNING_LEARNING_RATE = 2e-5


def learning_rate_for(model_name: str) -> float:
    """The course's learning rate for a model: 1e-3 for the tiny BERT, which trains from scratch,
    2e-5 for a pretrained hub model, which 1e-3 would wreck. Lessons 2 and 3."""
    return TRAINING["learning_rate"] if model_name == TINY else FINE_TUNING_LEARNING_RATE
