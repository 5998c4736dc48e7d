"""The GPU check (tools/gpu_check.py) where there is no GPU: its plan, its dry run, the choices that
differ between GPUs, and its report. What it measures on a GPU is in benchmarks/GPU_CHECK.md once it
has run on one."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from effitrain_lessons.diloco.runs import DiLoCoConfig
from effitrain_lessons.shared.distributed_runs import RunConfig
from effitrain_lessons.will_it_fit import plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "tools" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["gpu_check"]


def test_without_cuda_it_says_so_and_writes_nothing(gpu_check, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    defaults = [ROOT / "benchmarks" / name for name in (gpu_check.MARKDOWN, gpu_check.JSON)]
    before = [path.stat().st_mtime_ns if path.exists() else None for path in defaults]
    assert gpu_check.main(["--out", str(tmp_path / "out")]) == 0
    assert gpu_check.main([]) == 0
    assert capsys.readouterr().out == (
        "No CUDA device here: the GPU check runs on a machine with an NVIDIA GPU (`make gpu-check`).\n" * 2
    )
    assert not (tmp_path / "out").exists()
    assert [path.stat().st_mtime_ns if path.exists() else None for path in defaults] == before


def test_every_edition_is_a_step_and_all_are_expected_within_8_minutes(gpu_check):
    planned = gpu_check.steps(None)
    lessons = [step.name for step in planned if step.part == "lessons"]
    learner = sorted(path.name for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert lessons == [
        *[f"notebooks/{name}" for name in learner],
        *[f"notebooks/solutions/{name}" for name in learner],
        gpu_check.TURKISH_EDITION,
    ]
    assert {step.part for step in planned} == {"lessons", "checkpointing", "planner", "autocast"}
    assert all(step.expected_s > 0 and step.needs for step in planned)
    assert sum(step.expected_s for step in planned) <= gpu_check.GOAL_S == 8 * 60
    assert all(path.exists() for step in planned for path in step.needs)


def test_a_lessons_expected_time_comes_from_the_cpu_bench(gpu_check):
    assert gpu_check.expected_lesson_seconds(24.0) == pytest.approx(4.0 + 0.5 * 20.0)
    assert gpu_check.expected_lesson_seconds(2.0) == pytest.approx(4.0)
    assert gpu_check.expected_lesson_seconds(None) == gpu_check.expected_lesson_seconds(
        gpu_check.UNBENCHED_LESSON_S
    )


@pytest.mark.parametrize(
    "capability, dtype, name",
    [
        ((7, 5), torch.float16, "fp16"),  # a T4: no bf16, fp16 with a loss scaler
        ((7, 0), torch.float16, "fp16"),  # a V100
        ((8, 0), torch.bfloat16, "bf16"),  # an A100
        ((8, 9), torch.bfloat16, "bf16"),  # an L4
        ((9, 0), torch.bfloat16, "bf16"),  # an H100 or H200
        (None, torch.bfloat16, "bf16"),  # no GPU: the CPU computes bf16
    ],
)
def test_the_16_bit_type_follows_the_gpus_capability(gpu_check, capability, dtype, name):
    assert gpu_check.autocast_dtype(capability) == dtype
    assert gpu_check.precision_name("16-bit", capability) == name
    assert gpu_check.precision_name("fp32", capability) == "fp32"
    assert {case.precision for case in gpu_check.cases(capability)} == {"fp32", name}


def test_processes_of_lessons_4_and_5_stay_on_gloo_and_the_cpu():
    """Two ranks cannot share one GPU under NCCL: the lessons' runs ask for the CPU by default."""
    assert RunConfig().cpu and DiLoCoConfig().cpu


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_a_training_step_runs_in_each_precision(gpu_check, precision):
    model = plan.build("gpt2", **gpu_check.TINY_GPT2)
    batch = gpu_check.batch_for(model, 2, 16, "cpu")
    before = [w.detach().clone() for w in model.parameters()]
    losses = gpu_check.train_steps(model, batch, precision, steps=2)
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    assert any(not torch.equal(old, new) for old, new in zip(before, model.parameters()))
    # autocast: fp32 weights, and the gradients gone after the step
    assert all(w.dtype == torch.float32 and w.grad is None for w in model.parameters())


def test_the_checkpointing_study_times_a_step_and_saves_no_peak_off_cuda(gpu_check):
    step = gpu_check.study_step({"attention": "eager", "precision": "16-bit", "checkpointing": True})
    row = step.run("cpu", True)
    assert row["status"] == "ok" and row["precision"] == "bf16" and row["requested"] == "16-bit"
    assert row["peak_bytes"] is None and row["step_s"] > 0 and (row["batch"], row["seq"]) == (2, 32)


def test_the_budget_stops_steps_cleanly_and_a_failing_step_does_not_stop_the_others(gpu_check):
    def fails(device, tiny):
        raise RuntimeError("no such kernel")

    def works(device, tiny):
        return {"status": "ok"}

    planned = [gpu_check.Step("planner", "fails", 1.0, fails), gpu_check.Step("planner", "works", 1.0, works)]
    rows = gpu_check.run(planned, budget=60, device="cpu")
    assert [row["status"] for row in rows] == ["error", "ok"]
    assert rows[0]["error"] == "RuntimeError: no such kernel"
    rows = gpu_check.run(planned, budget=-1, device="cpu")
    assert [row["status"] for row in rows] == ["not run (time budget)"] * 2


def test_the_dry_run_finds_a_missing_file_and_a_plan_over_its_goal(gpu_check, capsys, tmp_path):
    def works(device, tiny):
        return {"status": "ok"}

    good = [gpu_check.Step("planner", "fits", 10.0, works, [ROOT / "Makefile"])]
    assert gpu_check.dry_run(good) == 0
    assert "dry run: ready for a GPU." in capsys.readouterr().out
    missing = [gpu_check.Step("planner", "needs a file", 10.0, works, [tmp_path / "gone.ipynb"])]
    assert gpu_check.dry_run(missing) == 1
    assert "gone.ipynb is missing" in capsys.readouterr().out
    too_long = [gpu_check.Step("planner", "slow", gpu_check.GOAL_S + 1, works)]
    assert gpu_check.dry_run(too_long) == 1
    assert "over the 480 s goal" in capsys.readouterr().out


def test_the_dry_run_tries_the_executor_on_a_tiny_notebook(gpu_check):
    """The lessons' step at a tiny size: the benchmarks' executor and the CUDA probe, without a GPU."""
    row = gpu_check.lesson_step(ROOT / "notebooks" / "00_start_here.ipynb", None).run("cpu", True)
    assert row["status"] == "ok" and row["run_all_s"] >= 0


def test_the_report(gpu_check, tmp_path):
    case = gpu_check.Case("gpt2", 8, 1024, "bf16", "eager", True)
    fitting = gpu_check.row(case, 0, "ok", 1.25)
    modelled = fitting["estimate_modelled_bytes"]
    fitting.update(part="planner", step="gpt2 ...", measured_peak_bytes=int(1.1 * modelled), ratio=1.1)
    over = {
        **fitting,
        "checkpointing": False,
        "measured_peak_bytes": 2 * fitting["estimate_total_bytes"],
        "ratio": 2 * fitting["estimate_total_bytes"] / modelled,
    }
    study = [
        {
            "part": "checkpointing",
            "step": f"bert {on}",
            "attention": "sdpa",
            "requested": "16-bit",
            "precision": "fp16",
            "checkpointing": on,
            "status": "ok",
            "peak_bytes": peak,
            "step_s": seconds,
        }
        for on, peak, seconds in ((False, 4 * 2**30, 0.100), (True, 2**30, 0.131))
    ]
    lessons = [
        {
            "part": "lessons",
            "step": "notebooks/01_x.ipynb",
            "status": "ok",
            "run_all_s": 9.5,
            "cuda_used": True,
            "cuda_peak_allocated": 3 * 2**20,
            "kernel_peak_rss": 2**30,
        },
        {"part": "lessons", "step": "notebooks/02_x.ipynb", "status": "not run (time budget)"},
    ]
    report = {
        "gpu": "Tesla T4",
        "gpu_memory_bytes": 15 * 2**30,
        "capability": [7, 5],
        "torch": "2.13.0",
        "cuda": "12.8",
        "transformers": "5.24.0",
        "budget": 450.0,
        "seconds": 301.0,
        "rows": [*lessons, *study, fitting, over],
    }
    markdown, saved = gpu_check.write_report(report, tmp_path / "out")
    assert (markdown.name, saved.name) == ("GPU_CHECK.md", "gpu_check.json")
    assert json.loads(saved.read_text()) == report
    text = markdown.read_text()
    assert "GPU: Tesla T4 (15.00 GiB, compute capability 7.5); torch 2.13.0 (CUDA 12.8)" in text
    assert "| notebooks/01_x.ipynb | ok | 9.5 | yes | 3.00 MiB | 1.00 GiB |" in text
    assert "| sdpa | fp16 | 4.00 GiB | 1.00 GiB | 75% | 100.0 | 131.0 | 1.31 |" in text
    planner = [line for line in text.split("## 3.")[1].splitlines() if line.startswith("|")]
    assert planner[0] == (
        "| model | batch | seq | precision | attention | checkpointing | estimate (modelled) | "
        "measured peak | measured / modelled | estimate (total) | within total | seconds |"
    )
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in planner[2:]]
    assert cells[0][:6] == ["gpt2", "8", "1024", "bf16", "eager", "on"] and cells[0][8] == "1.10"
    assert cells[0][10] == "yes" and cells[1][10] == "no"
    assert "1 of 2 within the estimate's total" in text
    assert "- [lessons] notebooks/02_x.ipynb: not run (time budget)" in text


def test_the_report_keeps_what_lesson_7_printed_on_the_gpu(gpu_check):
    """Lesson 7 measures offload and the peak of a step in its cells: on a GPU, what it printed is
    the measurement, so the report keeps it."""
    edition = "notebooks/solutions/07_checkpoint_your_own_model.ipynb"
    assert edition in gpu_check.KEEP_PRINTED
    assert edition in [step.name for step in gpu_check.steps(None) if step.part == "lessons"]
    lesson = {
        "part": "lessons",
        "step": edition,
        "status": "ok",
        "run_all_s": 12.0,
        "cuda_used": True,
        "cuda_peak_allocated": 2**20,
        "kernel_peak_rss": 2**30,
        "printed": ["Using cuda: NVIDIA H100 80GB HBM3 with 79.2 GiB."],
    }
    report = {
        "gpu": "NVIDIA H100 80GB HBM3",
        "gpu_memory_bytes": 80 * 2**30,
        "capability": [9, 0],
        "torch": "2.13.0",
        "cuda": "12.8",
        "transformers": "5.24.0",
        "budget": 450.0,
        "seconds": 1.0,
        "rows": [lesson],
    }
    page = gpu_check.markdown(report)
    assert f"What {edition} printed on the GPU" in page and "Using cuda: NVIDIA H100" in page
    assert "printed on the GPU" not in gpu_check.markdown({**report, "rows": [{**lesson, "printed": []}]})


@pytest.mark.parametrize("capability, precisions", [((8, 0), {"bf16", "fp16"}), ((7, 5), {"fp16"})])
def test_the_autocast_part_tries_bf16_only_where_the_gpu_has_it(gpu_check, capability, precisions):
    cases = gpu_check.autocast_cases(capability)
    assert {case.precision for case in cases} == precisions
    assert {(case.attention, case.checkpointing) for case in cases} == {
        (attention, on) for attention in ("eager", "sdpa") for on in (False, True)
    }
    assert all(step.part == "autocast" for step in gpu_check.steps(capability)[-len(cases) :])


def test_the_autocast_part_counts_what_autocast_saves_against_the_planner(gpu_check, tmp_path):
    """At a tiny size on the CPU the planner's rules for the CPU are measured ones: the part's own
    count must land on them (the weight copies to the byte), and the report shows the row."""
    rows = []
    for case in gpu_check.autocast_cases((8, 0))[:2]:  # BERT, eager, bf16, checkpointing off and on
        row = gpu_check.autocast_step(case).run("cpu", True)
        assert row["status"] == "ok"
        assert row["measured_copies_bytes"] == row["planned_copies_bytes"] > 0
        assert row["ratio"] == pytest.approx(1.0, abs=0.10)
        rows.append({**row, "part": "autocast", "step": case.model})
    text = gpu_check.markdown(
        {
            "gpu": "NVIDIA H100",
            "gpu_memory_bytes": 80 * 2**30,
            "capability": [9, 0],
            "torch": "2.13.0",
            "cuda": "12.8",
            "transformers": "5.24.0",
            "budget": 450.0,
            "seconds": 10.0,
            "rows": rows,
        }
    )
    section = [line for line in text.split("## 4.")[1].splitlines() if line.startswith("| bert")]
    assert len(section) == 2 and all(line.rstrip(" |").endswith("yes") for line in section)
