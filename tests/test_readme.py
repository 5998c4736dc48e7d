"""The README's quick start and lesson table stay true to the repository."""

import re
from pathlib import Path

from effitrain_lessons.colab import REPOSITORY

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_quick_start_is_the_two_make_targets():
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make lab" in quick_start and "make test" in quick_start
    makefile = (ROOT / "Makefile").read_text()
    for target in ("setup", "lab", "test", "bench", "notebooks"):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"the Makefile has no {target} target"


def test_every_learner_edition_has_colab_and_binder_badges():
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        path = f"notebooks/{notebook.name}"
        assert f"colab.research.google.com/github/{REPOSITORY}/blob/main/{path}" in README, path
        assert f"mybinder.org/v2/gh/{REPOSITORY}/main?urlpath=lab/tree/{path}" in README, path


def test_links_to_files_in_the_repository_resolve():
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", README):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
