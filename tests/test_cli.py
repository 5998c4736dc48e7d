"""The `effitrain` command: info, lab (a real JupyterLab on a free port) and its errors."""

import json
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
    done = subprocess.run([sys.executable, "-m", "effitrain_lessons", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "lab" in done.stdout and "info" in done.stdout


def test_lessons_dir_is_the_checkouts_notebooks():
    assert cli.lessons_dir() == ROOT / "notebooks"


def test_lab_refuses_a_missing_folder(tmp_path, capsys):
    assert cli.main(["lab", "--dir", str(tmp_path / "nowhere")]) == 2
    assert "pass --dir" in capsys.readouterr().err


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
        env={**__import__("os").environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path)},
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
