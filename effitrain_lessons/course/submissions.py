"""Finding, reading and identifying learners' notebooks, whatever a class folder holds.

Every path found gets a `Submission`, graded or not: only regular `.ipynb` files (any case of the
extension) under a size limit are read; a symbolic link, a FIFO, a folder named `*.ipynb` or an
oversized file gets a row saying why. Names that are not valid UTF-8 are kept (shown with
backslash escapes); two files with the same name in different folders stay apart, because each
is named by its path below the folder given.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from effitrain_lessons.course.lessons import Lesson, resolve_lesson

MAX_BYTES = 20 << 20  # a lesson notebook with its outputs is well under 5 MB
MAX_ANSWER_CHARS = 200_000
SKIPPED_FOLDERS = (".ipynb_checkpoints",)  # JupyterLab's autosave copies, not submissions


def readable(text: str) -> str:
    """`text` as valid UTF-8 text: undecodable bytes and lone surrogates become backslash escapes."""
    if not isinstance(text, str):
        return ""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class Submission:
    path: Path | None  # None when the argument itself could not be used
    name: str  # how the grader names it: its path below the folder it was found in
    problem: str = ""  # why it will not be graded ("" when it can be read)


def find_submissions(arguments: list[str]) -> list[Submission]:
    """Every candidate below the given files and folders, in a stable order.

    Raises ValueError for an argument that does not exist (a mistyped path, not a submission).
    """
    found: list[Submission] = []
    for raw in arguments:
        path = Path(raw)
        try:
            info = os.lstat(path)
        except OSError:
            raise ValueError(
                f"{readable(str(raw))} does not exist: pass notebook files, or folders that contain them."
            ) from None
        if stat.S_ISDIR(info.st_mode):
            found += _walk(path, Path())
        else:
            found.append(_candidate(path, Path(path.name), info))
    names: dict[str, int] = {}
    for submission in found:  # the same name from two arguments: number the later ones
        count = names.get(submission.name, 0)
        names[submission.name] = count + 1
        if count:
            submission.name = f"{submission.name} ({count + 1})"
    return found


def _walk(folder: Path, relative: Path) -> list[Submission]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: os.fsencode(e.name))
    except OSError as error:
        return [
            Submission(
                None, readable(str(relative or folder)), f"is a folder that cannot be read ({error.strerror})"
            )
        ]
    found = []
    for entry in entries:
        name = relative / entry.name
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and not entry.name.lower().endswith(".ipynb"):
            if entry.name not in SKIPPED_FOLDERS:
                found += _walk(Path(entry.path), name)
        elif entry.name.lower().endswith(".ipynb"):
            found.append(_candidate(Path(entry.path), name, info))
    return found


def _candidate(path: Path, name: Path, info: os.stat_result) -> Submission:
    shown = readable(name.as_posix())
    if stat.S_ISLNK(info.st_mode):
        return Submission(path, shown, "is a symbolic link: copy the notebook itself into the folder")
    if stat.S_ISDIR(info.st_mode):
        return Submission(path, shown, "is a folder, not a notebook")
    if not stat.S_ISREG(info.st_mode):
        return Submission(path, shown, "is not a regular file (a FIFO, socket or device)")
    if not path.name.lower().endswith(".ipynb"):
        return Submission(path, shown, "is not an .ipynb notebook")
    if info.st_size > MAX_BYTES:
        return Submission(
            path, shown, f"is larger than {MAX_BYTES >> 20} MB: clear its outputs and submit it again"
        )
    return Submission(path, shown)


def read_notebook(path: Path) -> tuple[dict | None, str]:
    """The notebook's JSON, or None and why it cannot be graded. Never follows a link or blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        return None, f"cannot be opened ({error.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "is not a regular file"
        data = b""
        while len(data) <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
    except OSError as error:
        return None, f"cannot be read ({error.strerror})"
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        return None, f"is larger than {MAX_BYTES >> 20} MB: clear its outputs and submit it again"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, "is not UTF-8 text, so not a Jupyter notebook"
    try:
        notebook = json.loads(text)
    except RecursionError:
        return None, "is nested too deeply to be a Jupyter notebook"
    except ValueError as error:
        return None, f"is not valid JSON ({readable(str(error))[:80]}), so not a Jupyter notebook"
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return None, "is JSON but not a Jupyter notebook (no list of cells)"
    if notebook.get("nbformat") != 4:
        return None, "is not a version-4 Jupyter notebook: save it from JupyterLab, Colab or Jupyter Notebook"
    return notebook, ""


def code_cells(notebook: dict) -> dict[str, str]:
    """Cell id -> source of every well-formed code cell (other cells and odd entries are ignored)."""
    found = {}
    for cell in notebook.get("cells", []):
        if (
            not isinstance(cell, dict)
            or cell.get("cell_type") != "code"
            or not isinstance(cell.get("id"), str)
        ):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(part for part in source if isinstance(part, str))
        if isinstance(source, str):
            found[cell["id"]] = readable(source)
    return found


def repeated_ids(notebook: dict, wanted) -> dict[str, int]:
    """Each id of `wanted` (answer cells' ids) that more than one cell of the notebook carries, of any
    type, with how many do, in the notebook's order. Such a notebook is not valid (nbformat requires
    ids to be unique), and which copy is the answer is anyone's guess: the one shown first, or the
    one that would be read last."""
    counts: dict[str, int] = {}
    for cell in notebook.get("cells", []):
        if isinstance(cell, dict) and isinstance(cell.get("id"), str) and cell["id"] in wanted:
            counts[cell["id"]] = counts.get(cell["id"], 0) + 1
    return {cell_id: count for cell_id, count in counts.items() if count > 1}


def cell_ids(notebook: dict) -> set[str]:
    return {
        cell["id"]
        for cell in notebook.get("cells", [])
        if isinstance(cell, dict) and isinstance(cell.get("id"), str)
    }


def edition_language(notebook: dict) -> str:
    """The language of the edition a notebook was made from (its metadata says; English if it says nothing
    this course speaks). It chooses only the language of the feedback: the tests are the same."""
    from effitrain_lessons.shared.i18n import DEFAULT, LANGUAGES

    metadata = notebook.get("metadata")
    effitrain = metadata.get("effitrain") if isinstance(metadata, dict) else None
    code = effitrain.get("language") if isinstance(effitrain, dict) else None
    return code if isinstance(code, str) and code in LANGUAGES else DEFAULT


def identify(
    notebook: dict, lessons: dict[str, Lesson], override: str | None = None
) -> tuple[str | None, str]:
    """Which lesson the notebook answers, checked against its cells; or None and why not.

    The lesson is `override` (`--lesson`), else the one its metadata names; either way, the
    notebook's cell ids must belong to that lesson: a notebook whose cells are another lesson's is
    rejected. With neither, the lesson its cells belong to is taken.
    """
    names = sorted(lessons)
    ids = cell_ids(notebook)
    exclusive = {
        name: lessons[name].cell_ids - set().union(*(lessons[o].cell_ids for o in names if o != name))
        for name in names
    }
    matches = {name: len(ids & exclusive[name]) for name in names}
    best = max(names, key=lambda n: matches[n]) if names else None
    if best is not None and list(matches.values()).count(matches[best]) > 1:
        best = None
    named = override
    if named is None:
        metadata = notebook.get("metadata")
        otter = metadata.get("otter") if isinstance(metadata, dict) else None
        assignment = otter.get("assignment_name") if isinstance(otter, dict) else None
        named = assignment if isinstance(assignment, str) else None
    if named is not None:
        try:
            named = resolve_lesson(named, names)
        except ValueError:
            source = "--lesson" if override is not None else "its metadata"
            return None, f"names lesson {readable(named)[:60]!r} in {source}, which this course does not have"
        said = (
            f"is to be graded as lesson {named} (--lesson {override})"
            if override is not None
            else f"names lesson {named} in its metadata"
        )
        if matches[named] == 0:
            if best is not None and matches[best] > 0:
                return None, (
                    f"{said}, but its cells are lesson {best}'s: it was made from another lesson's notebook "
                    f"(pass --lesson {best} if that is the lesson it answers)"
                )
            return None, f"{said}, but none of its cells belongs to that lesson"
        if best is not None and best != named and matches[best] > matches[named]:
            return None, f"{said}, but most of its cells are lesson {best}'s"
        return named, ""
    if best is not None and matches[best] > 0:
        return best, ""
    return None, "does not say which lesson it answers, and its cells match none: pass --lesson NAME"
