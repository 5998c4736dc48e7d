"""The README's quick start and lesson table stay true to the repository."""

import re
from pathlib import Path

from effitrain_lessons.shared.colab import REPOSITORY

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


README_TR = (ROOT / "README.tr.md").read_text(encoding="utf-8")


def test_the_readme_leads_to_the_turkish_one_and_back():
    assert "[Türkçe](README.tr.md)" in README.split("\n## ", 1)[0]
    assert "[English](README.md)" in README_TR.split("\n## ", 1)[0]


def test_every_turkish_learner_edition_has_a_row_with_colab_and_binder_badges():
    editions = sorted((ROOT / "notebooks" / "tr").glob("*.ipynb"))
    assert len(editions) == len(sorted((ROOT / "notebooks").glob("*.ipynb")))
    for notebook in editions:
        path = f"notebooks/tr/{notebook.name}"
        assert f"]({path})" in README_TR, path
        assert f"colab.research.google.com/github/{REPOSITORY}/blob/main/{path}" in README_TR, path
        assert f"mybinder.org/v2/gh/{REPOSITORY}/main?urlpath=lab/tree/{path}" in README_TR, path


def test_links_in_the_turkish_readme_resolve():
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", README_TR):
        assert (ROOT / target).exists(), f"README.tr.md links to {target}, which does not exist"
