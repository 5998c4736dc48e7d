"""A graded case judged on plain data: what the learner's answer produced against what the
instructor's solution produced, compared where the learner's code cannot reach.

A test cell of a lesson master has three parts, marked by two statements:

    out = checkpointed_block(x_test)                  # 1. beside the answer: call it, measure it
    got = {"kind": type(out).__name__, "out": out}
    want = {}                                         # 2. the reference, from lesson code only
    want["out"] = block(x_test)
    got, want = plain(got), plain(want)               # 3. the judgement, on plain data only
    assert got["kind"] == "Tensor", phrase("...")
    assert close(got["out"], want["out"]), phrase("...")

In a notebook (`grader.check`) and in otter's autograder the three parts run one after the other, in
the learner's kernel: a learner checks their own work. `effitrain grade` splits them (`split_case`):
part 1 runs in the learner's sandbox and sends back `got` as plain data (`encode`); parts 1 and 2 run
once with the instructor's solution edition, in a sandbox of their own, and give `want`; part 3 runs
in the grader, on what `decode` read. The learner's process never sees part 2 or 3, nor `want`.

So part 2 must not use a name the learner's answer defines (in a notebook it would compare the
answer with itself), and part 3 uses only `got`, `want`, `plain`, `close`, `finite`, `phrase`,
`check_prediction`, `math`, `np` and the built-ins. A NaN or an infinity is never a right number:
`close` and `check_prediction` say so, and a judgement that compares numbers itself (`<=`, `max`,
`min`) first asks `finite`: Python's `max` and `min` keep an earlier value over a later NaN, and
`x >= 0` holds for an infinity.

Plain data is None, booleans, whole and real numbers, strings, lists, dicts with string keys and
NumPy arrays of numbers (tensors become arrays). Anything else becomes an `Opaque` that says only its
type's name: a judgement compares kinds, never trusts an object.
"""

from __future__ import annotations

import ast
import base64
import json
import math
import sys
from dataclasses import dataclass

import numpy as np

REFERENCE = "want = {}"
JUDGEMENT = "got, want = plain(got), plain(want)"
MAX_BYTES = 900_000  # one case's data, encoded (a report message is at most 1 MiB)
MAX_ITEMS = 100_000  # numbers in arrays, and entries of lists and dicts, in one case's data
MAX_DEPTH = 8
MAX_CHARS = 2_000  # one string
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64")


@dataclass(frozen=True)
class Opaque:
    """An object that is not plain data, known only by its type's name."""

    kind: str


class TooBig(ValueError):
    """The data is over the limits a case's data may have."""


def plain(value, _depth: int = 0, _budget: list | None = None):
    """`value` as plain data (see the module's docstring); idempotent."""
    budget = [MAX_ITEMS] if _budget is None else _budget
    if _depth > MAX_DEPTH:
        raise TooBig("nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, int, str, Opaque):
        if kind is str and len(value) > MAX_CHARS:
            raise TooBig("a string is too long")
        return value
    if kind is float:
        return value
    if kind in (list, tuple):
        _spend(budget, len(value))
        return [plain(item, _depth + 1, budget) for item in value]
    if kind is dict:
        _spend(budget, len(value))
        if not all(type(key) is str for key in value):
            return Opaque("dict with keys that are not strings")
        return {key: plain(item, _depth + 1, budget) for key, item in value.items()}
    if kind is np.ndarray:
        if value.dtype.name not in DTYPES:
            if value.dtype.kind == "f":
                value = value.astype(np.float32)
            else:
                return Opaque(f"array of {value.dtype.name}")
        _spend(budget, value.size)
        return value
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return plain(value.item(), _depth, budget)
    tensor = _as_array(value)
    if tensor is not None:
        return plain(tensor, _depth, budget)
    return Opaque(kind.__name__ if type(kind) is type else "object")


def _spend(budget: list, n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise TooBig(f"more than {MAX_ITEMS:,} items")


def _as_array(value):
    """A tensor's values as a NumPy array; None for anything that is not a tensor."""
    torch = sys.modules.get("torch")  # a learner who never imported torch returned no tensor
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    tensor = value.detach().cpu()
    if tensor.is_floating_point() and tensor.dtype not in (torch.float32, torch.float64):
        tensor = tensor.float()
    if tensor.is_complex() or tensor.dtype == torch.uint16:
        return None
    return tensor.numpy(force=True).copy()


# ---------------------------------------------------------------------------------------------
# The wire: what crosses from a sandbox to the grader


def encode(value) -> str:
    """Plain data as one line of JSON (arrays as dtype, shape and base64 bytes)."""
    text = json.dumps(_wire(plain(value)), ensure_ascii=True, allow_nan=True, separators=(",", ":"))
    if len(text) > MAX_BYTES:
        raise TooBig(f"over {MAX_BYTES:,} bytes")
    return text


def _wire(value):
    kind = type(value)
    if kind is np.ndarray:
        data = np.ascontiguousarray(value)
        return {"array": [data.dtype.name, list(data.shape), base64.b64encode(data.tobytes()).decode()]}
    if kind is Opaque:
        return {"opaque": value.kind}
    if kind is list:
        return [_wire(item) for item in value]
    if kind is dict:
        return {"dict": {key: _wire(item) for key, item in value.items()}}
    return value


def decode(text) -> object:
    """What `encode` wrote, read strictly: anything else raises ValueError, nothing is executed."""
    if type(text) is not str or len(text) > MAX_BYTES:
        raise ValueError("the data is not a string of at most the allowed size")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"the data is not JSON ({type(error).__name__})") from None
    return _read(raw, 0, [MAX_ITEMS])


def _read(raw, depth: int, budget: list):
    if depth > MAX_DEPTH:
        raise ValueError("the data is nested too deeply")
    kind = type(raw)
    if raw is None or kind in (bool, int, float):
        return raw
    if kind is str:
        if len(raw) > MAX_CHARS:
            raise ValueError("a string in the data is too long")
        return raw
    if kind is list:
        _take(budget, len(raw))
        return [_read(item, depth + 1, budget) for item in raw]
    if kind is not dict or len(raw) != 1:
        raise ValueError("the data holds an object of no known form")
    ((tag, body),) = raw.items()
    if tag == "dict" and type(body) is dict:
        _take(budget, len(body))
        return {key: _read(item, depth + 1, budget) for key, item in body.items()}
    if tag == "opaque" and type(body) is str and len(body) <= 200:
        return Opaque(body)
    if tag == "array" and type(body) is list and len(body) == 3:
        dtype, shape, data = body
        if dtype not in DTYPES or type(shape) is not list or type(data) is not str:
            raise ValueError("an array in the data has no known dtype or shape")
        if len(shape) > 8 or not all(type(n) is int and 0 <= n for n in shape):
            raise ValueError("an array in the data has a bad shape")
        size = math.prod(shape)
        _take(budget, size)
        raw_bytes = base64.b64decode(data.encode("ascii"), validate=True)
        if len(raw_bytes) != size * np.dtype(dtype).itemsize:
            raise ValueError("an array's bytes do not match its shape")
        return np.frombuffer(raw_bytes, dtype=dtype).reshape(shape).copy()
    raise ValueError("the data holds an object of no known form")


def _take(budget: list, n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise ValueError(f"the data holds more than {MAX_ITEMS:,} items")


# ---------------------------------------------------------------------------------------------
# What a judgement uses


def close(actual, expected, rtol: float | None = None, atol: float | None = None) -> bool:
    """Whether `actual` has `expected`'s kind and shape and values within tolerance (by default
    torch.testing.assert_close's for float32: rtol 1.3e-6, atol 1e-5). Dicts and lists compare
    item by item; a tensor in a notebook and an array in the grader compare alike.

    A NaN or an infinity in `actual` is never close to anything, not even to the same infinity
    expected: no measurement or prediction a lesson asks for is infinite, and an answer that
    overflows or divides by zero is wrong however the tolerance is written."""
    actual, expected = plain(actual), plain(expected)
    rtol = 1.3e-6 if rtol is None else rtol
    atol = 1e-5 if atol is None else atol
    if type(expected) is dict:
        return (
            type(actual) is dict
            and set(actual) == set(expected)
            and all(close(actual[k], expected[k], rtol, atol) for k in expected)
        )
    if type(expected) is list:
        return (
            type(actual) is list
            and len(actual) == len(expected)
            and all(close(a, e, rtol, atol) for a, e in zip(actual, expected))
        )
    if type(expected) is np.ndarray:
        if type(actual) is not np.ndarray or actual.shape != expected.shape:
            return False
        if actual.dtype.kind != expected.dtype.kind and {actual.dtype.kind, expected.dtype.kind} != {"f"}:
            return False
        if actual.dtype.kind == "b":
            return bool(np.array_equal(actual, expected))
        if not finite(actual):
            return False
        try:
            return bool(np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=False))
        except TypeError:
            return False
    if type(expected) in (int, float) and type(actual) in (int, float):
        if not finite(actual):
            return False
        if type(actual) is int and type(expected) is int:
            return actual == expected or _isclose(actual, expected, rtol, atol)
        return _isclose(actual, expected, rtol, atol)
    return type(actual) is type(expected) and actual == expected


def finite(value) -> bool:
    """Whether every number in `value` (plain data: a number, an array, or lists and dicts of them)
    is finite: no NaN, no infinity. Whole numbers, booleans, text and None are finite; so is an
    empty list. What a judgement uses before a reduction (`max`, `min`, `<`) that a NaN would pass."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind is np.ndarray:
        return value.dtype.kind != "f" or bool(np.isfinite(value).all())
    if kind in (list, tuple):
        return all(finite(item) for item in value)
    if kind is dict:
        return all(finite(item) for item in value.values())
    if isinstance(value, np.generic) or _as_array(value) is not None:
        return finite(plain(value))
    return True


def _isclose(actual, expected, rtol: float, atol: float) -> bool:
    try:
        return math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol)
    except OverflowError:  # a whole number too large for a float: only equal is close
        return actual == expected


# ---------------------------------------------------------------------------------------------
# Splitting a case


@dataclass(frozen=True)
class Parts:
    probe: str  # runs beside the answer; sets `got`
    reference: str  # runs after the probe, with the instructor's solution; sets `want`
    judgement: str  # runs in the grader on plain data


def split_case(source: str, where: str = "a test case") -> Parts:
    """A case's three parts, split at its `want = {}` and `got, want = plain(got), plain(want)`
    statements (top level, each once, in that order); ValueError says what is missing."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    marks = {}
    for node in tree.body:
        for name, marker in (("reference", REFERENCE), ("judgement", JUDGEMENT)):
            if ast.dump(node) == ast.dump(ast.parse(marker).body[0]):
                if name in marks:
                    raise ValueError(f"{where} has `{marker}` twice")
                marks[name] = node.lineno - 1
    for name, marker in (("reference", REFERENCE), ("judgement", JUDGEMENT)):
        if name not in marks:
            raise ValueError(
                f"{where} has no `{marker}` line: a graded case is split there "
                "(effitrain_lessons/shared/judging.py says how)."
            )
    if marks["reference"] > marks["judgement"]:
        raise ValueError(f"{where} has `{JUDGEMENT}` before `{REFERENCE}`")
    first, second = marks["reference"], marks["judgement"]
    return Parts("".join(lines[:first]), "".join(lines[first:second]), "".join(lines[second:]))
