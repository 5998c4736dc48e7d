"""What a lesson needs on Colab, where the notebook is not a file on disk.

Every edition's setup cell installs the package from the repository on Colab (`PIP_REQUIREMENT`)
and calls `fetch_tests`: otter reads a notebook's tests from the notebook file and, on Colab,
insists on a `tests/` folder, so the edition is downloaded and its tests written as files.
"""

from __future__ import annotations

import json
import os
import pprint
import urllib.request
from pathlib import Path

REPOSITORY = "effitrain/effitrain-lessons"
"""The GitHub slug of this repository (the setup cell installs the package from it on Colab)."""

PIP_REQUIREMENT = f"effitrain-lessons @ git+https://github.com/{REPOSITORY}"
RAW_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/HEAD"


def fetch_tests(edition: str, base_url: str = RAW_URL, folder: str | os.PathLike = ".") -> list[str]:
    """Download an edition and write what otter's `Notebook` needs where the notebook is not on disk.

    Writes `<folder>/<name>.ipynb` and one test file per question in `<folder>/tests/`; returns the
    question names. `edition` is the edition's path in the repository, e.g. `notebooks/00_start_here.ipynb`.
    """
    url = f"{base_url.rstrip('/')}/{edition}"
    with urllib.request.urlopen(url, timeout=60) as response:
        raw = response.read()
    notebook = json.loads(raw)
    folder = Path(folder)
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    (folder / Path(edition).name).write_bytes(raw)
    otter_metadata = notebook.get("metadata", {}).get("otter", {})
    ok_format = otter_metadata.get("OK_FORMAT", True)
    tests = otter_metadata.get("tests", {})
    for question, test in tests.items():
        if ok_format:
            text = "OK_FORMAT = True\n\ntest = " + pprint.pformat(test, indent=4, width=200) + "\n"
        else:
            text = test  # exception-based tests are stored as the test file's source
        (folder / "tests" / f"{question}.py").write_text(text, encoding="utf-8")
    return sorted(tests)
