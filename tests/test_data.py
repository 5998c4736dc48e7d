"""Tests for effitrain_lessons.shared.data: the bundled MRPC-style data, its tokenizer and the
model-ready splits.

All offline and fast: nothing here needs a network or trains for more than one step.
"""

import importlib.util
import json
import math
import re
import time
from pathlib import Path

import datasets
import pytest
import torch

from effitrain_lessons.shared import data, hub, models

SIZES = {"train": 2400, "validation": 300, "test": 300}
SHIPPED = data._data_dir()
TOOL = Path(__file__).resolve().parents[1] / "tools" / "make_course_data.py"


@pytest.fixture(scope="module")
def make_course_data():
    """tools/make_course_data.py, the script that makes the shipped files (it is not in the package)."""
    spec = importlib.util.spec_from_file_location("make_course_data", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mrpc():
    return data.load_mrpc()


@pytest.fixture(scope="module")
def tokenizer():
    return data.load_tokenizer()


@pytest.fixture(scope="module")
def tokenized():
    return data.tokenized_mrpc()


def pairs(split):
    rows = split[:]
    return list(zip(rows["sentence1"], rows["sentence2"]))


# --- schema -----------------------------------------------------------------


def test_splits_columns_and_features(mrpc):
    assert list(mrpc) == ["train", "validation", "test"]
    for name, split in mrpc.items():
        assert split.column_names == ["sentence1", "sentence2", "label", "idx"]
        assert split.features["sentence1"] == datasets.Value("string")
        assert split.features["sentence2"] == datasets.Value("string")
        assert split.features["label"].names == ["not_equivalent", "equivalent"]
        assert split.features["idx"] == datasets.Value("int32")
        assert len(split) == SIZES[name]
        assert split[:]["idx"] == list(range(len(split)))


def test_label_balance_like_mrpc_in_every_split(mrpc):
    for split in mrpc.values():
        share = sum(split[:]["label"]) / len(split)
        assert 0.60 <= share <= 0.68


def test_bundled_data_skips_the_hf_cache(mrpc):
    assert all(split.cache_files == [] for split in mrpc.values())


# --- determinism --------------------------------------------------------------


RARE_WORDS = set(
    "sold divested sell divest not fell dropped declined slipped add create added created "
    "praised commended praise commend released freed".split()
)


def test_rare_pole_cues_are_as_documented(mrpc):
    """load_mrpc's docstring: a rare-word rule scores 0.84, the one-sentence-only rule 0.93."""
    rows = mrpc["validation"][:]
    words = [
        [set(re.findall(r"\w+", sentence.lower())) & RARE_WORDS for sentence in pair]
        for pair in zip(rows["sentence1"], rows["sentence2"])
    ]
    labels = rows["label"]
    anywhere = sum(bool(a | b) == (label == 0) for (a, b), label in zip(words, labels)) / len(labels)
    one_only = sum((bool(a) != bool(b)) == (label == 0) for (a, b), label in zip(words, labels)) / len(labels)
    assert anywhere == pytest.approx(0.84, abs=0.015)
    assert one_only == pytest.approx(0.93, abs=0.015)
    # Equivalent pairs share their polarity: a rare word in one sentence only marks a change.
    assert all(bool(a) == bool(b) for (a, b), label in zip(words, labels) if label == 1)


def test_the_tool_reproduces_the_shipped_files(make_course_data, tmp_path):
    make_course_data.main(["--out", str(tmp_path)])
    for name in ["train.jsonl", "validation.jsonl", "test.jsonl"]:
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name
    # Compared as JSON, not bytes, so that a new `tokenizers` release may format it differently.
    rebuilt, shipped = (json.loads((folder / "tokenizer.json").read_text()) for folder in (tmp_path, SHIPPED))
    assert rebuilt == shipped


def test_two_loads_are_equal(mrpc):
    again = data.load_mrpc()
    for name in mrpc:
        assert again[name][:] == mrpc[name][:]


def test_no_pair_in_two_splits_and_no_identical_sentences(mrpc):
    seen = {}
    for name, split in mrpc.items():
        for s1, s2 in pairs(split):
            assert s1 != s2
            key = tuple(sorted((s1, s2)))
            assert seen.setdefault(key, name) == name, f"{key} is in {seen[key]} and {name}"


def test_shipped_jsonl_is_readable(mrpc):
    first = json.loads((SHIPPED / "train.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first == {**mrpc["train"][0], "idx": 0}


# --- tokenizer ----------------------------------------------------------------


def test_round_trip_gives_lowercased_text(mrpc, tokenizer):
    sentences = [s for pair in pairs(mrpc["validation"])[:40] for s in pair]
    for text in sentences:
        decoded = tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True)
        # The decoder rejoins words; only "'s" and "%" keep a space in front.
        if "'" not in text and "%" not in text:
            assert decoded == text.lower()
        assert decoded.replace(" ", "") == text.lower().replace(" ", "")


def test_pair_encoding_is_bert_style(tokenizer):
    encoded = tokenizer("Norcom bought Vantex.", "Vantex was sold.")
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert tokens == [
        "[CLS]",
        "norcom",
        "bought",
        "vantex",
        ".",
        "[SEP]",
        "vantex",
        "was",
        "sold",
        ".",
        "[SEP]",
    ]
    assert encoded["token_type_ids"] == [0] * 6 + [1] * 5
    assert encoded["attention_mask"] == [1] * 11


def test_special_tokens_and_unknown_characters(tokenizer):
    assert tokenizer.pad_token_id == 0
    assert tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [0, 1, 2, 3, 4]
    assert tokenizer.model_max_length == 128
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("Norcom ☃ 東")["input_ids"])
    assert tokens == ["[CLS]", "norcom", "[UNK]", "[UNK]", "[SEP]"]


def test_len_matches_the_shipped_vocabulary(tokenizer):
    vocab = json.loads((SHIPPED / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    assert len(tokenizer) == len(vocab) == max(vocab.values()) + 1


def test_every_bundled_word_is_one_token(mrpc, tokenizer):
    vocab = tokenizer.get_vocab()
    for s1, s2 in pairs(mrpc["train"])[:200]:
        assert all(not token.startswith("##") for token in tokenizer.tokenize(s1 + " " + s2))
    assert "[UNK]" not in tokenizer.convert_ids_to_tokens(range(5, len(vocab)))


def test_retraining_gives_the_shipped_tokenizer(make_course_data, mrpc):
    texts = [s for pair in pairs(mrpc["train"]) for s in pair]
    retrained = json.loads(make_course_data.train_tokenizer(texts).to_str())
    shipped = json.loads((SHIPPED / "tokenizer.json").read_text(encoding="utf-8"))
    assert retrained["model"]["vocab"] == shipped["model"]["vocab"]
    assert retrained == shipped


def test_loading_is_fresh_and_fast():
    start = time.perf_counter()
    first = data.load_tokenizer()
    assert time.perf_counter() - start < 2
    first.add_tokens(["zzz-new-token"])
    assert len(data.load_tokenizer()) == len(first) - 1


# --- tokenized_mrpc -------------------------------------------------------------


def test_tokenized_shapes_and_types(tokenized):
    for name, split in tokenized.items():
        assert split.column_names == ["input_ids", "token_type_ids", "attention_mask", "labels"]
        batch = split[:]
        for column in ["input_ids", "token_type_ids", "attention_mask"]:
            assert isinstance(batch[column], torch.Tensor)
            assert batch[column].shape == (SIZES[name], 32)
        assert batch["labels"].shape == (SIZES[name],)
        assert set(batch["labels"].tolist()) == {0, 1}


def test_no_bundled_pair_is_truncated_at_32(mrpc, tokenizer, tokenized):
    for name, split in mrpc.items():
        rows = split[:]
        lengths = [len(ids) for ids in tokenizer(rows["sentence1"], rows["sentence2"])["input_ids"]]
        assert max(lengths) <= 32
        used = tokenized[name][:]["attention_mask"].sum(dim=1).tolist()
        assert used == lengths


def test_tokenized_other_max_length(tokenizer):
    split = data.tokenized_mrpc(tokenizer, max_length=48)["validation"]
    assert split[:4]["input_ids"].shape == (4, 48)


def test_tiny_bert_forward_backward(tokenized):
    torch.manual_seed(0)
    model = models.tiny_bert()
    batch = tokenized["train"][:8]
    loss = model(**batch).loss
    assert math.isfinite(loss.item())
    loss.backward()
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            assert parameter.grad is not None, name
            assert torch.isfinite(parameter.grad).all(), name


# --- errors -------------------------------------------------------------------


def test_unknown_source_is_a_clear_error():
    with pytest.raises(ValueError, match=r'Unknown source .*source="bundled" or source="hub"'):
        data.load_mrpc("glue")
    with pytest.raises(ValueError, match=r"Unknown source"):
        data.tokenized_mrpc(source="local")


@pytest.mark.parametrize("max_length", [4, 0, -1, 7.5, "32", True])
def test_bad_max_length_is_a_clear_error(max_length):
    with pytest.raises(ValueError, match="max_length must be a whole number of tokens, at least 8"):
        data.tokenized_mrpc(max_length=max_length)


def test_hub_offline_mode_fails_fast_with_one_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(
        RuntimeError, match=r'Hugging Face Hub.*use load_mrpc\(source="bundled"\) instead\.$'
    ) as error:
        data.load_mrpc("hub")
    assert time.perf_counter() - start < 5
    assert error.value.__cause__ is None and error.value.__context__ is None


def test_hub_unreachable_fails_with_one_sentence(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(RuntimeError, match=r'no network connection.*source="bundled"'):
        data.load_mrpc("hub")


def test_hub_download_error_becomes_one_sentence(monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    expected = r'\(ConnectionError\): use load_mrpc\(source="bundled"\) instead\.$'
    with pytest.raises(RuntimeError, match=expected) as error:
        data.load_mrpc("hub")
    assert error.value.__suppress_context__


def test_the_bundled_pairs_are_tokenized_once_per_process(monkeypatch):
    first = data.tokenized_mrpc()
    monkeypatch.setattr(data, "load_tokenizer", lambda: pytest.fail("tokenized again"))
    again = data.tokenized_mrpc()
    assert again is not first and again["train"] is first["train"]  # a new dict, the same rows
    assert list(again) == list(first) and again["train"].format["type"] == "torch"
