"""`make gpu-check`: lesson 6's memory planner against a real GPU.

    python tools/gpu_check.py                 # writes benchmarks/GPU_CHECK.md and gpu_check.json
    python tools/gpu_check.py --out DIR       # writes them into DIR instead

BERT-base (sequence classification) and GPT-2 small (language model), random weights built from
the bundled configs with `effitrain_lessons.plan.build` (no hub), train a few AdamW steps on CUDA
at real shapes: fp32, and bf16 mixed precision (`torch.autocast` over fp32 weights), each with and
without checkpointing, with eager and SDPA attention. The peak of `torch.cuda.max_memory_allocated()`
over the steps is set against `plan.estimate(..., device="cuda")`: its modelled bytes (the
allowance left out) and its total. Autocast keeps fp32 weights and gradients, so it matches the
estimate's "bf16 mixed (master weights)" in bytes per parameter (16 with AdamW), not line by line.

A shape that runs out of memory is recorded as such; a time budget (--budget, seconds) stops the
grid early and records what it did not run. Without CUDA the check says so and writes nothing.

Every lesson on a GPU: then the solution editions of the lessons in `LESSONS_ON_GPU` run top to bottom
on the same GPU (nbclient, their own folder as the working one), so that their GPU paths run where a
CPU-only test cannot take them (lesson 7: `pick_device` picks CUDA, the peak is
`torch.cuda.max_memory_allocated`, `save_on_cpu` copies to pinned memory). The report keeps whether
each ran and what its cells printed. `--no-lessons` leaves them out.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from effitrain_lessons import plan
from effitrain_lessons.memory import format_bytes

ROOT = Path(__file__).resolve().parents[1]
NO_CUDA = "No CUDA device here: the GPU check runs on a machine with an NVIDIA GPU (`make gpu-check`)."
MARKDOWN = "GPU_CHECK.md"
JSON = "gpu_check.json"
DEVICE = "cuda"
# the lessons whose solution editions the check runs on the GPU, each within LESSON_TIMEOUT seconds a cell
LESSONS_ON_GPU = ("07_checkpoint_your_own_model",)
LESSON_TIMEOUT = 600

# (batch, seq) per model: BERT as the course fine-tunes it, GPT-2 at half and full context.
SHAPES = {
    "bert-base-uncased": [(8, 128), (32, 128), (8, 512), (32, 512)],
    "gpt2": [(4, 512), (8, 512), (4, 1024), (8, 1024)],
}
PRECISIONS = ("fp32", "bf16")  # bf16: autocast over fp32 weights (mixed precision)
ATTENTIONS = ("sdpa", "eager")
COLUMNS = (
    "model",
    "batch",
    "seq",
    "precision",
    "attention",
    "checkpointing",
    "estimate (modelled)",
    "measured peak",
    "measured / modelled",
    "estimate (total)",
    "within total",
    "seconds",
)


@dataclass(frozen=True)
class Case:
    """One row of the check: a model, a shape and a setup."""

    model: str
    batch: int
    seq: int
    precision: str
    attention: str
    checkpointing: bool

    def estimate(self) -> plan.Estimate:
        return plan.estimate(
            self.model,
            batch=self.batch,
            seq=self.seq,
            precision=self.precision,
            master_weights=True,
            optimizer="adamw",
            attention=self.attention,
            checkpointing=self.checkpointing,
            device="cuda",
        )


def cases() -> list[Case]:
    """The grid, ordered so that one model is built per (model, attention)."""
    return [
        Case(model, batch, seq, precision, attention, checkpointing)
        for model, shapes in SHAPES.items()
        for attention in ATTENTIONS
        for batch, seq in shapes
        for precision in PRECISIONS
        for checkpointing in (False, True)
    ]


def batch_for(model: torch.nn.Module, batch: int, seq: int, device: str) -> dict:
    """Random token ids with labels: a class per sequence for BERT, the ids themselves for a
    language model."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=generator)
    if model.config.model_type == "bert":
        inputs = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": torch.zeros(batch, dtype=torch.long),
        }
    else:
        inputs = {"input_ids": ids, "labels": ids}
    return {name: tensor.to(device) for name, tensor in inputs.items()}


def train_steps(model: torch.nn.Module, batch: dict, precision: str, steps: int) -> list[float]:
    """`steps` AdamW steps on `batch`, in fp32 or under bf16 autocast; the losses."""
    device = next(model.parameters()).device.type
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []
    for _ in range(steps):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def measure(model: torch.nn.Module, case: Case, steps: int) -> tuple[int | None, str]:
    """(peak bytes allocated over `steps` training steps, "ok"), or (None, "out of memory")."""
    if case.checkpointing:
        model.activation_checkpointing_enable()  # gradient_checkpointing_enable before transformers 5
    else:
        model.activation_checkpointing_disable()
    model.zero_grad(set_to_none=True)
    peak, status = None, "ok"
    try:
        batch = batch_for(model, case.batch, case.seq, DEVICE)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        train_steps(model, batch, case.precision, steps)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    except torch.cuda.OutOfMemoryError:
        status = "out of memory"
    # Out of the except block, the error (and the tensors its frames hold) is gone.
    batch = None
    model.zero_grad(set_to_none=True)
    gc.collect()
    torch.cuda.empty_cache()
    return peak, status


def row(case: Case, peak: int | None, status: str, seconds: float) -> dict:
    """One row of the report: the case, the estimate's modelled and total bytes, the measured peak."""
    estimate = case.estimate()
    return {
        **dataclasses.asdict(case),
        "estimate_modelled_bytes": estimate.modelled,
        "estimate_total_bytes": estimate.total,
        "measured_peak_bytes": peak,
        "ratio": None if peak is None else peak / estimate.modelled,
        "seconds": round(seconds, 2),
        "status": status,
    }


def run(steps: int, budget: float) -> list[dict]:
    """Every case of the grid, measured on CUDA, until `budget` seconds have passed."""
    rows, start, built = [], time.perf_counter(), {}
    for case in cases():
        began = time.perf_counter()
        if began - start > budget:
            rows.append(row(case, None, "not run (time budget)", 0.0))
            continue
        key = (case.model, case.attention)
        if key not in built:
            built.clear()  # one model on the GPU at a time
            gc.collect()
            torch.cuda.empty_cache()
            built[key] = plan.build(case.model, attention=case.attention).to(DEVICE)
        peak, status = measure(built[key], case, steps)
        rows.append(row(case, peak, status, time.perf_counter() - began))
        last = rows[-1]
        print(
            f"{case.model:18} b{case.batch:<3} s{case.seq:<5} {case.precision:4} {case.attention:5} "
            f"checkpointing {'on ' if case.checkpointing else 'off'}: "
            + (
                f"{format_bytes(peak)} measured, {last['ratio']:.2f} of the modelled"
                if peak is not None
                else status
            )
            + f" ({last['seconds']:.1f} s)",
            flush=True,
        )
    return rows


def lessons_on_gpu(names=LESSONS_ON_GPU) -> list[dict]:
    """Run each lesson's solution edition top to bottom on this machine (its GPU, where `pick_device`
    finds one) and keep whether it ran, its time and what its cells printed."""
    import nbformat
    from nbclient import NotebookClient

    rows = []
    for name in names:
        path = ROOT / "notebooks" / "solutions" / f"{name}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        began = time.perf_counter()
        try:
            client = NotebookClient(
                notebook, timeout=LESSON_TIMEOUT, resources={"metadata": {"path": str(path.parent)}}
            )
            client.execute()
            status = "ran"
        except Exception as error:  # a failed cell, a timeout: recorded, the check goes on
            last = str(error).strip().splitlines()[-1:] or [""]
            status = f"failed: {type(error).__name__}: {last[0]}"[:300]
        printed = [
            output["text"].rstrip("\n")
            for cell in notebook.cells
            if cell.cell_type == "code"
            for output in cell.get("outputs", [])
            if output.get("output_type") == "stream" and output.get("name") == "stdout"
        ]
        rows.append(
            {
                "lesson": name,
                "status": status,
                "seconds": round(time.perf_counter() - began, 1),
                "printed": printed,
            }
        )
        print(f"{name}: {status} ({rows[-1]['seconds']:.0f} s)", flush=True)
    return rows


def machine() -> dict:
    import transformers

    return {
        "gpu": torch.cuda.get_device_name(),
        "gpu_memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
    }


def markdown(report: dict) -> str:
    """The report as a Markdown page: the machine, then one table row per case."""
    lines = [
        "# GPU check: lesson 6's planner against a real GPU",
        "",
        "Written by `make gpu-check` (tools/gpu_check.py). Peak `torch.cuda.max_memory_allocated()` over "
        f'{report["steps"]} AdamW steps against `effitrain_lessons.plan.estimate(..., device="cuda")`: '
        "modelled is the estimate without its allowance, total with it. bf16 is mixed precision "
        "(autocast over fp32 weights).",
        "",
        f"GPU: {report['gpu']} ({format_bytes(report['gpu_memory_bytes'])}); torch {report['torch']} "
        f"(CUDA {report['cuda']}); transformers {report['transformers']}; {report['seconds']:.0f} s in all.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in report["rows"]:
        measured = r["measured_peak_bytes"]
        cells = [
            r["model"],
            r["batch"],
            r["seq"],
            r["precision"],
            r["attention"],
            "on" if r["checkpointing"] else "off",
            format_bytes(r["estimate_modelled_bytes"]),
            format_bytes(measured) if measured is not None else r["status"],
            f"{r['ratio']:.2f}" if r["ratio"] is not None else "",
            format_bytes(r["estimate_total_bytes"]),
            ("yes" if measured <= r["estimate_total_bytes"] else "no") if measured is not None else "",
            f"{r['seconds']:.1f}",
        ]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    ratios = [r["ratio"] for r in report["rows"] if r["ratio"] is not None]
    if ratios:
        within = sum(
            r["measured_peak_bytes"] <= r["estimate_total_bytes"]
            for r in report["rows"]
            if r["measured_peak_bytes"] is not None
        )
        lines += [
            "",
            f"Measured / modelled from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} rows; "
            f"{within} of {len(ratios)} within the estimate's total.",
        ]
    if report.get("lessons"):
        lines += ["", "## Every lesson on a GPU", ""]
        for lesson in report["lessons"]:
            lines += [
                f"### {lesson['lesson']}: {lesson['status']} ({lesson['seconds']:.0f} s)",
                "",
                "```",
                *lesson["printed"],
                "```",
                "",
            ]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out: Path) -> list[Path]:
    """Write `report` as out/GPU_CHECK.md and out/gpu_check.json; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / MARKDOWN, out / JSON]
    paths[0].write_text(markdown(report), encoding="utf-8")
    paths[1].write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks", help="folder for the report (benchmarks/)"
    )
    parser.add_argument("--steps", type=int, default=3, help="training steps per row (default: 3)")
    parser.add_argument(
        "--budget",
        type=float,
        default=270.0,
        help="seconds after which the rows left are not run (default: 270)",
    )
    parser.add_argument(
        "--no-lessons",
        action="store_true",
        help="leave out running the lessons' solution editions on the GPU",
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    start = time.perf_counter()
    rows = run(args.steps, args.budget)
    report = {
        **machine(),
        "steps": args.steps,
        "seconds": round(time.perf_counter() - start, 1),
        "rows": rows,
        "lessons": [] if args.no_lessons else lessons_on_gpu(),
    }
    for path in write_report(report, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
