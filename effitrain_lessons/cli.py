"""The `effitrain` command: `lab` and `info` for learners, `build` and `grade` for instructors.

`python -m effitrain_lessons` is the same command. The instructor's subcommands live in
`effitrain_lessons.course`.

`effitrain lab` in a checkout opens its notebooks/. Anywhere else (after `pip install`) it puts a
copy of the lessons the package carries in a folder of the learner's (`--dir`, default
`./effitrain-lessons`) and opens JupyterLab there. The installed lessons are never edited, and a
lesson already in that folder is the learner's: it is replaced only when a new version of the
package brings a different lesson and the learner says yes at the prompt, and then kept beside it
under a dated name.

`effitrain lab --lang tr` opens the Turkish editions the same way: the checkout's notebooks/tr/, or
a copy of the installed ones in `<dir>/tr/`, and the lab speaks Turkish (`effitrain_lessons.shared.i18n`).
What `lab` and `info` print is in the language in use; the command's help stays English.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from effitrain_lessons import __version__
from effitrain_lessons.shared.arguments import add_fields
from effitrain_lessons.shared.checks import installed_lessons
from effitrain_lessons.shared.hub import hub_reachable, offline_by_choice
from effitrain_lessons.shared.i18n import DEFAULT, LANGUAGES, _, phrase, use_language

PACKAGES = [
    "torch",
    "transformers",
    "accelerate",
    "datasets",
    "tokenizers",
    "matplotlib",
    "ipywidgets",
    "jupyterlab",
    "otter-grader",
]
WORK_FOLDER = Path("effitrain-lessons")  # where `effitrain lab` puts the lessons outside a checkout
MANIFEST = ".effitrain-lessons.json"  # in that folder: each lesson's installed edition, by hash, when copied
LESSON_FILES = "[0-9][0-9]_*.ipynb"


def checkout_lessons() -> Path | None:
    """The checkout's `notebooks/` when this package runs from a clone of the course, else None."""
    from effitrain_lessons.course.lessons import LEARNER_DIR, course_root

    root = course_root(None)
    return root / LEARNER_DIR if root else None


def ask(question: str) -> bool:
    """A yes/no question on the terminal; no terminal means no."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def copy_lessons(folder: Path, source: Path | None = None, confirm: Callable[[str], bool] = ask) -> list[str]:
    """Put a copy of every installed lesson in `folder`; return a line for each lesson it did something to.

    A lesson missing there is copied. One that is there is the learner's: it is left alone while the
    installed lesson is the one it was copied from (`MANIFEST` remembers which). When the installed
    lesson changed since (a new version of the package), it is replaced only if `confirm` says yes,
    and then the learner's file is kept beside it, renamed.
    """
    source = installed_lessons() if source is None else source
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST
    try:
        copied_from = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        copied_from = {}
    if not isinstance(copied_from, dict):
        copied_from = {}
    done = []
    for lesson in sorted(source.glob(LESSON_FILES)):
        target = folder / lesson.name
        installed = hashlib.sha256(lesson.read_bytes()).hexdigest()
        if not target.exists():
            shutil.copyfile(lesson, target)
            done.append(phrase("copied {lesson}", lesson=lesson.name))
        elif target.read_bytes() == lesson.read_bytes() or copied_from.get(lesson.name) == installed:
            pass  # the installed lesson, or the learner's work on it
        elif confirm(
            phrase(
                "Lesson {lesson} of effitrain-lessons {version} differs from the one your {target} "
                "started from. Replace yours with it? Yours is kept beside it.",
                lesson=lesson.stem,
                version=__version__,
                target=target,
            )
        ):
            kept = target.with_name(f"{lesson.stem}.mine-{time.strftime('%Y%m%d-%H%M%S')}.ipynb")
            target.rename(kept)
            shutil.copyfile(lesson, target)
            done.append(
                phrase(
                    "replaced {lesson} with this version's lesson; yours is now {kept}",
                    lesson=lesson.name,
                    kept=kept.name,
                )
            )
        else:
            done.append(
                phrase(
                    "kept your {lesson}, though this version's lesson differs (run `effitrain lab` in a "
                    "terminal to be asked whether to replace it)",
                    lesson=lesson.name,
                )
            )
            continue  # asked again next time
        copied_from[lesson.name] = installed
    manifest_path.write_text(json.dumps(copied_from, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return done


def info_lines() -> list[str]:
    from effitrain_lessons.shared.device import describe_device

    lines = [
        phrase(
            "python {version} on {system} {machine}",
            version=platform.python_version(),
            system=platform.system(),
            machine=platform.machine(),
        )
    ]
    for name in PACKAGES:
        try:
            lines.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(phrase("{package} not installed", package=name))
    lines.append(describe_device())
    if offline_by_choice():
        lines.append(_("Hugging Face Hub: not tried (HF_HUB_OFFLINE is set)"))
    elif hub_reachable():
        lines.append(_("Hugging Face Hub: reachable"))
    else:
        lines.append(_("Hugging Face Hub: not reachable: the lessons use their bundled data and tiny models"))
    return lines


def edition_folder(folder: Path, language: str) -> Path:
    """Where the lessons in `language` go in a folder of lessons: the folder itself for English,
    else its `<language>/`."""
    return folder if language == DEFAULT else folder / language


def run_lab(args: argparse.Namespace) -> int:
    language = args.lang
    use_language(language)  # what this command prints, and the kernels JupyterLab starts
    checkout = checkout_lessons()
    checkout = edition_folder(checkout, language) if checkout else None
    directory = (
        edition_folder(args.dir, language) if args.dir else checkout or edition_folder(WORK_FOLDER, language)
    )
    if directory != checkout:
        for path in dict.fromkeys([args.dir or WORK_FOLDER, directory]):
            if path.exists() and not path.is_dir():
                print(
                    phrase("{path} is a file: pass --dir with a folder for your lessons.", path=path),
                    file=sys.stderr,
                )
                return 2
        source = installed_lessons(language)
        if not any(source.glob(LESSON_FILES)):
            print(
                phrase(
                    "This installation has no lessons in {folder}: install a version of effitrain-lessons "
                    "that carries them, or build them in a checkout with `effitrain build`.",
                    folder=source,
                ),
                file=sys.stderr,
            )
            return 2
        for line in copy_lessons(directory, source):
            print(f"{directory}: {line}")
        print(phrase("Your lessons are in {folder}.", folder=directory.resolve()))
    elif not any(directory.glob(LESSON_FILES)):
        print(
            phrase("There are no lessons in {folder}: build them with `effitrain build`.", folder=directory),
            file=sys.stderr,
        )
        return 2
    if importlib.util.find_spec("jupyterlab") is None:
        again = "effitrain lab" if language == DEFAULT else f"effitrain lab --lang {language}"
        print(
            phrase(
                "JupyterLab is not installed in this Python: `pip install 'effitrain-lessons[lab]'`, then "
                "run `{command}` again (your lessons are in {folder}).",
                command=again,
                folder=directory,
            ),
            file=sys.stderr,
        )
        return 2
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={directory.resolve()}",
        f"--port={args.port}",
    ]
    if args.no_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and Binder-like machines run as root
    sys.stdout.flush()  # what was printed must not be lost when JupyterLab replaces this process
    os.execv(sys.executable, command)


def run_info(args: argparse.Namespace) -> int:
    if args.lessons:
        from effitrain_lessons.lessons import LESSONS

        table = [lesson.as_dict() for lesson in LESSONS]
        if args.json:
            print(json.dumps(table, indent=2, ensure_ascii=False))
        else:
            for row in table:
                print(f"{row['number']}  {row['notebook']:<40} {row['package']}")
        return 0
    print("\n".join(info_lines()))
    return 0


def run_plan(args: argparse.Namespace) -> int:
    """`effitrain plan MODEL`: the estimate's breakdown, and a verdict for each GPU asked for
    (default: every preset)."""
    import dataclasses

    from effitrain_lessons.will_it_fit import plan

    try:
        settings = plan.Settings(**{f.name: getattr(args, f.name) for f in dataclasses.fields(plan.Settings)})
        estimate = plan.estimate(args.model, settings)
        verdicts = [plan.verdict(args.model, gpu, settings) for gpu in (args.gpu or list(plan.GPUS))]
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {"estimate": estimate.to_dict(), "verdicts": [v.to_dict() for v in verdicts]}, indent=1
            )
        )
    else:
        print(estimate)
        print()
        print("\n".join(v.sentence() for v in verdicts))
    return 0


def parser() -> argparse.ArgumentParser:
    from effitrain_lessons.course import build, grade, translate

    main = argparse.ArgumentParser(
        prog="effitrain", description="Lessons on efficient training with PyTorch."
    )
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lab = commands.add_parser("lab", help="open JupyterLab on the lessons")
    lab.add_argument("--port", type=int, default=8888)
    lab.add_argument("--no-browser", action="store_true", help="serve without opening a browser")
    lab.add_argument(
        "--dir",
        type=Path,
        default=None,
        help=f"your folder for the lessons, filled with any lesson it lacks (default: the checkout's "
        f"notebooks/, or ./{WORK_FOLDER} outside a checkout); the Turkish ones go in its tr/",
    )
    lab.add_argument(
        "--lang",
        choices=list(LANGUAGES),
        default=DEFAULT,
        help="the lessons' language: "
        + ", ".join(f"{code} ({name})" for code, name in LANGUAGES.items())
        + f" (default: {DEFAULT})",
    )
    lab.set_defaults(run=run_lab)
    info = commands.add_parser("info", help="versions, device, and whether the hub is reachable")
    info.add_argument(
        "--lessons", action="store_true", help="the course's lessons instead: number, notebook, package"
    )
    info.add_argument("--json", action="store_true", help="with --lessons: the manifest as a JSON list")
    info.set_defaults(run=run_info)
    planning = commands.add_parser(
        "plan",
        help="will it fit? the memory a training step needs, from a model's config (offline)",
        description="Predict the memory one training step needs (parameters, gradients, optimizer state, "
        "activations, an allowance) and say whether it fits each GPU, or what would make it fit.",
    )
    planning.add_argument(
        "model", help="a bundled model (" + ", ".join(_bundled_models()) + ") or a folder with a config.json"
    )
    planning.add_argument(
        "--gpu",
        action="append",
        metavar="GPU",
        help="a GPU (" + ", ".join(_gpu_names()) + ") or a size such as 12GiB; repeat for "
        "several (default: every GPU listed)",
    )
    planning.add_argument("--json", action="store_true", help="print the estimate and the verdicts as JSON")
    add_fields(planning, _plan_settings())
    planning.set_defaults(run=run_plan)
    building = commands.add_parser(
        "build", help="build the lesson editions from lessons/ (instructors)", description=build.DESCRIPTION
    )
    build.add_arguments(building)
    building.set_defaults(run=build.run)
    extracting = commands.add_parser(
        "extract",
        help="update the translation catalogs from the English (instructors)",
        description=translate.DESCRIPTION,
    )
    translate.add_arguments(extracting)
    extracting.set_defaults(run=translate.run)
    grading = commands.add_parser(
        "grade",
        help="grade learners' notebooks in a sandbox (instructors)",
        description="Grade learners' notebooks; see the README, For instructors.",
    )
    grade.add_arguments(grading)
    grading.set_defaults(run=grade.run)
    return main


def _bundled_models() -> list[str]:
    from effitrain_lessons.will_it_fit.plan import bundled_models

    return bundled_models()


def _gpu_names() -> list[str]:
    from effitrain_lessons.will_it_fit.plan import GPUS

    return list(GPUS)


def _plan_settings():
    from effitrain_lessons.will_it_fit.plan import Settings

    return Settings


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return args.run(args)
