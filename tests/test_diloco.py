"""Tests for lesson 5: DiLoCo's outer step in lesson 4's loop, on real processes (2, gloo, CPU).

The lesson's loop is `effitrain_lessons/diloco/saved.py` (built from the lesson's `# @save`
cell). Three things hold it: the rule its synchronizations follow, counted by lesson 4's
instrumentation; its equivalence with `accelerate`'s `LocalSGD` (lesson 4's loop) when the outer
optimizer is SGD at lr 1 without momentum; and a second, plainly written single-process simulation
of the algorithm, fed the batches each process saw, which its parameters must match.
"""

import copy
import json
import os
import subprocess
import sys

import pytest
import torch

from effitrain_lessons.diloco import runs as diloco
from effitrain_lessons.diloco.runs import (
    DiLoCoConfig,
    OptimizerWatch,
    outer_step_ratios,
    results,
    row,
    sync_times,
)
from effitrain_lessons.diloco.saved import all_reduce_mean, fragments_of, train
from effitrain_lessons.local_sgd.runs import LocalSGDConfig
from effitrain_lessons.local_sgd.saved import train as local_sgd_train
from effitrain_lessons.shared.distributed_runs import config_of, launch, measured_run
from effitrain_lessons.shared.models import tiny_bert

STEPS = 20


def model_tensors_and_bytes() -> tuple[int, int]:
    parameters = list(tiny_bert(num_hidden_layers=1).parameters())
    return len(parameters), sum(p.numel() * p.element_size() for p in parameters)


@pytest.fixture(scope="module")
def runs():
    configs = [DiLoCoConfig(h=h, steps=STEPS, layers=1) for h in (3, 5, 8)]
    configs += [
        DiLoCoConfig(h=5, steps=STEPS, layers=1, bucketed=False),
        DiLoCoConfig(h=5, steps=STEPS, layers=1, precision="bf16"),
        DiLoCoConfig(h=8, steps=STEPS, layers=1, fragments=2),
        DiLoCoConfig(mode="ddp", steps=STEPS, layers=1),
    ]
    return dict(
        zip(
            ["h3", "h5", "h8", "per_tensor", "bf16", "fragments", "ddp"],
            launch(configs, train, num_processes=2),
        )
    )


@pytest.mark.parametrize("name, h", [("h3", 3), ("h5", 5), ("h8", 8)])
def test_diloco_synchronizes_floor_steps_over_h_times_one_call_each(runs, name, h):
    tensors, size = model_tensors_and_bytes()
    for report in runs[name]:
        assert report.distributed_type == "MULTI_CPU" and report.num_processes == 2
        assert report.synchronizations == STEPS // h == config_of(report).expected_synchronizations()
        # after every H-th step, none on exit
        assert report.sync_steps == [h * (i + 1) for i in range(STEPS // h)]
        assert report.gradient_allreduces == []  # no_sync: the inner steps never all-reduce a gradient
        assert report.allreduce_calls == STEPS // h and report.allreduce_bytes == STEPS // h * size
    assert tensors > 1


def test_one_call_per_tensor_and_bf16_halves_the_bytes(runs):
    tensors, size = model_tensors_and_bytes()
    per_tensor, bf16 = runs["per_tensor"][0], runs["bf16"][0]
    assert per_tensor.synchronizations == bf16.synchronizations == STEPS // 5
    assert (
        per_tensor.allreduce_calls == STEPS // 5 * tensors and per_tensor.allreduce_bytes == STEPS // 5 * size
    )
    assert bf16.allreduce_calls == STEPS // 5 and bf16.allreduce_bytes == STEPS // 5 * size // 2
    assert row(runs["per_tensor"])["calls_per_sync"] == tensors and row(runs["h5"])["calls_per_sync"] == 1


def test_parameters_agree_after_an_outer_step_and_drift_in_between(runs):
    # 20 steps at H = 5 end on an outer step: every process holds the same parameters
    assert len({report.final_fingerprint for report in runs["h5"]}) == 1
    # at H = 3 the last 2 steps come after the last outer step (18): the processes differ
    assert len({report.final_fingerprint for report in runs["h3"]}) == 2
    step_after_sync = [len({r.fingerprints[step - 1] for r in runs["h5"]}) for step in (5, 6, 10, 11)]
    assert step_after_sync == [1, 2, 1, 2]


def test_streaming_syncs_one_fragment_every_h_over_fragments_steps(runs):
    tensors, size = model_tensors_and_bytes()
    report = runs["fragments"][0]
    assert report.synchronizations == STEPS // 4 and report.sync_steps == [4, 8, 12, 16, 20]
    by_round = {}
    for round_, size_ in report.parameter_allreduces:
        by_round[round_] = by_round.get(round_, 0) + size_
    halves = sorted(set(by_round.values()))
    assert len(halves) == 2 and sum(halves) == size  # the two fragments are the whole model
    assert all(0.4 < half / size < 0.6 for half in halves)  # of about equal size


def test_streaming_ends_elsewhere_than_plain_diloco_and_the_table_shows_each_process(runs):
    """Plain DiLoCo and the 2-fragment run at the same H printed the same validation loss in the lesson
    (0.4261): a coincidence of process 0's rounding, not one schedule run twice. A loop that synced
    every fragment at once, or fragments that did not split the model, would end where plain
    DiLoCo ends; and a table showing process 0 alone hides that the processes disagree."""
    plain, streaming = runs["h8"][0].parameters(), runs["fragments"][0].parameters()
    assert (plain - streaming).abs().max().item() > 1e-3
    # 20 steps, a fragment every 4: fragment 1 last synced at step 16, so the processes end apart
    assert len({report.final_fingerprint for report in runs["fragments"]}) == 2
    table = results([runs["h5"], runs["fragments"]])  # H = 5 ends on an outer step: one loss
    losses = [r[9] for r in table.rows]
    assert "/" not in losses[0] and losses[1] == " / ".join(
        f"{report.eval_loss:.4f}" for report in runs["fragments"]
    )
    assert any("each process's own" in note for note in table.notes)
    assert not any("each process's own" in note for note in results([runs["h5"]]).notes)


def test_data_parallel_in_the_same_loop_all_reduces_gradients_every_step(runs):
    report = runs["ddp"][0]
    assert report.synchronizations == STEPS and report.parameter_allreduces == []
    assert sync_times(runs["ddp"]) is None  # data parallel's all-reduces run inside backward: not timed
    timed = sync_times(runs["h5"])
    assert timed.steps == STEPS // 5 and timed.median > 0 and timed.clock == "wall"
    assert row(runs["h5"])["ms_per_sync"] == pytest.approx(1000 * timed.median)


def test_the_results_table_has_a_row_per_run_and_the_rule(runs):
    table = results([runs["ddp"], runs["h5"], runs["per_tensor"]])
    assert [r[0] for r in table.rows] == ["data parallel", "DiLoCo, H = 5", "DiLoCo, H = 5, per tensor"]
    assert [(r[2], r[3]) for r in table.rows] == [(STEPS, STEPS), (4, 4), (4, 4)]


@pytest.mark.parametrize("h, steps", [(4, 8), (5, 15)])
def test_local_sgd_is_diloco_with_outer_sgd_lr_1_and_no_momentum(h, steps):
    """Lesson 4's loop (accelerate's LocalSGD, averaging parameters) against lesson 5's (an outer SGD
    step with the averaged pseudo-gradient): the same parameters up to float32's rounding, where
    the paper's outer optimizer lands far away."""
    configs = [
        LocalSGDConfig(mode="local_sgd", k=h, steps=steps, layers=1),
        DiLoCoConfig(h=h, outer_lr=1.0, outer_momentum=0.0, steps=steps, layers=1),
        DiLoCoConfig(h=h, steps=steps, layers=1),
    ]
    local, plain, nesterov = launch(configs, [local_sgd_train, train, train], num_processes=2)
    assert local[0].synchronizations == steps // h + 1 and plain[0].synchronizations == steps // h
    difference = (local[0].parameters() - plain[0].parameters()).abs().max().item()
    assert difference < 1e-5
    assert abs(local[0].eval_loss - plain[0].eval_loss) < 1e-5
    assert (local[0].parameters() - nesterov[0].parameters()).abs().max().item() > 100 * max(difference, 1e-7)


def _recording(folder):
    """Lesson 5's loop, with every batch this process trained on saved for the simulation."""

    def loop(config, model, train_set):
        batches = []
        hook = model.register_forward_pre_hook(
            lambda module, args, kwargs: batches.append({k: v.clone() for k, v in kwargs.items()}),
            with_kwargs=True,
        )
        try:
            train(config, model, train_set)
        finally:
            hook.remove()
        torch.save(batches, os.path.join(folder, f"rank{os.environ['RANK']}.pt"))

    return loop


def _simulate(config: DiLoCoConfig, batches: list[list[dict]]) -> torch.Tensor:
    """DiLoCo in one process, written out: one model and AdamW per worker, and every H steps the
    average of (global - local) as the gradient of an SGD step with Nesterov momentum, by hand."""
    torch.manual_seed(config.seed)
    start = tiny_bert(num_hidden_layers=config.layers, dropout=False)
    workers = [copy.deepcopy(start) for _ in batches]
    optimizers = [torch.optim.AdamW(worker.parameters(), lr=config.learning_rate) for worker in workers]
    theta = [p.detach().clone() for p in start.parameters()]
    momenta = [torch.zeros_like(t) for t in theta]
    send = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[config.precision]
    for step in range(config.steps):
        for worker, optimizer, seen in zip(workers, optimizers, batches):
            worker.train()
            worker(**seen[step]).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if (step + 1) % config.h == 0:
            with torch.no_grad():
                for index, t in enumerate(theta):
                    total = None
                    for worker in workers:
                        delta = (t - list(worker.parameters())[index]).to(send)
                        total = delta if total is None else total + delta
                    delta = total.float() / len(workers)
                    momenta[index] = config.outer_momentum * momenta[index] + delta
                    step_ = delta + config.outer_momentum * momenta[index] if config.outer_momentum else delta
                    t -= config.outer_lr * step_
                for worker in workers:
                    for p, t in zip(worker.parameters(), theta):
                        p.copy_(t)
    return torch.cat([t.reshape(-1) for t in theta])


@pytest.mark.parametrize(
    "settings",
    [dict(h=4), dict(h=3, outer_lr=0.5, outer_momentum=0.5, bucketed=False), dict(h=4, precision="bf16")],
)
def test_the_lessons_diloco_matches_a_plain_single_process_simulation(tmp_path, settings):
    config = DiLoCoConfig(steps=12, layers=1, **settings)
    reports = launch([config], _recording(str(tmp_path)), num_processes=2)[0]
    batches = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)]
    assert len(batches[0]) == 12 and not torch.equal(batches[0][0]["input_ids"], batches[1][0]["input_ids"])
    simulated = _simulate(config, batches)
    difference = (reports[0].parameters() - simulated).abs().max().item()
    if config.precision == "fp32":
        assert difference < 2e-5
    else:  # a rounding to bf16 can land on either side: but much nearer the bf16 simulation than the fp32 one
        in_fp32 = _simulate(DiLoCoConfig(**{**config.__dict__, "precision": "fp32"}), batches)
        assert difference < 1e-4 and difference < (reports[0].parameters() - in_fp32).abs().max().item() / 5
    without_momentum = _simulate(DiLoCoConfig(**{**config.__dict__, "outer_momentum": 0.0}), batches)
    if config.outer_momentum:  # the comparison can tell a wrong outer step from the right one
        assert (reports[0].parameters() - without_momentum).abs().max().item() > 100 * max(difference, 1e-7)


def test_in_one_process_nothing_is_averaged():
    tensors = [torch.ones(3), torch.arange(4.0)]
    all_reduce_mean(tensors)
    assert torch.equal(tensors[0], torch.ones(3)) and torch.equal(tensors[1], torch.arange(4.0))
    alone = measured_run(DiLoCoConfig(h=2, steps=4, layers=1), train)
    assert alone.distributed_type == "NO" and alone.synchronizations == 0


def test_fragments_are_consecutive_and_cover_every_parameter():
    parameters = list(tiny_bert(num_hidden_layers=1).parameters())
    for count in (1, 2, 3):
        fragments = fragments_of(parameters, count)
        assert sum(fragments, []) == list(range(len(parameters))) and all(fragments)


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(h=0), "h must be a whole number"),
        (dict(h=6, fragments=4), "H must be a multiple of the number of fragments"),
        (dict(precision="fp8"), "precision must be one of"),
        (dict(outer_momentum=1.0), "outer learning rate must be above 0 and the momentum in"),
        (dict(mode="local_sgd"), "mode must be one of"),
        (dict(accumulation=2), "does not accumulate gradients"),
    ],
)
def test_bad_settings_are_one_sentence(settings, message):
    with pytest.raises(ValueError, match=message):
        DiLoCoConfig(**settings).check()


def test_labels_name_what_differs_from_the_paper():
    assert DiLoCoConfig(h=8).label == "DiLoCo, H = 8"
    assert (
        DiLoCoConfig(h=8, outer_lr=1.0, outer_momentum=0.0).label == "DiLoCo, H = 8, outer lr 1, no momentum"
    )
    assert DiLoCoConfig(h=8, outer_lr=0.3).label == "DiLoCo, H = 8, outer lr 0.3"
    assert DiLoCoConfig(h=8, outer_momentum=0.5).label == "DiLoCo, H = 8, outer lr 0.7, momentum 0.5"
    assert (
        DiLoCoConfig(h=4, bucketed=False, precision="bf16", seed=1).label
        == "DiLoCo, H = 4, per tensor, bf16, seed 1"
    )


ACCELERATE_LAUNCH = [
    "-m",
    "accelerate.commands.launch",
    "--multi_gpu",
    "--num_processes",
    "2",
    "--num_machines",
    "1",
    "--mixed_precision",
    "no",
    "--dynamo_backend",
    "no",
]


def test_module_runs_under_accelerate_launch_on_two_processes():
    """`accelerate launch --multi_gpu` (lesson 4's module is tested under torchrun, the same way)."""
    finished = subprocess.run(
        [
            sys.executable,
            *ACCELERATE_LAUNCH,
            "-m",
            "effitrain_lessons.diloco.runs",
            "--h",
            "4",
            "--steps",
            "8",
            "--layers",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    lines = [line for line in finished.stdout.splitlines() if "synchronizations" in line]
    assert sorted(line.split("]")[0] for line in lines) == ["[rank 0", "[rank 1"]
    assert all("DiLoCo, H = 4: 2 synchronizations, 2 all-reduce calls" in line for line in lines)
    assert finished.stdout.count("distributed_type=MULTI_CPU, num_processes=2") == 2


def test_module_says_what_is_wrong_with_a_setting(capsys):
    assert diloco.main(["--h", "6", "--fragments", "4"]) == 2
    assert "H must be a multiple of the number of fragments" in capsys.readouterr().err


def test_the_label_frequency_loss_is_what_a_model_that_learned_nothing_scores():
    from effitrain_lessons.shared.data import tokenized_mrpc

    labels = torch.as_tensor(tokenized_mrpc()["validation"]["labels"])
    frequencies = torch.bincount(labels).double() / labels.numel()
    # the cross-entropy of logits that predict the label frequencies for every pair
    logits = frequencies.log().expand(labels.numel(), -1)
    expected = torch.nn.functional.cross_entropy(logits, labels).item()
    assert diloco.label_frequency_loss() == pytest.approx(expected, abs=1e-9)
    assert 0.6 < diloco.label_frequency_loss() < 0.7  # 66 % of the pairs share a label


def test_wrong_answers_fail_the_public_checks_with_what_to_re_read():
    from effitrain_lessons.course import build as editions
    from effitrain_lessons.shared import checks

    grader = checks.Notebook(str(editions.ROOT / editions.edition_paths("05_diloco")["learner"]))

    # the ceiling lr / (1 - momentum), where the step settles, not where it is after 8 rounds
    said = repr(grader.check("q_outer_momentum", {"last_step_h16": 7.0, "last_step_h4": 7.0}))
    assert "You predicted last_step_h16 = 7.0: that is not what was measured." in said
    assert "Re-read section 4, Why might H = 8 stall?" in said
    measured = outer_step_ratios(h=16, steps=128)[-1]
    assert f"{measured:.2f}" not in said and f"{measured:.1f}" not in said
    right = 0.7 * (1 + 0.9 * (1 - 0.9**8) / (1 - 0.9))  # what the exercise asks, worked out
    assert "All public tests passed" in repr(
        grader.check("q_outer_momentum", {"last_step_h16": right, "last_step_h4": 1.0})
    )
    model = tiny_bert(num_hidden_layers=1)
    tensors, numbers = len(list(model.parameters())), sum(p.numel() for p in model.parameters())

    def one_more_on_exit(steps, h, processes, bucketed=True, precision="fp32"):  # Local SGD's rule
        syncs = steps // h + 1
        return {"synchronizations": syncs, "calls": syncs * tensors, "bytes": syncs * numbers * 4}

    said = repr(grader.check("q_communication", {"communication": one_more_on_exit}))
    assert "too high" not in said and "Too high" not in said  # a dict: the check names the keys instead
    assert (
        "Not what was measured: 'synchronizations', 'calls', 'bytes'." in said and "Re-read section 4" in said
    )
    assert repr(one_more_on_exit(20, 6, 2)) in said  # the learner's own answer, never the measurement
    unanswered = repr(grader.check("q_communication", {"communication": lambda *args: None}))
    assert "should return a dict with the keys synchronizations, calls and bytes" in unanswered


def test_the_outer_step_settles_at_lr_over_one_minus_momentum_when_every_round_agrees():
    """What the exercise's check measures: the lesson's own outer step, the same change every round.
    The first step is lr (1 + momentum) times the change; after n rounds lr (1 + m (1 - m^n) / (1 - m));
    at lr 1 without momentum, always 1 (Local SGD)."""
    ratios = outer_step_ratios(h=8, steps=128)
    assert len(ratios) == 16 and ratios[0] == pytest.approx(0.7 * 1.9, rel=1e-5)
    for n, ratio in enumerate(ratios, 1):
        assert ratio == pytest.approx(0.7 * (1 + 0.9 * (1 - 0.9**n) / 0.1), rel=1e-5)
    assert outer_step_ratios(h=4, steps=4096)[-1] == pytest.approx(7.0, rel=1e-4)
    assert outer_step_ratios(h=8, steps=64, outer_lr=1.0, outer_momentum=0.0) == pytest.approx([1.0] * 8)


def _lesson_outer_step_on_the_toy(h: int, steps: int, bucketed: bool) -> list[list[float]]:
    """The lesson's `outer_step`, in 2 real processes (gloo), on torchft's toy problem of
    tests/diloco_torchft.py: plain SGD inner steps, an outer SGD with Nesterov momentum."""
    from types import SimpleNamespace

    from diloco_torchft import toy_input, toy_model  # tests/ is on the path under pytest

    from effitrain_lessons.diloco.saved import outer_step
    from effitrain_lessons.shared.processes import start_workers

    def job():
        torch.distributed.init_process_group("gloo")
        rank = torch.distributed.get_rank()
        model = toy_model()
        parameters = list(model.parameters())
        global_parameters = [p.detach().clone() for p in parameters]
        inner = torch.optim.SGD(parameters, lr=0.1)
        outer = torch.optim.SGD(global_parameters, lr=0.7, momentum=0.9, nesterov=True)
        config = SimpleNamespace(bucketed=bucketed, precision="fp32")
        for step in range(steps):
            inner.zero_grad()
            model(toy_input(rank, step)).square().mean().backward()
            inner.step()
            if (step + 1) % h == 0:
                outer_step(parameters, global_parameters, outer, config)
        return [torch.cat([p.detach().reshape(-1) for p in parameters]).tolist()]

    return [per_rank[0] for per_rank in start_workers(job, 2, timeout=120)]


def test_the_lessons_outer_step_matches_torchfts_diloco(tmp_path, h=3, steps=10):
    """torchft (pytorch/torchft) 0.2.0's DiLoCo is an implementation the lesson did not write: on the
    same toy problem, after 3 rounds (and one step after the last), the lesson's outer step lands on
    the same parameters, per tensor and bucketed; the toy's parameters move far more than the tolerance."""
    pytest.importorskip("torchft")
    from diloco_torchft import toy_model

    out = tmp_path / "torchft.json"
    finished = subprocess.run(
        [
            sys.executable,
            os.path.join(os.path.dirname(__file__), "diloco_torchft.py"),
            str(out),
            str(h),
            str(steps),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    oracle = torch.tensor(json.loads(out.read_text()))
    start = torch.cat([p.detach().reshape(-1) for p in toy_model().parameters()])
    assert (oracle[0] - start).abs().max() > 0.05
    for bucketed in (True, False):
        ours = torch.tensor(_lesson_outer_step_on_the_toy(h, steps, bucketed))
        assert (ours - oracle).abs().max().item() < 1e-6, bucketed


def test_the_watch_measures_each_outer_step_against_the_pseudo_gradient_from_outside_the_loop():
    """Local SGD's outer step (lr 1, no momentum) moves the global parameters by exactly the averaged
    pseudo-gradient; Nesterov's first step by lr * (1 + momentum) times it; with fragments each step
    moves one fragment; data parallel's validation loss is read where asked, and at the end it is
    the run's own."""
    watch = OptimizerWatch()
    configs = {
        "plain": DiLoCoConfig(h=4, steps=8, layers=1, outer_lr=1.0, outer_momentum=0.0),
        "nesterov": DiLoCoConfig(h=4, steps=12, layers=1),
        "fragments": DiLoCoConfig(h=4, steps=8, layers=1, fragments=2, outer_lr=1.0, outer_momentum=0.0),
        "ddp": DiLoCoConfig(mode="ddp", steps=4, layers=1),
    }
    reports = dict(
        zip(
            configs,
            launch(
                list(configs.values()),
                [watch.watch(train, name, *([(2, 4), (4,)] if name == "ddp" else [])) for name in configs],
                num_processes=2,
            ),
        )
    )
    plain, nesterov = watch.read("plain").outer_steps, watch.read("nesterov").outer_steps
    assert [step.step for step in plain] == [4, 8] and [step.step for step in nesterov] == [4, 8, 12]
    assert all(step.pseudo_gradient_norm > 0 and step.ratio == pytest.approx(1.0, rel=1e-4) for step in plain)
    assert nesterov[0].ratio == pytest.approx(0.7 * 1.9, rel=1e-4)  # b = g, step = lr (g + 0.9 b)
    assert len({round(step.ratio, 3) for step in nesterov}) == 3  # momentum makes each round differ
    # both processes saw the same outer steps: the global copy is the same everywhere
    assert watch.read("nesterov", rank=1).outer_steps == nesterov
    fragments = watch.read("fragments").outer_steps
    assert [step.step for step in fragments] == [2, 4, 6, 8]
    assert all(step.ratio == pytest.approx(1.0, rel=1e-4) for step in fragments)
    assert watch.read("plain").validation_losses == {}
    ddp = watch.read("ddp")
    assert ddp.outer_steps == [] and sorted(ddp.validation_losses) == [2, 4]
    assert ddp.validation_losses[4] == pytest.approx(reports["ddp"][0].eval_loss, abs=1e-6)
    # the model kept after step 4 is the one the run ended with: a warm start for another run
    (kept,) = ddp.kept.values()
    assert list(ddp.kept) == [4] and watch.read("plain").kept == {}
    assert torch.equal(torch.cat([t.reshape(-1) for t in kept.values()]), reports["ddp"][0].parameters())
    assert reports["plain"][0].synchronizations == 2  # the watch sends nothing of its own


# The lesson's comparisons (`diloco.reports`), on runs made up to the digit: what each table,
# verdict and figure label says, in English and in Turkish.


def _made_up_run(
    config,
    eval_losses=(0.5,),
    parameters=None,
    sync_steps=(),
    calls_per_sync=1,
    call_bytes=1000,
    gradient_bytes=0,
    call_seconds=0.001,
):
    """A run as `launch` returns it, one report per process: validation losses, final parameters, a
    parameter all-reduce of `call_bytes` `calls_per_sync` times at each of `sync_steps`, and, where
    `gradient_bytes` is given, a DDP bucket of that size at every step."""
    import base64
    from dataclasses import asdict

    from effitrain_lessons.shared.distributed_runs import ProcessReport

    reports = []
    for rank, loss in enumerate(eval_losses):
        values = (
            torch.zeros(4) if parameters is None else torch.as_tensor(parameters[rank], dtype=torch.float32)
        )
        reports.append(
            ProcessReport(
                rank=rank,
                num_processes=len(eval_losses),
                distributed_type="MULTI_CPU",
                config=asdict(config),
                config_type=type(config).__name__,
                losses=[0.7 - 0.01 * step for step in range(config.steps)],
                gradient_allreduces=[(step, gradient_bytes) for step in range(1, config.steps + 1)]
                if gradient_bytes
                else [],
                parameter_allreduces=[
                    (r, call_bytes) for r in range(len(sync_steps)) for _ in range(calls_per_sync)
                ],
                parameter_allreduce_seconds=[call_seconds] * (len(sync_steps) * calls_per_sync),
                round_steps=list(sync_steps),
                final_fingerprint="same" if parameters is None else str(rank),
                final_parameters=base64.b64encode(values.numpy().tobytes()).decode(),
                eval_loss=loss,
                seconds=1.0,
                step_starts=[0.01 * step for step in range(config.steps)],
            )
        )
    return reports


def test_runs_are_named_the_lessons_way_in_its_language(monkeypatch):
    from effitrain_lessons.diloco.reports import run_name

    named = [
        DiLoCoConfig(mode="ddp"),
        LocalSGDConfig(k=8),
        DiLoCoConfig(h=32),
        DiLoCoConfig(h=8, outer_lr=1.0, outer_momentum=0.0),
        DiLoCoConfig(h=8, outer_lr=0.3),
    ]
    assert [run_name(_made_up_run(config)) for config in named] == [
        "data parallel",
        "Local SGD, H = 8",  # lesson 4's K is this lesson's H
        "DiLoCo, H = 32",
        "DiLoCo, H = 8, outer lr 1, no momentum",
        "DiLoCo, H = 8, outer lr 0.3",
    ]
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    assert [run_name(_made_up_run(config)) for config in named[:2]] == ["veri paralel", "yerel SGD, H = 8"]
    assert run_name(_made_up_run(named[-1])) == "DiLoCo, H = 8, dış lr 0,3"


def test_the_parameter_table_weighs_the_two_programs_against_two_scales(monkeypatch):
    from effitrain_lessons.diloco.reports import parameter_differences

    start = torch.nn.Linear(1, 2)
    with torch.no_grad():
        for parameter in start.parameters():
            parameter.zero_()
    one = DiLoCoConfig(h=8, steps=8, outer_lr=1.0, outer_momentum=0.0)
    whole = DiLoCoConfig(h=8, steps=128, outer_lr=1.0, outer_momentum=0.0)
    table = parameter_differences(
        one_round=(
            _made_up_run(LocalSGDConfig(k=8, steps=8), [0.64], [[0, 0, 0, 0]]),
            _made_up_run(one, [0.64], [[0, 2e-9, 0, 0]]),
        ),
        whole_run=(
            _made_up_run(LocalSGDConfig(k=8, steps=128), [0.4209], [[0, 0, 0, 1.0]]),
            _made_up_run(whole, [0.4209], [[0, 0, 0, 1.0005]]),
        ),
        seeds=(
            _made_up_run(DiLoCoConfig(mode="ddp"), [0.4128], [[0.1, 0, 0, -0.05]]),
            _made_up_run(DiLoCoConfig(mode="ddp", seed=1), [0.4412], [[-0.1, 0, 0, 0]]),
        ),
        start=start,
    )
    assert [row[0] for row in table.rows] == [
        "Local SGD and DiLoCo (lr 1, no momentum): one round of 8 steps",
        "the same, 128 steps (16 rounds)",
        "for scale: data parallel against another seed (other initial weights, another data order)",
        "for scale: the largest change of a parameter in training",
    ]
    assert [row[1] for row in table.rows] == ["2.0e-09", "5.0e-04", "2.0e-01", "1.0e-01"]
    assert table.rows[2][2] == "0.412800 / 0.441200" and table.rows[3][2] == "-"
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    same = [_made_up_run(config, [0.5]) for config in (one, whole, DiLoCoConfig(mode="ddp"))]
    pairs = [(run, run) for run in same]
    shown = str(parameter_differences(one_round=pairs[0], whole_run=pairs[1], seeds=pairs[2], start=start))
    assert "8 adımlık bir tur" in shown and "0,500000 / 0,500000" in shown and "0.5" not in shown


def test_the_verdicts_read_each_gap_against_two_seeds_of_data_parallel(monkeypatch):
    from effitrain_lessons.diloco.reports import diloco_against_local_sgd

    def pair(h, local, outer):
        return _made_up_run(LocalSGDConfig(k=h), [local]), _made_up_run(DiLoCoConfig(h=h), [outer])

    verdicts = diloco_against_local_sgd(
        pairs=[pair(8, 0.42, 0.66), pair(16, 0.42, 0.40), pair(32, 0.41, 0.43)],
        seeds=(
            _made_up_run(DiLoCoConfig(mode="ddp"), [0.41]),
            _made_up_run(DiLoCoConfig(mode="ddp"), [0.44]),
        ),
        other_seeds=[_made_up_run(DiLoCoConfig(h=h), [loss]) for h, loss in ((8, 0.661), (32, 0.421))],
        baseline=0.641,
    )
    assert verdicts.spread == pytest.approx(0.03)
    assert str(verdicts).splitlines() == [
        "two seeds of data parallel differ by 0.0300 in validation loss: "
        "with two seeds, a smaller gap tells nothing",
        "always predicting the label frequencies scores a validation loss of 0.6410",
        "H = 8: Local SGD 0.4200, DiLoCo 0.6600, gap +0.2400: DiLoCo worse",
        "H = 16: Local SGD 0.4200, DiLoCo 0.4000, gap -0.0200: within that spread",
        "H = 32: Local SGD 0.4100, DiLoCo 0.4300, gap +0.0200: within that spread",
        "another seed of DiLoCo: 0.6610 at H = 8, 0.4210 at H = 32",
    ]
    assert verdicts.verdict(-0.05) == "DiLoCo better"
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    assert (
        str(verdicts).splitlines()[2]
        == "H = 8: yerel SGD 0,4200, DiLoCo 0,6600, fark +0,2400: DiLoCo daha kötü"
    )


def test_the_loss_figures_data_names_the_one_run_left_on_the_plateau():
    from effitrain_lessons.diloco.reports import against_data_parallel, training_curves

    ddp = _made_up_run(DiLoCoConfig(mode="ddp", steps=16), [0.41], gradient_bytes=100)
    local = _made_up_run(LocalSGDConfig(k=8, steps=16), [0.42], sync_steps=(8, 16), calls_per_sync=25)
    stuck = _made_up_run(DiLoCoConfig(h=8, steps=16), [0.66], sync_steps=(8, 16))
    learns = _made_up_run(DiLoCoConfig(h=16, steps=16), [0.43], sync_steps=(16,))
    curves = training_curves([ddp, local, stuck, learns], baseline=0.641)
    assert list(curves.losses) == ["data parallel", "Local SGD, H = 8", "DiLoCo, H = 8", "DiLoCo, H = 16"]
    assert curves.losses["DiLoCo, H = 8"] == stuck[0].losses
    # data parallel synchronizes at every step: no ticks for it
    assert curves.outer_steps == {
        "Local SGD, H = 8": [8, 16],
        "DiLoCo, H = 8": [8, 16],
        "DiLoCo, H = 16": [16],
    }
    assert curves.title == "DiLoCo at H = 8 stays on the plateau; the other runs leave it"
    assert training_curves([ddp, stuck, stuck], baseline=0.641).title == "training loss in process 0"
    assert training_curves([ddp, learns], baseline=0.641).title == "training loss in process 0"

    tried = _made_up_run(DiLoCoConfig(h=4, outer_lr=0.5, steps=16), [0.4567], sync_steps=(4, 8, 12, 16))
    beside = against_data_parallel(tried, ddp)
    assert list(beside.losses) == [
        "data parallel: validation loss 0.410",
        "DiLoCo, H = 4, outer lr 0.5: validation loss 0.457",
    ]
    assert beside.outer_steps == {"DiLoCo, H = 4, outer lr 0.5: validation loss 0.457": [4, 8, 12, 16]}
    assert beside.title == "DiLoCo at H = 4, outer lr 0.5, against data parallel"
    # one colour per setting, in every figure: the loss figure's and the explorer's agree
    assert beside.colours["data parallel: validation loss 0.410"] == curves.colours["data parallel"]
    assert len(set(curves.colours.values())) == 4


def test_the_outer_step_test_sets_the_paper_s_optimizer_against_smaller_outer_steps(monkeypatch):
    from effitrain_lessons.diloco.reports import outer_step_test, run_colour
    from effitrain_lessons.diloco.runs import OuterStep, Watched

    def steps(*ratios):  # the workers move 0.1 each round
        return [OuterStep(8 * (i + 1), 0.1, 0.1 * r) for i, r in enumerate(ratios)]

    class Watch:
        seen = {
            "paper": steps(1.3, 3.0, 5.0, 4.0),
            "paper, seed 1": steps(1.3, 2.0, 7.5),
            "slower": steps(0.5, 0.6),
            "slower, seed 1": steps(0.6, 2.5),
        }

        def read(self, name):
            return Watched(self.seen[name])

    runs = {
        "paper": _made_up_run(DiLoCoConfig(h=8), [0.66]),
        "paper, seed 1": _made_up_run(DiLoCoConfig(h=8, seed=1), [0.662]),
        "slower": _made_up_run(DiLoCoConfig(h=8, outer_lr=0.3), [0.44]),
        "slower, seed 1": _made_up_run(DiLoCoConfig(h=8, outer_lr=0.3, seed=1), [0.46]),
        "local": _made_up_run(LocalSGDConfig(k=8), [0.42]),
    }
    test = outer_step_test(
        Watch(),
        runs,
        settings=[["paper", "paper, seed 1"], ["slower", "slower, seed 1"], ["local"]],
        baseline=0.641,
    )
    assert list(test.steps) == [
        "DiLoCo, H = 8",
        "DiLoCo, H = 8, seed 1",
        "DiLoCo, H = 8, outer lr 0.3",
        "DiLoCo, H = 8, outer lr 0.3, seed 1",
    ]
    # one colour per setting, its seeds told apart by the line
    assert test.colours["DiLoCo, H = 8"] == test.colours["DiLoCo, H = 8, seed 1"] == run_colour(runs["paper"])
    assert test.styles["DiLoCo, H = 8"] == "-" and test.styles["DiLoCo, H = 8, seed 1"] == "--"
    assert test.ceiling == pytest.approx(7.0)  # the paper's lr 0.7 / (1 - 0.9)
    assert test.title == (
        "At H = 8 the outer step grows to 7.5 times the workers' averaged change with lr 0.7, momentum 0.9 "
        "(the paper's), to 2.5 with lr 0.3, momentum 0.9 (the larger of the seeds)"
    )
    table = test.table()
    assert table.columns[0] == "outer optimizer at H = 8"
    assert table.rows == [
        ["lr 0.7, momentum 0.9 (the paper's)", "7", "5.0 / 7.5", "0.6600 / 0.6620", "above / above"],
        ["lr 0.3, momentum 0.9", "3", "0.6 / 2.5", "0.4400 / 0.4600", "below / below"],
        ["lr 1, no momentum (Local SGD)", "1", "1 (an average)", "0.4200", "below"],
    ]
    assert str(test) == str(table)
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    assert test.table().rows[0][4] == "üstünde / üstünde"


def test_the_bytes_plane_puts_each_run_against_where_data_parallels_seeds_ended(monkeypatch):
    from effitrain_lessons.diloco.reports import after_warm_start, bytes_and_losses

    # data parallel sends 1 MB a step for 8 steps; the two seeds end at 0.45 and 0.50
    ddp = [
        _made_up_run(DiLoCoConfig(mode="ddp", steps=8, seed=seed), [loss], gradient_bytes=10**6)
        for seed, loss in ((0, 0.45), (1, 0.5))
    ]
    along = [{1: 0.69, 2: 0.66, 4: 0.6, 8: 0.45}, {1: 0.69, 2: 0.68, 4: 0.62, 8: 0.5}]
    warm = after_warm_start(
        [
            _made_up_run(DiLoCoConfig(h=2, steps=2, seed=seed), [loss], sync_steps=(2,), call_bytes=10**6)
            for seed, loss in ((0, 0.52), (1, 0.44))
        ],
        ddp[0],
        warm_steps=6,
    )
    assert warm.megabytes == pytest.approx([7.0, 7.0])
    assert str(warm).splitlines()[1] == (
        "seed 1: 6 steps of data parallel (6.00 MB), then DiLoCo at H = 2 (1.00 MB): 7.00 MB sent, "
        "validation loss 0.4400"
    )
    groups = [  # the seeds of each setting
        [
            _made_up_run(
                LocalSGDConfig(k=2, steps=8),
                [0.47],
                sync_steps=(2, 4, 6, 8),
                calls_per_sync=2,
                call_bytes=5 * 10**5,
            )
        ],
        [
            _made_up_run(
                DiLoCoConfig(h=2, steps=8, seed=seed), [loss], sync_steps=(2, 4, 6, 8), call_bytes=10**6
            )
            for seed, loss in ((0, 0.6), (1, 0.61))
        ],
        [
            _made_up_run(DiLoCoConfig(h=4, steps=8, seed=seed), [loss], sync_steps=(4, 8), call_bytes=10**6)
            for seed, loss in ((0, 0.46), (1, 0.49))
        ],
    ]

    def plane_of():  # its labels are written in the language in use
        return bytes_and_losses(data_parallel=ddp, along=along, runs=groups, warm=warm)

    plane = plane_of()
    assert plane.band == {
        "data parallel, two seeds, along the run": [
            [(1.0, 0.69), (2.0, 0.66), (4.0, 0.6), (8.0, 0.45)],
            [(1.0, 0.69), (2.0, 0.68), (4.0, 0.62), (8.0, 0.5)],
        ]
    }
    assert plane.target == (0.45, 0.5)
    assert plane.points == {
        "Local SGD, H = 2": [(4.0, 0.47)],
        "DiLoCo, H = 2, two seeds": [(4.0, 0.6), (4.0, 0.61)],
        "DiLoCo, H = 4, two seeds": [(2.0, 0.46), (2.0, 0.49)],
        "warm start, then DiLoCo, H = 2, two seeds": [(7.0, 0.52), (7.0, 0.44)],
    }
    from effitrain_lessons.diloco.reports import WARM_COLOUR, run_colour

    assert plane.colours["DiLoCo, H = 2, two seeds"] == run_colour(groups[1][0])
    assert plane.colours["warm start, then DiLoCo, H = 2, two seeds"] == WARM_COLOUR
    # the DiLoCo run with the largest H ends inside, with 4 times fewer bytes
    assert plane.title == "DiLoCo at H = 4 ends where data parallel ends, with 4 times fewer bytes"
    assert str(plane).splitlines() == [
        "data parallel after 8 steps (8.00 MB): 0.4500 to 0.5000",
        "with DiLoCo at H = 4's bytes, data parallel takes 2 steps: validation loss 0.6600 / 0.6800",
        "Local SGD, H = 2: 4.00 MB, validation loss 0.4700: inside the band",
        "DiLoCo, H = 2, two seeds: 4.00 MB, validation loss 0.6000 / 0.6100: above the band / above the band",
        "DiLoCo, H = 4, two seeds: 2.00 MB, validation loss 0.4600 / 0.4900: "
        "inside the band / inside the band",
        "warm start, then DiLoCo, H = 2, two seeds: 7.00 MB, validation loss 0.5200 / 0.4400: "
        "above the band / below the band",
    ]
    plane.matched = False
    assert plane.title == "Validation loss against the bytes each process sent"
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    assert str(plane_of()).splitlines()[-1] == (
        "sıcak başlangıç, ardından DiLoCo, H = 2, iki tohum: 7,00 MB, doğrulama kaybı 0,5200 / 0,4400: "
        "bandın üstünde / bandın altında"
    )


def test_the_bucketing_precision_and_proportion_tables(monkeypatch):
    from effitrain_lessons.diloco.reports import compare_bucketing, compare_precision, in_proportion

    ddp = _made_up_run(DiLoCoConfig(mode="ddp", steps=16), [0.41], gradient_bytes=314_000)
    per_tensor = _made_up_run(
        DiLoCoConfig(h=1, steps=16, bucketed=False),
        sync_steps=range(1, 17),
        calls_per_sync=25,
        call_bytes=314_000 // 25,
        call_seconds=0.0016,
    )
    bucketed = _made_up_run(
        DiLoCoConfig(h=1, steps=16), sync_steps=range(1, 17), call_bytes=314_000, call_seconds=0.002
    )
    table = compare_bucketing(per_tensor, bucketed, ddp)
    assert [row[:3] for row in table.rows] == [
        ["all-reduce calls", "25", "1"],
        ["kB sent", "314", "314"],
        ["ms in all-reduce (middle half)", "40.0 ms (40.0-40.0)", "2.0 ms (2.0-2.0)"],
    ]  # no time per step: data parallel's is not the same kind of measure
    assert table.notes == [
        "one flat buffer: 25 times fewer calls; its time in all-reduce per synchronization was "
        "0.05x (0.05x-0.05x) the per-tensor time: clearly shorter"
    ]

    full = _made_up_run(
        DiLoCoConfig(h=32, steps=128), [0.4261], sync_steps=(32, 64, 96, 128), call_bytes=314_000
    )
    half = _made_up_run(
        DiLoCoConfig(h=32, steps=128, precision="bf16"),
        [0.4296],
        sync_steps=(32, 64, 96, 128),
        call_bytes=157_000,
    )
    table = compare_precision(full, half, spread=0.0284)
    assert [row[0] for row in table.rows] == ["fp32", "bf16"] and table.rows[1][1:] == [
        "157",
        "0.63",
        "0.4296",
    ]
    assert table.notes == [
        "bf16 sends 0.50 of fp32's bytes; the validation loss moved by +0.0035, "
        "less than the 0.0284 between two seeds of data parallel"
    ]

    short = _made_up_run(
        DiLoCoConfig(h=8, steps=128), [0.66], sync_steps=range(8, 129, 8), call_bytes=314_000
    )
    ddp = _made_up_run(DiLoCoConfig(mode="ddp", steps=128), [0.41], gradient_bytes=314_000)
    table = in_proportion(ddp, [short, full, half])
    assert [row[0] for row in table.rows] == [
        "data parallel",
        "DiLoCo, H = 8",
        "DiLoCo, H = 32",
        "DiLoCo, H = 32, bf16",
        "H = 500, fp32 (from the bytes per sync above)",  # the bytes of the last fp32 run
        "H = 500, bf16 (from the bytes per sync above)",
    ]
    assert [row[3] for row in table.rows] == ["1", "8", "32", "64", "500", "1000"]
    assert [row[2] for row in table.rows][-2:] == ["0.63", "0.31"]
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "tr")
    assert compare_precision(full, half, spread=0.0284).notes == [
        "bf16, fp32 ile gönderilen baytların 0,50 katını gönderir; doğrulama kaybı +0,0035 değişti: "
        "veri paralel eğitimin iki tohumu arasındaki 0,0284 farktan az"
    ]
