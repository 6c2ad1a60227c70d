"""Run one check in a child process, so that a crash is that check's result.

The parent (:func:`run_isolated`) starts ``python -m rocmkit.doctor.isolate``
through :func:`rocmkit.proc.runner.run` with the check's own timeout, hands it a JSON
request on stdin (check name, module, ``CheckContext.to_dict()``, where to
write the result) and reads the result file back. A segfault, a hang (a GPU
hang looks like one from here), the kernel's OOM killer or an exception in the
check all become that check's ``error`` result with the child's last stderr
lines, and the doctor goes on with the next check.

The result travels in a file (:func:`rocmkit.pyenv.run_json`) rather than on
stdout because Triton's interpreter, torch and the checks themselves print
freely. The fork server (:mod:`rocmkit.doctor.forkserver`) runs the same
:func:`serve_request` in a fork of a warm worker instead of a fresh interpreter.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult, Status, exception_line
from rocmkit.proc.result_file import PHASE_ENV, say_phase, write_result
from rocmkit.proc.results import phase_path, read_phase
from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import PyEnv, run_json, shim_path
from rocmkit.util.ticker import following, in_phase
from rocmkit.util.trust import compile_env

REQUEST_SCHEMA = "rocmkit.doctor.request/1"
# How many trailing stderr lines of a dead child go into the report.
STDERR_TAIL_LINES = 20
# Extra seconds on top of a check's timeout for the interpreter to start and
# import rocmkit; the check's own budget is what the user configured.
STARTUP_GRACE_S = 2.0


def child_env(
    ctx: CheckContext, base: Mapping[str, str] | None = None, shim: Path | None = None
) -> dict[str, str]:
    """The child's environment: the parent's, plus compile caches under rocmkit's
    cache folder (so a second run is fast) and Triton's interpreter on the CPU."""
    env = dict(os.environ if base is None else base)
    cache = Path(ctx.cache_dir)
    # A user's own cache location wins; otherwise keep every compile cache in one
    # place that `rocmkit` can report on and clear.
    # Never a compile cache another user can write (compiled .so files are loaded and run):
    # then a private folder for this run (env.cache_dir fails and says why).
    compile_env(env, cache)
    env.update(fresh_env(ctx))
    if ctx.backend == "cpu":
        # Must be in the environment before anything imports triton: Triton reads
        # it when @triton.jit decorates a function, at import time of the module.
        env["TRITON_INTERPRET"] = "1"
    # The child must import this very rocmkit, also from a source checkout run with
    # `python -m rocmkit` (it starts in a temporary folder, not the checkout).
    root = Path(__file__).resolve().parents[2]
    first = (
        str(shim)
        if shim is not None
        else (str(root) if root.name not in ("site-packages", "dist-packages") else "")
    )
    if first:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (first, env.get("PYTHONPATH", "")) if p)
    return env


def fresh_env(ctx: CheckContext) -> dict[str, str]:
    """``--fresh``: Triton and inductor compile everything again, whatever their caches hold
    (the caches are still written, so the next run is warm)."""
    if not ctx.fresh:
        return {}
    return {"TRITON_ALWAYS_COMPILE": "1", "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


def run_isolated(
    chk: Check,
    ctx: CheckContext,
    *,
    timeout_s: float | None = None,
    python: PyEnv | None = None,
) -> list[CheckResult]:
    """Run ``chk`` in a child process and return its results (never raises for the check's sake).

    ``python``: another environment's interpreter (``rocmkit doctor --venv``); it gets
    rocmkit through a folder that holds only rocmkit, so the venv's packages stay its own."""
    budget = chk.timeout_s if timeout_s is None else timeout_s
    start = time.monotonic()
    request = {"schema": REQUEST_SCHEMA, "check": chk.name, "module": chk.module, "context": ctx.to_dict()}
    with tempfile.TemporaryDirectory(prefix="rocmkit-doctor-") as tmp:
        foreign = python is not None and not python.own
        shim = shim_path(Path(tmp) / "path", python) if foreign and python is not None else None
        executable = python.executable if python is not None else sys.executable
        # The child says its phase (result_file.say_phase) in this file; a terminal shows it.
        phase = phase_path(Path(tmp))
        with (
            in_phase("starting a fresh Python for the check"),
            following(functools.partial(read_phase, phase)),
        ):
            ran = run_json(
                executable,
                "rocmkit.doctor.isolate",
                timeout=budget + STARTUP_GRACE_S,
                env={**child_env(ctx, shim=shim), PHASE_ENV: str(phase)},
                input_text=json.dumps(request),
                flags=("-X", "faulthandler"),
                # Not the user's folder: a stray torch/ or triton.py there would shadow the real ones.
                cwd=Path(tmp),
            )
    elapsed = time.monotonic() - start
    proc = ran.proc
    # The result file is renamed into place whole, so one that exists is complete,
    # even when the process died or hung afterwards (in driver teardown, say).
    results = results_from(ran.data)
    if results is None:
        return [failure_result(chk, ctx, proc, budget, elapsed, ran.error)]
    if proc.status != "ok":
        note = {"child_exit": proc.describe(), "stderr_tail": stderr_tail(proc.stderr)}
        results = [replace(r, details={**r.details, **note}) for r in results]
    return results


def results_from(data: Any) -> list[CheckResult] | None:
    try:
        return [CheckResult.from_dict(d) for d in data["results"]]
    except (ValueError, KeyError, TypeError):
        return None


def read_results(path: Path) -> list[CheckResult] | None:
    """A fork's results, read as every child's result is (:func:`rocmkit.proc.results.read_result`);
    None if it wrote none or a damaged file."""
    from rocmkit.proc.results import read_result

    data, _ = read_result(path, "the check's result file")
    return None if data is None else results_from(data)


def _signal_name(returncode: int | None) -> str:
    if returncode is None or returncode >= 0:
        return "a signal"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def stderr_tail(text: str, lines: int = STDERR_TAIL_LINES) -> list[str]:
    return [line for line in text.rstrip().splitlines() if line.strip()][-lines:]


def error_result(
    chk: Check,
    ctx: CheckContext,
    message: str,
    duration_s: float,
    remedy: str | None = None,
    details: dict[str, Any] | None = None,
) -> CheckResult:
    """The check could not run: its ``error`` result, under the check's own name and level."""
    return CheckResult(
        name=chk.name,
        level=chk.level,
        status=Status.ERROR,
        message=message,
        remedy=remedy,
        duration_s=round(duration_s, 3),
        backend=ctx.backend,
        details=details or {},
    )


def failure_result(
    chk: Check, ctx: CheckContext, proc: CommandResult, budget: float, elapsed: float, why: str | None = None
) -> CheckResult:
    """Turn a child that did not hand back a result into an ``error`` result; ``why``: what
    was wrong with the result file it wrote (damaged, too big)."""
    details: dict[str, Any] = {
        "child": proc.to_dict(),
        "stderr_tail": stderr_tail(proc.stderr or proc.stdout),
    }
    remedy: str | None = None
    if proc.status == "timeout":
        message = (
            f"did not finish within {budget:g} s and was killed (a hang, a GPU hang or a far too slow device)"
        )
        remedy = (
            f"rerun with `rocmkit doctor --only {chk.name} --timeout-scale 4`; if it hangs again, "
            "check `dmesg` for amdgpu/GPU resets"
        )
    elif proc.status == "signal":
        sig = _signal_name(proc.returncode)
        message = f"the check's process was killed by {sig}"
        if proc.returncode == -signal.SIGSEGV:
            message += " (segmentation fault: a crash in a native library or driver)"
            remedy = (
                f"rerun with `AMD_SERIALIZE_KERNEL=3 rocmkit doctor --only {chk.name}` for a precise error"
            )
        elif proc.returncode == -signal.SIGKILL:
            message += " (most often the kernel's out-of-memory killer)"
            remedy = "check `dmesg | grep -i 'out of memory'`; free host memory or lower the check's sizes"
        elif proc.returncode == -signal.SIGABRT:
            message += " (an abort, e.g. hipErrorNoBinaryForGpu or a failed assertion in a native library)"
    elif proc.status == "overflow":
        message = f"the check printed more than {proc.error or 'the output limit'} and was stopped"
        remedy = f"rerun with `rocmkit doctor --only {chk.name} --verbose` and report the output it floods"
    elif proc.status == "ok":
        message = "the check's process exited without writing a result"
        if why:
            message = f"the check's process wrote no usable result: {why}"
    elif proc.status in ("absent", "error"):
        message = f"could not start the check's process: {proc.error}"
    else:
        tail = details["stderr_tail"]
        last = tail[-1] if tail else ""
        message = f"the check's process exited with code {proc.returncode}" + (f": {last}" if last else "")
    return error_result(chk, ctx, message, elapsed, remedy, details)


def normalise(chk: Check, ctx: CheckContext, value: object, duration_s: float) -> list[CheckResult]:
    """A check may return one result or a list; fill in level, backend and duration."""
    items = value if isinstance(value, list) else [value]
    out: list[CheckResult] = []
    for item in items:
        if not isinstance(item, CheckResult):
            message = f"the check returned {type(item).__name__}, not a CheckResult"
            out.append(error_result(chk, ctx, message, duration_s))
            continue
        out.append(
            CheckResult(
                name=item.name or chk.name,
                level=chk.level if item.level < 0 else item.level,
                status=item.status,
                message=item.message,
                remedy=item.remedy,
                figures=item.figures,
                # A check that times its own parts keeps them; otherwise the wall time.
                duration_s=round(item.duration_s or duration_s / len(items), 3),
                backend=item.backend or ctx.backend,
                details=item.details,
            )
        )
    if not out:
        out.append(error_result(chk, ctx, "the check returned no result", duration_s))
    return out


def exception_result(chk: Check, ctx: CheckContext, exc: BaseException, duration_s: float) -> CheckResult:
    """An exception inside a check: it could not run (error), with the traceback's tail."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = exception_line(exc)
    message = f"raised {text}"
    remedy = None
    if "out of memory" in str(exc).lower():
        message = f"ran out of device memory: {text}"
        remedy = "free the GPU (`rocm-smi --showpids` / `nvidia-smi`) or lower the check's sizes"
    return error_result(chk, ctx, message, duration_s, remedy, {"traceback": stderr_tail("".join(lines), 30)})


def call_check(chk: Check, ctx: CheckContext) -> list[CheckResult]:
    """Run a check's function here and now; exceptions become an ``error`` result."""
    start = time.monotonic()
    try:
        value = chk.func(ctx)
    except Exception as exc:  # the check could not run; that is its result
        return [exception_result(chk, ctx, exc, time.monotonic() - start)]
    return normalise(chk, ctx, value, time.monotonic() - start)


def child_main(request_text: str) -> int:
    """The child: run the requested check and write its results to the result file."""
    request = json.loads(request_text)
    if request.get("schema") != REQUEST_SCHEMA:
        print(f"rocmkit.doctor.isolate: not a {REQUEST_SCHEMA} request", file=sys.stderr)
        return 2
    if request["context"].get("backend") == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before any import of triton
    return serve_request(request)


def serve_request(request: Mapping[str, Any]) -> int:
    """Run one requested check in this process and write its results, with the compile
    cache hits it saw, to ``request["result_path"]``: the spawned child and the fork
    server's forks both end here."""
    import importlib

    from rocmkit.doctor import cachestats, registry

    ctx = CheckContext.from_dict(request["context"])
    say_phase(f"importing {request['module']}")  # in a spawned child: torch, Triton, seconds
    importlib.import_module(request["module"])
    say_phase("running")
    chk = registry.load_checks((request["module"],)).get(request["check"])
    if chk is None:
        print(
            f"rocmkit.doctor.isolate: no check {request['check']!r} in {request['module']}", file=sys.stderr
        )
        return 2
    cachestats.install()
    results = call_check(chk, ctx)
    counts = cachestats.collect()
    if counts and results:
        results[0] = replace(results[0], details={**results[0].details, "compile_cache": counts})
    # A fork names its result file in the request; a spawned child hears it from run_json.
    write_result({"results": [r.to_dict() for r in results]}, request.get("result_path"))
    return 0


def main() -> int:
    return child_main(sys.stdin.read())


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: GPU runtimes have crashed and hung in their exit
    # handlers, which would turn a finished check into an error for nothing.
    os._exit(code)
