"""Build the committed lesson editions from their Otter Assign masters (`effitrain build`).

Each lesson has one source, `lessons/NN_<name>.ipynb`: an Otter Assign master notebook (lesson
cells plus question blocks holding solutions, public tests and `# HIDDEN` tests). The build runs
Otter Assign on a copy of it in a temporary folder, then cleans and places what otter made:

    notebooks/NN_<name>.ipynb            learner edition: solutions replaced by `...`, public tests
    notebooks/solutions/NN_<name>.ipynb  solution edition: solutions, public and hidden tests
    autograder/NN_<name>/                otter's autograder zip, unpacked (hidden tests included)

Every edition starts with the setup cell below (one home: `setup_cell_source`), then the
`grader = Notebook("NN_<name>.ipynb")` cell (`effitrain_lessons.shared.checks`, honest about hidden
tests, with no otter in the learner's kernel). Tests live in the notebook's metadata, read from the
notebook file in the kernel's working folder (the notebook's own folder under JupyterLab and nbval)
or, where the notebook is not on disk (Colab), from the same lesson installed with the package.

A code cell whose first line is `# @save` is also copied, with a lesson's other saved cells in order,
into `saved.py` of the lesson's package (d2l's convention): the loop a lesson writes in
a cell is the loop `torchrun` and `accelerate launch` run, not a second copy. A saved cell must be
plain Python with its own imports, outside any question.

Editions are clean and deterministic (no outputs, no execution counts, no per-run metadata, cell
ids kept from the source or derived from content), so building twice gives identical bytes, and
`build(check=True)` can tell whether the committed files are up to date.

Writing an exercise in a lesson source (Otter Assign's format; see 00_start_here for one):

    raw cell       # BEGIN QUESTION / name: q_short / points: 1
    markdown       the question
    raw cell       # BEGIN SOLUTION
    code           answer = compute()  # SOLUTION        (learners see `answer = ...`)
    raw cell       # END SOLUTION
    raw cell       # BEGIN TESTS
    code           assert isinstance(answer, int)        (public: shown to learners)
    code           # HIDDEN  then  assert answer == 42   (hidden: autograder and solution edition)
    raw cell       # END TESTS
    raw cell       # END QUESTION

Tests are doctests made from the test cells (otter's OK format): keep them to `assert`s with a
message, compare types strictly (`type(x) is int`, not `isinstance`: an object can claim any class),
and avoid helper variables (they would land in the learner's namespace). Tag each lesson cell an
exercise needs (to define what its tests and solution use) `setup-for:<question>`: `effitrain grade`
runs only those cells and the answers, and tests/test_grading.py checks that they suffice. Cells
after an exercise must not use its answer: learner editions run top to bottom unanswered under
nbval. The shared otter settings are `ASSIGNMENT_CONFIG`; a lesson may override them in its own
`# ASSIGNMENT CONFIG` raw cell, except the settings that name files (lessons use bundled data).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import textwrap
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from effitrain_lessons.course import translate
from effitrain_lessons.course.lessons import (
    AUTOGRADER_DIR,
    LEARNER_DIR,
    LESSON_NAME,
    LESSONS_DIR,
    NO_CHECKOUT,
    ROOT,
    SOLUTIONS_DIR,
    TURKISH_DIR,
    TURKISH_SOLUTIONS_DIR,
    course_root,
    edition_paths,
    lesson_names,
    resolve_lesson,
)
from effitrain_lessons.shared.colab import PIP_REQUIREMENT
from effitrain_lessons.shared.i18n import LANGUAGES, N_, translator

SETUP_CELL_ID = "setup"
OTTER_INIT = "# Initialize Otter"  # how the cell that makes `grader` starts when Otter Assign writes it
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# Per-cell metadata worth keeping; everything else (execution timings, scroll state, ...) is dropped.
CELL_METADATA_KEPT = ("deletable", "editable", "jupyter", "otter", "tags")
# Notebook metadata copied from the source when present (Colab's GPU runtime request).
NOTEBOOK_METADATA_KEPT = ("accelerator",)

# Otter Assign settings shared by every lesson, put in a config cell in front of the source (a
# lesson's own `# ASSIGNMENT CONFIG` cell comes later, so it can override them).
ASSIGNMENT_CONFIG = {
    "init_cell": True,  # otter's `grader = otter.Notebook("NN_<name>.ipynb")` cell
    "check_all_cell": False,  # each question already has its own check cell
    "export_cell": False,  # submission zips need a PDF toolchain; instructors collect notebooks
    "run_tests": False,  # no execution at build time: nbval and tests/test_editions.py run them
    "solutions_pdf": False,
    "template_pdf": False,
    "save_environment": False,
    "tests": {"files": False, "ok_format": True},  # tests in notebook metadata, OK (doctest) format
    "generate": {"show_stdout": True},  # the autograder: run by Gradescope or `otter grade`
    "requirements": [PIP_REQUIREMENT],  # the grading image needs the course package
    "overwrite_requirements": False,
    "python_version": "3.11",  # the interpreter constraints.txt is tested with
}
UNSUPPORTED_LESSON_CONFIG = ("files", "autograder_files", "student_files", "config_file", "environment")


@dataclass(frozen=True)
class Difference:
    """One file the build wrote, would write, or found out of place."""

    path: str  # relative to the repository root, with forward slashes
    reason: str  # "stale", "missing", "extra", "orphan", "written" or "removed"

    def __str__(self) -> str:
        return f"{self.path} ({self.reason})"


# The setup cell's words, translated for each edition through the runtime catalog.
SETUP_COMMENT = N_("Setup (the same in every lesson): run this cell first.")
COLAB_COMMENT = N_("Colab: install this version of the course, its runtime only (Colab's torch stays)")
REPORT_COMMENT = N_("what pip installed")
NOT_INSTALLED = N_(
    "The effitrain_lessons package is not installed in this notebook's Python: install it with "
    "`pip install effitrain-lessons` and open the lessons with `effitrain lab` (in a checkout: `make lab`)."
)
LANGUAGE_COMMENT = N_("the language of what the lesson prints and draws")
THREADS_COMMENT = N_(
    "PyTorch on one CPU thread, so that other programs on a busy laptop do not distort the "
    'lesson\'s times (lesson 01, "How we measured")'
)
INIT_COMMENT = N_(
    "The exercises' checker: grader.check(\"q_name\") runs that question's tests on your answer."
)
LANGUAGE_SUFFIX = {"en": "", "tr": "_tr"}  # edition_paths' key suffix for each edition's language


CELL_WIDTH = 100  # characters a line in a lesson's code cells, as lessons/ruff.toml holds the masters


def comment_lines(text: str, indent: int = 0) -> str:
    """`text` as comment lines at `indent` spaces, each at most CELL_WIDTH characters."""
    lines = textwrap.wrap(text, CELL_WIDTH - indent - 2, break_on_hyphens=False, break_long_words=False)
    return "\n".join(" " * indent + "# " + line for line in lines)


def string_lines(text: str, indent: int) -> str:
    """`text` as adjacent string literals (Python joins them), one a line after the first at `indent`
    spaces, each line at most CELL_WIDTH characters."""
    width = CELL_WIDTH - indent - 6  # the quotes, and room for an escaped quote or two
    pieces = textwrap.wrap(text, width, drop_whitespace=False, break_on_hyphens=False, break_long_words=False)
    return ("\n" + " " * indent).join(json.dumps(piece, ensure_ascii=False) for piece in pieces)


def setup_cell_source(language: str = "en") -> str:
    """The first cell of every edition in `language`: the same code in each, its words translated."""
    _ = translator(language)
    return f"""\
{comment_lines(_(SETUP_COMMENT))}
import subprocess
import sys
import tempfile
from pathlib import Path

{comment_lines(_(COLAB_COMMENT))}
if "google.colab" in sys.modules:
{comment_lines(_(REPORT_COMMENT), 4)}
    report = Path(tempfile.gettempdir(), "effitrain-lessons-install.json")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--report", str(report)]
    subprocess.run([*pip, "{PIP_REQUIREMENT}"], check=True)

try:
    import effitrain_lessons
except ImportError:
    raise ImportError(
        {string_lines(_(NOT_INSTALLED), 8)}
    ) from None

from effitrain_lessons.shared.i18n import use_language

{comment_lines(_(LANGUAGE_COMMENT))}
use_language("{language}")

import torch

{comment_lines(_(THREADS_COMMENT))}
torch.set_num_threads(1)

if "google.colab" in sys.modules:
    from effitrain_lessons.shared.colab import install_summary

    print(install_summary(report))"""


def build(
    check: bool = False,
    root: Path = ROOT,
    lessons: list[str] | None = None,
    languages: tuple[str, ...] = tuple(LANGUAGES),
) -> list[Difference]:
    """Build the editions of `lessons` (default: every lesson in `root/lessons/`) in `languages`
    (default: English and Turkish; the Turkish editions also compile the runtime catalog).

    With `check=False`, writes the files that changed and returns them ("written"/"removed").
    With `check=True`, writes nothing and returns the committed files that are stale, missing or
    extra, plus editions without a source ("orphan", only when building every lesson): an empty
    list means the committed editions are up to date.
    """
    root = Path(root)
    available = lesson_names(root)
    names = available if lessons is None else [resolve_lesson(x, available) for x in lessons]
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown or not languages:
        raise ValueError(
            f"There is no edition in {', '.join(unknown) or 'no language'}: the editions are "
            f"{', '.join(LANGUAGES)}."
        )
    differences: list[Difference] = []
    if "tr" in languages and (root / translate.PACKAGE_CATALOG).is_file():  # a checkout of the package itself
        mo = {translate.PACKAGE_MO: translate.compiled_runtime_catalog(root)}
        found = (
            {translate.PACKAGE_MO: root / translate.PACKAGE_MO}
            if (root / translate.PACKAGE_MO).is_file()
            else {}
        )
        differences += _compare_files(found, mo) if check else _write_files(root, found, mo)
    for name in names:
        rendered = render_lesson(root / LESSONS_DIR / f"{name}.ipynb", languages)
        committed = _committed(root, name, languages)
        differences += (
            _compare_files(committed, rendered) if check else _write_files(root, committed, rendered)
        )
        if not check:
            _remove_empty_folders(root / edition_paths(name)["autograder"])
    if lessons is None:
        differences += _orphans(root, set(available))
    return differences


def render_lesson(source: Path, languages: tuple[str, ...] = tuple(LANGUAGES)) -> dict[str, bytes]:
    """Run Otter Assign on one master, and on its Turkish translation; return every output file,
    keyed by repository path.

    The autograder material comes from the English master only: a Turkish submission is graded with
    the same tests (its cells have the same ids, its code is the same code).
    """
    source = Path(source)
    name = source.stem
    root = source.resolve().parent.parent
    master = _read_notebook(source)
    paths = edition_paths(name)
    rendered: dict[str, bytes] = {}
    machine_paths = {str(root)}
    source_ids = [cell.get("id") for cell in master["cells"]]
    saved = saved_module(name, master)
    if saved is not None and paths["saved"] is None:
        raise ValueError(
            f"{name} has # @save cells but is not in the course's manifest: add it to "
            "effitrain_lessons/lessons.py, where its package is named (README, Adding a lesson)."
        )
    for language in languages:
        text = master if language == "en" else translate.translated_master(master, name, root)
        student, autograder, members, temps = _assign(text, name)
        machine_paths |= temps
        suffix = LANGUAGE_SUFFIX[language]
        rendered[paths["learner" + suffix]] = _notebook_bytes(
            _clean(student, master, source_ids, language, name)
        )
        rendered[paths["solution" + suffix]] = _notebook_bytes(
            _clean(autograder, master, source_ids, language, name)
        )
        if language == "en":  # the question bank and the saved module come with the English editions
            for member, data in sorted(members.items()):
                if member.startswith(QUESTION_BANK):
                    rendered[f"{paths['autograder']}/{member}"] = data
    if saved is not None and "en" in languages:
        rendered[paths["saved"]] = saved
    for path, data in rendered.items():
        _ensure_no_machine_paths(path, data, machine_paths)
    return dict(sorted(rendered.items()))


def _assign(master: dict, name: str) -> tuple[dict, dict, dict[str, bytes], set[str]]:
    """Otter Assign on `master` in a temporary folder: the student and autograder notebooks, the
    autograder zip's members, and the folder's paths (which must not leak into any output)."""
    with tempfile.TemporaryDirectory(prefix="effitrain-build-") as temp:
        temp = Path(temp)
        _write_master(master, temp / f"{name}.ipynb", name)
        _run_otter_assign(temp / f"{name}.ipynb", temp / "dist")
        student = _read_notebook(temp / "dist" / "student" / f"{name}.ipynb")
        autograder = _read_notebook(temp / "dist" / "autograder" / f"{name}.ipynb")
        zips = sorted((temp / "dist" / "autograder").glob("*.zip"))
        if len(zips) != 1:
            raise RuntimeError(f"Otter Assign made {len(zips)} autograder zips for {name}; expected one.")
        with zipfile.ZipFile(zips[0]) as archive:
            members = {info.filename: archive.read(info) for info in archive.infolist() if not info.is_dir()}
        return student, autograder, members, {str(temp), str(temp.resolve())}


# A saved cell's first line, as ruff's formatter writes it; d2l's `#@save`, without the space, is taken too.
SAVE_MARK = "# @save"


def _is_saved(cell: dict, source: str) -> bool:
    first_line = source.split("\n", 1)[0]
    return cell["cell_type"] == "code" and first_line.replace(" ", "") == SAVE_MARK.replace(" ", "")


def saved_module(name: str, master: dict) -> bytes | None:
    """The module made of a master's `# @save` cells, or None when it has none."""
    cells, in_question = [], False
    for cell in master["cells"]:
        source = _source(cell)
        if cell["cell_type"] == "raw" and source.lstrip().startswith(("# BEGIN QUESTION", "# END QUESTION")):
            in_question = source.lstrip().startswith("# BEGIN QUESTION")
        if not _is_saved(cell, source):
            continue
        if in_question:
            raise ValueError(
                f"{name}: cell {cell.get('id')} is saved ({SAVE_MARK}) inside a question; "
                "save only lesson cells."
            )
        body = source.split("\n", 1)[1].strip("\n") if "\n" in source else ""
        try:
            compile(body, f"{name} cell {cell.get('id')}", "exec")
        except SyntaxError as error:
            raise ValueError(
                f"{name}: saved cell {cell.get('id')} is not plain Python ({error.msg}, line "
                f"{error.lineno}): keep notebook magics out of {SAVE_MARK} cells."
            ) from None
        cells.append(f"# cell {cell.get('id')}\n{body}\n")
    if not cells:
        return None
    header = (
        f"# AUTOGENERATED by `effitrain build` from {LESSONS_DIR}/{name}.ipynb: do not edit.\n"
        f"# Edit the lesson's {SAVE_MARK} cells and run `make notebooks`.\n"
        f'"""The code lesson {name[:2]} writes in its cells, for the launchers and scripts that run it."""\n'
    )
    return (header + "\n\n" + "\n\n".join(cells)).encode("utf-8")


# What the tree keeps of Otter's autograder zip: the test files, the course's question bank. The rest
# (Gradescope's setup.sh, run_autograder, run_otter.py, environment.yml, otter_config.json) is the
# same shell for every lesson, made on demand by `effitrain build --gradescope DIR`.
QUESTION_BANK = "tests/"


def pack_autograder(name: str, destination: str | os.PathLike, root: Path = ROOT) -> Path:
    """Otter's autograder zip of lesson `name`, for `otter grade -a` or Gradescope: the question bank
    (`autograder/<name>/tests/`) with the shell Otter Assign makes around it, built from the master.

    Entries are sorted and carry a fixed timestamp, so the same master always gives the same bytes.
    """
    root = Path(root)
    source = root / LESSONS_DIR / f"{name}.ipynb"
    if not source.is_file():
        raise FileNotFoundError(f"There is no {LESSONS_DIR}/{name}.ipynb: pass a lesson of this course.")
    _student, _autograder, members, temps = _assign(_read_notebook(source), name)
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in sorted(members.items()):
            _ensure_no_machine_paths(member, data, temps | {str(root), str(root.resolve())})
            info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if member in ("run_autograder", "setup.sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return destination


DESCRIPTION = (
    "Build the learner editions (notebooks/), the solution editions (notebooks/solutions/) "
    "and the autograder material (autograder/) from the Otter Assign masters in lessons/."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "lessons",
        nargs="*",
        metavar="LESSON",
        help="lessons to build, e.g. 00 or 00_start_here (default: all)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only report built files that are stale or missing"
    )
    parser.add_argument(
        "--course",
        type=Path,
        default=None,
        help="the course checkout (default: the one this package runs from)",
    )
    parser.add_argument(
        "--gradescope",
        type=Path,
        default=None,
        metavar="DIR",
        help="write each lesson's Otter autograder zip for Gradescope into DIR instead of building",
    )
    parser.add_argument(
        "--language",
        action="append",
        choices=list(LANGUAGES),
        default=None,
        help="build only the editions in this language (repeatable; default: every edition)",
    )


def run(args: argparse.Namespace) -> int:
    """`effitrain build [--check] [LESSON ...]`. Returns the exit code."""
    root = course_root(args.course)
    if root is None:
        print(NO_CHECKOUT.format(command="effitrain build"), file=sys.stderr)
        return 2
    if not lesson_names(root):
        print(
            f"There are no lesson masters in {root / LESSONS_DIR}: "
            "run this in the course checkout or pass --course.",
            file=sys.stderr,
        )
        return 2
    start = time.perf_counter()
    if args.gradescope is not None:
        return _gradescope(root, args.lessons, args.gradescope)
    try:
        differences = build(
            check=args.check,
            root=root,
            lessons=args.lessons or None,
            languages=tuple(args.language or LANGUAGES),
        )
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    for difference in differences:
        print(difference)
    orphans = sum(d.reason == "orphan" for d in differences)
    if orphans:
        print(
            f"{orphans} edition(s) have no source in {LESSONS_DIR}/: delete them or restore their lesson.",
            file=sys.stderr,
        )
    if args.check and differences:
        print(
            f"{len(differences)} file(s) out of date: run `make notebooks` and commit the result.",
            file=sys.stderr,
        )
        return 1
    count = len(args.lessons) if args.lessons else len(lesson_names(root))
    verdict = "up to date" if args.check else f"{len(differences) - orphans} file(s) changed"
    print(f"Built {count} lesson(s) in {seconds:.1f} s: {verdict}.")
    return 0


def _gradescope(root: Path, lessons: list[str], folder: Path) -> int:
    """`effitrain build --gradescope DIR [LESSON ...]`: one autograder zip per lesson in DIR."""
    available = lesson_names(root)
    try:
        names = [resolve_lesson(x, available) for x in lessons] if lessons else available
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    for name in names:
        print(pack_autograder(name, Path(folder) / f"{name}-autograder.zip", root))
    print(f"Wrote {len(names)} autograder zip(s) to {folder}: upload each to its Gradescope assignment.")
    return 0


# ---------------------------------------------------------------------------------------------
# Otter Assign


def _write_master(master: dict, path: Path, name: str) -> None:
    """Write the source with the shared config cell in front, where Otter Assign will read it."""
    import nbformat
    import yaml

    for cell in master["cells"]:
        text = _source(cell).strip()
        if cell["cell_type"] == "markdown" and text.startswith("```otter") and text.endswith("```"):
            text = text[len("```otter") : -3].strip()
        if re.match(r"#\s+assignment\s+config", text, re.IGNORECASE):
            config = yaml.safe_load(text) or {}
            bad = sorted(set(config) & set(UNSUPPORTED_LESSON_CONFIG))
            if bad:
                raise ValueError(
                    f"{LESSONS_DIR}/{name}.ipynb sets {', '.join(bad)} in its ASSIGNMENT CONFIG: the build "
                    "runs otter on a copy of the notebook alone, so lessons use the package's bundled data."
                )
    config = {"name": name, **ASSIGNMENT_CONFIG}
    cell = nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=True))
    cell["id"] = "effitrain-assignment-config"
    notebook = nbformat.from_dict(json.loads(json.dumps(master)))
    notebook["cells"].insert(0, cell)
    nbformat.write(notebook, str(path))


def _run_otter_assign(master: Path, result: Path) -> None:
    import otter.assign

    # Otter Assign changes the working folder while it runs; put it back whatever happens.
    cwd = os.getcwd()
    try:
        otter.assign.main(str(master), str(result), no_pdfs=True, no_run_tests=True)
    finally:
        os.chdir(cwd)


# ---------------------------------------------------------------------------------------------
# Cleaning


def _clean(
    notebook: dict, master: dict, source_ids: list[str | None], language: str = "en", name: str = ""
) -> dict:
    """A copy of an otter-made notebook with the setup cell in front and nothing run-specific."""
    cells = []
    for cell in notebook["cells"]:
        kept = {
            "cell_type": cell["cell_type"],
            "id": cell.get("id"),
            "metadata": {k: cell["metadata"][k] for k in CELL_METADATA_KEPT if k in cell.get("metadata", {})},
            "source": _source(cell),
        }
        if cell["cell_type"] == "code":
            kept["execution_count"] = None
            kept["outputs"] = []
        elif cell.get("attachments"):
            kept["attachments"] = cell["attachments"]
        if kept["cell_type"] == "code" and kept["source"].startswith(OTTER_INIT):
            # The lessons' grader is the package's (effitrain_lessons.shared.checks), not otter's.
            kept["source"] = (
                kept["source"]
                .replace(OTTER_INIT, comment_lines(translator(language)(INIT_COMMENT)), 1)
                .replace(
                    "import otter\ngrader = otter.Notebook(",
                    "from effitrain_lessons.shared.checks import Notebook\ngrader = Notebook(",
                )
            )
        cells.append(kept)

    setup = {
        "cell_type": "code",
        "execution_count": None,
        "id": SETUP_CELL_ID,
        "metadata": {"deletable": False, "editable": False},
        "outputs": [],
        "source": setup_cell_source(language),
    }
    cells.insert(0, setup)
    _assign_ids(cells, {i for i in source_ids if i})

    metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for key in NOTEBOOK_METADATA_KEPT:
        if key in master.get("metadata", {}):
            metadata[key] = master["metadata"][key]
    if "otter" in notebook.get("metadata", {}):
        metadata["otter"] = notebook["metadata"]["otter"]
    metadata["effitrain"] = {
        "language": language,
        "source": f"AUTOGENERATED by `effitrain build` from {LESSONS_DIR}/{name}.ipynb"
        + ("" if language == "en" else f" and {translate.CATALOG_DIR}/{name}.po")
        + ": do not edit; edit the master and run `make notebooks`.",
    }
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def _assign_ids(cells: list[dict], source_ids: set[str]) -> None:
    """Keep ids that come from the source; give the cells otter added ids derived from content."""
    taken: set[str] = set()
    for cell in cells:
        if cell is cells[0] and cell["id"] == SETUP_CELL_ID:  # the setup cell the build puts first
            wanted = SETUP_CELL_ID
        elif cell["id"] in source_ids:
            wanted = cell["id"]
        else:
            wanted = _derived_id(cell)
        unique, n = wanted, 1
        while unique in taken:
            n += 1
            unique = f"{wanted}-{n}"
        cell["id"] = unique
        taken.add(unique)


def _derived_id(cell: dict) -> str:
    source = cell["source"]
    if "\ngrader = Notebook(" in source:
        return "otter-init"
    match = re.fullmatch(r'grader\.check\("([A-Za-z0-9_-]+)"\)', source.strip())
    if match:
        return f"check-{match.group(1)}"[:64]
    digest = hashlib.sha256(f"{cell['cell_type']}\n{source}".encode()).hexdigest()
    return f"{cell['cell_type']}-{digest[:10]}"


def _notebook_bytes(notebook: dict) -> bytes:
    import nbformat

    node = nbformat.from_dict(notebook)
    nbformat.validate(node)
    return (nbformat.writes(node, version=4) + "\n").encode("utf-8")


def _ensure_no_machine_paths(path: str, data: bytes, folders: set[str]) -> None:
    """Fail if a path of this machine (the checkout, the build folder) leaked into an output."""
    text = data.decode("utf-8", errors="replace")
    for folder in sorted(folders):
        if len(folder) > 1 and folder in text:
            raise RuntimeError(f"The build put a path of this machine ({folder}) into {path}.")


# ---------------------------------------------------------------------------------------------
# Comparing and writing


def _read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _committed(root: Path, name: str, languages: tuple[str, ...] = tuple(LANGUAGES)) -> dict[str, Path]:
    """The files now in place for one lesson's editions in `languages`, keyed by repository path."""
    paths = edition_paths(name)
    keys = [kind + LANGUAGE_SUFFIX[language] for language in languages for kind in ("learner", "solution")]
    if "en" in languages and paths["saved"] is not None:
        keys.append("saved")
    found = {paths[key]: root / paths[key] for key in keys if (root / paths[key]).is_file()}
    folder = root / paths["autograder"]
    if "en" in languages and folder.is_dir():
        for file in folder.rglob("*"):
            if file.is_file() and "__pycache__" not in file.parts:
                found[file.relative_to(root).as_posix()] = file
    return found


def _compare_files(committed: dict[str, Path], rendered: dict[str, bytes]) -> list[Difference]:
    differences = []
    for path, data in rendered.items():
        if path not in committed:
            differences.append(Difference(path, "missing"))
        elif committed[path].read_bytes() != data:
            differences.append(Difference(path, "stale"))
    differences += [Difference(path, "extra") for path in sorted(set(committed) - set(rendered))]
    return differences


def _write_files(root: Path, committed: dict[str, Path], rendered: dict[str, bytes]) -> list[Difference]:
    differences = []
    for path, data in rendered.items():
        target = root / path
        if path in committed and committed[path].read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        differences.append(Difference(path, "written"))
    for path in sorted(set(committed) - set(rendered)):
        (root / path).unlink()
        differences.append(Difference(path, "removed"))
    return differences


def _remove_empty_folders(folder: Path) -> None:
    for directory in sorted((d for d in folder.rglob("*") if d.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()


def _orphans(root: Path, names: set[str]) -> list[Difference]:
    """Editions whose lesson source is gone (reported, never deleted: remove them by hand)."""
    found = []
    for folder in (LEARNER_DIR, SOLUTIONS_DIR, TURKISH_DIR, TURKISH_SOLUTIONS_DIR):
        for path in sorted((root / folder).glob("*.ipynb")):
            if LESSON_NAME.fullmatch(path.stem) and path.stem not in names:
                found.append(Difference(path.relative_to(root).as_posix(), "orphan"))
    if (root / AUTOGRADER_DIR).is_dir():
        for path in sorted((root / AUTOGRADER_DIR).iterdir()):
            if path.is_dir() and LESSON_NAME.fullmatch(path.name) and path.name not in names:
                found.append(Difference(path.relative_to(root).as_posix() + "/", "orphan"))
    return found
