"""The `effitrain` command: `lab` and `info` for learners, `build` and `grade` for instructors.

`python -m effitrain_lessons` is the same command. The instructor's subcommands live in
`effitrain_lessons.course`, imported only when one of them runs.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
from pathlib import Path

from effitrain_lessons.hub import hub_reachable, offline_by_choice

PACKAGES = ["torch", "transformers", "accelerate", "datasets", "tokenizers", "jupyterlab", "ipywidgets", "otter-grader"]


def lessons_dir() -> Path:
    """The repository's `notebooks/` folder when run from a checkout, else the current folder."""
    checkout = Path(__file__).resolve().parent.parent / "notebooks"
    return checkout if checkout.is_dir() else Path.cwd()


def info_lines() -> list[str]:
    from effitrain_lessons.device import describe_device

    lines = [f"python {platform.python_version()} on {platform.system()} {platform.machine()}"]
    for name in PACKAGES:
        try:
            lines.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{name} not installed")
    lines.append(describe_device())
    if offline_by_choice():
        lines.append("Hugging Face Hub: not tried (HF_HUB_OFFLINE is set)")
    else:
        reachable = hub_reachable()
        lines.append(f"Hugging Face Hub: {'reachable' if reachable else 'not reachable: the lessons use their bundled data and tiny models'}")
    return lines


def run_lab(args: argparse.Namespace) -> int:
    directory = args.dir or lessons_dir()
    if not directory.is_dir():
        print(f"There is no folder {directory}: pass --dir with the folder that holds the lessons.", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={directory}", f"--port={args.port}"]
    if args.no_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and Binder-like machines run as root
    os.execv(sys.executable, command)


def run_info(args: argparse.Namespace) -> int:
    print("\n".join(info_lines()))
    return 0


def parser() -> argparse.ArgumentParser:
    from effitrain_lessons.course import build, grade

    main = argparse.ArgumentParser(prog="effitrain", description="Lessons on efficient training with PyTorch.")
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lab = commands.add_parser("lab", help="open JupyterLab on the lessons")
    lab.add_argument("--port", type=int, default=8888)
    lab.add_argument("--no-browser", action="store_true", help="serve without opening a browser")
    lab.add_argument("--dir", type=Path, default=None, help="folder of lessons (default: the checkout's notebooks/)")
    lab.set_defaults(run=run_lab)
    info = commands.add_parser("info", help="versions, device, and whether the hub is reachable")
    info.set_defaults(run=run_info)
    building = commands.add_parser("build", help="build the lesson editions from lessons/ (instructors)",
                                   description=build.DESCRIPTION)
    build.add_arguments(building)
    building.set_defaults(run=build.run)
    grading = commands.add_parser("grade", help="grade learners' notebooks in a sandbox (instructors)",
                                  description="Grade learners' notebooks; see the README, For instructors.")
    grade.add_arguments(grading)
    grading.set_defaults(run=grade.run)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return args.run(args)
