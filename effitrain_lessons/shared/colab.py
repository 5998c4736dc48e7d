"""What a lesson's setup cell does on Colab, where nothing of the course is installed.

The setup cell (written by `effitrain build`, the same in every edition) installs `PIP_REQUIREMENT`:
this exact version of the package with only its runtime dependencies, quietly, with pip's default
strategy, which keeps every package Colab has that already satisfies the package's bounds (Colab's
own torch above all). pip's installation report (`--report FILE`; not standard output, which pip
colours where a kernel forces colour) says what it installed, and `install_summary` says it in a
few lines. The exercise checks need nothing more: their tests come from the lesson installed
with the package (`effitrain_lessons.shared.checks`), the same version as the code they test.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

from effitrain_lessons import __version__
from effitrain_lessons.shared.i18n import phrase

REPOSITORY = "effitrain/effitrain-lessons"
"""The GitHub slug of this repository (the README's Colab and Binder badges open its notebooks)."""

DISTRIBUTION = "effitrain-lessons"
PIP_REQUIREMENT = f"{DISTRIBUTION}=={__version__}"
"""What the setup cell installs on Colab, and the grading image of otter's autograder."""

KEPT = ("torch", "ipywidgets", "numpy", "matplotlib")
"""Packages Colab brings that a learner may want to know were left as they were."""


def install_summary(report_path: str | Path) -> str:
    """What the install did, from pip's JSON report: what it added or upgraded, and what it kept."""
    try:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
        installed = {
            item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in report.get("install", [])
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return phrase(
            "{package} {version} is installed (pip left no report of what it changed).",
            package=DISTRIBUTION,
            version=__version__,
        )
    ours = installed.pop(DISTRIBUTION, None)
    if ours:
        lines = [phrase("Installed {package} {version}.", package=DISTRIBUTION, version=ours)]
    else:
        lines = [
            phrase("{package} {version} was already installed.", package=DISTRIBUTION, version=__version__)
        ]
    if installed:
        added = ", ".join(f"{name} {version}" for name, version in sorted(installed.items()))
        lines.append(phrase("Added or upgraded for it: {packages}.", packages=added))
    kept = []
    for name in KEPT:
        if name not in installed:
            try:
                kept.append(f"{name} {importlib.metadata.version(name)}")
            except importlib.metadata.PackageNotFoundError:
                pass
    if kept:
        lines.append(phrase("Kept as Colab has them: {packages}.", packages=", ".join(kept)))
    from effitrain_lessons.shared.device import describe_device

    lines.append(describe_device())
    return "\n".join(lines)
