"""Make the course's bundled data: the MRPC-style sentence pairs and the tokenizer trained on them.

Writes `effitrain_lessons/course_data/{train,validation,test}.jsonl` and `tokenizer.json`, which the
package ships and `effitrain_lessons.shared.data` loads (the lessons only load them). The pairs come from a
small English grammar of companies, officials, numbers, places and times, drawn from one seed, so a
run always writes the same files, byte for byte (tests/test_data.py holds it):

    python tools/make_course_data.py              # rewrite the shipped files
    python tools/make_course_data.py --out DIR    # write them to DIR instead, to compare

Kept out of the package: a learner's kernel never needs the grammar, only what it made.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from effitrain_lessons.shared.data import SPLITS

COURSE_DATA = Path(__file__).resolve().parents[1] / "effitrain_lessons" / "course_data"
SIZES = dict(zip(SPLITS, (2400, 300, 300)))  # pairs per split, made in this order (one random stream)
_POSITIVE_SHARE = 0.66  # MRPC's train split has 68 % equivalent pairs
_SEED = 2024
_MAX_PAIR_WORDS = 29  # fits max_length=32 with [CLS] and two [SEP]
# ids 0 to 4, as data.load_tokenizer names them
_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


# ---------------------------------------------------------------------------
# The grammar. A "meaning" is a dict of slots; a "style" picks one wording of it.
# Equivalent pairs: one meaning, two wordings. Non-equivalent pairs: the meaning with
# one slot changed, worded either identically or differently, so that neither word
# overlap nor a single changed word gives the label away.
#
# Most changes reverse the meaning's polarity (a negation, bought/sold, rose/fell,
# cut/added, praised/criticized, arrested/released); the rest change an entity, a
# number, a place or a time. Every polarity has a common pole and a rare one, as in
# news (companies report buying more often than selling). That asymmetry is what makes
# the data learnable in a CPU minute: "are these two sentences the same?" is an
# equality test, which gives gradient descent from scratch no first-order signal, and
# a small BERT then sits at the majority baseline for thousands of steps. A rare pole
# in one sentence only is a signal it picks up at once, and from there it learns to
# compare the two sentences. Entity and number changes stay as the hard remainder.
# ---------------------------------------------------------------------------

_COMPANIES = (
    "Norcom",
    "Vantex",
    "Belltech",
    "Corvale",
    "Dynafield",
    "Halcyon",
    "Kestrel",
    "Lumora",
    "Maxtel",
    "Orbisco",
    "Pellmark",
    "Quantis",
    "Redwater",
    "Silverline",
    "Tarnwell",
    "Zentrix",
)
_PEOPLE = (
    "Senator Hale",
    "Senator Brandt",
    "Judge Moreno",
    "Judge Kowalski",
    "Mayor Lind",
    "Mayor Castillo",
    "Governor Park",
    "Governor Whitman",
    "Minister Okafor",
    "Chairman Reyes",
)
_PLACES = (
    "Chicago",
    "London",
    "Madrid",
    "Denver",
    "Seattle",
    "Boston",
    "Paris",
    "Tokyo",
    "Sydney",
    "Toronto",
    "Houston",
    "Berlin",
    "Atlanta",
    "Dublin",
    "Miami",
    "Oslo",
)
# Each time has its wordings; the first must read well at the start of a sentence.
_TIMES = (
    ("on Monday", "Monday"),
    ("on Tuesday", "Tuesday"),
    ("on Wednesday", "Wednesday"),
    ("on Thursday", "Thursday"),
    ("on Friday", "Friday"),
    ("last week", "a week ago"),
    ("last month", "a month ago"),
    ("last year", "a year ago"),
)
_NUMBER_WORDS = {
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
    10: "ten",
    11: "eleven",
    12: "twelve",
    15: "fifteen",
    20: "twenty",
    30: "thirty",
    40: "forty",
    50: "fifty",
}
_SMALL_NUMBERS = tuple(_NUMBER_WORDS)
_HUNDREDS = (200, 300, 400, 500, 600, 700, 800, 900)
_QUARTERS = ("first", "second", "third", "fourth")

# Verb senses with aligned wordings: past tense, base form (after "did not") and, where
# a passive reads well, past participle.
_STAKE_ACTIONS = {
    "buy": {"past": ("bought", "acquired", "purchased"), "base": ("buy", "acquire", "purchase")},
    "sell": {"past": ("sold", "divested"), "base": ("sell", "divest")},
}
_LEGAL_ACTIONS = {
    "sue": {
        "past": ("sued", "filed a lawsuit against"),
        "base": ("sue", "file a lawsuit against"),
        "pp": ("sued",),
    },
    "criticize": {
        "past": ("criticized", "condemned"),
        "base": ("criticize", "condemn"),
        "pp": ("criticized", "condemned"),
    },
    "praise": {
        "past": ("praised", "commended"),
        "base": ("praise", "commend"),
        "pp": ("praised", "commended"),
    },
    "meet": {"past": ("met with", "held talks with"), "base": ("meet with", "hold talks with"), "pp": ()},
}
_LEGAL_OPPOSITE = {"criticize": "praise", "praise": "criticize"}
_METRICS = {"profit": ("profit", "earnings", "net income"), "sales": ("sales", "revenue")}
_MOVES = {"up": ("rose", "climbed", "increased", "grew"), "down": ("fell", "dropped", "declined", "slipped")}
_JOB_ACTIONS = {"cut": ("cut", "eliminate"), "add": ("add", "create")}
_JOB_PARTICIPLES = {"cut": ("cut", "eliminated"), "add": ("added", "created")}
_POLICE_ACTIONS = {"arrest": ("arrested", "detained"), "release": ("released", "freed")}
# Share of meanings at the rare pole of a polarity, and share of non-equivalent pairs
# whose change is a polarity reversal.
_RARE_POLE = 0.1
_POLARITY_CHANGES = 0.8
_POLARITY_SLOTS = ("neg", "move", "action")


def _pick(style: dict, key: str, options):
    return options[style.get(key, 0) % len(options)]


def _number(value: int, style: dict, key: str = "numfmt") -> str:
    if value in _NUMBER_WORDS and _pick(style, key, [0, 1]):
        return _NUMBER_WORDS[value]
    if value >= 100 and _pick(style, key, [0, 1]):
        return _NUMBER_WORDS[value // 100] + " hundred"
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
    wordings = _TIMES[meaning["time"]]
    return wordings[0] if fronted else _pick(style, "time", wordings)


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[0].upper() + text[1:] + "."


def _render_stake(m: dict, style: dict) -> str:
    action = _STAKE_ACTIONS[m["action"]]
    share = _percent(m["n"], style)
    obj = _pick(style, "obj", [f"{share} of {m['b']}", f"{_a(share)} stake in {m['b']}"])
    past = _pick(style, "verb", action["past"])  # also the past participle for these verbs
    if m["neg"]:
        base = _pick(style, "verb", action["base"])
        verb, passive, reported = "did not " + base, "was not " + past, "had not " + past
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
    action = _LEGAL_ACTIONS[m["action"]]
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
    metric = _pick(style, "metric", _METRICS[m["metric"]])
    move = _pick(style, "verb", _MOVES[m["move"]])
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
    verb = _pick(style, "verb", _JOB_ACTIONS[m["action"]])
    participle = _pick(style, "verb", _JOB_PARTICIPLES[m["action"]])
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
    verb = _pick(style, "verb", _POLICE_ACTIONS[m["action"]])
    n = _number(m["n"], style)
    time = _time(m, style)
    forms = [
        f"Police in {m['place']} {verb} {n} people {time}",
        f"{n} people were {verb} in {m['place']} {time}, police said",
        f"{_time(m, style, True)}, police {verb} {n} people in {m['place']}",
        f"Police {verb} {n} people in {m['place']} {time}",
    ]
    return _sentence(_pick(style, "form", forms))


def _pole(rng: random.Random, common, rare):
    return rare if rng.random() < _RARE_POLE else common


def _new_stake(rng: random.Random) -> dict:
    a, b = rng.sample(_COMPANIES, 2)
    return {
        "kind": "stake",
        "a": a,
        "b": b,
        "action": _pole(rng, "buy", "sell"),
        "n": rng.choice(_SMALL_NUMBERS),
        "time": rng.randrange(len(_TIMES)),
        "neg": _pole(rng, False, True),
    }


def _new_legal(rng: random.Random) -> dict:
    a, b = rng.sample(_PEOPLE + _COMPANIES, 2)
    action = rng.choice(["sue", "meet", _pole(rng, "criticize", "praise")])
    return {
        "kind": "legal",
        "a": a,
        "b": b,
        "action": action,
        "place": rng.choice(_PLACES),
        "time": rng.randrange(len(_TIMES)),
        "neg": _pole(rng, False, True),
    }


def _new_earnings(rng: random.Random) -> dict:
    return {
        "kind": "earnings",
        "a": rng.choice(_COMPANIES),
        "metric": rng.choice(list(_METRICS)),
        "move": _pole(rng, "up", "down"),
        "n": rng.choice(_SMALL_NUMBERS),
        "quarter": rng.choice(_QUARTERS),
    }


def _new_jobs(rng: random.Random) -> dict:
    return {
        "kind": "jobs",
        "a": rng.choice(_COMPANIES),
        "action": _pole(rng, "cut", "add"),
        "n": rng.choice(_HUNDREDS),
        "place": rng.choice(_PLACES),
        "neg": _pole(rng, False, True),
    }


def _new_police(rng: random.Random) -> dict:
    return {
        "kind": "police",
        "action": _pole(rng, "arrest", "release"),
        "n": rng.choice(_SMALL_NUMBERS),
        "place": rng.choice(_PLACES),
        "time": rng.randrange(len(_TIMES)),
    }


_EVENTS = {
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
        pool = _COMPANIES if m["kind"] != "legal" else _PEOPLE + _COMPANIES
        changes.append(("a", lambda: _other(rng, pool, m["a"], m.get("b"))))
    if "b" in m:
        pool = _COMPANIES if m["kind"] == "stake" else _PEOPLE + _COMPANIES
        changes.append(("b", lambda: _other(rng, pool, m["a"], m["b"])))
        if m["action"] != "meet":  # meeting is symmetric: swapping roles keeps the meaning
            changes.append(("swap", None))
    if "n" in m:
        changes.append(
            ("n", lambda: _other(rng, _HUNDREDS if m["kind"] == "jobs" else _SMALL_NUMBERS, m["n"]))
        )
    if "neg" in m:
        changes.append(("neg", lambda: not m["neg"]))
    if "place" in m:
        changes.append(("place", lambda: _other(rng, _PLACES, m["place"])))
    if "time" in m:
        changes.append(("time", lambda: _other(rng, list(range(len(_TIMES))), m["time"])))
    if "quarter" in m:
        changes.append(("quarter", lambda: _other(rng, _QUARTERS, m["quarter"])))
    if "move" in m:
        changes.append(("move", lambda: _other(rng, list(_MOVES), m["move"])))
    if "metric" in m:
        changes.append(("metric", lambda: _other(rng, list(_METRICS), m["metric"])))
    if m["kind"] == "stake":
        changes.append(("action", lambda: _other(rng, list(_STAKE_ACTIONS), m["action"])))
    if m["kind"] == "jobs":
        changes.append(("action", lambda: _other(rng, list(_JOB_ACTIONS), m["action"])))
    if m["kind"] == "police":
        changes.append(("action", lambda: _other(rng, list(_POLICE_ACTIONS), m["action"])))
    if m.get("action") in _LEGAL_OPPOSITE:
        changes.append(("action", lambda: _LEGAL_OPPOSITE[m["action"]]))
    polarity = [change for change in changes if change[0] in _POLARITY_SLOTS]
    others = [change for change in changes if change[0] not in _POLARITY_SLOTS]
    slot, new = rng.choice(polarity if rng.random() < _POLARITY_CHANGES else others)
    changed = dict(m)
    if slot == "swap":
        changed["a"], changed["b"] = m["b"], m["a"]
    else:
        changed[slot] = new()
    return changed


_STYLE_KEYS = ("form", "verb", "obj", "numfmt", "pct", "time", "metric")


def _style(rng: random.Random) -> dict:
    return {key: rng.randrange(12) for key in _STYLE_KEYS}


def _restyle(style: dict, rng: random.Random) -> dict:
    """The same wording with one choice redrawn (a light rewording)."""
    style = dict(style)
    style[rng.choice(_STYLE_KEYS)] = rng.randrange(12)
    return style


def _words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _pair(label: int, rng: random.Random) -> tuple[str, str]:
    new, render = _EVENTS[rng.choice(list(_EVENTS))]
    meaning = new(rng)
    other = meaning if label else _change(meaning, rng)
    style1 = _style(rng)
    # Non-equivalent pairs are mostly reworded too, so that rewording is no clue to the
    # label; the rest keep the wording and differ only in the changed slot.
    wording = rng.random()
    if wording < 0.4:
        style2 = _style(rng)
    elif wording < 0.8 or label:
        style2 = _restyle(style1, rng)
    else:
        style2 = style1
    return render(meaning, style1), render(other, style2)


def generate_pairs(seed: int = _SEED) -> dict[str, list[dict]]:
    """Generate the bundled splits: lists of rows with sentence1, sentence2, label and idx."""
    rng = random.Random(seed)
    seen = set()
    splits = {}
    for split, size in SIZES.items():
        positives = round(size * _POSITIVE_SHARE)
        labels = [1] * positives + [0] * (size - positives)
        rng.shuffle(labels)
        rows = []
        for label in labels:
            while True:
                s1, s2 = _pair(label, rng)
                key = tuple(sorted((s1, s2)))
                # Equivalent pairs must be reworded; all pairs must fit max_length=32.
                if s1 != s2 and key not in seen and _words(s1) + _words(s2) <= _MAX_PAIR_WORDS:
                    break
            seen.add(key)
            rows.append({"idx": len(rows), "sentence1": s1, "sentence2": s2, "label": label})
        splits[split] = rows
    return splits


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def train_tokenizer(texts) -> Tokenizer:
    """Train a lowercasing BERT-style WordPiece tokenizer on an iterable of strings.

    Special tokens get ids [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4; pairs are encoded
    as [CLS] a [SEP] b [SEP] with token_type_ids 0 then 1. Every word of `texts` becomes one
    token (meant for small corpora such as the bundled data); other words are spelled with
    character pieces, and characters never seen become [UNK]. The same texts always give the
    same tokenizer. The lessons load the shipped one with `effitrain_lessons.shared.data.load_tokenizer()`.
    """
    texts = list(texts)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=30_000, special_tokens=list(_SPECIAL_TOKENS), show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # The trainer breaks ties between equally frequent pairs in hash order, so its
    # intermediate pieces (such as "##rcom") change from run to run. Keep what every run
    # learns, the characters and the whole words, in a fixed order: this script is then
    # reproducible, and every word of the bundled data is still one token.
    split = tokenizer.pre_tokenizer.pre_tokenize_str
    words = {word for text in texts for word, _ in split(tokenizer.normalizer.normalize_str(text))}
    learned = [token for token in tokenizer.get_vocab() if token not in _SPECIAL_TOKENS]
    kept = sorted(token for token in learned if len(token.removeprefix("##")) == 1 or token in words)
    vocab = {token: i for i, token in enumerate(_SPECIAL_TOKENS + tuple(kept))}
    tokenizer.model = models.WordPiece(vocab, unk_token="[UNK]")
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def write_course_data(folder: Path) -> dict[str, list[dict]]:
    """Write the three splits and the tokenizer into `folder`; return the splits."""
    splits = generate_pairs()
    for split, rows in splits.items():
        (folder / f"{split}.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    texts = [row[column] for row in splits["train"] for column in ("sentence1", "sentence2")]
    train_tokenizer(texts).save(str(folder / "tokenizer.json"))
    return splits


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description="Make the course's bundled paraphrase data and its tokenizer."
    )
    parser.add_argument(
        "--out", type=Path, default=COURSE_DATA, help="the folder to write (default: the package's)"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    splits = write_course_data(args.out)
    for split, rows in splits.items():
        share = sum(row["label"] for row in rows) / len(rows)
        print(f"{split}: {len(rows)} pairs, {share:.0%} equivalent")
    vocabulary = json.loads((args.out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    print(f"tokenizer: {len(vocabulary)} tokens, in {args.out}")


if __name__ == "__main__":
    main()
