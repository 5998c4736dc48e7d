"""Lesson 6's measurements of what to recompute: eager checkpointing choices and torch.compile's
memory budget."""

from dataclasses import replace
from functools import partial

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

from effitrain_lessons.first_principles.checkpointing import keep_ops_policy
from effitrain_lessons.shared.memory import record_saved_tensors, storage_key
from effitrain_lessons.shared.timing import Times
from effitrain_lessons.will_it_fit import figures as plan_figures
from effitrain_lessons.will_it_fit import recompute

aten = torch.ops.aten
MATRIX_PRODUCTS = [aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default]
BUDGETS = (0.0, 0.5, 1.0)


def small_layer(dropout=0.0):
    layer = recompute.bert_layer(hidden=64, heads=2, intermediate=128, dropout=dropout, seed=0)
    return layer, recompute.layer_input(layer, batch=2, seq=16, seed=0)


def full(layer):
    return lambda x: checkpoint(layer, x, use_reentrant=False)


def selective(layer):
    policy = keep_ops_policy(MATRIX_PRODUCTS)
    return lambda x: checkpoint(
        layer, x, use_reentrant=False, context_fn=partial(create_selective_checkpoint_contexts, policy)
    )


class Probe:
    """A loss whose gradients reach every weight (the sum of a layer-normed output has nearly none).
    While `keep` is on it keeps a copy of each output it is given (a copy the eager counters would
    rightly count as memory the step holds, so it is off for them)."""

    def __init__(self, like):
        self.weights = torch.randn(like.shape, generator=torch.Generator().manual_seed(1))
        self.keep = False
        self.outputs = []

    def __call__(self, output):
        if self.keep:
            self.outputs.append(output.detach().clone())
        return (output * self.weights).sum()


@pytest.fixture(scope="module")
def measured():
    layer, x = small_layer()
    probe = Probe(x)
    eager = {
        "none": recompute.measure_recompute(layer, x, "no checkpointing", loss_fn=probe),
        "full": recompute.measure_recompute(
            full(layer), x, "full checkpointing", parameters=layer, loss_fn=probe
        ),
        "selective": recompute.measure_recompute(
            selective(layer), x, "selective", parameters=layer, loss_fn=probe
        ),
    }
    outputs = {}
    sweep = {}
    probe.keep = True
    with torch._functorch.config.patch(activation_memory_budget=0.3):  # a setting the sweep must restore
        for budget in BUDGETS:
            probe.outputs.clear()
            sweep[budget] = recompute.measure_budget(layer, x, budget, loss_fn=probe)
            outputs[budget] = probe.outputs[0]  # the measured step's (a compiled step is not timed)
        restored = torch._functorch.config.activation_memory_budget
    reference = layer(x)
    return {
        "layer": layer,
        "x": x,
        "eager": eager,
        "sweep": sweep,
        "outputs": outputs,
        "reference": reference,
        "restored": restored,
    }


# --- eager: none, full, selective -------------------------------------------------------------


def test_full_keeps_less_than_selective_which_keeps_less_than_none(measured):
    none, full_, sel = (measured["eager"][k] for k in ("none", "full", "selective"))
    assert full_.saved_bytes < sel.saved_bytes < none.saved_bytes
    assert full_.saved_bytes == 0  # full checkpointing keeps only the layer's input, which is not counted


def test_selective_flops_lie_between_none_and_full(measured):
    none, full_, sel = (measured["eager"][k] for k in ("none", "full", "selective"))
    assert none.flops <= sel.flops < full_.flops
    # full checkpointing runs the forward's matrix products once more: forward FLOPs on top
    assert full_.flops == none.flops + none.forward_flops


def test_selective_recomputes_no_matrix_product(measured):
    sel, full_ = measured["eager"]["selective"], measured["eager"]["full"]
    assert not {"mm", "addmm", "bmm", "baddbmm"} & set(sel.recomputed)
    # 6 linear layers, 2 attention products
    assert full_.recomputed["addmm"] == 6 and full_.recomputed["bmm"] == 2
    assert sel.recomputed["_softmax"] == 1 and sel.recomputed["gelu"] == 1


def test_eager_checkpointing_replays_dropout():
    """torch.utils.checkpoint restores the random state before recomputing: with dropout on, the three
    eager steps (each drawn from the same state) give the same gradients."""
    layer, x = small_layer(dropout=0.3)
    probe = Probe(x)
    none, full_, sel = (
        recompute.measure_recompute(fn, x, name, parameters=layer, loss_fn=probe)
        for name, fn in (("none", layer), ("full", full(layer)), ("selective", selective(layer)))
    )
    for name, gradient in none.gradients.items():
        torch.testing.assert_close(full_.gradients[name], gradient)
        torch.testing.assert_close(sel.gradients[name], gradient)


def test_a_compiled_function_is_refused(measured):
    compiled = torch.compile(measured["layer"], backend="aot_eager_decomp_partition")
    with pytest.raises(TypeError, match="memory_budget_sweep"):
        recompute.measure_recompute(compiled, measured["x"], "compiled")


# --- the memory budget ------------------------------------------------------------------------


def test_the_knob_lives_in_functorch_config_not_dynamo_config():
    # The PyTorch blog names torch._dynamo.config.activation_memory_budget: torch 2.13 has no such name.
    assert not hasattr(torch._dynamo.config, "activation_memory_budget")
    assert torch._functorch.config.activation_memory_budget == 1.0


def test_saved_bytes_fall_and_flops_rise_as_the_budget_goes_down(measured):
    points = [measured["sweep"][b] for b in sorted(BUDGETS)]
    saved = [p.saved_bytes for p in points]
    flops = [p.flops for p in points]
    assert saved == sorted(saved) and saved[0] < saved[-1]
    assert flops == sorted(flops, reverse=True) and flops[0] > flops[-1]


def test_budget_zero_recomputes_like_full_checkpointing(measured):
    zero, full_ = measured["sweep"][0.0], measured["eager"]["full"]
    assert zero.saved_bytes <= full_.saved_bytes
    assert zero.flops == full_.flops
    assert {op: zero.recomputed[op] for op in ("addmm", "bmm")} == {"addmm": 6, "bmm": 2}


def test_budget_one_recomputes_no_matrix_product(measured):
    """At 1 the partitioner recomputes only cheap elementwise ops: eager's FLOPs. (What it keeps
    against eager autograd depends on the sizes: at the lesson's, less; at this test's, a little more.)"""
    one, none = measured["sweep"][1.0], measured["eager"]["none"]
    assert one.flops == none.flops
    assert not {"mm", "addmm", "bmm"} & set(one.recomputed)


def test_the_hooks_see_what_the_partitioned_graph_hands_to_backward(measured):
    for point in measured["sweep"].values():
        assert point.graph_saved_bytes == point.saved_bytes
        assert point.forward_flops < point.flops


def saved_with_torch_backend(layer, x, **config):
    """Bytes saved by torch's own aot_eager_decomp_partition backend (no counting), under `config`."""
    torch._dynamo.reset()
    try:
        with torch._functorch.config.patch(**config):
            compiled = torch.compile(layer, backend="aot_eager_decomp_partition")
            with record_saved_tensors(layer) as log:
                loss = compiled(x).sum()
            loss.backward()
    finally:
        torch._dynamo.reset()
        layer.zero_grad(set_to_none=True)
        x.grad = None
    return sum(e.nbytes for e in log.activations if e.storage != storage_key(x))


def test_budget_one_is_what_torch_compile_keeps_by_default(measured):
    layer, x = measured["layer"], measured["x"]
    assert saved_with_torch_backend(layer, x) == measured["sweep"][1.0].saved_bytes
    assert (
        saved_with_torch_backend(layer, x, activation_memory_budget=0.5) == measured["sweep"][0.5].saved_bytes
    )


def test_every_budget_gives_the_uncompiled_outputs_and_gradients(measured):
    layer, reference = measured["layer"], measured["reference"]
    want = measured["eager"]["none"].gradients
    assert set(want) == {"x", *dict(layer.named_parameters())}
    for budget, point in measured["sweep"].items():
        assert not point.redraws_random  # no dropout here
        torch.testing.assert_close(
            measured["outputs"][budget], reference.detach(), msg=f"output at budget {budget}"
        )
        assert set(point.gradients) == set(want)
        for name, gradient in want.items():
            torch.testing.assert_close(point.gradients[name], gradient, msg=f"{name} at budget {budget}")
    for point in measured["eager"].values():  # checkpointing changes no gradient either
        for name, gradient in want.items():
            torch.testing.assert_close(point.gradients[name], gradient)


def test_with_dropout_a_redrawn_backward_means_other_gradients():
    """torch 2.13 on a CPU: below budget 1 the partitioner may recompute dropout's random numbers in the
    backward with fresh randomness (pytorch/pytorch#190758). The flag must say so exactly when the
    gradients differ from budget 1's (which keeps the masks) for the same random numbers."""
    layer, x = small_layer(dropout=0.3)
    probe = Probe(x)
    keep, zero = (recompute.measure_budget(layer, x, b, loss_fn=probe) for b in (1.0, 0.0))
    assert keep.redraws_random is False
    same = all(torch.allclose(zero.gradients[name], g) for name, g in keep.gradients.items())
    assert zero.redraws_random == (not same)


@pytest.mark.parametrize("budget", [1.5, -0.1, True, "0.5", None])
def test_a_budget_outside_zero_to_one_is_one_sentence(budget):
    layer, x = small_layer()
    with pytest.raises(ValueError, match=r"^A memory budget is a fraction from 0 to 1 .*got") as error:
        recompute.memory_budget_sweep(layer, x, budgets=(0.5, budget))
    assert str(error.value).count(". ") == 0  # one sentence


def test_the_sweep_restores_the_config(measured):
    assert measured["restored"] == 0.3
    assert torch._functorch.config.activation_memory_budget == 1.0


# --- the curve ---------------------------------------------------------------------------------


def timed(*seconds):
    """Steps of these times, on the CPU clock."""
    return Times(seconds, seconds, "cpu")


def point(label, saved, flops, budget=None):
    return recompute.RecomputePoint(
        label=label,
        saved_bytes=saved,
        flops=flops,
        forward_flops=flops // 3,
        times=None if budget is not None else timed(1.0),
        budget=budget,
    )


def test_pareto_optimal_points():
    curve = recompute.RecomputeCurve(
        [
            point("none", 100, 10),
            point("full", 0, 14),
            point("worse", 60, 12),
            point("selective", 50, 10),
            point("tie", 50, 10),
        ]
    )
    assert [p.label for p in curve.optimal()] == ["full", "selective", "tie"]
    assert not curve.is_optimal(curve.point("none")) and not curve.is_optimal(curve.point("worse"))
    rows = {row[0]: row for row in curve.table().rows}
    assert rows["selective"][7] == "*" and rows["none"][7] == ""


def test_the_curve_prints_itself(measured):
    curve = recompute.RecomputeCurve([*measured["eager"].values(), *measured["sweep"].values()])
    text = str(curve)
    assert "memory budget 0.5" in text and "selective" in text and "Pareto-optimal" in text
    assert len(curve.table().rows) == 6
    assert curve.baseline.label == "no checkpointing"
    with pytest.raises(KeyError, match="labels are"):
        curve.point("nothing")
    with pytest.raises(TypeError):
        recompute.RecomputeCurve([])


def test_the_plot_labels_every_point(measured):
    curve = recompute.RecomputeCurve([*measured["eager"].values(), *measured["sweep"].values()])
    fig = plan_figures.plot_recompute_pareto(curve)
    ax = fig.axes[0]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts]
    for p in curve.points:
        assert (f"{p.budget:g}" if p.compiled else p.label) in texts
    lines = {line.get_gid(): line for line in ax.get_lines()}
    assert len(lines["budget-line"].get_xdata()) == len(BUDGETS)
    assert len(lines["pareto"].get_xdata()) == len(curve.optimal())
    assert sum(line.get_gid() == "eager-point" for line in ax.get_lines()) == 3
    assert "redraws-random" not in lines
    redrawn = replace(point("zero", 0, 14, budget=0.0), redraws_random=True)
    flags = recompute.RecomputeCurve([point("none", 100, 10), redrawn])
    assert "redraws-random" in {
        line.get_gid() for line in plan_figures.plot_recompute_pareto(flags).axes[0].get_lines()
    }


def test_a_point_with_wrong_gradients_is_never_optimal_nor_rules_out_another():
    wrong = replace(point("budget 0.5", 40, 10, budget=0.5), redraws_random=True)
    curve = recompute.RecomputeCurve([point("none", 100, 10), point("selective", 50, 10), wrong])
    assert not curve.is_optimal(wrong)
    assert [p.label for p in curve.optimal()] == ["selective"]  # still optimal: `wrong` is no option
    fig = plan_figures.plot_recompute_pareto(curve)
    rings = next(line for line in fig.axes[0].get_lines() if line.get_gid() == "pareto")
    crosses = next(line for line in fig.axes[0].get_lines() if line.get_gid() == "redraws-random")
    assert list(rings.get_ydata()) == [50 / 2**20]
    assert not set(crosses.get_ydata()) & set(rings.get_ydata())


def test_time_is_a_second_price_among_eager_points_only():
    slow_selective = replace(point("selective", 50, 10), times=timed(1.5, 1.6, 1.7))
    curve = recompute.RecomputeCurve(
        [
            point("none", 100, 10),
            replace(point("full", 0, 14), times=timed(1.5)),
            slow_selective,
            point("budget 1", 60, 10, budget=1.0),  # a compiled step is not timed: no rival on time
        ]
    )
    assert [p.label for p in curve.optimal()] == ["full", "selective"]
    # on time, full checkpointing keeps less for less: selective is no best trade-off
    assert [p.label for p in curve.optimal("seconds")] == ["full", "none"]
    rows = {row[0]: row for row in curve.table().rows}
    assert rows["selective"][7] == "*" and rows["full"][7] == "*+" and rows["none"][7] == "+"
    assert rows["memory budget 1"][5] == "-"  # a compiled step's time is not shown
    assert rows["selective"][5] == "1.60x (1.55x-1.65x)"  # the median ratio, and the range the spreads allow
    assert rows["selective"][4] == "+0.0%" and rows["full"][4] == "+40.0%"  # the FLOPs recomputed
    fig = plan_figures.plot_recompute_pareto(curve)
    left, right = fig.axes
    points = [line for line in right.get_lines() if line.get_gid() == "time-point"]
    assert sorted(line.get_xdata()[0] for line in points) == [1.0, 1.5, 1.6]  # eager only, x no checkpointing
    spreads = [c for c in right.collections if c.get_gid() == "time-spread"]
    assert len(spreads) == 3  # a bar for each timed point's spread
    with pytest.raises(ValueError, match="cost is"):
        curve.optimal("joules")


def test_measure_steps_times_the_steps_in_turns():
    layer, x = small_layer()
    points = recompute.measure_steps(
        {"no checkpointing": layer, "full": full(layer)}, x, parameters=layer, warmup=1, repeats=3
    )
    assert [p.label for p in points] == ["no checkpointing", "full"]
    assert points[1].saved_bytes < points[0].saved_bytes and points[1].flops > points[0].flops
    # timed as every lesson times: the steps after the warm-up, on this process's CPU clock
    assert all(p.times.steps == 3 and p.times.clock == "cpu" and 0 < p.seconds < 60 for p in points)
    assert all(p.grad is None for p in layer.parameters())


def test_a_layer_can_take_a_registered_attention_function():
    from torch.utils.checkpoint import checkpoint
    from transformers import AttentionInterface
    from transformers.models.bert.modeling_bert import eager_attention_forward

    calls = []

    def core(module, query, key, value, attention_mask, **kwargs):
        calls.append(query.shape)
        return checkpoint(
            eager_attention_forward, module, query, key, value, attention_mask, use_reentrant=False, **kwargs
        )

    AttentionInterface.register("test_core", core)
    plain, wrapped = recompute.bert_layer(seed=3), recompute.bert_layer(seed=3, attention="test_core")
    x = recompute.layer_input(plain, batch=2, seq=16, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), wrapped.state_dict().values()))
    plain.eval(), wrapped.eval()
    assert torch.allclose(plain(x), wrapped(x)) and calls


def test_a_table_of_eager_steps_says_whether_their_gradients_match_the_baseline():
    same = {"w": torch.ones(3)}
    plain = replace(point("no checkpointing", 100, 10), gradients=same)
    full = replace(point("full", 0, 14), gradients={"w": torch.ones(3) + 1e-7})  # summed in another order
    curve = recompute.RecomputeCurve([plain, full])
    assert curve.same_gradients() is True
    assert curve.table().notes[0] == "the same gradients as without checkpointing: yes"
    wrong = replace(point("wrong", 50, 12), gradients={"w": torch.zeros(3)})
    assert recompute.RecomputeCurve([plain, full, wrong]).same_gradients() is False
    assert "as without checkpointing: no" in str(recompute.RecomputeCurve([plain, wrong]))
    # points measured without gradients, or a compiled point among them: no such line
    assert recompute.RecomputeCurve([point("none", 100, 10), point("full", 0, 14)]).same_gradients() is None
    compiled = replace(point("budget 1", 80, 10, budget=1.0), gradients=same)
    notes = recompute.RecomputeCurve([plain, full, compiled]).table().notes
    assert not any("same gradients" in note for note in notes)
