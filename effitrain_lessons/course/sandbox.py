"""One process in a sandbox: bubblewrap, a memory cap on what it really uses, capped output, a deadline.

`Sandbox(command, limits)` starts `command` under `bwrap` (Debian package `bubblewrap`):

- an unprivileged user (uid 65534 in a user namespace, every capability dropped, no new user
  namespaces inside), its own PID namespace (when its first process ends, every process it started
  ends with it), no network (a network namespace with only loopback), its own IPC and UTS namespaces;
- a read-only view of the system (`/usr` and the few `/etc` files programs need) and of the Python
  environment (the interpreter, site-packages, the `effitrain_lessons` package), and nothing else
  of the machine: no home folders, no course checkout, so neither hidden tests nor solution editions;
- a private, size-capped scratch directory (`/tmp`, a tmpfs) as working directory and home;
- a minimal environment (nothing of the grader's).

Memory: a cgroup (v2, else v1) caps the resident memory of every process in the sandbox where this
machine lets the grader make one; otherwise the grader sums the proportional set size (PSS) of the
sandbox's processes every `POLL` seconds and stops it above the cap. Address space is never capped:
PyTorch and Arrow reserve gigabytes they never touch.

Output: standard output and error are drained by threads; past `output_bytes` the sandbox is
stopped. Files are capped by the scratch tmpfs's size. Messages arrive on a separate pipe (JSON
lines, at most `MESSAGE_BYTES` each). `stop()` kills every process and removes the cgroup; it is
also called for every live sandbox by `stop_all()` (the grader's SIGTERM/SIGINT handler).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

POLL = 0.25  # seconds between memory readings and deadline checks
MESSAGE_BYTES = 1 << 20  # one message from the sandbox, at most
HEAD_BYTES = 16 << 10  # what is kept of each output stream, for the instructor's results
SANDBOX_UID = 65534
LIVE: set[Sandbox] = set()  # every sandbox started and not yet stopped
_LIVE_LOCK = threading.Lock()
STOPPING = threading.Event()  # set by stop_all: a sandbox that starts after it is stopped at once


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made on this machine (the message says what to install)."""


@dataclass
class Limits:
    memory_mb: int = 3072
    timeout_s: float = 300.0
    output_bytes: int = 2_000_000  # standard output and error together
    scratch_mb: int = 256  # the scratch tmpfs (files the submission writes)
    threads: int = 0  # OpenMP/MKL threads per process (0: the cores shared among the workers)
    pids: int = 512
    cgroup: bool = True  # cap memory with a cgroup where one can be made (else: PSS measured by the grader)


@dataclass
class Outcome:
    """How a sandbox ended."""

    returncode: int | None = None
    timed_out: bool = False
    memory: bool = False  # stopped (or killed by the kernel) for exceeding the memory cap
    output: bool = False  # stopped for printing more than the cap
    protocol: str = ""  # a message that broke the rules (too long, not JSON)
    peak_bytes: int = 0
    stdout_head: bytes = b""
    stderr_head: bytes = b""
    memory_method: str = ""


# ---------------------------------------------------------------------------------------------
# bubblewrap


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


_PROBE: dict[str, str | None] = {}


def sandbox_problem() -> str | None:
    """None when bubblewrap works here, else one sentence saying what to do."""
    if "result" not in _PROBE:
        _PROBE["result"] = _probe()
    return _PROBE["result"]


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return (
            f"Grading needs a sandbox, and bubblewrap runs only on Linux (this is {sys.platform}): grade on "
            "Linux, or pass --unsafe-no-sandbox to run submissions unconfined."
        )
    if bwrap_path() is None:
        return (
            "Grading needs bubblewrap for its sandbox: install it (`sudo apt-get install bubblewrap` on "
            "Debian or Ubuntu, or `make sandbox` in the course checkout) or pass --unsafe-no-sandbox to run "
            "submissions unconfined."
        )
    try:
        done = subprocess.run(
            bwrap_command([sys.executable, "-I", "-c", "import effitrain_lessons"], Limits(), {}),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return (
            "bubblewrap is installed but could not start a sandbox "
            f"({error}); pass --unsafe-no-sandbox to grade unconfined."
        )
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return (
            f"bubblewrap is installed but could not start a sandbox ({reason[0][:200]}): this machine may "
            "forbid unprivileged user namespaces; pass --unsafe-no-sandbox to grade unconfined."
        )
    return None


NEVER_SHOWN = (
    "/",
    "/tmp",
    "/var",
    "/var/tmp",
    "/home",
    "/root",
    "/srv",
    "/opt",
    "/mnt",
    "/media",
    "/run",
    "/usr",
    "/etc",
)


def visible_paths() -> list[Path]:
    """The Python environment the sandbox sees, read-only: the interpreter, its libraries, the package.

    Only the installation's own folders (prefixes, standard library, site-packages) and the package
    folder: never a `sys.path` entry such as the working folder, and never the course checkout (when
    the package is an editable install inside it, only the package folder and a virtual environment
    inside it are shown, not the checkout's other files).
    """
    import site
    import sysconfig

    import effitrain_lessons

    package = Path(effitrain_lessons.__file__).resolve().parent
    course = (
        package.parent
        if (package.parent / "autograder").is_dir() or (package.parent / "lessons").is_dir()
        else None
    )
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
        *site.getsitepackages(),
    ]
    candidates += [
        path
        for key, path in sysconfig.get_paths().items()
        if key in ("stdlib", "platstdlib", "purelib", "platlib")
    ]
    candidates.append(str(package))
    never = {Path(p) for p in NEVER_SHOWN} | {Path.home().resolve()}
    chosen: set[Path] = set()
    for candidate in candidates:
        if not candidate or not os.path.isdir(candidate):
            continue
        path = Path(os.path.realpath(candidate))
        if path in never or course is not None and (path == course or course.is_relative_to(path)):
            continue  # a folder that holds more than Python (the checkout, a home, /tmp)
        chosen.add(path)
    outer: list[Path] = []
    for path in sorted(chosen, key=lambda p: len(p.parts)):  # the outermost folders only
        if not any(path.is_relative_to(parent) for parent in outer):
            outer.append(path)
    # A venv's python is a link to the base interpreter: keep the link's own folder too.
    executable = Path(sys.executable)
    if not any(executable.is_relative_to(p) for p in outer) and executable.parent.exists():
        outer.append(executable.parent)
    return outer


ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "alternatives")
PASSWD = f"learner:x:{SANDBOX_UID}:{SANDBOX_UID}:learner:/tmp:/usr/sbin/nologin\n"
GROUP = f"learner:x:{SANDBOX_UID}:\n"
HOSTS = "127.0.0.1 localhost sandbox\n::1 localhost\n"


def bwrap_command(
    command: list[str], limits: Limits, env: dict[str, str], data_fds: dict[str, int] | None = None
) -> list[str]:
    """The bwrap command line that runs `command` in the sandbox (see the module's docstring)."""
    args = [
        bwrap_path() or "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    # The scratch first: a checkout (and so the package) may itself live under /tmp, and binds made
    # after this land on top of the tmpfs, where a bind made before it would be hidden.
    size = str(limits.scratch_mb << 20)
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
        "--size",
        str(min(64, limits.scratch_mb) << 20),
        "--tmpfs",
        "/dev/shm",
    ]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for name, fd in (data_fds or {}).items():
        args += ["--ro-bind-data", str(fd), f"/etc/{name}"]
    for path in visible_paths():
        args += ["--ro-bind", str(path), str(path)]
    args += ["--chdir", "/tmp"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--", *command]


def sandbox_env(limits: Limits, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment inside a sandbox: nothing is inherited from the grader."""
    threads = str(max(1, limits.threads))
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "USER": "learner",
        "LOGNAME": "learner",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": "/tmp/.cache/huggingface",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "utf-8:backslashreplace",
    }
    env.update(extra or {})
    return env


# ---------------------------------------------------------------------------------------------
# Memory caps


class Cgroup:
    """A cgroup (v2, else v1 memory + pids) that caps one sandbox's memory and process count."""

    def __init__(self, folders: dict[str, Path], version: int):
        self.folders = folders  # controller ("memory", "pids" or "unified") -> folder
        self.version = version

    @classmethod
    def create(cls, name: str, memory_bytes: int, pids: int) -> Cgroup | None:
        """A new cgroup under the grader's own, or None where this machine does not let us make one."""
        for make in (cls._create_v2, cls._create_v1):
            try:
                group = make(name, memory_bytes, pids)
            except OSError:
                group = None
            if group is not None:
                return group
        return None

    @classmethod
    def _create_v2(cls, name, memory_bytes, pids):
        mount = _cgroup_mount("cgroup2", None)
        own = _own_cgroup("")
        if mount is None or own is None:
            return None
        parent = mount / own.lstrip("/")
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            return None
        folder = parent / name
        folder.mkdir()
        group = cls({"unified": folder}, 2)
        try:
            (folder / "memory.max").write_text(str(memory_bytes))
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")
            if (folder / "pids.max").exists():
                (folder / "pids.max").write_text(str(pids))
        except OSError:
            group.remove()
            return None
        return group

    @classmethod
    def _create_v1(cls, name, memory_bytes, pids):
        folders = {}
        for controller in ("memory", "pids"):
            mount, own = _cgroup_mount("cgroup", controller), _own_cgroup(controller)
            if mount is None or own is None:
                continue
            folder = mount / own.lstrip("/") / name
            folder.mkdir()
            folders[controller] = folder
        if "memory" not in folders:
            cls(folders, 1).remove()
            return None
        group = cls(folders, 1)
        try:
            (folders["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            swap = folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(memory_bytes))
            if "pids" in folders:
                (folders["pids"] / "pids.max").write_text(str(pids))
        except OSError:
            group.remove()
            return None
        return group

    @staticmethod
    def sweep() -> int:
        """Remove the empty cgroups of graders that are gone (killed before they could clean up)."""
        removed = 0
        for controller in ("memory", "pids", ""):
            mount = _cgroup_mount("cgroup2" if controller == "" else "cgroup", controller or None)
            own = _own_cgroup(controller)
            if mount is None or own is None:
                continue
            for folder in (mount / own.lstrip("/")).glob("effitrain-*-*"):
                pid = folder.name.split("-")[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    try:
                        folder.rmdir()
                        removed += 1
                    except OSError:
                        pass
        return removed

    @property
    def procs_files(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.folders.values()]

    def _memory_folder(self) -> Path:
        return self.folders.get("unified") or self.folders["memory"]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of this cgroup for going over its memory limit."""
        folder = self._memory_folder()
        counters = folder / ("memory.events" if self.version == 2 else "memory.oom_control")
        try:
            values = dict(line.split()[:2] for line in counters.read_text().splitlines() if line.strip())
            return int(values.get("oom_kill", 0)) > 0
        except (OSError, ValueError):
            return False

    def peak_bytes(self) -> int:
        folder = self._memory_folder()
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                return int((folder / name).read_text())
            except (OSError, ValueError):
                continue
        return 0

    def pids(self) -> list[int]:
        found = set()
        for folder in self.folders.values():
            try:
                found |= {int(x) for x in (folder / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return sorted(found)

    def kill_all(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        for folder in self.folders.values():
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _own_cgroup(controller: str) -> str | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller == "" and controllers == "" or controller and controller in controllers.split(","):
                return path
    except OSError:
        return None
    return None


def _cgroup_mount(fstype: str, controller: str | None) -> Path | None:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) < 3 or fields[0] != fstype:
            continue
        if controller is None or controller in fields[2].split(","):
            return Path(left.split()[4])
    return None


def pss_bytes(pids: list[int]) -> int:
    """The summed proportional set size of `pids` (shared pages split among their users)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue
    return total


def descendants(pid: int) -> list[int]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root.pid] + [child.pid for child in root.children(recursive=True)]
    except psutil.Error:
        return []


# ---------------------------------------------------------------------------------------------
# The sandboxed process


@dataclass
class Sandbox:
    """`command` running in a sandbox (or, with `confined=False`, as a plain child process)."""

    command: list[str]
    limits: Limits
    env: dict[str, str] = field(default_factory=dict)
    confined: bool = True
    outcome: Outcome = field(default_factory=Outcome)

    def __hash__(self) -> int:
        return id(self)

    def start(self) -> None:
        self._buffer = b""
        self._pending = b""
        self._output_total = 0
        self._heads = {1: bytearray(), 2: bytearray()}
        self._lock = threading.Lock()
        self._stopped = False
        self.cgroup = None
        if self.limits.cgroup:
            self.cgroup = Cgroup.create(
                f"effitrain-{os.getpid()}-{id(self):x}", self.limits.memory_mb << 20, self.limits.pids
            )
        self.outcome.memory_method = f"cgroup v{self.cgroup.version}" if self.cgroup else "PSS"
        report_read, report_write = os.pipe()
        env = sandbox_env(self.limits, {**self.env, "EFFITRAIN_REPORT_FD": str(report_write)})
        keep = [report_write]
        data_pipes = []
        if self.confined:
            data_fds = {}
            for name, text in (
                ("passwd", PASSWD),
                ("group", GROUP),
                ("hosts", HOSTS),
                ("hostname", "sandbox\n"),
            ):
                read, write = os.pipe()
                os.write(write, text.encode())
                os.close(write)
                data_fds[name] = read
                data_pipes.append(read)
            argv = bwrap_command(self.command, self.limits, env, data_fds)
            keep += data_pipes
            child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            cwd = "/"
        else:
            argv = list(self.command)
            self._scratch = tempfile.mkdtemp(prefix="effitrain-scratch-")
            child_env = {
                **env,
                "HOME": self._scratch,
                "TMPDIR": self._scratch,
                "MPLCONFIGDIR": self._scratch,
                "HF_HOME": self._scratch + "/hf",
            }
            cwd = self._scratch
        if self.cgroup is not None:
            join = " && ".join(f'echo $$ > "{path}"' for path in self.cgroup.procs_files)
            argv = ["/bin/sh", "-c", f'{join} && exec "$@"', "sh", *argv]
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=keep,
                env=child_env,
                cwd=cwd,
                start_new_session=True,
            )
        finally:
            os.close(report_write)
            for fd in data_pipes:
                os.close(fd)
        self._report = report_read
        os.set_blocking(self.process.stdin.fileno(), False)
        with _LIVE_LOCK:
            LIVE.add(self)
            stopping = STOPPING.is_set()  # stop_all ran while this one was starting: it missed it
        if stopping:
            self.kill()
        self._drains = [
            threading.Thread(target=self._drain, args=(stream, n), daemon=True)
            for n, stream in ((1, self.process.stdout), (2, self.process.stderr))
        ]
        for thread in self._drains:
            thread.start()
        self.deadline = time.monotonic() + self.limits.timeout_s

    def _drain(self, stream, number: int) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                head = self._heads[number]
                if len(head) < HEAD_BYTES:
                    head += chunk[: HEAD_BYTES - len(head)]
                self._output_total += len(chunk)
                over = self._output_total > self.limits.output_bytes
            if over and not self.outcome.output:
                self.outcome.output = True
                self.kill()

    def send(self, message: dict) -> None:
        """Queue one JSON line for the sandbox's standard input (written as it reads)."""
        self._pending += (json.dumps(message) + "\n").encode()
        self._flush()

    def _flush(self) -> None:
        if self._pending and self.process.stdin and not self.process.stdin.closed:
            try:
                written = os.write(self.process.stdin.fileno(), self._pending)
                self._pending = self._pending[written:]
            except BlockingIOError:
                pass
            except OSError:
                self._pending = b""

    def receive(self) -> dict | None:
        """The next message from the sandbox; None once it has stopped (or broke a limit)."""
        while True:
            line, separator, rest = self._buffer.partition(b"\n")
            if separator:
                self._buffer = rest
                try:
                    message = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    message = None
                if isinstance(message, dict):
                    return message
                continue  # not a message of ours: ignored
            if len(self._buffer) > MESSAGE_BYTES:
                self.outcome.protocol = "sent a message over the size limit"
                self.kill()
                return None
            if self._stopped or self.outcome.output:
                return None
            if time.monotonic() > self.deadline:
                self.outcome.timed_out = True
                self.kill()
                return None
            self._flush()
            self._check_memory()
            wants_write = [self.process.stdin] if self._pending else []
            readable, _, _ = select.select([self._report], wants_write, [], POLL)
            if readable:
                try:
                    chunk = os.read(self._report, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    self._stopped = True
                    return None
                self._buffer += chunk

    def _check_memory(self) -> None:
        if self.cgroup is not None:
            return  # the kernel enforces the cap
        used = pss_bytes(descendants(self.process.pid))
        self.outcome.peak_bytes = max(self.outcome.peak_bytes, used)
        if used > self.limits.memory_mb << 20:
            self.outcome.memory = True
            self.kill()

    def kill(self) -> None:
        """Stop every process of the sandbox at once."""
        family = descendants(self.process.pid)
        for pid in reversed(family):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.cgroup is not None:
            self.cgroup.kill_all()

    def stop(self) -> Outcome:
        """Wait briefly for the process to end on its own, then kill what is left and clean up."""
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for thread in self._drains:
            thread.join(timeout=5)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.close(self._report)
        except OSError:
            pass
        if self.cgroup is not None:
            self.cgroup.kill_all()
            if self.cgroup.oom_killed():
                self.outcome.memory = True
            self.outcome.peak_bytes = self.cgroup.peak_bytes()
            self.cgroup.remove()
        if not self.confined:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self.outcome.returncode = self.process.returncode
        self.outcome.stdout_head = bytes(self._heads[1])
        self.outcome.stderr_head = bytes(self._heads[2])
        with _LIVE_LOCK:
            LIVE.discard(self)
        return self.outcome


def stop_all() -> None:
    """Stop every live sandbox, and any that starts from now on (the grader is being interrupted),
    until `allow_sandboxes()`."""
    with _LIVE_LOCK:
        STOPPING.set()
        live = list(LIVE)
    for sandbox in live:
        try:
            sandbox.kill()
            sandbox.stop()
        except Exception:  # noqa: BLE001 - stopping the rest matters more
            pass


def allow_sandboxes() -> None:
    """Let sandboxes run again (a new batch starts)."""
    STOPPING.clear()
