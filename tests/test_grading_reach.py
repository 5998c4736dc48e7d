"""Measured questions are measured where the answer cannot reach; prediction questions stay predictions.

Each case runs whole, as `grader.check` runs it in a learner's kernel (the grader runs the same code
split in three, in two sandboxes and itself: the judgement is the same). Answers that hide their
forward pass in a thread, shadow the course's saved-tensor hooks with their own, fake a recomputation
with a tensor hook, or measure where the question says predict, earn no more than a wrong answer;
honest variants earn every case. Issue 45.
"""

from __future__ import annotations

import pytest

from effitrain_lessons.course.lessons import load_lesson

LESSON_01 = "01_checkpointing_first_principles"
LESSON_03 = "03_checkpointing_with_accelerator"


def cases_passed(lesson: str, question: str, answer: str, hidden: bool | None = None) -> list[bool]:
    """Whether each case of `question` passes against `answer`, run after the question's setup cells."""
    loaded = load_lesson(lesson)
    namespace: dict = {}
    for cell in loaded.cells:
        if question in cell.setup_for:
            exec(compile(cell.source, f"<setup {cell.id}>", "exec"), namespace)
    exec(compile(answer, "<answer>", "exec"), namespace)
    passed = []
    for case in loaded.questions[question].cases:
        if hidden is not None and case.hidden != hidden:
            continue
        try:
            exec(compile(case.code, f"<case {case.index}>", "exec"), dict(namespace))
        except Exception:  # noqa: BLE001 - any exception fails the case, as in the grader
            passed.append(False)
        else:
            passed.append(True)
    return passed


# --- lesson 01, exercise 1: memory counted by the kernel, recomputation proven by outcome ---------

NO_CHECKPOINT = "def checkpointed_block(x):\n    return block(x)\n"

THREAD_AND_FAKE_RECOMPUTE = """
from concurrent.futures import ThreadPoolExecutor

_pool = ThreadPoolExecutor(1)


def checkpointed_block(x):
    out = _pool.submit(block, x).result()  # the course's dispatch modes never see this forward

    def pretend(grad):
        with torch.enable_grad():  # one op under grad mode during the backward: a "recomputation"
            torch.relu(grad.detach().requires_grad_())
        return grad

    if out.requires_grad:
        out.register_hook(pretend)
    return out
"""

OWN_SAVED_TENSOR_HOOKS = """
def checkpointed_block(x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # inner hooks win
        return block(x)
"""

HONEST_01 = {
    "solution": "def checkpointed_block(x):\n    return checkpoint(block, x, use_reentrant=False)\n",
    "alias": (
        "import torch as tt\n"
        "from torch.utils.checkpoint import checkpoint as ckpt\n\n"
        "def checkpointed_block(inputs):\n"
        '    """The block, recomputed in the backward pass."""\n'
        "    print('checkpointing', tuple(inputs.shape))\n"
        "    return ckpt(block, inputs, use_reentrant=False)\n"
    ),
    "loop": (
        "def run_layers(y):\n"
        "    for layer in block:\n"
        "        y = layer(y)\n"
        "    return y\n\n"
        "def checkpointed_block(x):\n"
        "    return checkpoint(run_layers, x, use_reentrant=False)\n"
    ),
}


@pytest.fixture(scope="module")
def wrong_01() -> list[bool]:
    return cases_passed(LESSON_01, "q_checkpoint_block", NO_CHECKPOINT)


@pytest.mark.parametrize("name", sorted(HONEST_01))
def test_honest_checkpointed_blocks_pass_every_case(name):
    assert all(cases_passed(LESSON_01, "q_checkpoint_block", HONEST_01[name]))


@pytest.mark.parametrize(
    "attack", [THREAD_AND_FAKE_RECOMPUTE, OWN_SAVED_TENSOR_HOOKS], ids=["thread", "own-hooks"]
)
def test_hiding_the_forward_earns_no_case_a_plain_block_fails(attack, wrong_01):
    passed = cases_passed(LESSON_01, "q_checkpoint_block", attack)
    assert not all(wrong_01)  # the plain block is wrong
    assert [p and not w for p, w in zip(passed, wrong_01)] == [False] * len(passed), (passed, wrong_01)


def test_the_kernel_counts_what_a_thread_keeps():
    import torch
    from torch.utils.checkpoint import checkpoint

    from effitrain_lessons.first_principles.checkpointing import mlp_block, resident_kept_bytes

    block = mlp_block(width=64, hidden=256, seed=0)
    x = torch.randn(4096, 64, requires_grad=True)
    activations = 2 * 4096 * 256 * 4  # the hidden layer's output and GELU's, float32
    namespace = {"block": block, "torch": torch}
    exec(THREAD_AND_FAKE_RECOMPUTE, namespace)
    # The check passes a block that keeps at most a quarter of the plain block's bytes; the kernel's
    # count moves by a few pages under load, so the margin asked here is half, not all.
    assert resident_kept_bytes(namespace["checkpointed_block"], x) >= 0.5 * activations
    assert resident_kept_bytes(block, x) >= 0.5 * activations
    assert resident_kept_bytes(lambda y: checkpoint(block, y, use_reentrant=False), x) <= 0.05 * activations


# --- predictions stay predictions ---------------------------------------------------------------

MEASURED_SEGMENTS = """
from effitrain_lessons.first_principles.checkpointing import deep_stack, stack_input, sweep_segments


def choose_segments(n_blocks):
    stack = deep_stack(n_blocks=n_blocks, width=1, seed=0)
    return sweep_segments(stack, stack_input(stack, batch=1, seed=0), repeats=1).best_k
"""

HONEST_SEGMENTS = """
import math


def choose_segments(n_blocks):
    best = None
    for k in range(1, n_blocks + 1):
        if n_blocks % k:
            continue
        cost = (n_blocks // k + k - 1, k)  # one segment's activations, plus the k - 1 boundaries
        if best is None or cost < best[0]:
            best = (cost, k)
    return best[1]
"""

IMPORTED_STEPS = """
from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process


def steps_per_process(batches_per_epoch, accumulation, epochs, processes):
    return optimizer_steps_on_one_process(batches_per_epoch, accumulation, epochs, processes)
"""

HONEST_STEPS = """
import math


def steps_per_process(batches_per_epoch, accumulation, epochs, processes):
    share = math.ceil(batches_per_epoch / processes)
    return epochs * math.ceil(share / accumulation)
"""


MEASURED_HALF = """
from effitrain_lessons.shared.data import tokenized_mrpc
from effitrain_lessons.shared.models import tiny_bert
from effitrain_lessons.with_accelerator.layers import fewest_layers


def half_memory(num_hidden_layers):
    measured = fewest_layers(
        lambda: tiny_bert(num_hidden_layers=min(num_hidden_layers, 12), dropout=False),
        tokenized_mrpc()["train"][:16],
    )
    return {"layers": measured.layers, "flops": measured.flops}
"""


def test_half_memory_by_measuring_fails_every_case():
    assert not any(cases_passed(LESSON_03, "q_half_memory", MEASURED_HALF))


def test_half_memory_predicted_from_section_3_passes_every_case():
    honest = (
        "import math\n\n"
        "def half_memory(n):\n"
        "    share = checkpointing_ratio.saved_bytes  # what a fully checkpointed step still keeps\n"
        "    layers = math.ceil(n / (2 * (1 - share)))\n"
        '    return {"layers": layers, "flops": 1 + layers / n / 3}\n'
    )
    assert all(cases_passed(LESSON_03, "q_half_memory", honest))


def test_choose_segments_by_measuring_fails_the_public_case():
    assert cases_passed(LESSON_01, "q_choose_segments", MEASURED_SEGMENTS, hidden=False) == [False]


def test_choose_segments_predicted_passes_every_case():
    assert all(cases_passed(LESSON_01, "q_choose_segments", HONEST_SEGMENTS))


def test_steps_per_process_from_the_package_fails_the_public_case():
    assert cases_passed(LESSON_03, "q_steps_per_process", IMPORTED_STEPS, hidden=False) == [False]


def test_steps_per_process_predicted_passes_every_case():
    assert all(cases_passed(LESSON_03, "q_steps_per_process", HONEST_STEPS))


@pytest.mark.parametrize("lesson", [LESSON_01, LESSON_03])
def test_no_public_case_names_the_function_that_computes_its_reference(lesson):
    for question in load_lesson(lesson).questions.values():
        for case in question.cases:
            if not case.hidden:
                assert "optimizer_steps_on_one_process" not in case.code, question.name


MEASURED_AUTOCAST = """
def predicted_autocast_bytes(tokens, width, hidden):
    block = DeepMLP(width, hidden)
    with record_saved(block) as log, torch.autocast("cpu", dtype=torch.bfloat16):
        block(torch.randn(tokens, width, requires_grad=True))
    return log.total_bytes
"""


def test_autocast_bytes_by_measuring_fails_every_case():
    assert not any(cases_passed("08_mixed_precision", "q_autocast_bytes", MEASURED_AUTOCAST))


# a model of those shapes, measured in real processes: the package's own measurement
MEASURED_SHARDED = """
import math

import torch

from effitrain_lessons.shared.sharding import measure_sharding


class _Shapes(torch.nn.Module):
    def __init__(self, shapes):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(shape))]) for shape in shapes
        )

    def forward(self, **inputs):
        return {"loss": sum(p.sum() for p in self.parameters())}


def predicted_most_held(shapes, stage, num_processes):
    names = {"data parallel": "none", "ZeRO-1": "zero1", "ZeRO-3": "zero3"}
    result = measure_sharding(lambda: _Shapes(shapes), {}, names[stage], num_processes)
    return result.most("states")
"""


def test_sharded_most_by_measuring_fails_every_case():
    assert not any(cases_passed("09_sharding", "q_sharded_most", MEASURED_SHARDED))


# --- a public case is worth nothing to an answer that only has the right type -------------------

WELL_TYPED = {
    (LESSON_01, "q_checkpoint_block"): "def checkpointed_block(x):\n    return torch.zeros(x.shape[0], 64)\n",
    (LESSON_01, "q_keep_matmuls"): (
        'predicted_recomputations = {"mm": 1, "relu": 0}\n\n'
        "def predicted_kept_bytes(batch, width, hidden):\n    return 0\n"
    ),
    (LESSON_01, "q_choose_segments"): "def choose_segments(n_blocks):\n    return 1\n",
    (LESSON_03, "q_half_memory"): 'def half_memory(n):\n    return {"layers": 1, "flops": 1.0}\n',
    (LESSON_03, "q_steps_per_process"): "def steps_per_process(b, a, e, p):\n    return 1\n",
}


@pytest.mark.parametrize("lesson, question", sorted(WELL_TYPED))
def test_a_well_typed_guess_passes_no_public_case(lesson, question):
    assert not any(cases_passed(lesson, question, WELL_TYPED[lesson, question], hidden=False))


# --- every prediction of a size is timed: the solution passes, the same answer measuring does not ---

TIMED_PREDICTIONS = [
    ("00_start_here", "q_trade_places", "predicted_saved_bytes"),
    (LESSON_01, "q_keep_matmuls", "predicted_kept_bytes"),
    ("02_checkpointing_with_trainer", "q_step_flops", "predicted_mflop"),
    (LESSON_03, "q_half_memory", "half_memory"),
    ("08_mixed_precision", "q_autocast_bytes", "predicted_autocast_bytes"),
    ("09_sharding", "q_sharded_most", "predicted_most_held"),
]

SLOW = """
import time as _time

_prediction = {name}


def {name}(*arguments):
    end = _time.process_time() + 0.6  # the CPU time a quick measurement would take
    while _time.process_time() < end:
        pass
    return _prediction(*arguments)
"""


def solution_answer(lesson: str, question: str) -> str:
    return next(cell.source for cell in load_lesson(lesson).cells if cell.answer_for == question)


@pytest.mark.parametrize("lesson, question, name", TIMED_PREDICTIONS)
def test_a_prediction_that_spends_a_measurements_time_fails_every_case(lesson, question, name):
    answer = solution_answer(lesson, question)
    assert all(cases_passed(lesson, question, answer))
    assert not any(cases_passed(lesson, question, answer + SLOW.format(name=name)))
