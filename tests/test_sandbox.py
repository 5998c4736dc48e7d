"""The grading sandbox on its own: what a process inside it can see and do, and its limits.

Each test starts a real sandbox (bubblewrap) with a short Python program and reads what it
reports. `make test` installs bubblewrap and sets EFFITRAIN_REQUIRE_SANDBOX, so there a missing
sandbox fails these tests instead of skipping them.
"""

import os
import sys
import textwrap
from pathlib import Path

import pytest

from effitrain_lessons.course import sandbox
from effitrain_lessons.course.lessons import ROOT

PROBLEM = sandbox.sandbox_problem()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        PROBLEM is not None and not os.environ.get("EFFITRAIN_REQUIRE_SANDBOX"),
        reason=f"no sandbox here: {PROBLEM}",
    ),
]


def inside(
    program: str, limits: sandbox.Limits | None = None, **options
) -> tuple[list[dict], sandbox.Outcome]:
    """Run `program` in a sandbox; it reports with `report(dict)`. Returns the reports and how it ended."""
    prelude = (
        "import json, os\n"
        "def report(message):\n"
        "    os.write(int(os.environ['EFFITRAIN_REPORT_FD']), (json.dumps(message) + '\\n').encode())\n"
    )
    box = sandbox.Sandbox(
        [sys.executable, "-I", "-c", prelude + textwrap.dedent(program)],
        limits or sandbox.Limits(timeout_s=60),
        **options,
    )
    box.start()
    messages = []
    while (message := box.receive()) is not None:
        messages.append(message)
    return messages, box.stop()


def test_it_sees_the_python_environment_and_nothing_else_of_the_machine(tmp_path, monkeypatch):
    marker = tmp_path / "instructor-secret.txt"
    marker.write_text("secret")
    monkeypatch.setenv("EFFITRAIN_CANARY", "canary-value")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # the grader's own sys.path may hold its working folder
    [seen], outcome = inside(f"""
        import getpass, os, sys
        import effitrain_lessons, torch  # the environment is there
        report({{"uid": os.getuid(), "user": getpass.getuser(), "pid": os.getpid(), "cwd": os.getcwd(),
                 "home": os.listdir(os.path.expanduser("~")), "env": sorted(os.environ),
                 "marker": os.path.exists({str(marker)!r}), "course": sorted(os.listdir({str(ROOT)!r})),
                 "solutions": os.path.exists({str(ROOT / "notebooks" / "solutions")!r}),
                 "autograder": os.path.exists({str(ROOT / "autograder")!r}), "path": sys.path}})
    """)
    assert outcome.returncode == 0, outcome.stderr_head
    assert seen["uid"] == sandbox.SANDBOX_UID and seen["user"] == "learner"
    assert seen["pid"] < 10  # a PID namespace of its own
    assert seen["cwd"] == "/tmp" and not seen["marker"]
    assert "EFFITRAIN_CANARY" not in seen["env"] and set(seen["env"]) <= set(
        sandbox.sandbox_env(sandbox.Limits())
    ) | {"EFFITRAIN_REPORT_FD", "PWD"}
    assert not seen["solutions"] and not seen["autograder"]
    assert set(seen["course"]) <= {"effitrain_lessons", ".venv"}  # only what the lessons need at run time
    assert "/tmp" not in seen["path"] and "" not in seen["path"] and str(tmp_path) not in seen["path"]


def test_it_cannot_write_outside_its_scratch_nor_reach_the_network():
    [seen], outcome = inside(f"""
        import errno, socket
        def attempt(action):
            try:
                action()
                return "done"
            except OSError as error:
                return errno.errorcode.get(error.errno, str(error.errno))
        package = {str(Path(sandbox.__file__).parent)!r}
        report({{
            "package": attempt(lambda: open(package + "/evil.py", "w")),
            "usr": attempt(lambda: open("/usr/evil", "w")),
            "scratch": attempt(lambda: open("/tmp/fine.txt", "w").write("ok")),
            "network": attempt(lambda: socket.create_connection(("1.1.1.1", 53), timeout=5)),
            "loopback": attempt(lambda: socket.socket().bind(("127.0.0.1", 0))),
        }})
    """)
    assert outcome.returncode == 0, outcome.stderr_head
    assert seen["package"] in ("EROFS", "EACCES") and seen["usr"] in ("EROFS", "EACCES")
    assert seen["scratch"] == "done" and seen["loopback"] == "done"
    assert seen["network"] in ("ENETUNREACH", "EHOSTUNREACH", "ECONNREFUSED", "EAI_AGAIN")


@pytest.mark.parametrize("cgroup", [True, False])
def test_memory_is_capped_on_what_is_used_not_on_address_space(cgroup):
    limits = sandbox.Limits(memory_mb=512, timeout_s=60, cgroup=cgroup)
    # 4 GiB of address space reserved and never touched is fine ...
    [seen], outcome = inside(
        """
        import mmap
        reserved = mmap.mmap(-1, 4 * 2**30)
        report({"reserved": len(reserved)})
    """,
        limits,
    )
    assert seen["reserved"] == 4 * 2**30 and not outcome.memory and outcome.returncode == 0
    # ... 1 GiB really used is not.
    _, outcome = inside(
        """
        hog = bytearray(2**30)
        report({"survived": True})
        import time; time.sleep(5)
    """,
        limits,
    )
    assert outcome.memory
    assert (
        outcome.memory_method == "PSS"
        if not cgroup
        else outcome.memory_method in ("cgroup v1", "cgroup v2", "PSS")
    )


def test_output_past_the_cap_stops_it():
    _, outcome = inside(
        """
        import sys
        while True:
            sys.stderr.write("x" * 65536)
    """,
        sandbox.Limits(output_bytes=1_000_000, timeout_s=60),
    )
    assert outcome.output and len(outcome.stderr_head) <= sandbox.HEAD_BYTES


def test_the_deadline_stops_it_and_every_process_it_started():
    _, outcome = inside(
        """
        import subprocess
        subprocess.Popen(["sleep", "600"], start_new_session=True)
        while True:
            pass
    """,
        sandbox.Limits(timeout_s=3),
    )
    assert outcome.timed_out
    import psutil

    assert not [
        p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[:2] == ["sleep", "600"]
    ]


def test_never_shows_the_working_folder_or_the_checkout(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend("/tmp")
    monkeypatch.syspath_prepend(str(ROOT))
    shown = sandbox.visible_paths()
    assert all(path not in shown for path in (Path("/tmp"), tmp_path, ROOT, Path("/"), Path.home()))
    assert Path(sandbox.__file__).resolve().parents[1] in shown or any(
        Path(sandbox.__file__).resolve().is_relative_to(p) for p in shown
    )
