"""The grading worker: runs one submission's grading plan inside the sandbox.

Started by the grader as `python -I -m effitrain_lessons.course.worker` (isolated: neither the
scratch folder nor any environment variable is put on `sys.path`). It reads JSON lines on standard
input and writes JSON lines to the report pipe (`EFFITRAIN_REPORT_FD`):

    grader -> worker   {"cells": [{"id", "kind": "lesson"|"answer"|"check", "question", "source"}],
                        "nonce": SESSION}
    worker -> grader   {"event": "cell", "id", "ok", "error"}  after each lesson or answer cell
                       {"event": "flag", "cell", "what"}       something an answer reached for
                       {"event": "tests", "question"}          at a check cell: send its public cases
                       {"event": "cells-done"}                 every cell ran: send the hidden cases
    grader -> worker   {"case": NONCE, "question", "code", "result": NAME} ... {"continue": true}
                       | {"finish": true}
    worker -> grader   {"event": "case", "nonce": NONCE, "data", "error", "changed"}

Every message the worker sends carries a nonce: the session's, or the case's for a case's data; the
grader drops any other. A case's `code` is the part of a graded case that must run beside the answer
(`effitrain_lessons.shared.judging`); the worker runs it and sends back the variable `result` names as
plain data, `encode`d. It never learns what the data is compared with, and never says whether a case
passed: the grader judges. The grader sends one case at a time, each with a fresh nonce, and hidden
cases only after every answer cell and public case has run, so nothing a submission prints can
contain hidden test code.

The worker trusts nothing learner code can reach. Its machinery is built by `_machinery()` before
any learner code runs: every function, built-in and piece of state it uses is a local of a closure
built then (one builder per job, each called by `_machinery()`, none called again), so replacing an
attribute of this module, of `builtins` or of a class changes nothing it calls. Around each answer
cell and each test case it snapshots the modules the tests rely on and puts back whatever learner
code changed (a flag each; a test case during which something changed fails), runs each case in a
copy of the namespace with the real built-ins, and reports what an audit hook sees answer code
reach for. What it cannot stop, in-process, is in the README's threat model.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import sys
import types

from effitrain_lessons.shared.judging import encode

# What IPython raises for a cell with too many `!` and `%` lines to turn into calls.
GIVE_UP = 'raise RuntimeError("Input transformation still changing after 500 iterations. Aborting.")\n'

# Modules whose attributes tests rely on: snapshotted around every answer cell and test case.
WATCHED_EXACT = (
    "builtins",
    "sys",
    "os",
    "os.path",
    "functools",
    "inspect",
    "math",
    "operator",
    "torch",
    "torch.nn.modules.module",
    "torch.nn.functional",
    "numpy",
)
WATCHED_PREFIXES = (
    "effitrain_lessons",
    "otter",
    "torch.testing",
    "torch.utils.checkpoint",
    "torch.autograd",
    "torch.distributed",
    "torch.utils.flop_counter",
    "torch.utils._python_dispatch",
    "torch.overrides",
    "accelerate",
    "json",
    "doctest",
    "unittest",
    "IPython.core",
)
CLASS_OWNERS = (
    "effitrain_lessons",
    "otter",
    "torch.testing",
    "torch.utils.checkpoint",
    "torch.autograd",
    "IPython.core",
)
# Attributes that legitimately change as cells run (set by IPython, or by Python on errors).
VOLATILE = frozenset(
    {"last_type", "last_value", "last_traceback", "last_exc", "_", "__", "___", "ps1", "ps2"}
)
MESSAGE_CHARS = 500

# Audit events that answer code has no business raising (a flag each, unless an import raised it).
REACH = {
    "sys.settrace": "sets a trace function",
    "sys.setprofile": "sets a profile function",
    "sys.addaudithook": "adds an audit hook",
    "sys._current_frames": "reads other threads' frames",
    "gc.get_objects": "walks the garbage collector's objects",
    "gc.get_referrers": "walks object referrers",
    "gc.get_referents": "walks object referents",
    "ctypes.dlopen": "loads a C library",
    "ctypes.dlsym": "looks up a C symbol",
    "ctypes.cdata": "reads raw memory",
    "ctypes.addressof": "reads raw memory",
    "subprocess.Popen": "starts a program",
    "os.system": "runs a shell command",
    "os.exec": "replaces the process",
    "os.posix_spawn": "starts a program",
    "os.spawn": "starts a program",
    "os.fork": "forks the process",
    "os.forkpty": "forks the process",
    "os.kill": "sends a signal",
    "os.killpg": "sends a signal",
    "pty.spawn": "starts a terminal",
    "socket.connect": "opens a network connection",
    "socket.bind": "listens on a socket",
    "code.__new__": "builds code objects",
    "marshal.loads": "loads marshalled code",
    "marshal.load": "loads marshalled code",
    "sys.monitoring.register_callback": "registers a monitoring callback",
    "os.chdir": "changes the working folder",
    "os.remove": "deletes files",
    "os.rename": "moves files",
    "os.rmdir": "deletes folders",
    "shutil.rmtree": "deletes folders",
}
# During test cases the tests themselves start processes and open sockets (lesson 4): only these count.
REACH_DURING_TESTS = frozenset(
    {
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys._current_frames",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "ctypes.dlopen",
        "ctypes.cdata",
        "ctypes.addressof",
        "code.__new__",
        "marshal.loads",
        "marshal.load",
    }
)
PROC_PRIVATE = (
    "/mem",
    "/environ",
    "/fd",
    "/maps",
    "/cmdline",
    "/root",
    "/cwd",
    "/exe",
    "/task",
    "/stack",
    "/syscall",
)


def _machinery(report_fd: int):
    """The worker's functions, closed over their own references (see the module's docstring).

    Each job's functions come from one of the builders below, all called here, before `main` runs any
    learner code: a builder takes its references as it runs, so they are fixed by then, and nothing
    looks a builder up through this module again.
    """
    exit_now, str_, set_, tuple_, BaseException_ = os._exit, str, set, tuple, BaseException
    realpath, isdir, sep = os.path.realpath, os.path.isdir, os.sep
    modules, builtins_module, builtins_dict = sys.modules, builtins, builtins.__dict__
    pristine = dict(builtins_dict)
    builtin_names = frozenset(name for name in pristine if not name.startswith("_"))
    library = tuple_(realpath(p) + sep for p in sys.path if p and isdir(p))
    state = {
        "inbox": b"",
        "watching": None,
        "in_hook": False,
        "shell_builtins": {},
        "nonce": "",
        "pristine": None,
        "mode_stacks": [],
        "answer_files": {},
    }
    send, command, flag = _channel(report_fd, state)
    audit = _audit_hook(state, library, _reach_judge(state), flag)
    snapshot = _snapshot_taker()
    restore = _restorer(pristine, *_provenance(library))
    describe = _describer()
    run_cell = _cell_runner(state, pristine, builtin_names, snapshot, restore, flag, send, describe)
    serve_cases = _case_server(state, builtin_names, snapshot, restore, flag, send, command, describe)

    def main():
        sys.addaudithook(audit)
        job = command()
        state["nonce"] = str_(job.get("nonce", ""))
        for name in job.get("preload", []):  # what the tests measure with: loaded before any answer
            try:
                __import__(str_(name))
            except BaseException_:  # noqa: BLE001 - a case that needs it will say so
                pass
        torch = modules.get("torch")
        if torch is not None:
            C = torch._C
            state["mode_stacks"] = [
                (C._len_torch_function_stack, C._pop_torch_function_stack, "leaves a torch function mode on"),
                (C._len_torch_dispatch_stack, C._pop_torch_dispatch_stack, "leaves a torch dispatch mode on"),
            ]
        sys.stdin = open(os.devnull)  # answers that ask for input get an empty line, not the grader's pipe
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "nocolor"
        shell = InteractiveShell.instance(config=config)
        shell.user_ns["__builtins__"] = builtins_module
        for warm_up in ("pass", "1 / 0"):  # IPython sets itself up on its first cells, not on the answers'
            shell.run_cell(warm_up, store_history=False, silent=True)
        state["shell_builtins"] = {name: shell.user_ns[name] for name in builtin_names & set_(shell.user_ns)}
        state["pristine"] = snapshot()  # what every case starts from, whatever ran before it
        run = shell.run_cell  # bound now: a learner's change to the class later changes nothing here
        for cell in job["cells"]:
            if cell["kind"] == "check":
                send({"event": "tests", "question": cell["question"]})
                serve_cases(shell.user_ns)
            else:
                run_cell(types.SimpleNamespace(run_cell=run, user_ns=shell.user_ns), cell)
        send({"event": "cells-done"})
        serve_cases(shell.user_ns)
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException_:  # noqa: BLE001
                pass
        send({"event": "finished"})
        exit_now(0)  # no atexit handlers: an answer may have registered some

    return main


# --- talking to the grader ---------------------------------------------------------------------


def _channel(report_fd: int, state: dict):
    """`send(message)`, `command()` (the grader's next line) and `flag(cell, what)` (once each)."""
    write, read, exit_now, dumps, loads = os.write, os.read, os._exit, json.dumps, json.loads
    flagged = set()

    def send(message):
        message.setdefault("nonce", state["nonce"])
        data = (dumps(message, ensure_ascii=True) + "\n").encode("ascii")
        while data:
            data = data[write(report_fd, data) :]

    def command():
        while b"\n" not in state["inbox"]:
            chunk = read(0, 1 << 16)
            if not chunk:
                exit_now(3)  # the grader went away
            state["inbox"] += chunk
        line, _, state["inbox"] = state["inbox"].partition(b"\n")
        return loads(line.decode("utf-8"))

    def flag(cell, what):
        if (cell, what) not in flagged:
            flagged.add((cell, what))
            send({"event": "flag", "cell": cell, "what": what})

    return send, command, flag


# --- what answer code reaches for ------------------------------------------------------------


def _reach_judge(state: dict):
    """`judge(event, args, testing)`: what an audit event says the code reached for, or None."""
    type_, str_, bytes_, len_, any_ = type, str, bytes, len, any
    isabs, getframe = os.path.isabs, sys._getframe
    reach, reach_during_tests, proc_private = dict(REACH), REACH_DURING_TESTS, PROC_PRIVATE

    def importing():
        """Whether the event was raised while importing, with no answer's code between the event and
        the import machinery (a learner's import finder or loader is not exempt)."""
        files = state["answer_files"]
        frame = getframe(2)  # judge's caller, the audit hook, and up: `audit` calls `judge` directly
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith("<frozen importlib"):
                return True
            if filename in files:
                return False
            frame = frame.f_back
        return False

    def judge(event, args, testing):
        if event in reach and (not testing or event in reach_during_tests) and not importing():
            return reach[event]
        if event == "open" and args and not testing:
            path, mode = args[0], args[1] if len_(args) > 1 else "r"
            if type_(path) is bytes_:
                path = path.decode("utf-8", "replace")
            if type_(path) is str_:
                writes = type_(mode) is str_ and any_(c in mode for c in "wax+")
                if path.startswith("/proc/") and any_(part in path for part in proc_private):
                    return f"reads {path[:80]}"
                if writes and isabs(path) and not path.startswith("/tmp/"):
                    return f"writes {path[:80]}"
        return None

    return judge


def _audit_hook(state: dict, library: tuple, judge, flag):
    """`audit(event, args)`, the hook: flags what an answer reaches for against the cell it came from."""
    type_, CodeType, getframe, BaseException_ = type, types.CodeType, sys._getframe, BaseException

    def answer_on_stack():
        """The answer cell whose code is on the stack (a hook or callback it left), or None."""
        files = state["answer_files"]
        frame = getframe(3)  # counted from here: `audit` calls this directly
        while frame is not None:
            cell = files.get(frame.f_code.co_filename)
            if cell is not None:
                return cell
            frame = frame.f_back
        return None

    def audit(event, args):
        watching = state["watching"]
        if watching is None or state["in_hook"]:
            return
        state["in_hook"] = True
        try:
            if event == "exec" and watching not in ("lesson",) and not watching.startswith("test "):
                filename = args[0].co_filename if args and type_(args[0]) is CodeType else ""
                # the answer cell's code, not a library's generated code (dataclasses, namedtuples)
                if filename and filename != "<string>" and not filename.startswith(library):
                    state["answer_files"][filename] = watching
                return
            what = judge(event, args, watching.startswith("test "))
            if what and watching == "lesson":
                watching = answer_on_stack()
            if what and watching:
                flag(watching, what)
        except BaseException_:
            pass
        finally:
            state["in_hook"] = False

    return audit


# --- the modules the tests rely on -----------------------------------------------------------


def _snapshot_taker():
    """`snapshot()`: the watched modules' and their classes' attributes, and the modules loaded."""
    type_, isinstance_, str_, list_, dict_, any_, getattr_, frozenset_ = (
        type,
        isinstance,
        str,
        list,
        dict,
        any,
        getattr,
        frozenset,
    )
    BaseException_, ModuleType, modules = BaseException, types.ModuleType, sys.modules
    watched_exact, watched_prefixes, class_owners = frozenset(WATCHED_EXACT), WATCHED_PREFIXES, CLASS_OWNERS

    def snapshot():
        watched = {}
        for name, module in list_(modules.items()):
            if not isinstance_(module, ModuleType):
                continue
            if name in watched_exact or any_(name == p or name.startswith(p + ".") for p in watched_prefixes):
                try:
                    watched[name] = (module, dict_(module.__dict__))
                except BaseException_:
                    continue
        classes = {}
        for _module, contents in watched.values():
            for value in contents.values():
                if isinstance_(value, type_) and str_(value.__dict__.get("__module__", "")).startswith(
                    class_owners
                ):
                    classes[value] = dict_(value.__dict__)
        torch = modules.get("torch")  # never imported here: that would change what is being recorded
        for cls in (
            getattr_(torch, "Tensor", None),
            getattr_(getattr_(torch, "_C", None), "TensorBase", None),
        ):
            if isinstance_(cls, type_):
                classes[cls] = dict_(cls.__dict__)
        return {"modules": watched, "classes": classes, "imported": frozenset_(modules)}

    return snapshot


def _provenance(library: tuple):
    """`learner_made(value)` and `harmless(key, old, new, before)`: whose a changed attribute is."""
    type_, isinstance_, callable_, any_, getattr_, list_ = type, isinstance, callable, any, getattr, list
    FunctionType, MethodType, PartialType = types.FunctionType, types.MethodType, functools.partial
    modules = sys.modules

    def learner_made(value):
        """Whether `value` is a function or class written in a cell or a test, not in a library."""
        kind = type_(value)
        if kind in (MethodType, staticmethod, classmethod):
            value = value.__func__
            kind = type_(value)
        if kind is FunctionType:
            return not value.__code__.co_filename.startswith(library)
        if kind is PartialType:
            return learner_made(value.func)
        cls = value if isinstance_(value, type_) else kind
        if type_(cls) is not type_:
            return True  # an unusual metaclass: treat it as the learner's
        return cls.__dict__.get("__module__") == "__main__"

    def harmless(key, old, new, before):
        """A library going about its business: private state that is not a function or class, a
        library's wrapper around the same function, or a library function defined in a module first
        imported since the snapshot (a library that patches another on import, as torch.package
        does with inspect.getfile). Where a function was defined is read from the identity of its
        globals, never from `__module__`, which anyone can rewrite."""
        if key.startswith("_") and not callable_(old):
            return True
        if type_(new) is not FunctionType or learner_made(new):
            return False
        if new.__dict__.get("__wrapped__") is old:
            return True
        home = new.__globals__
        return any_(
            name not in before["imported"] and getattr_(module, "__dict__", None) is home
            for name, module in list_(modules.items())
        )

    return learner_made, harmless


def _restorer(pristine: dict, learner_made, harmless):
    """`restore(before)`: puts back what learner code changed in the watched modules and classes."""
    isinstance_, list_, setattr_, delattr_, BaseException_ = isinstance, list, setattr, delattr, BaseException
    ModuleType, modules, builtins_dict, volatile = types.ModuleType, sys.modules, builtins.__dict__, VOLATILE
    type_qualname = type.__dict__["__qualname__"].__get__

    def restore(before):
        """Put back every watched attribute that learner code changed since `before`; say what changed."""
        changed = []
        for name, (module, contents) in before["modules"].items():
            if modules.get(name) is not module:
                changed.append(f"replaces the module {name}")
                modules[name] = module
            current = module.__dict__
            label = "the built-in " if name == "builtins" else name + "."
            for key, value in list_(contents.items()):
                if key in volatile or (name == "sys" and key == "modules"):
                    continue
                present = key in current
                new = current.get(key)
                if present and (new is value or harmless(key, value, new, before)):
                    continue
                changed.append(f"{'changes' if present else 'removes'} {label}{key}")
                current[key] = value
            for key in [k for k in list_(current) if k not in contents]:
                if isinstance_(current[key], ModuleType) or not learner_made(current[key]):
                    continue
                changed.append(f"adds {label}{key}")
                del current[key]
        for cls, contents in before["classes"].items():
            current = cls.__dict__
            label = f"{contents.get('__module__', '?')}.{type_qualname(cls)}."
            for key, value in contents.items():
                present = key in current
                new = current.get(key)
                if present and (new is value or harmless(key, value, new, before)):
                    continue
                changed.append(f"{'changes' if present else 'removes'} {label}{key}")
                try:
                    setattr_(cls, key, value)
                except BaseException_:
                    pass
            for key in [k for k in list_(current) if k not in contents]:
                if learner_made(current[key]):
                    changed.append(f"adds {label}{key}")
                    try:
                        delattr_(cls, key)
                    except BaseException_:
                        pass
        builtins_dict.update(pristine)
        return changed

    return restore


# --- running cells and cases -----------------------------------------------------------------


def _describer():
    """`describe(error)`: how a cell's or a case's exception is reported."""
    type_, str_, int_, float_, bool_, repr_ = type, str, int, float, bool, repr
    type_name = type.__dict__["__name__"].__get__
    exception_args = BaseException.__dict__["args"].__get__

    def describe(error):
        """One line about an exception, using nothing the exception's own code controls."""
        if error is None:
            return ""
        kind = type_(error)
        name = type_name(kind)
        if type_(kind) is not type_ or kind.__dict__.get("__module__", "builtins") != "builtins":
            return name  # a class from the answer or a library: its message could say anything
        parts = [
            a if type_(a) is str_ else repr_(a)
            for a in exception_args(error)
            if type_(a) in (str_, int_, float_, bool_)
        ]
        text = ", ".join(parts)
        return f"{name}: {text}"[:MESSAGE_CHARS] if text else name

    return describe


def _cell_runner(state, pristine, builtin_names, snapshot, restore, flag, send, describe):
    """`run_cell(shell, cell)`: runs a lesson or answer cell; after an answer, puts back what it changed."""
    sorted_, set_, BaseException_, builtins_module = sorted, set, BaseException, builtins
    from effitrain_lessons.course.review import IPYTHON_TRANSFORM_LIMIT, ipython_cell

    give_up = GIVE_UP

    def run_cell(shell, cell):
        answer = cell["kind"] == "answer"
        before = snapshot() if answer else None
        state["watching"] = cell["id"] if answer else "lesson"
        try:
            # IPython's own transforms re-read the whole cell after each `!` or `%` line they turn
            # (4,000 lines: about a minute, then it gives up past 500). The cell is turned into Python
            # here in linear time, and given up on past the same limit, with IPython's words.
            source, turned = ipython_cell(cell["source"])
            if turned >= IPYTHON_TRANSFORM_LIMIT:
                source = give_up
            result = shell.run_cell(source, store_history=False, silent=False)
            error = result.error_before_exec or result.error_in_exec
        except BaseException_ as failure:  # noqa: BLE001 - a broken shell is this cell's error
            error = failure
        finally:
            state["watching"] = None
        if answer:
            for what in restore(before):
                flag(cell["id"], what)
            namespace = shell.user_ns
            for name in sorted_(builtin_names & set_(namespace)):
                if namespace[name] is not state["shell_builtins"].get(name, pristine[name]):
                    flag(cell["id"], f"redefines the built-in {name}")
            if namespace.get("__builtins__") is not builtins_module:
                flag(cell["id"], "replaces __builtins__")
                namespace["__builtins__"] = builtins_module
        send({"event": "cell", "id": cell["id"], "ok": error is None, "error": describe(error)})

    return run_cell


def _case_server(state, builtin_names, snapshot, restore, flag, send, command, describe):
    """`serve_cases(namespace)`: runs the grader's cases against `namespace` until it says to go on."""
    exec_, compile_, encode_ = builtins.exec, builtins.compile, encode
    str_, list_, dict_, BaseException_, builtins_module = str, list, dict, BaseException, builtins

    def clear_modes():
        """Leave no torch function or dispatch mode on (one an answer pushed would see every op a
        measurement makes); say so for each."""
        left = []
        for length, pop, what in state["mode_stacks"]:
            try:
                while length() > 0:
                    pop()
                    left.append(what)
            except BaseException_:  # noqa: BLE001 - a mode that refuses to go: the case's data will show it
                left.append(what)
                break
        return list_(dict_.fromkeys(left))

    def run_case(namespace, code, question, result):
        """Run a case's code in a copy of `namespace`; the variable `result` as encoded plain data."""
        env = {k: v for k, v in list_(namespace.items()) if k not in builtin_names}
        env["__builtins__"] = builtins_module
        for what in restore(state["pristine"]) + clear_modes():
            flag("test " + question, what + " before a test")
        before = snapshot()
        state["watching"] = "test " + question
        data, error = None, None
        try:
            exec_(compile_(code, "<test>", "exec"), env)
        except BaseException_ as failure:  # noqa: BLE001 - any exception fails the case
            error = failure
        finally:
            state["watching"] = None
        changed = restore(before)
        for what in changed:
            flag("test " + question, what + " during a test")
        if error is None:
            if result not in env:
                return None, f"NameError: name {result!r} is not defined", changed
            try:
                data = encode_(env[result])
            except BaseException_ as failure:  # noqa: BLE001 - too big, or a value that broke plain()
                error = failure
        return data, describe(error), changed

    def serve_cases(namespace):
        while True:
            order = command()
            if "case" not in order:
                return
            data, error, changed = run_case(
                namespace,
                str_(order.get("code", "")),
                str_(order.get("question", "")),
                str_(order.get("result", "got")),
            )
            send(
                {
                    "event": "case",
                    "nonce": str_(order["case"]),
                    "data": data,
                    "error": error,
                    "changed": "; ".join(changed[:3]),
                }
            )

    return serve_cases


if __name__ == "__main__":
    _machinery(int(os.environ["EFFITRAIN_REPORT_FD"]))()
