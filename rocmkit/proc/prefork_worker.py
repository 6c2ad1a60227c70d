"""A prefork worker: one process per Python that imports torch (and whatever else the
tasks need) once, then forks one process per task.

Started by :class:`rocmkit.proc.prefork.PreforkProcess` as
``python -X faulthandler -m rocmkit.proc.prefork_worker`` in the interpreter the tasks are
for. The doctor runs its isolated checks in these forks, and ``rocmkit bench`` its
models: each costs a fork instead of an interpreter start plus torch's import (seconds;
with dynamo and inductor, five or more). It talks JSON lines: requests on stdin; replies
on the stdout it had at start (fd 1 then points at stderr, so nothing an import prints
can corrupt a reply). A ``run`` request names the function the fork calls
(``"call": "package.module:function"``, given the request, returning the exit code):
the worker itself imports nothing of rocmkit beyond this module and the runner (a fork,
the child's side of the result protocol). While it imports, it tells the parent which
module it is at (``{"event": "importing"}``), so a terminal shows what the wait is.

Why fork is safe here: CUDA and HIP cannot be used in a child forked after the
parent initialised them, and this process never does. It imports torch and
Triton, which touch no device until asked (the parent also sets
``PYTORCH_NVML_BASED_CUDA_CHECK=1``, so a ``torch.cuda.is_available()`` during an
import asks NVML instead of running cuInit), and refuses to fork (``refused``) if
``torch.cuda.is_initialized()`` ever reads true or it holds a GPU device file
open (/dev/kfd, a render node, /dev/nvidia*); the parent then runs the rest in
spawned children. Each fork starts a new session, so its process group holds
it and anything it starts; the parent kills that group on a timeout, and this
process kills it when the fork exits, so a grandchild left behind dies too.

A fork's stdout and stderr go to a pipe this process drains into the task's
output file, up to ``output_cap`` bytes; past that the fork's group is killed
and the exit reads ``overflow``. Results travel in files the task writes, never
on a pipe.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

SCHEMA = "rocmkit.prefork/1"
# What preload() imported, in how long: a fork's task reports these (torch.import would
# otherwise measure ~0 s for a module the worker already holds).
IMPORT_SECONDS: dict[str, float] = {}
# Seconds between looks at exited forks while any is running.
POLL_S = 0.02


@dataclass
class _Fork:
    request_id: int
    pid: int
    pipe: int
    out: int
    written: int = 0
    overflow: bool = False


def _send(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


# Device files a GPU runtime opens when it initialises: HSA opens /dev/kfd (and render
# nodes), the CUDA driver /dev/nvidiactl, /dev/nvidia<N> and /dev/nvidia-uvm.
_DEVICE_PREFIXES = ("/dev/kfd", "/dev/dri/renderD", "/dev/nvidia")


def device_files_open(fd_dir: str = "/proc/self/fd") -> list[str]:
    """GPU device files this process holds open: a runtime initialised here, even one
    torch does not know about (``torch.cuda.is_available()`` runs cuInit without
    setting ``torch.cuda.is_initialized()``)."""
    found: list[str] = []
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith(_DEVICE_PREFIXES):
            found.append(target)
    return sorted(set(found))


def cuda_initialized() -> bool:
    """True once a GPU runtime is initialised in this process (never, by design): then a
    fork would inherit a driver state it cannot use, so the worker refuses to fork."""
    if device_files_open():
        return True
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        return bool(cuda.is_initialized()) if cuda is not None else False
    except Exception:  # a half-imported torch: it initialised nothing
        return False


def preload(modules: list[str], replies: IO[str] | None = None) -> dict[str, Any]:
    """Import what every fork needs, once; a failure is left for the task that
    imports it to report (the fork imports it again and gets the same error).
    ``replies``: the parent hears each import as it begins (its status line names it)."""
    import importlib

    seconds: dict[str, float] = {}
    failed: dict[str, str] = {}
    for name in modules:
        if replies is not None:
            _send(replies, {"event": "importing", "module": name})
        start = time.perf_counter()
        try:
            importlib.import_module(name)
        except Exception as exc:  # the task reports it; the worker stays up
            failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            continue
        seconds[name] = round(time.perf_counter() - start, 3)
    IMPORT_SECONDS.update(seconds)
    if __name__ == "__main__":
        # Run as `python -m rocmkit.proc.prefork_worker` this module is __main__, and a task's
        # `from rocmkit.proc.prefork_worker import IMPORT_SECONDS` loads a second copy with an
        # empty dict (torch.import then said "imports in 0.0 s"): fill that copy's dict too.
        importlib.import_module("rocmkit.proc.prefork_worker").IMPORT_SECONDS.update(seconds)
    return {"imported": seconds, "failed": failed}


def _in_fork(request: dict[str, Any], write_fd: int, keep_closed: list[int]) -> int:
    """The fork: its own session, output into the pipe, its own folder, then the task."""
    os.setsid()
    for fd in keep_closed:
        with contextlib.suppress(OSError):
            os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(write_fd, 1)
    os.dup2(write_fd, 2)
    os.close(null)
    os.close(write_fd)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.chdir(request["cwd"])
    if request.get("phase_path"):
        from rocmkit.proc.result_file import PHASE_ENV

        # Where the task says what it is doing (result_file.say_phase), for the parent's status line.
        os.environ[PHASE_ENV] = str(request["phase_path"])
    module, _, name = str(request["call"]).partition(":")
    import importlib

    task = getattr(importlib.import_module(module), name)
    return int(task(request))


def _fork(request: dict[str, Any], proto_fd: int, forks: dict[int, _Fork]) -> _Fork:
    read_fd, write_fd = os.pipe()
    out = os.open(request["output_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            others = [f.pipe for f in forks.values()] + [f.out for f in forks.values()]
            code = _in_fork(request, write_fd, [proto_fd, read_fd, out, *others])
        except BaseException:  # anything escaping the task's own handling: exit non-zero
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            # Skip interpreter teardown: GPU runtimes have hung in exit handlers.
            os._exit(code)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return _Fork(request_id=int(request["id"]), pid=pid, pipe=read_fd, out=out)


def _drain(fork: _Fork, cap: int) -> None:
    """Copy what the fork printed into its output file, up to ``cap`` bytes."""
    while True:
        try:
            chunk = os.read(fork.pipe, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return
        if not chunk:
            return
        room = cap - fork.written
        if room > 0:
            os.write(fork.out, chunk[:room])
        fork.written += len(chunk)
        if fork.written > cap and not fork.overflow:
            fork.overflow = True
            _kill_group(fork.pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _reap(forks: dict[int, _Fork], cap: int, replies: IO[str]) -> None:
    from rocmkit.proc.runner import kill_pipe_holders

    while forks:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fork = forks.pop(pid, None)
        if fork is None:
            continue
        _drain(fork, cap)
        # Whatever the fork started and left behind in its group goes with it, and so does
        # anything that escaped the group (setsid) but still holds the fork's output pipe.
        _kill_group(pid)
        kill_pipe_holders([fork.pipe])
        os.close(fork.pipe)
        os.close(fork.out)
        code = os.waitstatus_to_exitcode(status)
        _send(
            replies,
            {"id": fork.request_id, "event": "exited", "returncode": code, "overflow": fork.overflow},
        )


def serve(stdin_fd: int, replies: IO[str], proto_fd: int) -> int:
    """Read requests until stdin closes; fork one process per ``run`` request."""
    forks: dict[int, _Fork] = {}
    buffer = b""
    cap = 8 * 1024 * 1024
    while True:
        watched = [stdin_fd, *(f.pipe for f in forks.values())]
        readable, _, _ = select.select(watched, [], [], POLL_S if forks else None)
        for fork in list(forks.values()):
            if fork.pipe in readable:
                _drain(fork, cap)
        _reap(forks, cap, replies)
        if stdin_fd not in readable:
            continue
        chunk = os.read(stdin_fd, 65536)
        if not chunk:
            break  # the parent is gone: so are its tasks
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            if request.get("op") == "quit":
                chunk = b""
                break
            cap = int(request.get("output_cap", cap))
            if cuda_initialized():
                _send(
                    replies,
                    {"id": request["id"], "event": "refused", "reason": "torch.cuda is initialised"},
                )
                continue
            try:
                fork = _fork(request, proto_fd, forks)
            except OSError as exc:  # out of processes or memory: this task's error, not the worker's end
                _send(replies, {"id": request["id"], "event": "exited", "returncode": None, "error": str(exc)})
                continue
            forks[fork.pid] = fork
            _send(replies, {"id": fork.request_id, "event": "started", "pid": fork.pid})
        if not chunk:
            break
    for pid in forks:
        _kill_group(pid)
    return 0


def main() -> int:
    # Replies keep the stdout this process started with; everything printed from here
    # on (an import's warning, a library's banner) goes to stderr instead.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    replies = os.fdopen(proto_fd, "w", buffering=1, encoding="utf-8", closefd=False)
    # Ctrl-C reaches the parent (the doctor, bench), which stops this process itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    hello = b""
    while not hello.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            return 0
        hello += chunk
    start = json.loads(hello)
    if start.get("schema") != SCHEMA:
        print(f"rocmkit.proc.prefork_worker: not a {SCHEMA} start request", file=sys.stderr)
        return 2
    loaded = preload(list(start.get("preload", ())) + list(start.get("modules", ())), replies)
    _send(
        replies,
        {
            "event": "ready",
            "pid": os.getpid(),
            **loaded,
            "cuda_initialized": cuda_initialized(),
        },
    )
    return serve(0, replies, proto_fd)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
