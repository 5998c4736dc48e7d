"""A public check never tells the answer it checks against (STYLE.md, "A check teaches without telling").

Each graded question's public tests run, in this process, on a deliberately wrong answer: the cells
of the solution edition that the question needs (tagged `setup-for:<question>`, as the grader picks
them), then the wrong answer in place of the answer cell, then the public test cases through
`grader.check`'s own machinery. What the learner would read (the check's text and its HTML) must not
contain the right answer: the value the solution's answer gives, in any form a number is printed in,
nor a line of the solution's code.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import torch

from effitrain_lessons.course import grade
from effitrain_lessons.course.lessons import load_lesson
from effitrain_lessons.shared import checks

# question -> (lesson, expressions whose value under the solution is the answer a check must not show)
RIGHT = {
    "q_bytes": ("00_start_here", ["tensor_bytes((8, 32, 64), torch.float32)"]),
    "q_score_bytes": ("00_start_here", ["score_bytes(8, 32, torch.bfloat16)"]),
    "q_trade_places": ("00_start_here", ["predicted_saved_bytes(32, 8)"]),
    "q_checkpoint_block": ("01_checkpointing_first_principles", []),
    "q_choose_segments": ("01_checkpointing_first_principles", ["choose_segments(20)"]),
    "q_keep_matmuls": (
        "01_checkpointing_first_principles",
        ["predicted_recomputations", "predicted_kept_bytes(32, 64, 128)"],
    ),
    "q_memory_budget": (
        "02_checkpointing_with_trainer",
        ["largest_micro_batch(3 * 2**20, False)", "largest_micro_batch(3 * 2**20, True)"],
    ),
    "q_step_flops": ("02_checkpointing_with_trainer", ["predicted_mflop(16, 2)"]),
    "q_steps_per_process": ("03_checkpointing_with_accelerator", ["steps_per_process(40, 4, 2, 3)"]),
    "q_half_memory": (
        "03_checkpointing_with_accelerator",
        ['half_memory(12)["layers"]', 'half_memory(12)["flops"]'],
    ),
    "q_predict_syncs": ("04_local_sgd", ["predicted_syncs(24, 7, 2)[0]", "predicted_syncs(24, 7, 2)[1]"]),
    "q_crossover_k": ("04_local_sgd", ["crossover_d"]),
    "q_outer_momentum": ("05_diloco", ["last_step_h16"]),
    "q_communication": ("05_diloco", ['communication(20, 6, 2, False, "fp32")']),
    "q_layer_bytes": ("06_will_it_fit", ["layer_activation_bytes(32, 2, 64, 4, 256, dropout=False)"]),
    "q_checkpointed_bytes": ("06_will_it_fit", ['predicted_checkpointed["3 layers"]']),
    "q_choose_blocks": (
        "07_checkpoint_your_own_model",
        # the blocks chosen, as one number: bit i for block i
        ["sum(2**i for i in choose_blocks(uneven, uneven_ids, uneven_targets, BUDGET))"],
    ),
    "q_predict_peak": ("07_checkpoint_your_own_model", ['predicted_peak_mib["batch 4"]']),
    "q_autocast_bytes": ("08_mixed_precision", ["predicted_autocast_bytes(300, 48, 192)"]),
    "q_sharded_most": (
        "09_sharding",
        ['predicted_most_held(gpt2_shapes, "ZeRO-1", 3)', 'predicted_most_held(gpt2_shapes, "ZeRO-3", 3)'],
    ),
}

# (question, a plausible mistake): each reaches a different public sentence
WRONG = [
    ("q_bytes", "import math\n\ndef tensor_bytes(shape, dtype):\n    return math.prod(shape) * 2\n"),
    ("q_bytes", "def tensor_bytes(shape, dtype):\n    return 65536.0\n"),
    # the scores without their heads
    (
        "q_score_bytes",
        "import math\n\ndef score_bytes(sequences, tokens, dtype):\n"
        "    return math.prod((sequences, tokens, tokens)) * dtype.itemsize\n",
    ),
    ("q_checkpoint_block", "def checkpointed_block(x):\n    return block(x)\n"),
    # checkpointed, but of another input: another output and other gradients
    (
        "q_checkpoint_block",
        "def checkpointed_block(x):\n    return checkpoint(block, x + 1, use_reentrant=False)\n",
    ),
    # every byte per token, none per pair of tokens; measured, not predicted
    (
        "q_trade_places",
        "def predicted_saved_bytes(sequences, tokens):\n"
        "    return report.saved_bytes * sequences * tokens / (8 * 32)\n",
    ),
    (
        "q_trade_places",
        "def predicted_saved_bytes(sequences, tokens):\n"
        "    return measure_step(model, random_batch(sequences, tokens)).saved_bytes\n",
    ),
    # k = n keeps as much as no checkpointing; 5 keeps the least for more FLOPs; 3 does not split
    ("q_choose_segments", "def choose_segments(n_blocks):\n    return n_blocks\n"),
    ("q_choose_segments", "def choose_segments(n_blocks):\n    return 5\n"),
    ("q_choose_segments", "def choose_segments(n_blocks):\n    return 3\n"),
    # two recomputed products; a list, not a dict
    (
        "q_keep_matmuls",
        'predicted_recomputations = {"mm": 2, "relu": 0}\n'
        "def predicted_kept_bytes(batch, width, hidden):\n    return 0\n",
    ),
    (
        "q_keep_matmuls",
        "predicted_recomputations = [0, 1]\ndef predicted_kept_bytes(batch, width, hidden):\n    return 0\n",
    ),
    # the right recomputations, the bytes of the product the backward pass needs only
    (
        "q_keep_matmuls",
        'predicted_recomputations = {"mm": 0, "relu": 1}\n'
        "def predicted_kept_bytes(batch, width, hidden):\n    return batch * hidden * 4\n",
    ),
    # one pair too many; the bytes of two pairs taken for one; not a whole number
    (
        "q_memory_budget",
        "def largest_micro_batch(budget, checkpointing):\n"
        "    return budget // (59_924 if checkpointing else 814_612) + 1\n",
    ),
    (
        "q_memory_budget",
        "def largest_micro_batch(budget, checkpointing):\n"
        "    return budget // (2 * (59_924 if checkpointing else 814_612))\n",
    ),
    (
        "q_memory_budget",
        "def largest_micro_batch(budget, checkpointing):\n"
        "    return budget / (59_924 if checkpointing else 814_612)\n",
    ),
    # the accumulation forgotten; 4/3 forgotten; measured, not predicted
    (
        "q_step_flops",
        "def predicted_mflop(micro_batch, accumulation):\n    return micro_batch * 201.53 / 8\n",
    ),
    (
        "q_step_flops",
        "def predicted_mflop(micro_batch, accumulation):\n"
        "    return micro_batch * accumulation * 151.2 / 8\n",
    ),
    (
        "q_step_flops",
        "from effitrain_lessons.shared.memory import measure_step\n"
        "def predicted_mflop(micro_batch, accumulation):\n"
        "    model = fresh_model(MODEL_NAME, seed=SEED)\n"
        "    model.activation_checkpointing_enable()\n"
        "    rows = train_set[:micro_batch]\n"
        "    return measure_step(model, rows).flops * accumulation / 1e6\n",
    ),
    # one process's steps: the shard forgotten
    (
        "q_steps_per_process",
        "def steps_per_process(batches_per_epoch, accumulation, epochs, processes):\n"
        "    return -(-batches_per_epoch // accumulation) * epochs\n",
    ),
    # rounded down
    (
        "q_steps_per_process",
        "def steps_per_process(batches_per_epoch, accumulation, epochs, processes):\n"
        "    return batches_per_epoch // processes // accumulation * epochs\n",
    ),
    # half the layers; then one too many, with a third more FLOPs as if every layer were recomputed
    (
        "q_half_memory",
        "def half_memory(num_hidden_layers):\n"
        "    layers = num_hidden_layers // 2\n"
        '    return {"layers": layers, "flops": 1 + layers / (3 * num_hidden_layers)}\n',
    ),
    (
        "q_half_memory",
        "def half_memory(num_hidden_layers):\n"
        '    return {"layers": num_hidden_layers // 2 + 2, "flops": 4 / 3}\n',
    ),
    # no average on exit; then data parallel at every micro-batch
    (
        "q_predict_syncs",
        "def predicted_syncs(micro_batches, k, accumulation):\n"
        "    return micro_batches // k, micro_batches // accumulation\n",
    ),
    (
        "q_predict_syncs",
        "def predicted_syncs(micro_batches, k, accumulation):\n"
        "    return micro_batches // k + 1, micro_batches\n",
    ),
    # the crossover of link D as the model has it, before rounding up to a whole K
    ("q_crossover_k", "crossover_d = 2\ncrossover_e = 2\n"),
    # the ceiling the step settles at, not where it is after 8 rounds
    ("q_outer_momentum", "last_step_h16 = 7.0\nlast_step_h4 = 7.0\n"),
    # Local SGD's rule: one more on exit
    (
        "q_communication",
        "def communication(steps, h, processes, bucketed=True, precision='fp32'):\n"
        "    syncs = steps // h + 1\n"
        "    width = 4 if precision == 'fp32' else 2\n"
        "    return {'synchronizations': syncs, 'calls': syncs * (1 if bucketed else tensors),\n"
        "            'bytes': syncs * numbers * width}\n",
    ),
    # the bytes of every process together
    (
        "q_communication",
        "def communication(steps, h, processes, bucketed=True, precision='fp32'):\n"
        "    syncs = steps // h\n"
        "    return {'synchronizations': syncs, 'calls': syncs * (1 if bucketed else tensors),\n"
        "            'bytes': syncs * numbers * 4 * processes}\n",
    ),
    # without attention dropout's mask and output, whatever the dropout
    (
        "q_layer_bytes",
        "def layer_activation_bytes(s, b, h, a, f, dropout=True):\n"
        "    return 4 * (10 * s * b * h + 2 * s * b * f + a * s * s * b + 4 * s * b)\n",
    ),
    # the estimate's terms with dropout, the dropout flag ignored
    (
        "q_layer_bytes",
        "def layer_activation_bytes(s, b, h, a, f, dropout=True):\n"
        "    return 4 * (10 * s * b * h + 2 * s * b * f + 3 * a * s * s * b + 4 * s * b)\n",
    ),
    # each layer's input only, what lies outside the layers forgotten; then every layer kept whole
    ("q_checkpointed_bytes", 'predicted_checkpointed = {"3 layers": 3 * 128 * 2 * 768 * 4, "4 layers": 0}\n'),
    ("q_checkpointed_bytes", 'predicted_checkpointed = {"3 layers": 59_018_276, "4 layers": 51_358_260}\n'),
    ("q_checkpointed_bytes", "predicted_checkpointed = 4_742_180\n"),
    # every block: it fits, but recomputes more than it needs to
    (
        "q_choose_blocks",
        "def choose_blocks(model, ids, targets, budget):\n    return list(range(len(model.blocks)))\n",
    ),
    # none: over budget
    ("q_choose_blocks", "def choose_blocks(model, ids, targets, budget):\n    return []\n"),
    # the widest blocks first, until it fits: greedy by size recomputes too much
    (
        "q_choose_blocks",
        "def choose_blocks(model, ids, targets, budget):\n"
        "    plain = measure_choice(model, ids, targets).saved_bytes\n"
        "    widths = [block.mlp[0].out_features for block in model.blocks]\n"
        "    order = sorted(range(len(widths)), key=lambda i: -widths[i])\n"
        "    chosen = []\n"
        "    for i in order:\n"
        "        model.checkpointed = set(chosen)\n"
        "        if measure_choice(model, ids, targets).saved_bytes <= budget:\n"
        "            break\n"
        "        chosen.append(i)\n"
        "    model.checkpointed = set()\n"
        "    return chosen\n",
    ),
    ("q_choose_blocks", "def choose_blocks(model, ids, targets, budget):\n    return (0, 3)\n"),
    # the peak halved with the batch, as if the activations set it; then the bytes kept, not the peak
    ("q_predict_peak", 'predicted_peak_mib = {"batch 4": 2.56, "SGD": 2.3}\n'),
    ("q_predict_peak", 'predicted_peak_mib = {"batch 4": 0.87, "SGD": 1.74}\n'),
    ("q_predict_peak", "predicted_peak_mib = [5.12, 4.6]\n"),
    # fp32's count, 4 bytes everywhere; the 16-bit weight copies forgotten; then doubled (4 bytes a
    # weight, as if the copies were fp32); a size written out, not a number
    (
        "q_autocast_bytes",
        "def predicted_autocast_bytes(tokens, width, hidden):\n"
        "    return 4 * (tokens * (width + 4 * hidden) + 2 * width * hidden + hidden * hidden)\n",
    ),
    (
        "q_autocast_bytes",
        "def predicted_autocast_bytes(tokens, width, hidden):\n"
        "    return 2 * tokens * (width + 4 * hidden)\n",
    ),
    (
        "q_autocast_bytes",
        "def predicted_autocast_bytes(tokens, width, hidden):\n"
        "    return 2 * tokens * (width + 4 * hidden) + 4 * (2 * width * hidden + hidden * hidden)\n",
    ),
    ("q_autocast_bytes", 'def predicted_autocast_bytes(tokens, width, hidden):\n    return "0.6 MB"\n'),
    # every stage a 1/N share of 16 bytes, as if ZeRO-1 split everything; ZeRO-1's state split evenly
    # (not by whole tensors); the bytes of parameters only; a size written out, not a number
    (
        "q_sharded_most",
        "import math\n\ndef predicted_most_held(shapes, stage, num_processes):\n"
        "    return 16 * sum(math.prod(s) for s in shapes) / num_processes\n",
    ),
    (
        "q_sharded_most",
        "import math\n\ndef predicted_most_held(shapes, stage, num_processes):\n"
        "    total = sum(math.prod(s) for s in shapes)\n"
        "    if stage == 'ZeRO-1':\n"
        "        return 8 * total + 8 * total / num_processes\n"
        "    return 16 * total / num_processes\n",
    ),
    (
        "q_sharded_most",
        "import math\n\ndef predicted_most_held(shapes, stage, num_processes):\n"
        "    return 4 * sum(math.prod(s) for s in shapes)\n",
    ),
    ("q_sharded_most", 'def predicted_most_held(shapes, stage, num_processes):\n    return "2 MB"\n'),
]


def test_every_graded_question_has_a_wrong_answer():
    questions = {q for name in {lesson for lesson, _ in RIGHT.values()} for q in load_lesson(name).questions}
    assert questions == set(RIGHT) == {question for question, _ in WRONG}


def number_forms(value) -> list[str]:
    """The ways a number may be printed: plain, with thousands marks (English, Turkish, spaced), repr."""
    if type(value) is float:
        forms = {repr(value), repr(value).replace(".", ","), f"{value:g}"}
        if value == int(value):
            value = int(value)
        else:
            return sorted(forms)
    else:
        forms = set()
    grouped = f"{value:,}"
    forms |= {
        str(value),
        grouped,
        grouped.replace(",", "."),
        grouped.replace(",", " "),
        grouped.replace(",", "\u00a0"),
    }
    return sorted(forms)


def told(text: str, value) -> list[str]:
    """The forms of `value` that `text` contains, as a whole token (never part of a longer number)."""
    if type(value) is dict:
        found = [form for form in (repr(value), str(value).replace("'", '"')) if form in text]
        return found
    if type(value) not in (int, float):
        return []
    return [
        form
        for form in number_forms(value)
        if re.search(rf"(?<![\w.,]){re.escape(form)}(?![\w]|[.,]\d)", text)
    ]


@pytest.fixture(scope="module")
def lessons():
    return {}


def run(cells, namespace):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for source in cells:
            exec(compile(source, "<cell>", "exec"), namespace)  # noqa: S102 - the course's own cells


@pytest.mark.notebooks
@pytest.mark.parametrize("question, wrong", WRONG, ids=[f"{q}-{i}" for i, (q, _) in enumerate(WRONG)])
def test_a_public_check_never_tells_the_answer(question, wrong, lessons, monkeypatch, tmp_path):
    name, expressions = RIGHT[question]
    monkeypatch.chdir(tmp_path)  # trainings write their output folders here
    if name not in lessons:
        lessons[name] = load_lesson(name)
    lesson = lessons[name].only(question)
    solution = {cell.id: cell.source for cell in lesson.cells if cell.answer_for}
    cells, _ = grade.grading_plan(lesson, solution, follow_names=False)
    setup = [cell["source"] for cell in cells if cell["kind"] == "lesson"]
    answers = [cell["source"] for cell in cells if cell["kind"] == "answer"]

    namespace = {"__name__": "__main__"}
    run(setup, namespace)
    right_namespace = dict(namespace)
    run(answers, right_namespace)
    right = {expression: eval(expression, {"torch": torch, **right_namespace}) for expression in expressions}  # noqa: S307

    run([wrong], namespace)
    cases = [checks.Case(case.code, False) for case in lesson.questions[question].cases if not case.hidden]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        result = checks.CheckResult(
            question, tuple(checks.run_case(case, i, namespace) for i, case in enumerate(cases, 1))
        )
    assert not result.public_passed, f"{question}: the wrong answer passed its public tests"
    # what the learner reads, less the traceback's 'File "<2>", line 8' and the count of failed tests
    shown = "\n".join(
        line
        for line in (repr(result) + "\n" + result._repr_html_()).splitlines()
        if not re.match(r'\s*File ("|&quot;)', line)
    )
    shown = shown.replace(result.summary(), "")
    for expression, value in right.items():
        assert not told(shown, value), f"{question}: the check tells {expression} = {value!r}:\n{shown}"
    solution_lines = [
        line.strip()
        for source in answers
        for line in source.splitlines()
        if len(line.strip()) > 12
        and not line.strip().startswith(("#", "def ", "import ", "return CheckpointPolicy"))
    ]
    for line in solution_lines:
        assert line not in shown, f"{question}: the check shows the solution's line {line!r}:\n{shown}"
