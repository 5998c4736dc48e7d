"""The `effitrain` command: info, lab (a real JupyterLab on a free port, the Turkish editions with
--lang tr) and its errors."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from effitrain_lessons import cli

ROOT = Path(__file__).resolve().parent.parent


def test_info_names_versions_device_and_hub(monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    for name in ("torch", "transformers", "accelerate", "datasets", "otter-grader"):
        assert f"\n{name} " in out
    assert "Using " in out
    assert "Hugging Face Hub: not tried (HF_HUB_OFFLINE is set)" in out


def test_module_entry_point_runs():
    done = subprocess.run(
        [sys.executable, "-m", "effitrain_lessons", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "lab" in done.stdout and "info" in done.stdout


def test_in_a_checkout_the_lessons_are_its_notebooks():
    assert cli.checkout_lessons() == ROOT / "notebooks"


def lesson_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.ipynb"))}


def test_lessons_are_copied_into_the_learners_folder_and_their_work_is_kept(tmp_path):
    installed = tmp_path / "installed"
    shutil.copytree(ROOT / "notebooks", installed, ignore=shutil.ignore_patterns("solutions"))
    original = lesson_files(installed)
    assert len(original) >= 5
    never = lambda question: pytest.fail(f"nothing to ask: {question}")  # noqa: E731
    mine = tmp_path / "mine"
    assert cli.copy_lessons(mine, installed, confirm=never) == [f"copied {name}" for name in original]
    assert lesson_files(mine) == original
    assert cli.copy_lessons(mine, installed, confirm=never) == []

    # The learner works on a lesson: theirs, never questioned while the installed lesson is the same.
    first, second = sorted(original)[:2]
    (mine / first).write_text("my answers", encoding="utf-8")
    (mine / "notes.txt").write_text("mine too", encoding="utf-8")
    assert cli.copy_lessons(mine, installed, confirm=never) == []
    assert (mine / first).read_text(encoding="utf-8") == "my answers"

    # A new version of the package brings a different lesson: the learner is asked, and no means no.
    (installed / first).write_bytes(original[first] + b" ")
    asked = []
    done = cli.copy_lessons(mine, installed, confirm=lambda question: asked.append(question) or False)
    assert len(asked) == 1 and "Replace yours with it?" in asked[0] and first in asked[0]
    assert done == [
        f"kept your {first}, though this version's lesson differs (run `effitrain lab` in a "
        "terminal to be asked whether to replace it)"
    ]
    assert (mine / first).read_text(encoding="utf-8") == "my answers"

    # Yes: this version's lesson, and the learner's file kept beside it.
    done = cli.copy_lessons(mine, installed, confirm=lambda question: True)
    (kept,) = mine.glob("*.mine-*.ipynb")
    assert kept.read_text(encoding="utf-8") == "my answers"
    assert done == [f"replaced {first} with this version's lesson; yours is now {kept.name}"]
    assert (mine / first).read_bytes() == original[first] + b" " and (
        mine / "notes.txt"
    ).read_text() == "mine too"
    assert (mine / second).read_bytes() == original[second]
    assert cli.copy_lessons(mine, installed, confirm=never) == []
    assert lesson_files(installed) == {**original, first: original[first] + b" "}  # never edited by copying


def test_without_a_terminal_nothing_is_replaced(monkeypatch):
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    assert cli.ask("Replace it?") is False


def test_lab_refuses_a_file_for_a_folder(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    assert cli.main(["lab", "--dir", str(tmp_path / "a-file")]) == 2
    assert "is a file: pass --dir with a folder" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["build"], ["grade", "x.ipynb", "--out", "results"]])
def test_instructor_commands_outside_a_checkout_say_they_need_it(command, monkeypatch, tmp_path, capsys):
    from effitrain_lessons.course import lessons

    monkeypatch.setattr(lessons, "ROOT", tmp_path)  # as from site-packages: no lessons/ beside the package
    monkeypatch.chdir(tmp_path)
    assert cli.main(command) == 2
    error = capsys.readouterr().err.strip()
    assert "needs the course checkout" in error and "--course" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "results").exists()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_lab_serves_jupyterlab_on_the_lessons(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "effitrain_lessons", "lab", "--port", str(port), "--no-browser"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            **__import__("os").environ,
            "JUPYTER_RUNTIME_DIR": str(tmp_path),
            "JUPYTER_CONFIG_DIR": str(tmp_path),
        },
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=5) as response:
                    version = json.load(response)["version"]
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on port {port} (exit code {server.poll()}).")
                time.sleep(0.5)
        assert version
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=10) as response:
            assert response.status == 200  # the login page or JupyterLab itself
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_lab_without_jupyterlab_copies_the_lessons_and_says_what_to_install(tmp_path, monkeypatch, capsys):
    real = cli.importlib.util.find_spec
    monkeypatch.setattr(
        cli.importlib.util, "find_spec", lambda name, *a: None if name == "jupyterlab" else real(name, *a)
    )
    assert cli.main(["lab", "--dir", str(tmp_path / "mine")]) == 2
    captured = capsys.readouterr()
    assert (
        "pip install 'effitrain-lessons[lab]'" in captured.err and len(captured.err.strip().splitlines()) == 1
    )
    assert lesson_files(tmp_path / "mine") == lesson_files(ROOT / "notebooks")


def test_in_a_checkout_the_turkish_lessons_are_its_notebooks_tr():
    from effitrain_lessons.shared.checks import installed_lessons

    assert cli.edition_folder(cli.checkout_lessons(), "tr") == ROOT / "notebooks" / "tr"
    assert installed_lessons("tr") == installed_lessons() / "tr" == ROOT / "notebooks" / "tr"
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["lab", "--lang", "xx"])


@pytest.fixture
def jupyterlab(monkeypatch):
    """The command lines `effitrain lab` would replace itself with, JupyterLab never started; the
    language `--lang` chooses is undone after the test."""
    monkeypatch.setenv("EFFITRAIN_LANGUAGE", "en")
    started = []
    monkeypatch.setattr(cli.os, "execv", lambda path, command: started.append(command))
    return started


def fake_editions(folder: Path, language: str) -> dict[str, bytes]:
    """Two lessons in `language` (stand-ins where the real editions are not built yet)."""
    folder.mkdir(parents=True)
    for name in ("00_start_here", "01_checkpointing_first_principles"):
        (folder / f"{name}.ipynb").write_text(
            json.dumps({"lesson": name, "language": language}), encoding="utf-8"
        )
    return lesson_files(folder)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """As after `pip install`: no checkout, and the package's English and Turkish editions."""
    folder = tmp_path / "site-packages" / "notebooks"
    fake_editions(folder, "en")
    fake_editions(folder / "tr", "tr")
    monkeypatch.setattr(cli, "checkout_lessons", lambda: None)
    monkeypatch.setattr(
        cli, "installed_lessons", lambda language="en": folder if language == "en" else folder / language
    )
    return folder


def opened_folder(command: list[str]) -> Path:
    (root_dir,) = [part for part in command if part.startswith("--ServerApp.root_dir=")]
    return Path(root_dir.split("=", 1)[1])


def test_lab_in_turkish_copies_the_turkish_editions_into_tr_and_opens_jupyterlab_there(
    installed, jupyterlab, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    cli.main(["lab", "--lang", "tr", "--no-browser"])
    folder = tmp_path / "effitrain-lessons" / "tr"  # the default folder's tr/
    assert lesson_files(folder) == lesson_files(installed / "tr")
    assert not list(folder.parent.glob("*.ipynb"))  # the English editions were not asked for
    manifest = json.loads((folder / cli.MANIFEST).read_text(encoding="utf-8"))
    assert manifest == {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (installed / "tr").glob("*.ipynb")
    }
    (command,) = jupyterlab
    assert opened_folder(command) == folder.resolve() and "--no-browser" in command
    assert os.environ["EFFITRAIN_LANGUAGE"] == "tr"  # the lab and its kernels speak Turkish
    out = capsys.readouterr().out
    assert str(folder.resolve()) in out and all(name in out for name in manifest)

    # The learner's work in tr/ is theirs, as in the English folder: never copied over.
    first = sorted(manifest)[0]
    (folder / first).write_text("benim cevaplarım", encoding="utf-8")
    cli.main(["lab", "--lang", "tr"])
    assert (folder / first).read_text(encoding="utf-8") == "benim cevaplarım"
    assert opened_folder(jupyterlab[-1]) == folder.resolve()


def test_lab_in_turkish_with_dir_uses_its_tr_folder_beside_the_english_lessons(
    installed, jupyterlab, tmp_path
):
    mine = tmp_path / "mine"
    cli.main(["lab", "--dir", str(mine)])
    cli.main(["lab", "--dir", str(mine), "--lang", "tr"])
    assert lesson_files(mine) == lesson_files(installed) and lesson_files(mine / "tr") == lesson_files(
        installed / "tr"
    )
    assert (mine / cli.MANIFEST).is_file() and (
        mine / "tr" / cli.MANIFEST
    ).is_file()  # one manifest per edition
    assert [opened_folder(command) for command in jupyterlab] == [mine.resolve(), (mine / "tr").resolve()]


def test_lab_in_turkish_in_a_checkout_opens_its_notebooks_tr(jupyterlab, tmp_path, monkeypatch):
    notebooks = tmp_path / "checkout" / "notebooks"
    fake_editions(notebooks, "en")
    turkish = fake_editions(notebooks / "tr", "tr")
    monkeypatch.setattr(cli, "checkout_lessons", lambda: notebooks)
    cli.main(["lab", "--lang", "tr"])
    (command,) = jupyterlab
    assert opened_folder(command) == (notebooks / "tr").resolve()
    # nothing copied
    assert lesson_files(notebooks / "tr") == turkish and not (notebooks / "tr" / cli.MANIFEST).exists()


def test_lab_in_turkish_without_turkish_editions_says_so(jupyterlab, tmp_path, monkeypatch, capsys):
    notebooks = tmp_path / "checkout" / "notebooks"
    fake_editions(notebooks, "en")  # a checkout whose Turkish editions are not built
    monkeypatch.setattr(cli, "checkout_lessons", lambda: notebooks)
    monkeypatch.setattr(
        cli,
        "installed_lessons",
        lambda language="en": notebooks if language == "en" else notebooks / language,
    )
    assert cli.main(["lab", "--lang", "tr"]) == 2
    assert cli.main(["lab", "--lang", "tr", "--dir", str(tmp_path / "mine")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all(str(notebooks / "tr") in line for line in errors)
    assert jupyterlab == [] and not (tmp_path / "mine" / "tr").exists()


# `effitrain plan`: the estimator from the command line (lesson 6)


def test_plan_prints_the_breakdown_and_a_verdict_for_every_gpu(monkeypatch, capsys):
    from effitrain_lessons.will_it_fit import plan

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (
        cli.main(["plan", "bert-base-uncased", "--batch", "32", "--seq", "512", "--attention", "eager"]) == 0
    )
    out = capsys.readouterr().out
    expected = plan.estimate("bert-base-uncased", batch=32, seq=512, attention="eager")
    for line in expected.lines:
        assert line.formula in out
    assert "4 B × 109,483,778" in out  # BERT-base and its 2-label classifier, counted on the meta device
    for gpu in plan.GPUS:  # every preset gets its sentence, and the T4 cannot hold this setup
        assert f"{gpu}: " in out
    assert "T4: does not fit" in out and "A100-80GB: fits" in out


def test_plan_json_is_the_estimate_and_the_verdicts(capsys):
    from effitrain_lessons.will_it_fit import plan

    assert (
        cli.main(
            [
                "plan",
                "gpt2",
                "--gpu",
                "T4",
                "--gpu",
                "12GiB",
                "--batch",
                "8",
                "--seq",
                "1024",
                "--precision",
                "bf16",
                "--checkpointing",
                "--json",
            ]
        )
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    expected = plan.estimate("gpt2", batch=8, seq=1024, precision="bf16", checkpointing=True)
    assert answer["estimate"]["total_bytes"] == expected.total
    assert [line["name"] for line in answer["estimate"]["lines"]] == [line.name for line in expected.lines]
    assert [v["gpu"] for v in answer["verdicts"]] == ["T4", "12GiB"]
    assert answer["verdicts"][1]["memory_bytes"] == 12 * 2**30
    assert answer["verdicts"][0]["fits"] == (expected.total <= plan.GPUS["T4"])
    largest = answer["verdicts"][0]["largest_micro_batch"]
    assert plan.estimate("gpt2", batch=largest, seq=1024, precision="bf16", checkpointing=True).fits("T4")
    assert not plan.estimate("gpt2", batch=largest + 1, seq=1024, precision="bf16", checkpointing=True).fits(
        "T4"
    )


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["plan", "bert-bas"], "There is no model 'bert-bas' here"),
        (["plan", "gpt2", "--batch", "-1"], "batch must be a whole number of at least 1, got -1."),
        (
            ["plan", "gpt2", "--batch", "6", "--accumulation", "4"],
            "choose an accumulation that divides the batch",
        ),
        (["plan", "gpt2", "--gpu", "X1"], "'X1' is neither a GPU"),
    ],
)
def test_plan_answers_bad_input_with_one_sentence(arguments, says, capsys):
    assert cli.main(arguments) == 2
    captured = capsys.readouterr()
    assert says in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and captured.out == ""


def test_plan_reads_a_local_config_folder(tmp_path, capsys):
    from effitrain_lessons.will_it_fit import plan

    _, config = plan._read_config("gpt2")
    (tmp_path / "config.json").write_text(json.dumps({**config, "n_layer": 2}))
    assert cli.main(["plan", str(tmp_path), "--gpu", "T4", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["estimate"]["model"]["layers"] == 2
    assert answer["estimate"]["model"]["parameters"] < plan.model_shape("gpt2").parameters


def test_plan_answers_for_every_bundled_model_offline_with_a_verdict_for_every_gpu(monkeypatch, capsys):
    from effitrain_lessons.will_it_fit import plan

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(
        socket.socket, "connect", lambda *args: (_ for _ in ()).throw(OSError("no network here"))
    )
    for name in plan.bundled_models():
        assert cli.main(["plan", name, "--batch", "8", "--seq", "512", "--json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["estimate"]["model"]["parameters"] == plan.model_shape(name).parameters > 10**8
        assert [v["gpu"] for v in answer["verdicts"]] == list(plan.GPUS)
        assert all(
            v["fits"] == (answer["estimate"]["total_bytes"] <= v["memory_bytes"]) for v in answer["verdicts"]
        )


def test_the_command_line_is_built_without_importing_torch():
    # `effitrain lab` and `info` start at once: listing the planner's models and GPUs in the help
    # costs no torch import
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from effitrain_lessons import cli; cli.parser(); print('torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
