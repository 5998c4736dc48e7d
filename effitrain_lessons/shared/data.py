"""The lessons' data: an MRPC-style paraphrase task that works offline, and its tokenizer.

Every lesson trains a model to decide whether two news-like sentences say the same thing,
the task of GLUE's MRPC (Microsoft Research Paraphrase Corpus). The real MRPC needs a
network, so the package ships its own pairs in `course_data/` (one JSONL file per split,
readable in any text editor) and a WordPiece tokenizer trained on them. This module only loads
them; `python tools/make_course_data.py`, in the course's repository, makes them, always
identically, from a small English grammar of companies, officials, numbers, places and times.

Used by every lesson: lesson 00 meets the data with `load_mrpc`; the lessons that train
(01 onwards) take `tokenized_mrpc`; `load_tokenizer` turns text into token ids and sets the
vocabulary size of `models.tiny_bert`. `source="hub"` is the online switch to the real MRPC.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import datasets
import transformers

from effitrain_lessons.shared.hub import require_hub
from effitrain_lessons.shared.i18n import _

SOURCES = ("bundled", "hub")
LABEL_NAMES = ("not_equivalent", "equivalent")
SPLITS = ("train", "validation", "test")


def _features() -> datasets.Features:
    return datasets.Features(
        {
            "sentence1": datasets.Value("string"),
            "sentence2": datasets.Value("string"),
            "label": datasets.ClassLabel(names=list(LABEL_NAMES)),
            "idx": datasets.Value("int32"),
        }
    )


def _data_dir() -> Path:
    return Path(str(files("effitrain_lessons") / "course_data"))


def load_mrpc(source: str = "bundled") -> datasets.DatasetDict:
    """MRPC-style paraphrase pairs: splits train/validation/test with GLUE MRPC's columns.

    Columns: `sentence1`, `sentence2`, `label` (0 = not_equivalent, 1 = equivalent) and `idx`.
    `source="bundled"` (default) reads the course's own 3,000 pairs shipped with the package
    (works offline): news sentences about five kinds of event, where most non-equivalent
    pairs reverse the meaning (a negation, bought/sold, rose/fell) and the rest change an
    entity, a number, a place or a time. A rule that only looks for a rarely used word
    (sold, fell, not, ...) scores 0.84 on validation; one that checks whether exactly one
    sentence has such a word scores 0.93; the tiny BERT reaches about 0.83 in 300 steps.
    `source="hub"` downloads the real GLUE MRPC (needs a network; without
    one it raises a RuntimeError within a few seconds). Used by lesson 00 to meet the data,
    and through `tokenized_mrpc` by every lesson that trains.
    """
    if source == "hub":
        return _load_hub()
    if source != "bundled":
        raise ValueError(
            _('Unknown source {source!r}: use source="bundled" or source="hub".').format(source=source)
        )
    # Built in memory from the shipped files: nothing is written to the Hugging Face cache.
    features = _features()
    splits = {}
    for split in SPLITS:
        lines = (_data_dir() / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines]
        columns = {name: [row[name] for row in rows] for name in features}
        splits[split] = datasets.Dataset.from_dict(columns, features=features)
    return datasets.DatasetDict(splits)


def _load_hub() -> datasets.DatasetDict:
    instead = 'load_mrpc(source="bundled")'
    # A quick probe first: offline, `load_dataset` alone retries for about 25 s.
    require_hub("GLUE MRPC", instead)
    try:
        return datasets.load_dataset("nyu-mll/glue", "mrpc")
    except (ConnectionError, OSError, TimeoutError) as error:
        raise RuntimeError(
            _("Cannot load {what} from the Hugging Face Hub ({reason}): use {instead} instead.").format(
                what="GLUE MRPC", reason=type(error).__name__, instead=instead
            )
        ) from None


def load_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """The course tokenizer (WordPiece, lowercasing, vocabulary of the bundled data).

    Read fresh from the shipped `course_data/tokenizer.json` on every call (milliseconds),
    so changing one copy never affects another. Pads with [PAD] (id 0), at most 128 tokens.
    Used by every lesson (lesson 00 shows it at work), and by `models.tiny_bert` for its
    vocabulary size.
    """
    return transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(_data_dir() / "tokenizer.json"),
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=128,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def tokenized_mrpc(tokenizer=None, max_length: int = 32, source: str = "bundled") -> datasets.DatasetDict:
    """Model-ready MRPC splits as torch tensors, every row padded to `max_length` tokens.

    Columns: `input_ids`, `token_type_ids`, `attention_mask`, `labels`. The fixed length
    keeps every batch the same shape, so memory measurements compare like with like; the
    bundled pairs all fit in 32 tokens. `tokenizer` defaults to `load_tokenizer()`; pass a hub
    tokenizer together with `source="hub"` for the real MRPC. Used by every lesson that trains
    (01 onwards).
    """
    if source not in SOURCES:
        raise ValueError(
            _('Unknown source {source!r}: use source="bundled" or source="hub".').format(source=source)
        )
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8:
        raise ValueError(
            _("max_length must be a whole number of tokens, at least 8, got {max_length!r}.").format(
                max_length=max_length
            )
        )
    if tokenizer is None and source == "bundled":  # the lessons' call: tokenized once per process
        if max_length not in _TOKENIZED:
            _TOKENIZED[max_length] = _tokenized(load_tokenizer(), max_length, source)
        return datasets.DatasetDict(_TOKENIZED[max_length])
    return _tokenized(tokenizer, max_length, source)


_TOKENIZED: dict[int, datasets.DatasetDict] = {}  # the bundled pairs, by max_length


def _tokenized(tokenizer, max_length: int, source: str) -> datasets.DatasetDict:
    splits = {}
    for split, data in load_mrpc(source).items():
        rows = data[:]
        # One batched call instead of Dataset.map: no cache files and no progress bars.
        encoded = tokenizer(
            rows["sentence1"], rows["sentence2"], padding="max_length", truncation=True, max_length=max_length
        )
        columns = {
            name: encoded[name]
            for name in ("input_ids", "token_type_ids", "attention_mask")
            if name in encoded
        }
        columns["labels"] = rows["label"]
        ids = datasets.Sequence(datasets.Value("int32"))
        features = datasets.Features({name: ids for name in columns if name != "labels"})
        features["labels"] = data.features["label"]
        dataset = datasets.Dataset.from_dict(columns, features=features)
        dataset.set_format("torch")
        splits[split] = dataset
    return datasets.DatasetDict(splits)
