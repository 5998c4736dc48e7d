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
    results,
    row,
    seconds_per_synchronization,
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
    losses = [r[10] for r in table.rows]
    assert "/" not in losses[0] and losses[1] == " / ".join(
        f"{report.eval_loss:.4f}" for report in runs["fragments"]
    )
    assert any("each process's own" in note for note in table.notes)
    assert not any("each process's own" in note for note in results([runs["h5"]]).notes)


def test_data_parallel_in_the_same_loop_all_reduces_gradients_every_step(runs):
    report = runs["ddp"][0]
    assert report.synchronizations == STEPS and report.parameter_allreduces == []
    # NaN: not timed
    assert seconds_per_synchronization(runs["ddp"]) != seconds_per_synchronization(runs["ddp"])
    assert seconds_per_synchronization(runs["h5"]) > 0


def test_the_results_table_has_a_row_per_run_and_the_rule(runs):
    table = results([runs["ddp"], runs["h5"], runs["per_tensor"]])
    assert [r[0] for r in table.rows] == ["data parallel", "DiLoCo, H=5", "DiLoCo, H=5, per tensor"]
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
    assert DiLoCoConfig(h=8).label == "DiLoCo, H=8"
    assert DiLoCoConfig(h=8, outer_lr=1.0, outer_momentum=0.0).label == "DiLoCo, H=8, outer lr 1, no momentum"
    assert (
        DiLoCoConfig(h=4, bucketed=False, precision="bf16", seed=1).label
        == "DiLoCo, H=4, per tensor, bf16, seed 1"
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
    assert all("DiLoCo, H=4: 2 synchronizations, 2 all-reduce calls" in line for line in lines)
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


def test_wrong_answers_fail_the_public_checks_with_what_was_measured():
    from effitrain_lessons.course import build as editions
    from effitrain_lessons.shared import checks

    grader = checks.Notebook(str(editions.ROOT / editions.edition_paths("05_diloco")["learner"]))

    def forgets_the_momentum(global_parameters, worker_parameters, momenta, lr=0.7, momentum=0.9):
        for index, theta in enumerate(global_parameters):
            delta = sum(theta - worker[index] for worker in worker_parameters) / len(worker_parameters)
            buffer = momentum * torch.zeros_like(delta) + delta  # a fresh buffer every round
            theta.sub_(lr * (delta + momentum * buffer))

    def heavy_ball(global_parameters, worker_parameters, momenta, lr=0.7, momentum=0.9):
        for index, theta in enumerate(global_parameters):
            delta = sum(theta - worker[index] for worker in worker_parameters) / len(worker_parameters)
            momenta[index].mul_(momentum).add_(delta)
            theta.sub_(lr * momenta[index])  # momentum without Nesterov's look-ahead

    message = repr(grader.check("q_outer_step", {"outer_step_by_hand": forgets_the_momentum}))
    assert "after round 2, your global parameters differ from torch.optim.SGD(nesterov=True)'s" in message
    message = repr(grader.check("q_outer_step", {"outer_step_by_hand": heavy_ball}))
    assert "after round 1, your global parameters differ" in message
    model = tiny_bert(num_hidden_layers=1)
    tensors, numbers = len(list(model.parameters())), sum(p.numel() for p in model.parameters())

    def one_more_on_exit(steps, h, processes, bucketed=True, precision="fp32"):  # Local SGD's rule
        syncs = steps // h + 1
        return {"synchronizations": syncs, "calls": syncs * tensors, "bytes": syncs * numbers * 4}

    said = repr(grader.check("q_communication", {"communication": one_more_on_exit}))
    assert "too high" not in said  # a dict: the check names the keys instead
    assert "Too high: 'synchronizations', 'calls', 'bytes'." in said and "Re-read section 4" in said
    assert repr(one_more_on_exit(20, 6, 2)) in said  # the learner's own answer, never the measurement
    unanswered = repr(grader.check("q_communication", {"communication": lambda *args: None}))
    assert "should return a dict with the keys synchronizations, calls and bytes" in unanswered


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
