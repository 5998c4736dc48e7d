"""The grading worker: runs one submission's grading plan inside the sandbox.

Started by the grader as `python -I -m effitrain_lessons.course.worker` (isolated: neither the
scratch folder nor any environment variable is put on `sys.path`). It reads JSON lines on standard
input and writes JSON lines to the report pipe (`EFFITRAIN_REPORT_FD`):

    grader -> worker   {"cells": [{"id", "kind": "lesson"|"answer"|"check", "question", "source"}]}
    worker -> grader   {"event": "cell", "id", "ok", "error"}           after each lesson or answer cell
                       {"event": "flag", "cell", "what"}                 something an answer reached for
                       {"event": "tests", "question"}                    at a check cell: send its public cases
                       {"event": "cells-done"}                           every cell ran: send the hidden cases
    grader -> worker   {"case": NONCE, "code": SOURCE} ... {"continue": true} | {"finish": true}
    worker -> grader   {"event": "case", "nonce": NONCE, "passed", "message"}

The grader sends one case at a time, each with a fresh nonce, and hidden cases only after every
answer cell and public case has run, so nothing a submission prints can contain hidden test code.
The worker trusts nothing in the notebook's namespace: it holds its own references to what it uses
(taken before any learner code runs), snapshots the modules the tests rely on before each answer
cell and each test case and puts back whatever changed (reporting it as a flag, and failing a test
case during which it changed), runs each case in a copy of the namespace with the real built-ins,
and reports what an audit hook sees answer code reach for (see README, "threat model").
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import types

# Held before any learner code runs: the worker never looks these up again.
_write, _read, _exit = os.write, os.read, os._exit
_exec, _compile = builtins.exec, builtins.compile
_dumps, _loads = json.dumps, json.loads
_type, _isinstance, _str, _len, _list, _dict, _set = type, isinstance, str, len, list, dict, set
_BaseException, _AssertionError = BaseException, AssertionError
_getattr, _setattr, _delattr, _repr, _any, _sorted, _callable = getattr, setattr, delattr, repr, any, sorted, callable
_isabs = os.path.isabs
_ModuleType, _FunctionType, _MethodType = types.ModuleType, types.FunctionType, types.MethodType
_PartialType = __import__("functools").partial
_BUILTINS_DICT = dict(vars(builtins))
BUILTIN_NAMES = frozenset(name for name in _BUILTINS_DICT if not name.startswith("_"))
MESSAGE_CHARS = 500

# Modules whose attributes tests rely on: snapshotted around every answer cell and test case.
WATCHED_EXACT = ("builtins", "sys", "os", "os.path", "functools", "inspect", "math", "operator", "torch",
                 "torch.nn.modules.module", "torch.nn.functional", "numpy")
WATCHED_PREFIXES = ("effitrain_lessons", "otter", "torch.testing", "torch.utils.checkpoint", "torch.autograd",
                    "torch.distributed", "torch.utils.flop_counter", "accelerate", "json", "doctest", "unittest",
                    "IPython.core")
# Attributes that legitimately change as cells run (set by IPython, or by Python on errors).
VOLATILE = frozenset({"last_type", "last_value", "last_traceback", "last_exc", "_", "__", "___", "ps1", "ps2"})
CLASS_OWNERS = ("effitrain_lessons", "otter", "torch.testing", "torch.utils.checkpoint", "torch.autograd")

# Audit events that answer code has no business raising (a flag each; see `_audit`).
REACH = {
    "sys.settrace": "sets a trace function", "sys.setprofile": "sets a profile function",
    "sys.addaudithook": "adds an audit hook", "sys._current_frames": "reads other threads' frames",
    "gc.get_objects": "walks the garbage collector's objects", "gc.get_referrers": "walks object referrers",
    "gc.get_referents": "walks object referents", "ctypes.dlopen": "loads a C library",
    "ctypes.dlsym": "looks up a C symbol", "ctypes.cdata": "reads raw memory", "ctypes.addressof": "reads raw memory",
    "subprocess.Popen": "starts a program", "os.system": "runs a shell command", "os.exec": "replaces the process",
    "os.posix_spawn": "starts a program", "os.spawn": "starts a program", "os.fork": "forks the process",
    "os.forkpty": "forks the process", "os.kill": "sends a signal", "os.killpg": "sends a signal",
    "pty.spawn": "starts a terminal", "socket.connect": "opens a network connection", "socket.bind": "listens on a socket",
    "code.__new__": "builds code objects", "marshal.loads": "loads marshalled code", "marshal.load": "loads marshalled code",
    "sys.monitoring.register_callback": "registers a monitoring callback", "os.chdir": "changes the working folder",
    "os.remove": "deletes files", "os.rename": "moves files", "os.rmdir": "deletes folders", "shutil.rmtree": "deletes folders",
}
# During test cases, the tests themselves start processes and open sockets (lesson 4): only these count.
REACH_DURING_TESTS = frozenset({"sys.settrace", "sys.setprofile", "sys.addaudithook", "sys._current_frames",
                                "gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes.dlopen",
                                "ctypes.cdata", "ctypes.addressof", "code.__new__", "marshal.loads", "marshal.load"})
PROC_PRIVATE = ("/mem", "/environ", "/fd", "/maps", "/cmdline", "/root", "/cwd", "/exe", "/task", "/stack", "/syscall")


class Worker:
    def __init__(self, report_fd: int):
        self.report_fd = report_fd
        self.inbox = b""
        self.watching: str | None = None  # the answer cell (or "test ...") whose code is running
        self.flagged: set[tuple[str, str]] = set()
        self.in_hook = False
        self.shell_builtins: dict = {}  # the built-in names IPython itself rebinds (exit, quit, open)
        self.library = tuple(os.path.realpath(p) + os.sep for p in sys.path if p and os.path.isdir(p))

    # --- talking to the grader ---------------------------------------------------------------

    def send(self, message: dict) -> None:
        data = (_dumps(message, ensure_ascii=True) + "\n").encode("ascii")
        while data:
            written = _write(self.report_fd, data)
            data = data[written:]

    def command(self) -> dict:
        while b"\n" not in self.inbox:
            chunk = _read(0, 1 << 16)
            if not chunk:
                _exit(3)  # the grader went away
            self.inbox += chunk
        line, _, self.inbox = self.inbox.partition(b"\n")
        return _loads(line.decode("utf-8"))

    def flag(self, cell: str, what: str) -> None:
        if (cell, what) not in self.flagged:
            self.flagged.add((cell, what))
            self.send({"event": "flag", "cell": cell, "what": what})

    # --- what answer code reaches for -----------------------------------------------------------

    def audit(self, event: str, args: tuple) -> None:
        if self.watching is None or self.in_hook:
            return
        self.in_hook = True
        try:
            what = self._reach(event, args)
            if what:
                self.flag(self.watching, what)
        except _BaseException:
            pass
        finally:
            self.in_hook = False

    def _reach(self, event: str, args: tuple) -> str | None:
        testing = self.watching.startswith("test ")
        if event in REACH and (not testing or event in REACH_DURING_TESTS) and not importing():
            return REACH[event]
        if event == "open" and args and not testing:
            path, mode = args[0], args[1] if _len(args) > 1 else "r"
            if _isinstance(path, bytes):
                path = path.decode("utf-8", "replace")
            if _isinstance(path, _str):
                writes = _isinstance(mode, _str) and _any(c in mode for c in "wax+")
                if path.startswith("/proc/") and _any(part in path for part in PROC_PRIVATE):
                    return f"reads {path[:80]}"
                if writes and _isabs(path) and not path.startswith("/tmp/"):
                    return f"writes {path[:80]}"
        return None

    # --- the modules the tests rely on ----------------------------------------------------------

    def snapshot(self) -> dict:
        modules = {}
        for name, module in _list(sys.modules.items()):
            if _type(module) is not _ModuleType and not _isinstance(module, _ModuleType):
                continue
            if name in WATCHED_EXACT or _any(name == p or name.startswith(p + ".") for p in WATCHED_PREFIXES):
                try:
                    modules[name] = (module, _dict(module.__dict__))
                except _BaseException:
                    continue
        classes = {}
        for name, (module, contents) in modules.items():
            for value in contents.values():
                if _type(value) is _type and (_getattr(value, "__module__", "") or "").startswith(CLASS_OWNERS):
                    classes[value] = _dict(value.__dict__)
        torch = sys.modules.get("torch")  # never imported here: that would change what is being recorded
        for cls in (_getattr(torch, "Tensor", None), _getattr(_getattr(torch, "_C", None), "TensorBase", None)):
            if _type(cls) is _type or _isinstance(cls, _type):
                classes[cls] = _dict(cls.__dict__)
        return {"modules": modules, "classes": classes, "imported": frozenset(sys.modules)}

    def restore(self, snapshot: dict) -> list[str]:
        """Put back every watched attribute that answer code changed since `snapshot`; say what changed.

        Libraries change their own state as they run and import (private flags, caches, a function
        wrapped by a decorator), so these are left alone: a private value that is not a function or
        class, and a library's wrapper around the same function. Everything else that changed is put
        back: a public attribute replaced, removed, or added with something learner code made.
        """
        changed = []
        for name, (module, contents) in snapshot["modules"].items():
            if sys.modules.get(name) is not module:
                changed.append(f"replaces the module {name}")
                sys.modules[name] = module
            current = module.__dict__
            label = "the built-in " if name == "builtins" else name + "."
            for key, value in _list(contents.items()):
                if key in VOLATILE or (name == "sys" and key == "modules"):
                    continue
                present = key in current
                new = current.get(key)
                if present and new is value or present and self.harmless(key, value, new, snapshot):
                    continue
                changed.append(f"{'changes' if present else 'removes'} {label}{key}")
                current[key] = value
            for key in [k for k in _list(current) if k not in contents]:
                if _isinstance(current[key], _ModuleType) or not self.learner_made(current[key]):
                    continue
                changed.append(f"adds {label}{key}")
                del current[key]
        for cls, contents in snapshot["classes"].items():
            current = cls.__dict__
            label = f"{_getattr(cls, '__module__', '?')}.{_getattr(cls, '__qualname__', '?')}."
            for key, value in contents.items():
                present = key in current
                new = current.get(key)
                if present and new is value or present and self.harmless(key, value, new, snapshot):
                    continue
                changed.append(f"{'changes' if present else 'removes'} {label}{key}")
                try:
                    _setattr(cls, key, value)
                except _BaseException:
                    pass
            for key in [k for k in _list(current) if k not in contents]:
                if self.learner_made(current[key]):
                    changed.append(f"adds {label}{key}")
                    try:
                        _delattr(cls, key)
                    except _BaseException:
                        pass
        builtins.__dict__.update(_BUILTINS_DICT)
        return changed

    def harmless(self, key: str, old, new, snapshot: dict) -> bool:
        """Whether a changed attribute is a library going about its business (see `restore`).

        That is: private state that is not a function or class, a library's wrapper around the same
        function, or a library function from a module first imported since the snapshot (a library
        that patches another on import, as torch.package does with inspect.getfile).
        """
        if key.startswith("_") and not _callable(old):
            return True
        if _type(new) is not _FunctionType or self.learner_made(new):
            return False
        return _getattr(new, "__wrapped__", None) is old or new.__module__ not in snapshot["imported"]

    def learner_made(self, value) -> bool:
        """Whether `value` is a function or class written in a cell or a test, not in a library."""
        kind = _type(value)
        if kind in (_MethodType, staticmethod, classmethod):
            value = value.__func__
            kind = _type(value)
        if kind is _FunctionType:
            return not value.__code__.co_filename.startswith(self.library)
        if kind is _PartialType:
            return self.learner_made(value.func)
        cls = value if _isinstance(value, _type) else kind
        if _type(cls) is not _type:
            return True  # an unusual metaclass: treat as the learner's
        return cls.__dict__.get("__module__") == "__main__"

    # --- running cells and cases ----------------------------------------------------------------

    def run_cell(self, shell, cell: dict) -> None:
        answer = cell["kind"] == "answer"
        before = self.snapshot() if answer else None
        self.watching = cell["id"] if answer else None
        try:
            result = shell.run_cell(cell["source"], store_history=False, silent=False)
        finally:
            self.watching = None
        error = result.error_before_exec or result.error_in_exec
        if answer:
            for what in self.restore(before):
                self.flag(cell["id"], what)
            namespace = shell.user_ns
            for name in _sorted(BUILTIN_NAMES & _set(namespace)):
                if namespace[name] is not self.shell_builtins.get(name, _BUILTINS_DICT[name]):
                    self.flag(cell["id"], f"redefines the built-in {name}")
            if namespace.get("__builtins__") is not builtins:
                self.flag(cell["id"], "replaces __builtins__")
                namespace["__builtins__"] = builtins
        self.send({"event": "cell", "id": cell["id"], "ok": error is None, "error": describe(error)})

    def run_case(self, namespace: dict, code: str, label: str) -> tuple[bool, str]:
        env = {k: v for k, v in _list(namespace.items()) if k not in BUILTIN_NAMES}
        env["__builtins__"] = builtins
        before = self.snapshot()
        self.watching = label
        passed, message = True, ""
        try:
            _exec(_compile(code, "<test>", "exec"), env)
        except _BaseException as error:  # noqa: BLE001 - any exception fails the case
            passed, message = False, describe(error)
        finally:
            self.watching = None
        changed = self.restore(before)
        if changed:
            passed, message = False, "the code under test changed what the tests rely on: " + "; ".join(changed[:3])
            for what in changed:
                self.flag(label[len("test "):], what + " during a test")
        return passed, message

    def serve_cases(self, namespace: dict) -> None:
        while True:
            command = self.command()
            if "case" in command:
                passed, message = self.run_case(namespace, command.get("code", ""), "test " + _str(command.get("question")))
                self.send({"event": "case", "nonce": command["case"], "passed": passed, "message": message})
            else:
                return


def importing() -> bool:
    """Whether the code running now is an import (whose side effects are the library's own)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def describe(error) -> str:
    """One line about an exception, using nothing the exception's own code controls."""
    if error is None:
        return ""
    kind = _type(error)
    name = _getattr(kind, "__name__", "an exception")
    if _type(name) is not _str:
        name = "an exception"
    if _getattr(kind, "__module__", "") != "builtins":
        return name  # a class from the answer or a library: its message could say anything
    parts = []
    args = _getattr(error, "args", ())
    for arg in args if _type(args) is tuple else ():
        if _type(arg) in (_str, int, float, bool):
            parts.append(arg if _type(arg) is _str else _repr(arg))
    text = ", ".join(parts)
    return f"{name}: {text}"[:MESSAGE_CHARS] if text else name


def main() -> None:
    worker = Worker(int(os.environ["EFFITRAIN_REPORT_FD"]))
    sys.addaudithook(worker.audit)
    job = worker.command()
    sys.stdin = open(os.devnull)  # answers that ask for input get an empty line, not the grader's pipe
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    shell = InteractiveShell.instance(config=config)
    shell.user_ns["__builtins__"] = builtins
    for warm_up in ("pass", "1 / 0"):  # IPython sets itself up on its first cells, not on the answers'
        shell.run_cell(warm_up, store_history=False, silent=True)
    worker.shell_builtins = {name: shell.user_ns[name] for name in BUILTIN_NAMES & set(shell.user_ns)}
    for cell in job["cells"]:
        if cell["kind"] == "check":
            worker.send({"event": "tests", "question": cell["question"]})
            worker.serve_cases(shell.user_ns)
        else:
            worker.run_cell(shell, cell)
    worker.send({"event": "cells-done"})
    worker.serve_cases(shell.user_ns)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    worker.send({"event": "finished"})
    _exit(0)  # no atexit handlers: an answer may have registered some


if __name__ == "__main__":
    main()
