"""Lesson 1's measurements: what A + B = C keeps and recomputes, the deep stack, the pitfalls, the figures."""

import warnings
from functools import partial

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from effitrain_lessons.course.lessons import ROOT, edition_paths, read_test_file
from effitrain_lessons.first_principles import checkpointing as ckpt
from effitrain_lessons.first_principles import figures as checkpointing_figures
from effitrain_lessons.shared import checks
from effitrain_lessons.shared.memory import measure_step, record_saved_tensors, training_memory
from effitrain_lessons.shared.timing import Times
from effitrain_lessons.shared.tracing import trace_step

LESSON = "01_checkpointing_first_principles"
FLOAT32 = 4


def abc_none(x, weight):
    return ckpt.abc(x, weight)


def abc_full(x, weight):
    return checkpoint(ckpt.abc, x, weight, use_reentrant=False)


def abc_selective(x, weight, policy=None):
    policy = policy or ckpt.keep_ops_policy([ckpt.B_COSTLY_OP])
    return checkpoint(
        ckpt.abc,
        x,
        weight,
        use_reentrant=False,
        context_fn=partial(create_selective_checkpoint_contexts, policy),
    )


@pytest.fixture(scope="module")
def traces():
    inputs = ckpt.abc_inputs(batch=16, width=32, seed=0)
    return {
        name: trace_step(forward, inputs, names=ckpt.ABC_OPS)
        for name, forward in {"none": abc_none, "full": abc_full, "selective": abc_selective}.items()
    }


# --- A + B = C ------------------------------------------------------------------------------


def test_recompute_counts_none_full_selective(traces):
    counts = {
        name: (t.recomputations("A"), t.recomputations("B"), t.recomputations("C"))
        for name, t in traces.items()
    }
    assert counts == {"none": (0, 0, 0), "full": (1, 1, 0), "selective": (1, 0, 0)}
    for trace in traces.values():
        assert trace.forward_runs["A"] == trace.forward_runs["B"] == trace.forward_runs["C"] == 1


def test_kept_bytes_order_none_selective_full(traces):
    one = 16 * 32 * FLOAT32  # A and B have x's shape
    kept = {name: t.kept_bytes for name, t in traces.items()}
    assert kept == {"none": 2 * one, "selective": one, "full": 0}
    assert kept["none"] > kept["selective"] > kept["full"]
    assert {r.name for r in traces["none"].kept} == {"A", "B"}
    assert {r.name for r in traces["selective"].kept} == {"B"}


def test_without_checkpointing_autograd_saves_a_and_b(traces):
    saved = {r.name: r for r in traces["none"].saved}
    assert {"x", "weight", "A", "B"} == set(saved)
    assert saved["A"].shape == saved["B"].shape == (16, 32) and saved["A"].nbytes == 16 * 32 * FLOAT32
    assert not saved["x"].made_in_forward and saved["A"].made_in_forward


def test_gradients_are_identical_in_all_three_cases(traces):
    for name in ("x", "weight"):
        torch.testing.assert_close(traces["full"].gradients[name], traces["none"].gradients[name])
        torch.testing.assert_close(traces["selective"].gradients[name], traces["none"].gradients[name])


def test_flops_full_checkpointing_adds_b_once_selective_adds_nothing(traces):
    b_flops = 2 * 16 * 32 * 32
    assert traces["none"].flops == 3 * b_flops  # forward, and the two gradients of the matmul
    assert traces["full"].flops == 4 * b_flops
    assert traces["selective"].flops == 3 * b_flops


def test_hooks_and_liveness_agree_where_hooks_see_everything(traces):
    for name in ("none", "full"):
        assert traces[name].saved_bytes == traces[name].kept_bytes
    assert traces["selective"].saved_bytes == 0  # the cache is invisible to saved-tensor hooks...
    assert traces["selective"].kept_bytes > 0  # ...but still in memory


def test_what_selective_keeps_matches_what_the_policy_answered_must_save():
    inputs = ckpt.abc_inputs(batch=8, width=16)
    policy, log = ckpt.log_policy(ckpt.keep_ops_policy([ckpt.B_COSTLY_OP]))
    trace = trace_step(lambda x, w: abc_selective(x, w, policy), inputs, names=ckpt.ABC_OPS)
    assert log.kept == [("mm", (8, 16), 8 * 16 * FLOAT32)]
    assert trace.kept_bytes == log.kept_bytes


def test_a_python_counter_miscounts_selective_recomputation_the_dispatch_counter_does_not():
    calls = []

    def counted_abc(x, weight):
        calls.append("B")  # counts every run of the Python function
        return ckpt.abc(x, weight)

    inputs = ckpt.abc_inputs(batch=8, width=16)
    trace = trace_step(
        lambda x, w: checkpoint(
            counted_abc,
            x,
            w,
            use_reentrant=False,
            context_fn=partial(
                create_selective_checkpoint_contexts, ckpt.keep_ops_policy([ckpt.B_COSTLY_OP])
            ),
        ),
        inputs,
        names=ckpt.ABC_OPS,
    )
    assert len(calls) == 2  # the function body ran again in backward...
    assert trace.recomputations("B") == 0  # ...but the matmul came from the cache


def test_reentrant_checkpoint_reruns_the_whole_function():
    trace = trace_step(
        lambda x, w: checkpoint(ckpt.abc, x, w, use_reentrant=True),
        ckpt.abc_inputs(batch=8, width=16),
        names=ckpt.ABC_OPS,
    )
    assert (trace.recomputations("A"), trace.recomputations("B"), trace.recomputations("C")) == (1, 1, 1)


def test_a_sum_keeps_neither_a_nor_b():
    trace = trace_step(
        lambda x, w: ckpt.compute_a(x) + ckpt.compute_b(x, w), ckpt.abc_inputs(8, 16), names=ckpt.ABC_OPS
    )
    assert trace.kept_bytes == 0


def test_statuses_follow_the_measurements(traces):
    assert [traces["none"].status(n) for n in "ABC"] == ["stored", "stored", "deleted"]
    assert [traces["full"].status(n) for n in "ABC"] == ["recomputed", "recomputed", "deleted"]
    assert [traces["selective"].status(n) for n in "ABC"] == ["recomputed", "stored", "deleted"]


def test_trace_step_leaves_one_steps_gradients_and_the_random_state_alone():
    inputs = ckpt.abc_inputs(batch=8, width=16)
    torch.manual_seed(5)
    expected = torch.rand(1)
    torch.manual_seed(5)
    trace = trace_step(abc_full, inputs)
    assert torch.rand(1) == expected
    torch.testing.assert_close(inputs["weight"].grad, trace.gradients["weight"])


def test_two_matmuls_keep_matmuls_recomputes_only_relu():
    inputs = ckpt.two_matmuls_inputs()
    policy = ckpt.keep_ops_policy([torch.ops.aten.mm.default])
    trace = trace_step(
        lambda *a: checkpoint(
            ckpt.two_matmuls,
            *a,
            use_reentrant=False,
            context_fn=partial(create_selective_checkpoint_contexts, policy),
        ),
        inputs,
    )
    assert trace.recomputed == {"relu": 1}


def test_the_printed_tables_name_the_tensors(traces):
    text = str(traces["selective"])
    assert "something the hooks do not see" in text and "A x1" in text
    table = str(ckpt.compare_traces({"none": traces["none"], "full": traces["full"]}))
    assert "x1.333" in table and "B recomputed" in table
    assert "def abc(" in ckpt.abc_source()


# --- the deep stack --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep():
    stack = ckpt.deep_stack(n_blocks=16, width=64, seed=0)
    return ckpt.sweep_segments(stack, ckpt.stack_input(stack, batch=16), repeats=1)


def test_full_checkpointing_flops_ratio_is_about_one_extra_forward(sweep):
    assert 1.30 <= sweep.flops_ratio(16) <= 1.36


def test_stack_memory_follows_chen_and_is_least_at_sqrt_n(sweep):
    assert sweep.ks == [1, 2, 4, 8, 16]
    for k in sweep.ks:
        assert sweep.row(k).kept_bytes == ckpt.chen_memory(16, k) * sweep.unit_bytes
        assert sweep.flops_ratio(k) == pytest.approx(ckpt.chen_flops_ratio(k), abs=0.02)
    assert sweep.best_k == 4 == sweep.sqrt_n
    assert "k = 4: keeps" in sweep.describe(4)


def test_one_checkpoint_per_block_keeps_the_inputs_and_the_plain_stack_the_outputs(sweep):
    # Each block saves one tensor of its input's size, so checkpointing every block gains nothing here.
    assert sweep.row(16).kept_bytes == sweep.row(1).kept_bytes


def test_the_sweep_times_every_k_with_the_shared_discipline_and_says_what_the_spread_allows():
    stack = ckpt.deep_stack(n_blocks=4, width=8)
    sweep = ckpt.sweep_segments(stack, ckpt.stack_input(stack, batch=2), warmup=1, repeats=3)
    for k in sweep.ks:
        times = sweep.row(k).times
        assert times.steps == 3 and times.clock == "cpu" and times.low <= times.median <= times.high
    ratio = sweep.time_ratio(2)
    assert ratio.low <= ratio.median <= ratio.high
    assert sweep.time_ratio(1).median == 1
    assert all(p.grad is None for p in stack.parameters())  # the timed steps leave no gradients


def test_time_against_flops_says_only_what_the_spread_supports():
    def times(*seconds):
        return Times(tuple(seconds), tuple(seconds), "cpu")

    def sweep_with(k2_seconds):
        rows = (
            ckpt.SegmentsRow(1, 100, 300, times(1.0, 1.0, 1.0)),
            ckpt.SegmentsRow(2, 60, 350, times(*k2_seconds)),
        )
        return ckpt.SegmentSweep(n_blocks=2, unit_bytes=50, rows=rows)

    assert "grew more than the FLOPs" in sweep_with((1.5, 1.6, 1.7)).time_against_flops(2)
    assert "grew less than the FLOPs" in sweep_with((1.0, 1.05, 1.1)).time_against_flops(2)
    assert "spread holds" in sweep_with((1.0, 1.2, 1.4)).time_against_flops(2)
    text = str(sweep_with((1.5, 1.6, 1.7)))
    assert "time at k = 1: 1000.0 ms (1000.0-1000.0), median of 3 steps (CPU time" in text
    assert "x1.60 (1.55-1.65)" in text.splitlines()[3]


# --- the pitfalls ----------------------------------------------------------------------------


def test_in_eval_mode_checkpointing_saves_as_much_as_no_checkpointing():
    from effitrain_lessons.shared.models import tiny_bert

    torch.manual_seed(0)
    model = tiny_bert(num_hidden_layers=2)
    batch = {"input_ids": torch.randint(0, 100, (2, 16)), "labels": torch.tensor([0, 1])}
    saved = {}
    for mode in ("train", "eval"):
        getattr(model, mode)()
        for on in (False, True):
            model.activation_checkpointing_enable() if on else model.activation_checkpointing_disable()
            with record_saved_tensors(model) as log:
                model(**batch)
            saved[mode, on] = log.total_bytes
    assert saved["eval", True] == saved["eval", False]
    assert saved["train", True] < 0.5 * saved["train", False]


def test_reentrant_with_no_input_requiring_grad_gives_no_gradients():
    body, head = ckpt.deep_stack(n_blocks=2, width=8), torch.nn.Linear(8, 2)
    x = torch.randn(4, 8)
    with pytest.warns(UserWarning, match="requires_grad"):
        loss = head(checkpoint(body, x, use_reentrant=True)).sum()
    loss.backward()
    assert all(p.grad is None for p in body.parameters())
    assert all(p.grad is not None for p in head.parameters())
    head(checkpoint(body, x, use_reentrant=False)).sum().backward()
    assert all(p.grad is not None for p in body.parameters())


# --- bad arguments ---------------------------------------------------------------------------


def test_policy_needs_op_overloads():
    with pytest.raises(TypeError, match=r"aten\.mm\.default"):
        ckpt.keep_ops_policy([torch.ops.aten.mm])
    with pytest.raises(TypeError, match="torch.ops.aten.mm.default"):
        ckpt.keep_ops_policy(["mm"])
    policy = ckpt.keep_ops_policy(torch.ops.aten.mm.default)  # one op is fine too
    assert policy(None, torch.ops.aten.mm.default) is CheckpointPolicy.MUST_SAVE
    assert policy(None, torch.ops.aten.sin.default) is CheckpointPolicy.PREFER_RECOMPUTE
    with pytest.raises(TypeError, match="policy function"):
        ckpt.log_policy("keep B")


def test_trace_step_errors_say_what_to_do():
    x = torch.randn(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match="function or module"):
        trace_step(42, {"x": x})
    with pytest.raises(TypeError, match="dict of named tensors"):
        trace_step(torch.sin, [x])
    with pytest.raises(TypeError, match="`return`"):
        trace_step(lambda x: None, {"x": x})
    with pytest.raises(RuntimeError, match="requires_grad=True"):
        trace_step(torch.sin, {"x": torch.randn(2, 3)})


def test_sizes_and_segments_are_checked():
    with pytest.raises(ValueError, match="n_blocks must be a whole number of at least 1"):
        ckpt.deep_stack(0)
    with pytest.raises(ValueError, match="batch"):
        ckpt.abc_inputs(batch=0)
    stack = ckpt.deep_stack(n_blocks=4, width=8)
    x = ckpt.stack_input(stack, batch=2)
    with pytest.raises(ValueError, match="between 1 and the number of blocks"):
        ckpt.sweep_segments(stack, x, segments=[0, 2])
    with pytest.raises(ValueError, match="between 1 and the number of blocks"):
        ckpt.sweep_segments(stack, x, segments=[8])
    with pytest.raises(TypeError, match="Sequential"):
        ckpt.sweep_segments([torch.nn.Linear(8, 8)], x)
    sweep = ckpt.sweep_segments(stack, x, segments=[2], repeats=1)
    assert sweep.ks == [1, 2]  # k = 1, the baseline, is always measured
    with pytest.raises(ValueError, match="was not measured"):
        sweep.row(3)


# --- training memory -------------------------------------------------------------------------


def test_training_memory_counts_each_kind_and_leaves_the_model_alone():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(8, 16)
    memory = training_memory(model, x)
    n_bytes = sum(p.numel() for p in model.parameters()) * FLOAT32
    assert memory.parameters == memory.gradients == n_bytes
    assert memory.optimizer_state == 2 * n_bytes + 4 * FLOAT32  # two moments, and one step counter per tensor
    assert memory.activations == measure_step(model, x).saved_bytes
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p, b)
    assert "activations" in str(memory)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        training_memory(lambda x: x, x)


# --- figures ---------------------------------------------------------------------------------


def test_figures_are_returned_closed(traces, sweep):
    figures = [
        checkpointing_figures.plot_checkpoint_graph(traces),
        checkpointing_figures.plot_checkpoint_graph(traces["full"]),
        checkpointing_figures.plot_segments_tradeoff(sweep, highlight=4),
        checkpointing_figures.plot_memory_breakdown(
            {"batch 8": training_memory(torch.nn.Linear(4, 2), torch.randn(3, 4))}
        ),
    ]
    assert len(figures[0].axes) == 3
    assert plt.get_fignums() == []  # closed: a notebook shows each once, as the cell's value
    with pytest.raises(TypeError, match="trace_step"):
        checkpointing_figures.plot_checkpoint_graph({"a": 1})
    with pytest.raises(ValueError, match="at least one"):
        checkpointing_figures.plot_memory_breakdown({})


def test_segments_explorer_shows_a_figure_and_redraws_it(sweep, shown):
    slider = checkpointing_figures.segments_explorer(sweep)
    assert slider.value == 4  # nearest to sqrt(16)
    assert [kind for kind, _ in shown] == ["display", "display"]
    assert shown[0][1].__class__.__name__ == "Figure"
    slider.value = 16
    assert shown[-1][0] == "update" and "k = 16" in shown[-1][1]._suptitle.get_text()
    with pytest.raises(ValueError, match="was not measured"):
        checkpointing_figures.segments_explorer(sweep, k=3)


# --- the lesson's graded exercises grade measured behaviour ----------------------------------


def run_test_file(question, namespace):
    """The instructor's test file of `question` (public and hidden cases) run as `grader.check` runs cases."""
    path = ROOT / edition_paths(LESSON)["autograder"] / "tests" / f"{question}.py"
    cases = [checks.Case(case.code, case.hidden) for case in read_test_file(path).cases]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reentrant answer's deprecation warning
        return checks.CheckResult(
            question, tuple(checks.run_case(c, i, namespace) for i, c in enumerate(cases, 1))
        )


def block_namespace(answer):
    block = ckpt.mlp_block(width=64, hidden=256, seed=0)
    namespace = {
        "torch": torch,
        "checkpoint": checkpoint,
        "block": block,
        "x_block": torch.randn(32, 64, requires_grad=True),
    }
    namespace["checkpointed_block"] = lambda x: answer(block, x)
    return namespace


def test_exercise_1_passes_non_reentrant_checkpointing_only():
    right = run_test_file(
        "q_checkpoint_block", block_namespace(lambda b, x: checkpoint(b, x, use_reentrant=False))
    )
    assert right.passed
    reentrant = run_test_file(
        "q_checkpoint_block", block_namespace(lambda b, x: checkpoint(b, x, use_reentrant=True))
    )
    assert reentrant.public_passed and not reentrant.passed  # a hidden test catches it
    plain = run_test_file("q_checkpoint_block", block_namespace(lambda b, x: b(x)))
    assert not plain.public_passed


def exercise_2_namespace(recomputations=None, kept_bytes=None):
    inputs = ckpt.two_matmuls_inputs(batch=32, width=64, hidden=128, seed=0)
    return {
        "torch": torch,
        "matmul_inputs": inputs,
        "plain_matmuls": trace_step(ckpt.two_matmuls, inputs),
        "predicted_recomputations": recomputations or {"mm": 0, "relu": 1},
        "predicted_kept_bytes": kept_bytes
        or (lambda batch, width, hidden: (batch * hidden + batch * width) * FLOAT32),
    }


def test_exercise_2_grades_the_predictions_by_measuring_in_other_sizes_too():
    assert run_test_file("q_keep_matmuls", exercise_2_namespace()).passed
    for wrong_prediction in (
        exercise_2_namespace({"mm": 2, "relu": 1}),
        exercise_2_namespace(kept_bytes=lambda batch, width, hidden: batch * hidden * FLOAT32),
    ):
        assert not run_test_file("q_keep_matmuls", wrong_prediction).public_passed
    # the public setting's number, copied: the hidden sizes catch it
    copied = run_test_file("q_keep_matmuls", exercise_2_namespace(kept_bytes=lambda *size: 24576))
    assert copied.public_passed and not copied.passed


def test_selective_can_keep_more_than_no_checkpointing():
    # What exercise 2 asks to predict: the cache keeps both matmul outputs, the last one needed by no one.
    inputs = ckpt.two_matmuls_inputs(batch=32, width=64, hidden=128)
    policy = ckpt.keep_ops_policy([torch.ops.aten.mm.default])
    kept = trace_step(
        lambda *a: checkpoint(
            ckpt.two_matmuls,
            *a,
            use_reentrant=False,
            context_fn=partial(create_selective_checkpoint_contexts, policy),
        ),
        inputs,
    )
    plain = trace_step(ckpt.two_matmuls, inputs)
    assert plain.kept_bytes == 32 * 128 * FLOAT32  # relu's output
    assert kept.kept_bytes == (32 * 128 + 32 * 64) * FLOAT32 > plain.kept_bytes


def test_lesson_01_public_check_compares_predictions_with_the_measurement():
    from effitrain_lessons.course.lessons import ROOT, edition_paths
    from effitrain_lessons.shared.checks import Notebook

    grader = Notebook(str(ROOT / edition_paths("01_checkpointing_first_principles")["learner"]))
    env = exercise_2_namespace()
    assert grader.check("q_keep_matmuls", env).passed
    wrong = repr(
        grader.check(
            "q_keep_matmuls",
            {
                **env,
                "predicted_recomputations": {"mm": 1, "relu": 1},
                "predicted_kept_bytes": lambda batch, width, hidden: batch * hidden * 4,
            },
        )
    )
    assert "1 of 1 public tests failed" in wrong  # the one public case; the type-only case is gone
    assert (
        "You predicted predicted_recomputations = {'mm': 1, 'relu': 1}: that is not what was measured. "
        "Not what was measured: 'mm'. Re-read section 2" in wrong
    )
    assert "too high" not in wrong.lower() and "too low" not in wrong.lower()
    only_bytes = repr(
        grader.check(
            "q_keep_matmuls", {**env, "predicted_kept_bytes": lambda batch, width, hidden: batch * hidden * 4}
        )
    )
    assert (
        "You predicted predicted_kept_bytes(32, 64, 128) = 16,384: that is not what was measured. "
        "Re-read section 2's box How we measured" in only_bytes
    )
    assert "24,576" not in only_bytes and "24576" not in only_bytes
    unanswered = repr(grader.check("q_keep_matmuls", {**env, "predicted_kept_bytes": 24576}))
    assert "predicted_kept_bytes(batch, width, hidden) should give a number of bytes" in unanswered


@pytest.mark.parametrize("n_layers, segments", [(12, 3), (36, 6), (16, 4)])
def test_the_drawn_step_is_what_the_lesson_says_and_measures(n_layers, segments):
    plain = checkpointing_figures._memory_over_step(n_layers, 1)
    checkpointed = checkpointing_figures._memory_over_step(n_layers, segments)
    assert max(held for _, held, _ in plain) == n_layers
    # the peak is Chen et al.'s model, the one the measured sweep follows
    assert max(held for _, held, _ in checkpointed) == ckpt.chen_memory(n_layers, segments)
    # the last segment is not recomputed; the others are, once each
    assert sum(phase == "recompute" for phase, _, _ in checkpointed) == n_layers - n_layers // segments
    assert sum(phase == "backward" for phase, _, _ in checkpointed) == n_layers
    # a backward costs two forwards: the drawn cost is the FLOPs model the sweep measures
    cost = sum(c for _, _, c in checkpointed) / sum(c for _, _, c in plain)
    assert sum(c for _, _, c in plain) == 3 * n_layers
    assert cost == pytest.approx(ckpt.chen_flops_ratio(segments))
    assert all(held >= 1 for _, held, _ in plain + checkpointed)
    assert checkpointing_figures.draw_checkpointing_memory(n_layers, segments).axes
    with pytest.raises(ValueError, match="segments must divide n_layers"):
        checkpointing_figures.draw_checkpointing_memory(12, 5)


def test_the_lesson_s_drawing_lands_on_the_x1_22_measured_at_k_3():
    timelines = [checkpointing_figures._memory_over_step(12, k) for k in (1, 3)]
    plain, checkpointed = (sum(c for _, _, c in t) for t in timelines)
    assert (plain, checkpointed) == (36, 44) and round(checkpointed / plain, 2) == 1.22


def test_the_sweep_prints_itself_as_a_table(sweep):
    lines = str(sweep).splitlines()
    assert lines[0].split() == [
        "segments",
        "k",
        "kept",
        "for",
        "backward",
        "of",
        "k",
        "=",
        "1",
        "FLOPs",
        "time",
    ]
    assert len([line for line in lines if line[:1].isdigit()]) == len(sweep.ks)
    assert f"least memory at k = {sweep.best_k}; sqrt(n) = 4" in str(sweep)
    assert "<th>segments k</th>" in sweep._repr_html_()


# --- what the cells print (first_principles.reports) -----------------------------------------


@pytest.fixture
def turkish(monkeypatch):
    from effitrain_lessons.shared import i18n

    monkeypatch.setenv(i18n.ENVIRONMENT, "tr")


def test_activation_shares_name_each_batch_and_the_activations_share():
    from effitrain_lessons.first_principles.reports import activation_shares
    from effitrain_lessons.shared.memory import TrainingMemory

    memory = TrainingMemory(parameters=1024, gradients=1024, optimizer_state=2048, activations=4096)
    assert activation_shares({8: memory, "warm": memory}).splitlines() == [
        "batch 8: activations are 50% of 8.00 KiB",
        "warm: activations are 50% of 8.00 KiB",
    ]
    with pytest.raises(ValueError, match="at least one"):
        activation_shares({})


def test_activation_shares_in_turkish(turkish):
    from effitrain_lessons.first_principles.reports import activation_shares
    from effitrain_lessons.shared.memory import TrainingMemory

    memory = TrainingMemory(parameters=1024, gradients=1024, optimizer_state=3072, activations=3072)
    assert (
        activation_shares({32: memory})
        == "grup boyutu 32: aktivasyonların toplam 8,00 KiB bellekteki payı %38"
    )


def test_the_memory_breakdown_labels_a_batch_size_as_a_batch():
    memory = training_memory(torch.nn.Linear(4, 2), torch.randn(3, 4))
    figure = checkpointing_figures.plot_memory_breakdown({8: memory, "other": memory})
    figure.canvas.draw()
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["batch 8", "other"]


def test_kept_by_policy_agrees_with_the_trace():
    from effitrain_lessons.first_principles.reports import kept_by_policy

    inputs = ckpt.abc_inputs(batch=16, width=32, seed=0)
    policy, log = ckpt.log_policy(ckpt.keep_ops_policy([ckpt.B_COSTLY_OP]))
    trace = trace_step(partial(abc_selective, policy=policy), inputs, names=ckpt.ABC_OPS)
    lines = kept_by_policy(log, trace).splitlines()
    assert lines == [
        "the policy kept [('mm', (16, 32), 2048)] -> 2.00 KiB",
        "still in memory when the backward pass started: 2.00 KiB",
    ]


def test_saved_by_mode_lines_up_the_modes_and_needs_both_settings():
    from effitrain_lessons.first_principles.reports import saved_by_mode

    lines = saved_by_mode(
        {
            ("train", False): 6 * 2**20,
            ("train", True): 512 * 2**10,
            ("eval", False): 2048,
            ("eval", True): 2048,
        }
    ).splitlines()
    assert lines == [
        "train()  saved for backward without checkpointing:   6.00 MiB, with: 512.00 KiB",
        "eval()   saved for backward without checkpointing:   2.00 KiB, with:   2.00 KiB",
    ]
    with pytest.raises(ValueError, match=r"eval\(\) without and with checkpointing"):
        saved_by_mode({("eval", False): 2048})


def test_missing_gradients_counts_and_quotes_the_warning(turkish):
    from effitrain_lessons.first_principles.reports import missing_gradients

    body, head = ckpt.deep_stack(n_blocks=2, width=8), torch.nn.Linear(8, 2)
    missing, warned = {}, {}
    for reentrant in (True, False):
        body.zero_grad(set_to_none=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = head(checkpoint(body, torch.randn(4, 8), use_reentrant=reentrant)).sum()
        loss.backward()
        missing[reentrant] = sum(p.grad is None for p in body.parameters())
        warned[reentrant] = caught
    lines = missing_gradients(missing, warned, weights=4).splitlines()
    assert lines[0] == "use_reentrant=True: gövdenin 4 ağırlığından 4 tanesi gradyan almadı"
    assert lines[1].startswith('    tek belirti bir uyarı: "') and "requires_grad" in lines[1]
    assert lines[2:] == ["use_reentrant=False: gövdenin 4 ağırlığından 0 tanesi gradyan almadı"]


def test_the_lessons_case_names_are_translated_and_code_stays_code(traces, turkish):
    table = str(
        ckpt.compare_traces(
            {"no checkpointing": traces["none"], "checkpoint(abc, ...)": traces["full"]}, names=()
        )
    )
    assert "kontrol noktası yok" in table and "checkpoint(abc, ...)" in table and "x1,333" in table
    assert "recomputed" not in table and "yeniden" not in table  # no names: no recomputation columns
