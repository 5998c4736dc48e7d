"""Models for the lessons: a tiny BERT built from a config (offline), and hub checkpoints (online)."""

from __future__ import annotations

from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import phrase

# Sized so that one training step on a batch of 8 x 32 tokens takes milliseconds on a laptop CPU,
# while keeping BERT's structure (embeddings, N encoder layers, pooler, classifier).
TINY_BERT = dict(
    hidden_size=64,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=256,
    max_position_embeddings=128,
)

# How the lessons train the tiny BERT on the bundled data: AdamW with a linear warm-up over
# the first tenth of the steps and a linear decay after it, batches of 32 pairs, 4 epochs
# (300 optimizer steps). It reaches 0.81-0.84 validation accuracy against a 0.66 majority
# baseline (seeds 0-2, tests/test_learning.py), in about 20 s on a 2-core laptop CPU.
# Post-LN BERT trained from scratch needs the higher learning rate: at BERT's usual 5e-5
# it does not leave the majority baseline within these steps.
TRAINING = dict(learning_rate=1e-3, warmup_ratio=0.1, batch_size=32, epochs=4)


def tiny_bert(num_labels: int = 2, *, dropout: bool = True, **overrides) -> BertForSequenceClassification:
    """A freshly initialised `BertForSequenceClassification` small enough for a CPU.

    Keyword arguments override `BertConfig` fields (e.g. `num_hidden_layers=12`).
    `dropout=False` sets both of BERT's dropout probabilities to 0: lessons 02-04 train without
    it, since drawing dropout masks costs time on a CPU and short runs do not need it.
    The vocabulary defaults to the course tokenizer's. Used by every lesson.
    """
    whole_numbers(num_labels=num_labels)
    if not dropout:
        overrides = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, **overrides}
    if "vocab_size" not in overrides:
        from effitrain_lessons.shared.data import load_tokenizer

        overrides["vocab_size"] = len(load_tokenizer())
    settings = {**TINY_BERT, **overrides}
    try:
        return BertForSequenceClassification(BertConfig(num_labels=num_labels, **settings))
    except (TypeError, ValueError) as error:
        raise ValueError(
            phrase(
                "These settings do not make a valid BERT ({error}); check the names and sizes.", error=error
            )
        ) from None


def tiny_gpt2(
    layers: int = 2, width: int = 64, vocabulary: int = 1000, positions: int = 64
) -> GPT2LMHeadModel:
    """A freshly initialised GPT-2 language model, built from a config (offline): `layers` blocks of
    `width` with 4 heads, an embedding of `vocabulary` tokens that the output layer shares, no dropout.
    Lesson 9's exercise shards it; its forward takes `input_ids` and `labels` and returns the loss."""
    whole_numbers(layers=layers, width=width, vocabulary=vocabulary, positions=positions)
    config = GPT2Config(
        n_layer=layers,
        n_embd=width,
        n_head=4,
        vocab_size=vocabulary,
        n_positions=positions,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # transformers finds no loss in the class's name, and warns
    return model


def token_batch(rows: int, tokens: int, vocabulary: int, seed: int = 0) -> dict:
    """`rows` sequences of `tokens` random token ids below `vocabulary` (a language model's labels are
    its inputs), the same for a seed."""
    import torch

    ids = torch.randint(vocabulary, (rows, tokens), generator=torch.Generator().manual_seed(seed))
    return {"input_ids": ids, "labels": ids.clone()}


def load(name: str, num_labels: int = 2):
    """Load a hub checkpoint such as 'bert-base-uncased' for sequence classification (needs a network).

    Used by the lessons' "bigger model" switch. Offline, it fails with one sentence that
    points to `tiny_bert()`.
    """
    from transformers import AutoModelForSequenceClassification

    from effitrain_lessons.shared.hub import require_hub

    require_hub(repr(name), "models.tiny_bert()")
    return AutoModelForSequenceClassification.from_pretrained(name, num_labels=num_labels)
