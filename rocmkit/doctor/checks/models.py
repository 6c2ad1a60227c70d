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
- ``models.suite``: ``builtin`` (default: the 5 built-in models), ``huggingface``
  (a decoder LM, an encoder and an encoder-decoder of PyTorch's HF list: DistillGPT2,
  BertForMaskedLM, T5Small), ``timm`` (a CNN and a ViT of its TIMM list), or
  ``dashboard`` (the three HF models and the TIMM CNN, one table). Set it with
  ``rocmkit doctor --level 3 --set models.suite=huggingface``.
- ``models.names`` (list; overrides the subset, within one suite), ``models.mode`` (infer|train), ``models.dtype``,
  ``models.size`` (default tiny on cpu, full on a GPU), ``models.repeat``
  (default 30), ``models.timeout_s`` (per model), ``models.compile_mode``.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from rocmkit.bench.results import SuiteResult
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.errors import RocmkitError

NAME = "models.compile_speedup"
DEFAULT_MIN_GEOMEAN = {"cpu": 0.0, "rocm": 1.0, "cuda": 1.0}
MIN_GEOMEAN_ENV = "ROCMKIT_MODELS_MIN_GEOMEAN"
# The representative subsets: what each suite's level-3 check runs by default.
SUBSETS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "builtin": (("builtin", ()),),
    "huggingface": (("huggingface", ("DistillGPT2", "BertForMaskedLM", "T5Small")),),
    "timm": (("timm", ("mobilenetv2_100", "deit_tiny_patch16_224.fb_in1k")),),
    "dashboard": (
        ("huggingface", ("DistillGPT2", "BertForMaskedLM", "T5Small")),
        ("timm", ("mobilenetv2_100",)),
    ),
}


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
    head = f"{suite.suite} {suite.mode} {suite.dtype} size {suite.size}: pass rate {s.pass_rate}, geomean speedup {gm}"
    base: dict[str, Any] = {
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
            "are the pair `rocmkit resolve` picks; compare with `rocmkit bench models --report html=out.html`",
            **base,
        )
    note = " (report only on the CPU)" if min_geomean <= 0 else f" (threshold {min_geomean:g}x)"
    return CheckResult(status=Status.PASS, message=head + note, **base)


@check(
    NAME,
    exclusive=True,
    options={"models.*": "min_geomean, names, mode, dtype, size, repeat, timeout_s, compile_mode (docs/doctor.md)"},
    level=3,
    description="torch.compile vs eager on representative models (decoder, encoder, encoder-decoder, CNN): "
    "outputs match, geomean speedup over a threshold",
    needs=("torch",),
    isolated=False,  # it starts one child per model itself, each with its own timeout
    timeout_s=3600.0,
)
def compile_speedup(ctx: CheckContext) -> CheckResult:
    from rocmkit.bench.suite import SuiteOptions, run_suite

    start = time.monotonic()
    try:
        min_geomean = threshold(ctx)
        suite_name = str(ctx.options.get("models.suite", "builtin"))
        if suite_name not in SUBSETS:
            raise RocmkitError(
                f"models.suite {suite_name!r} is not a suite",
                f"use --set models.suite= one of {', '.join(SUBSETS)}",
            )
        raw_names: Any = ctx.options.get("models.names") or ()
        if isinstance(raw_names, str):  # `--set models.names=a,b` arrives as one string
            raw_names = [n.strip() for n in raw_names.split(",") if n.strip()]
        names = tuple(str(n) for n in raw_names)
        parts = SUBSETS[suite_name]
        if names:
            parts = ((parts[0][0], names),)
        runs = []
        for part_suite, part_names in parts:
            opts = SuiteOptions(
                suite=part_suite,
                models=part_names,
                mode=ctx.options.get("models.mode", "infer"),
                dtype=ctx.options.get("models.dtype", "fp32"),
                size=ctx.options.get("models.size"),
                repeat=int(ctx.options.get("models.repeat", 30)),
                device="cpu" if ctx.backend == "cpu" else "cuda",
                timeout_s=ctx.options.get("models.timeout_s"),
                compile_mode=ctx.options.get("models.compile_mode", "default"),
                cache_dir=ctx.cache_dir,
            )
            runs.append(run_suite(opts, environ=_environ(ctx), command="rocmkit doctor --level 3"))
        suite = runs[0]
        if len(runs) > 1:
            suite = replace(suite, suite=suite_name, models=tuple(m for r in runs for m in r.models))
    except RocmkitError as exc:
        return CheckResult(
            status=Status.ERROR,
            message=f"the model benchmark could not run: {exc.message}",
            remedy=exc.fix,
            duration_s=time.monotonic() - start,
            backend=ctx.backend,
        )
    return judge(suite, min_geomean, duration_s=time.monotonic() - start)


# ---------------------------------------------------------------- companions

COMPANIONS_NAME = "models.companions"
# torchvision/torchaudio register C++ operators into torch at import; one built for another torch
# fails with e.g. "operator torchvision::nms does not exist". transformers imports torchvision
# when it is installed, and timm always does, so one bad companion breaks the model suites.
_PROBE_OPS = {"torchvision": "nms", "torchaudio": None}


def companion_result(torch_version: str, findings: dict[str, tuple[str | None, str | None]]) -> CheckResult:
    """The verdict from ``{package: (installed version, import error or None)}``."""
    broken = {pkg: (ver, err) for pkg, (ver, err) in findings.items() if ver is not None and err}
    present = {pkg: ver for pkg, (ver, _) in findings.items() if ver is not None}
    details = {"torch": torch_version, "companions": {k: {"version": v, "error": e} for k, (v, e) in findings.items()}}
    if broken:
        what = "; ".join(f"{pkg} {ver}: {err}" for pkg, (ver, err) in broken.items())
        names = " ".join(broken)
        return CheckResult(
            status=Status.FAIL,
            message=f"{what} (built for another torch than {torch_version}); transformers and timm "
            "import torchvision, so the model suites cannot run",
            remedy=f"put in the {names} built for torch {torch_version}: `{matching_set_command(torch_version)}` "
            f"reinstalls the matching set from torch's index; or remove it: `{_uninstall_command(names)}`",
            details=details,
        )
    if not present:
        return CheckResult(
            status=Status.SKIP,
            message="neither torchvision nor torchaudio is installed",
            details=details,
        )
    listed = ", ".join(f"{k} {v}" for k, v in present.items())
    return CheckResult(
        status=Status.PASS,
        message=f"{listed}: C++ operators load with torch {torch_version}",
        details=details,
    )


def _uninstall_command(names: str) -> str:
    import shlex
    import sys

    # A venv rocmkit made has no pip of its own; uv drives any interpreter.
    return f"uv pip uninstall --python {shlex.quote(sys.executable)} {names}"


def matching_set_command(torch_version: str, python: str | None = None, prefix: str | None = None) -> str:
    """The ``rocmkit install`` that puts the companions built for this torch beside it: the same
    release and build (its local label names the index), into this environment."""
    import shlex
    import sys

    from packaging.version import InvalidVersion, Version

    from rocmkit.plan import Backend

    try:
        version = Version(torch_version)
    except InvalidVersion:
        version = None
    args = ["rocmkit", "install"]
    prefix = prefix if prefix is not None else (sys.prefix if sys.prefix != sys.base_prefix else None)
    args += ["--venv", prefix] if prefix else ["--interpreter", python or sys.executable]
    if version is not None:
        args += ["--torch", version.public]
        named = Backend.read(version.local or "")  # the index the build came from: its local label
        # A tag --backend takes (not xpu, nor a source build's bare "rocm").
        if named is not None and named.pytorch_index and (named.kind == "cpu" or named.toolkit) and named.kind != "xpu":
            args += ["--backend", str(named)]
    return shlex.join(args)


@check(
    COMPANIONS_NAME,
    level=1,
    description="torchvision/torchaudio load their C++ operators with this torch (timm and transformers need it)",
    needs=("torch",),
    isolated=True,  # a mismatched extension can abort the interpreter
    timeout_s=120.0,
)
def companions(ctx: CheckContext) -> CheckResult:
    import importlib
    import importlib.metadata

    import torch

    findings: dict[str, tuple[str | None, str | None]] = {}
    for pkg, op in _PROBE_OPS.items():
        try:
            version: str | None = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            findings[pkg] = (None, None)
            continue
        error: str | None = None
        try:
            importlib.import_module(pkg)
            if op is not None:
                getattr(getattr(torch.ops, pkg), op)
        except Exception as exc:  # the failure to load is the finding
            lines = str(exc).strip().splitlines()
            error = f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]
        findings[pkg] = (version, error)
    return companion_result(str(torch.__version__), findings)
