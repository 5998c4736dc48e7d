"""The lessons' data: an MRPC-style paraphrase task that works offline, and its tokenizer.

Every lesson trains a model to decide whether two news-like sentences say the same thing,
the task of GLUE's MRPC (Microsoft Research Paraphrase Corpus). The real MRPC needs a
network, so the package ships its own pairs in `course_data/` (one JSONL file per split,
readable in any text editor) and a WordPiece tokenizer trained on them. Both are made by
this module: `python -m effitrain_lessons.data --rebuild` regenerates them, always
identically, from a small English grammar of companies, officials, numbers, places and times.

Used by every lesson: `load_mrpc` to look at the data, `tokenized_mrpc` to train on it,
`load_tokenizer` (also through `models.tiny_bert`) to read and write token ids.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from importlib.resources import files
from pathlib import Path

import datasets
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

SOURCES = ("bundled", "hub")
SPLITS = {"train": 2400, "validation": 300, "test": 300}
POSITIVE_SHARE = 0.66  # MRPC's train split has 68 % equivalent pairs
SEED = 2024
MAX_PAIR_WORDS = 29  # 32 tokens minus [CLS] and two [SEP]
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LABEL_NAMES = ["not_equivalent", "equivalent"]
FEATURES = datasets.Features(
    {
        "sentence1": datasets.Value("string"),
        "sentence2": datasets.Value("string"),
        "label": datasets.ClassLabel(names=LABEL_NAMES),
        "idx": datasets.Value("int32"),
    }
)


def _data_dir() -> Path:
    return Path(str(files("effitrain_lessons") / "course_data"))


# ---------------------------------------------------------------------------
# The grammar. A "meaning" is a dict of slots; a "style" picks one wording of it.
# Equivalent pairs: one meaning, two wordings. Non-equivalent pairs: the meaning
# with one slot changed (entity, number, negation, roles, place, time, direction),
# worded either identically or differently, so that neither word overlap nor a
# single changed word gives the label away.
# ---------------------------------------------------------------------------

COMPANIES = [
    "Norcom", "Vantex", "Belltech", "Corvale", "Dynafield", "Halcyon", "Kestrel", "Lumora",
    "Maxtel", "Orbisco", "Pellmark", "Quantis", "Redwater", "Silverline", "Tarnwell", "Zentrix",
]
PEOPLE = [
    "Senator Hale", "Senator Brandt", "Judge Moreno", "Judge Kowalski", "Mayor Lind",
    "Mayor Castillo", "Governor Park", "Governor Whitman", "Minister Okafor", "Chairman Reyes",
]
PLACES = [
    "Chicago", "London", "Madrid", "Denver", "Seattle", "Boston", "Paris", "Tokyo",
    "Sydney", "Toronto", "Houston", "Berlin", "Atlanta", "Dublin", "Miami", "Oslo",
]
# Each time has its wordings; the first must read well after a comma at the start.
TIMES = [
    ["on Monday", "Monday"], ["on Tuesday", "Tuesday"], ["on Wednesday", "Wednesday"],
    ["on Thursday", "Thursday"], ["on Friday", "Friday"],
    ["last week", "a week ago"], ["last month", "a month ago"], ["last year", "a year ago"],
]
NUMBER_WORDS = {
    2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
    10: "ten", 11: "eleven", 12: "twelve", 15: "fifteen", 20: "twenty", 30: "thirty",
    40: "forty", 50: "fifty",
}
HUNDREDS = [200, 300, 400, 500, 600, 700, 800, 900]
QUARTERS = ["first", "second", "third", "fourth"]

# Verb senses: past tense wordings, base forms (after "did not") and past participles
# (for the passive). The passive is only offered for one-word wordings.
BUY = {"past": ["bought", "acquired", "purchased"], "base": ["buy", "acquire", "purchase"]}
STAKE_ACTIONS = {"buy": BUY, "sell": {"past": ["sold", "divested"], "base": ["sell", "divest"]}}
LEGAL_ACTIONS = {
    "sue": {"past": ["sued", "filed a lawsuit against"], "base": ["sue", "file a lawsuit against"], "pp": ["sued"]},
    "criticize": {"past": ["criticized", "condemned"], "base": ["criticize", "condemn"], "pp": ["criticized", "condemned"]},
    "praise": {"past": ["praised", "commended"], "base": ["praise", "commend"], "pp": ["praised", "commended"]},
    "meet": {"past": ["met with", "held talks with"], "base": ["meet with", "hold talks with"], "pp": []},
}
LEGAL_OPPOSITE = {"criticize": "praise", "praise": "criticize"}
METRICS = {"profit": ["profit", "earnings", "net income"], "sales": ["sales", "revenue"]}
MOVES = {"up": ["rose", "climbed", "increased", "grew"], "down": ["fell", "dropped", "declined", "slipped"]}
JOB_ACTIONS = {"cut": ["cut", "eliminate"], "add": ["add", "create"]}
JOB_PARTICIPLES = {"cut": ["cut", "eliminated"], "add": ["added", "created"]}
POLICE_ACTIONS = ["arrested", "detained"]


def _pick(style: dict, key: str, options: list):
    return options[style.get(key, 0) % len(options)]


def _number(value: int, style: dict, key: str = "numfmt") -> str:
    if value in NUMBER_WORDS and _pick(style, key, [0, 1]):
        return NUMBER_WORDS[value]
    if value >= 100 and _pick(style, key, [0, 1]):
        return NUMBER_WORDS[value // 100] + " hundred"
    return str(value)


def _percent(value: int, style: dict) -> str:
    number = _number(value, style)
    if number.isdigit():
        return number + _pick(style, "pct", [" percent", "%"])
    return number + " percent"


def _a(phrase: str) -> str:
    # "an eight percent stake", "an 11% stake"
    return ("an " if phrase.startswith(("e", "8", "11")) else "a ") + phrase


def _time(meaning: dict, style: dict, fronted: bool = False) -> str:
    wordings = TIMES[meaning["time"]]
    return wordings[0] if fronted else _pick(style, "time", wordings)


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[0].upper() + text[1:] + "."


def _render_stake(m: dict, style: dict) -> str:
    action = STAKE_ACTIONS[m["action"]]
    obj = _pick(style, "obj", [f"{_percent(m['n'], style)} of {m['b']}", f"{_a(_percent(m['n'], style))} stake in {m['b']}"])
    past = _pick(style, "verb", action["past"])  # also the past participle for these verbs
    if m["neg"]:
        verb, passive, reported = "did not " + _pick(style, "verb", action["base"]), "was not " + past, "had not " + past
    else:
        verb, passive, reported = past, "was " + past, past
    time = _time(m, style)
    forms = [
        f"{m['a']} {verb} {obj} {time}",
        f"{_time(m, style, True)}, {m['a']} {verb} {obj}",
        f"{obj} {passive} by {m['a']} {time}",
        f"{m['a']} said it {reported} {obj} {time}",
    ]
    return _sentence(_pick(style, "form", forms))


def _render_legal(m: dict, style: dict) -> str:
    action = LEGAL_ACTIONS[m["action"]]
    if m["neg"]:
        verb = "did not " + _pick(style, "verb", action["base"])
    else:
        verb = _pick(style, "verb", action["past"])
    forms = [
        f"{m['a']} {verb} {m['b']} in {m['place']} {_time(m, style)}",
        f"In {m['place']}, {m['a']} {verb} {m['b']} {_time(m, style)}",
        f"{_time(m, style, True)}, {m['a']} {verb} {m['b']} in {m['place']}",
    ]
    if action["pp"]:
        pp = ("was not " if m["neg"] else "was ") + _pick(style, "verb", action["pp"])
        forms.append(f"{m['b']} {pp} by {m['a']} in {m['place']} {_time(m, style)}")
    return _sentence(_pick(style, "form", forms))


def _render_earnings(m: dict, style: dict) -> str:
    metric = _pick(style, "metric", METRICS[m["metric"]])
    move = _pick(style, "verb", MOVES[m["move"]])
    pct = _percent(m["n"], style)
    q = m["quarter"]
    forms = [
        f"{m['a']} said its {q} quarter {metric} {move} {pct}",
        f"{m['a']}'s {metric} {move} {pct} in the {q} quarter",
        f"{metric} at {m['a']} {move} {pct} in the {q} quarter",
        f"In the {q} quarter, {metric} at {m['a']} {move} {pct}",
    ]
    return _sentence(_pick(style, "form", forms))


def _render_jobs(m: dict, style: dict) -> str:
    verb = _pick(style, "verb", JOB_ACTIONS[m["action"]])
    participle = _pick(style, "verb", JOB_PARTICIPLES[m["action"]])
    will = "will not" if m["neg"] else "will"
    n = _number(m["n"], style)
    forms = [
        f"{m['a']} {will} {verb} {n} jobs in {m['place']}",
        f"{m['a']} said it {will.replace('will', 'would')} {verb} {n} jobs in {m['place']}",
        f"{n} jobs in {m['place']} {will} be {participle} by {m['a']}",
        f"In {m['place']}, {m['a']} {will} {verb} {n} jobs",
    ]
    return _sentence(_pick(style, "form", forms))


def _render_police(m: dict, style: dict) -> str:
    verb = _pick(style, "verb", POLICE_ACTIONS)
    n = _number(m["n"], style)
    time = _time(m, style)
    forms = [
        f"Police in {m['place']} {verb} {n} people {time}",
        f"{n} people were {verb} in {m['place']} {time}, police said",
        f"{_time(m, style, True)}, police {verb} {n} people in {m['place']}",
        f"Police {verb} {n} people in {m['place']} {time}",
    ]
    return _sentence(_pick(style, "form", forms))


def _new_stake(rng: random.Random) -> dict:
    a, b = rng.sample(COMPANIES, 2)
    return {"kind": "stake", "a": a, "b": b, "action": rng.choice(["buy", "buy", "sell"]),
            "n": rng.choice(list(NUMBER_WORDS)), "time": rng.randrange(len(TIMES)), "neg": rng.random() < 0.15}


def _new_legal(rng: random.Random) -> dict:
    a, b = rng.sample(PEOPLE + COMPANIES, 2)
    return {"kind": "legal", "a": a, "b": b, "action": rng.choice(list(LEGAL_ACTIONS)),
            "place": rng.choice(PLACES), "time": rng.randrange(len(TIMES)), "neg": rng.random() < 0.15}


def _new_earnings(rng: random.Random) -> dict:
    return {"kind": "earnings", "a": rng.choice(COMPANIES), "metric": rng.choice(list(METRICS)),
            "move": rng.choice(list(MOVES)), "n": rng.choice(list(NUMBER_WORDS)), "quarter": rng.choice(QUARTERS)}


def _new_jobs(rng: random.Random) -> dict:
    return {"kind": "jobs", "a": rng.choice(COMPANIES), "action": rng.choice(list(JOB_ACTIONS)),
            "n": rng.choice(HUNDREDS), "place": rng.choice(PLACES), "neg": rng.random() < 0.15}


def _new_police(rng: random.Random) -> dict:
    return {"kind": "police", "n": rng.choice(list(NUMBER_WORDS)), "place": rng.choice(PLACES),
            "time": rng.randrange(len(TIMES))}


EVENTS = {
    "stake": (_new_stake, _render_stake),
    "legal": (_new_legal, _render_legal),
    "earnings": (_new_earnings, _render_earnings),
    "jobs": (_new_jobs, _render_jobs),
    "police": (_new_police, _render_police),
}


def _other(rng: random.Random, options: list, *avoid):
    return rng.choice([o for o in options if o not in avoid])


def _change(m: dict, rng: random.Random) -> dict:
    """The meaning with one slot changed so that the sentences are no longer equivalent."""
    changes = []
    if "a" in m:
        pool = COMPANIES if m["kind"] != "legal" else PEOPLE + COMPANIES
        changes.append(("a", lambda: _other(rng, pool, m["a"], m.get("b"))))
    if "b" in m:
        pool = COMPANIES if m["kind"] == "stake" else PEOPLE + COMPANIES
        changes.append(("b", lambda: _other(rng, pool, m["a"], m["b"])))
        if m["action"] != "meet":  # meeting is symmetric: swapping roles keeps the meaning
            changes.append(("swap", None))
    if "n" in m:
        changes.append(("n", lambda: _other(rng, HUNDREDS if m["kind"] == "jobs" else list(NUMBER_WORDS), m["n"])))
    if "neg" in m:
        changes.append(("neg", lambda: not m["neg"]))
    if "place" in m:
        changes.append(("place", lambda: _other(rng, PLACES, m["place"])))
    if "time" in m:
        changes.append(("time", lambda: _other(rng, list(range(len(TIMES))), m["time"])))
    if "quarter" in m:
        changes.append(("quarter", lambda: _other(rng, QUARTERS, m["quarter"])))
    if "move" in m:
        changes.append(("move", lambda: _other(rng, list(MOVES), m["move"])))
    if "metric" in m:
        changes.append(("metric", lambda: _other(rng, list(METRICS), m["metric"])))
    if m["kind"] == "stake":
        changes.append(("action", lambda: _other(rng, list(STAKE_ACTIONS), m["action"])))
    if m["kind"] == "jobs":
        changes.append(("action", lambda: _other(rng, list(JOB_ACTIONS), m["action"])))
    if m.get("action") in LEGAL_OPPOSITE:
        changes.append(("action", lambda: LEGAL_OPPOSITE[m["action"]]))
    slot, new = rng.choice(changes)
    changed = dict(m)
    if slot == "swap":
        changed["a"], changed["b"] = m["b"], m["a"]
    else:
        changed[slot] = new()
    return changed


STYLE_KEYS = ("form", "verb", "obj", "numfmt", "pct", "time", "metric")


def _style(rng: random.Random) -> dict:
    return {key: rng.randrange(12) for key in STYLE_KEYS}


def _restyle(style: dict, rng: random.Random) -> dict:
    """The same wording with one choice redrawn (a light rewording)."""
    style = dict(style)
    style[rng.choice(STYLE_KEYS)] = rng.randrange(12)
    return style


def _words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _pair(label: int, rng: random.Random) -> tuple[str, str]:
    new, render = EVENTS[rng.choice(list(EVENTS))]
    meaning = new(rng)
    other = meaning if label else _change(meaning, rng)
    style1 = _style(rng)
    wording = rng.random()
    if wording < 0.4:
        style2 = _style(rng)
    elif wording < 0.8 or label:
        style2 = _restyle(style1, rng)
    else:
        style2 = style1
    return render(meaning, style1), render(other, style2)


def _generate_pairs(seed: int = SEED) -> dict[str, list[dict]]:
    """Generate the bundled splits: lists of rows with sentence1, sentence2, label and idx."""
    rng = random.Random(seed)
    seen = set()
    splits = {}
    for split, size in SPLITS.items():
        positives = round(size * POSITIVE_SHARE)
        labels = [1] * positives + [0] * (size - positives)
        rng.shuffle(labels)
        rows = []
        for label in labels:
            while True:
                s1, s2 = _pair(label, rng)
                key = tuple(sorted((s1, s2)))
                # Equivalent pairs must be reworded; all pairs must fit max_length=32.
                if s1 != s2 and key not in seen and _words(s1) + _words(s2) <= MAX_PAIR_WORDS:
                    break
            seen.add(key)
            rows.append({"idx": len(rows), "sentence1": s1, "sentence2": s2, "label": label})
        splits[split] = rows
    return splits


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_mrpc(source: str = "bundled") -> datasets.DatasetDict:
    """MRPC-style paraphrase pairs: splits train/validation/test with GLUE MRPC's columns.

    Columns: `sentence1`, `sentence2`, `label` (0 = not_equivalent, 1 = equivalent) and `idx`.
    `source="bundled"` (default) reads the course's own 3,000 pairs shipped with the package
    (works offline); `source="hub"` downloads the real GLUE MRPC (needs a network).
    Used by every lesson.
    """
    if source == "hub":
        return _load_hub()
    if source != "bundled":
        raise ValueError(f"Unknown source {source!r}: use source=\"bundled\" or source=\"hub\".")
    folder = _data_dir()
    splits = {}
    for split in SPLITS:
        lines = (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines]
        columns = {name: [row[name] for row in rows] for name in FEATURES}
        splits[split] = datasets.Dataset.from_dict(columns, features=FEATURES)
    return datasets.DatasetDict(splits)


def _offline_requested() -> bool:
    # Read at call time: the libraries read these variables only when first imported.
    flags = [os.environ.get(name, "") for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")]
    return any(flag.strip().upper() in {"1", "ON", "YES", "TRUE"} for flag in flags)


def _hub_reachable(timeout: float = 3.0) -> bool:
    # One quick request; left to itself, `load_dataset` retries for about 25 s when offline.
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)
    except Exception:
        return False
    return True


def _load_hub() -> datasets.DatasetDict:
    unreachable = RuntimeError(
        "Could not reach the Hugging Face Hub to download GLUE MRPC; "
        'use load_mrpc(source="bundled") for the course\'s offline paraphrase data.'
    )
    # In offline mode set before `datasets` was imported, it can still load a cached copy.
    if not datasets.config.HF_HUB_OFFLINE and (_offline_requested() or not _hub_reachable()):
        raise unreachable
    try:
        return datasets.load_dataset("nyu-mll/glue", "mrpc")
    except (ConnectionError, OSError, TimeoutError):
        raise unreachable from None


def train_tokenizer(texts, vocab_size: int = 1000) -> Tokenizer:
    """Train a lowercasing BERT-style WordPiece tokenizer on an iterable of strings.

    Special tokens get ids [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4. Used by
    `python -m effitrain_lessons.data --rebuild`; lessons load the shipped result with
    `load_tokenizer()`.
    """
    texts = list(texts)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # The trainer breaks ties between equally frequent pairs in hash order, so its
    # intermediate pieces (such as "##rcom") change from run to run. Keep what every run
    # learns, the characters and the whole words, in a fixed order: --rebuild is then
    # reproducible, and every word of the bundled data is still one token.
    words = {word for text in texts for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(text))}
    learned = [token for token in tokenizer.get_vocab() if token not in SPECIAL_TOKENS]
    kept = sorted(token for token in learned if len(token.removeprefix("##")) == 1 or token in words)
    tokenizer.model = models.WordPiece({token: i for i, token in enumerate(SPECIAL_TOKENS + kept)}, unk_token="[UNK]")
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def load_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """The course tokenizer (WordPiece, lowercasing, vocabulary of the bundled data).

    Read fresh from the shipped `course_data/tokenizer.json` on every call (milliseconds),
    so changing one copy never affects another. Pads with [PAD] (id 0), at most 128 tokens.
    Used by every lesson, and by `models.tiny_bert` for its vocabulary size.
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
    bundled pairs all fit in 32 tokens. `tokenizer` defaults to `load_tokenizer()`.
    Used by every lesson that trains.
    """
    if source not in SOURCES:
        raise ValueError(f"Unknown source {source!r}: use source=\"bundled\" or source=\"hub\".")
    if not isinstance(max_length, int) or max_length < 8:
        raise ValueError(f"max_length must be a whole number of at least 8 tokens, got {max_length!r}.")
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    raw = load_mrpc(source)
    splits = {}
    for split, data in raw.items():
        rows = data[:]
        encoded = tokenizer(
            rows["sentence1"], rows["sentence2"], padding="max_length", truncation=True, max_length=max_length
        )
        columns = {name: encoded[name] for name in ("input_ids", "token_type_ids", "attention_mask") if name in encoded}
        columns["labels"] = rows["label"]
        dataset = datasets.Dataset.from_dict(columns)
        dataset.set_format("torch")
        splits[split] = dataset
    return datasets.DatasetDict(splits)


def _rebuild(folder: Path) -> None:
    splits = _generate_pairs()
    for split, rows in splits.items():
        (folder / f"{split}.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    texts = [row[column] for row in splits["train"] for column in ("sentence1", "sentence2")]
    train_tokenizer(texts).save(str(folder / "tokenizer.json"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="The course's bundled paraphrase data and tokenizer.")
    parser.add_argument("--rebuild", action="store_true", help="regenerate the files in course_data/")
    args = parser.parse_args(argv)
    if args.rebuild:
        _rebuild(_data_dir())
    for split, data in load_mrpc().items():
        share = sum(data["label"]) / len(data)
        print(f"{split}: {len(data)} pairs, {share:.0%} equivalent")
    print(f"tokenizer: {len(load_tokenizer())} tokens")


if __name__ == "__main__":
    main()
