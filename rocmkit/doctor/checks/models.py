"""Level 3: torch.compile speedups on the built-in model set (``models.compile_speedup``).

Runs ``rocmkit bench models`` (each model in its own child process, so this
check is not itself isolated) and judges it: every model's compiled output
must match eager, and the geometric mean speedup over the passing models
(slowdowns included, not clipped) must reach the backend's threshold. A low
geomean that the repeats cannot tell from parity is a warning, not a failure.

Options (``ctx.options``), all optional:

- ``models.min_geomean``: the threshold for this run; otherwise
  ``ROCMKIT_MODELS_MIN_GEOMEAN`` in the environment; otherwise by backend:
  cpu 0.0 (report only: a CPU's speedup says nothing about the GPU stack),
  rocm and cuda 1.0 (torch.compile must not be slower than eager).
- ``models.names`` (list), ``models.mode`` (infer|train), ``models.dtype``,
  ``models.size`` (default tiny on cpu, full on a GPU), ``models.repeat``
  (default 30), ``models.timeout_s`` (per model), ``models.compile_mode``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from rocmkit.bench.results import SuiteResult
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.errors import RocmkitError

NAME = "models.compile_speedup"
LEVEL = 3
DEFAULT_MIN_GEOMEAN = {"cpu": 0.0, "rocm": 1.0, "cuda": 1.0}
MIN_GEOMEAN_ENV = "ROCMKIT_MODELS_MIN_GEOMEAN"


def _environ(ctx: CheckContext) -> dict[str, str]:
    # ctx.env holds only the variables doctor reports; the children need the whole
    # environment (PATH, HOME, compiler settings) with those on top.
    return {**os.environ, **ctx.env}


def threshold(ctx: CheckContext) -> float:
    value: Any = ctx.options.get("models.min_geomean")
    if value is None:
        value = _environ(ctx).get(MIN_GEOMEAN_ENV)
    if value is None:
        return DEFAULT_MIN_GEOMEAN.get(ctx.backend, 1.0)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RocmkitError(
            f"minimum geomean speedup {value!r} is not a number", f"set {MIN_GEOMEAN_ENV} to e.g. 1.1"
        ) from None


def judge(suite: SuiteResult, min_geomean: float, *, duration_s: float = 0.0) -> CheckResult:
    """The verdict on one suite run: failures first, then the threshold."""
    s = suite.summary
    figures = [Figure(name="pass_rate", value=100.0 * s.passed / s.total if s.total else 0.0, unit="%")]
    if s.geomean_speedup is not None:
        figures.append(
            Figure(name="geomean_speedup", value=s.geomean_speedup, unit="x", reference=min_geomean)
        )
    if s.geomean_speedup_clipped is not None:
        figures.append(Figure(name="geomean_speedup_clipped", value=s.geomean_speedup_clipped, unit="x"))
    figures += [
        Figure(name=f"{m.name}.speedup", value=m.speedup, unit="x") for m in suite.models if m.speedup
    ]
    gm = f"{s.geomean_speedup:.2f}x" if s.geomean_speedup is not None else "n/a"
    head = f"{suite.mode} {suite.dtype} size {suite.size}: pass rate {s.pass_rate}, geomean speedup {gm}"
    base: dict[str, Any] = {
        "name": NAME,
        "level": LEVEL,
        "figures": tuple(figures),
        "duration_s": duration_s,
        "backend": suite.backend,
        "details": {"bench": suite.to_dict(), "min_geomean": min_geomean},
    }
    wrong = [m for m in suite.models if m.status in ("fail_accuracy", "compile_error")]
    if wrong:
        what = "; ".join(
            f"{m.name} {m.status}" + (f" ({m.message[:120]})" if m.message else "") for m in wrong
        )
        names = ",".join(m.name for m in wrong)
        return CheckResult(
            status=Status.FAIL,
            message=f"{head}; torch.compile is broken here: {what}",
            remedy=f"see the error with `rocmkit bench models --models {names}`; then use the torch/triton "
            "pair `rocmkit resolve` picks for this node, or report it to PyTorch with that output",
            **base,
        )
    unrun = [m for m in suite.models if m.status in ("timeout", "error")]
    if unrun:
        what = "; ".join(
            f"{m.name} {m.status}" + (f" ({m.message[:120]})" if m.message else "") for m in unrun
        )
        return CheckResult(
            status=Status.ERROR,
            message=f"{head}; could not measure: {what}",
            remedy="rerun with a longer timeout (`rocmkit bench models --timeout 3600`) on an idle node",
            **base,
        )
    if s.geomean_speedup is not None and s.geomean_speedup < min_geomean:
        noisy = [m.name for m in suite.models if m.passed and m.noisy]
        if 2 * len(noisy) > s.passed:
            # Most speedups cannot be told from parity: a busy node, not a slow stack, is the
            # likelier cause, so say so instead of failing.
            return CheckResult(
                status=Status.WARN,
                message=f"{head}, below the {min_geomean:g}x this backend expects, but within the noise "
                f"of the repeats for {', '.join(noisy)}",
                remedy="rerun on an idle node (`rocmkit bench models --repeat 100`) before drawing conclusions",
                **base,
            )
        return CheckResult(
            status=Status.FAIL,
            message=f"{head}, below the {min_geomean:g}x this backend expects",
            remedy="check that the GPU is not shared or throttled (`rocm-smi`), and that torch and triton "
            "are the pair `rocmkit resolve` picks; compare with `rocmkit bench models --html out.html`",
            **base,
        )
    note = " (report only on the CPU)" if min_geomean <= 0 else f" (threshold {min_geomean:g}x)"
    return CheckResult(status=Status.PASS, message=head + note, **base)


@check(
    NAME,
    exclusive=True,
    options={"models.*": "min_geomean, names, mode, dtype, size, repeat, timeout_s, compile_mode (docs/doctor.md)"},
    level=LEVEL,
    description="torch.compile vs eager on 5 built-in models: outputs match, geomean speedup over a threshold",
    needs=("torch",),
    isolated=False,  # it starts one child per model itself, each with its own timeout
    timeout_s=3600.0,
)
def compile_speedup(ctx: CheckContext) -> CheckResult:
    from rocmkit.bench.suite import SuiteOptions, run_suite

    start = time.monotonic()
    try:
        min_geomean = threshold(ctx)
        opts = SuiteOptions(
            models=tuple(ctx.options.get("models.names") or ()),
            mode=ctx.options.get("models.mode", "infer"),
            dtype=ctx.options.get("models.dtype", "fp32"),
            size=ctx.options.get("models.size"),
            repeat=int(ctx.options.get("models.repeat", 30)),
            device="cpu" if ctx.backend == "cpu" else "cuda",
            timeout_s=ctx.options.get("models.timeout_s"),
            compile_mode=ctx.options.get("models.compile_mode", "default"),
            cache_dir=ctx.cache_dir,
        )
        suite = run_suite(opts, environ=_environ(ctx), command="rocmkit doctor --level 3")
    except RocmkitError as exc:
        return CheckResult(
            name=NAME,
            level=LEVEL,
            status=Status.ERROR,
            message=f"the model benchmark could not run: {exc.message}",
            remedy=exc.fix,
            duration_s=time.monotonic() - start,
            backend=ctx.backend,
        )
    return judge(suite, min_geomean, duration_s=time.monotonic() - start)
