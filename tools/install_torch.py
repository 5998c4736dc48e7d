"""Install PyTorch into this Python, the build this machine should have: `make setup` runs it first.

    python tools/install_torch.py cpu|cuda [VERSION]

VERSION defaults to the tested one in constraints.txt. `cuda` takes PyPI's build (CUDA on Linux).
`cpu` takes a CPU-only build: the one pip already finds when it is one (a local CPU wheel, or PyPI's
own on macOS and Windows, which are CPU builds), else PyTorch's CPU index's `VERSION+cpu`, so that
a Linux machine without a GPU never downloads the CUDA build (several GB). An installed torch of
that version is kept as it is.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CONSTRAINTS = Path(__file__).resolve().parent.parent / "constraints.txt"


def tested_version(constraints: Path = CONSTRAINTS) -> str:
    """The torch version a constraints file pins: the tested build (tools/lowest_constraints.py uses
    it too)."""
    match = re.search(r"^torch==([\w.]+)\s*$", constraints.read_text(encoding="utf-8"), flags=re.MULTILINE)
    if not match:
        raise ValueError(f"{constraints} pins no torch==VERSION")
    return match.group(1)


def pip_arguments(kind: str, version: str, found: str | None, platform: str) -> list[str]:
    """pip's arguments for `kind` (cpu/cuda) of torch `version`, given what pip finds unaided (`found`)."""
    if kind == "cuda" or platform != "linux" or (found or "").endswith("+cpu"):
        return ["install", f"torch=={version}"]
    return ["install", f"torch=={version}+cpu", "--extra-index-url", CPU_INDEX]


def found_unaided(version: str) -> str | None:
    """The torch version pip would install for `torch==version` with its own configuration."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--no-deps",
            "--ignore-installed",
            "--report",
            "-",
            f"torch=={version}",
        ],
        capture_output=True,
        text=True,
    )
    try:
        return json.loads(done.stdout)["install"][0]["metadata"]["version"]
    except (ValueError, KeyError, IndexError):
        return None


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("cpu", "cuda"):
        print(
            "usage: install_torch.py cpu|cuda [VERSION]  (TORCH=cpu or TORCH=cuda with make)", file=sys.stderr
        )
        return 2
    try:
        kind, version = argv[0], argv[1] if len(argv) > 1 else tested_version()
    except ValueError as error:
        print(f"{error}: pass the version to install.", file=sys.stderr)
        return 2
    try:
        installed = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed and installed.split("+")[0] == version:
        print(f"torch {installed} is installed")
        return 0
    found = None if kind == "cuda" or sys.platform != "linux" else found_unaided(version)
    arguments = pip_arguments(kind, version, found, sys.platform)
    print(f"installing torch {version} ({kind}): pip {' '.join(arguments)}")
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *arguments]
    ).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
