"""``compile.correctness``: torch.compile trains the way eager does (level 2; longer at level 3).

A compiled model can be fast and still wrong: ``mode="reduce-overhead"`` (CUDA/HIP graphs)
silently degraded training on ROCm (pytorch#187715: ``cudagraph_trees`` has no HIP guard;
on CUDA, pytorch#118228). The speedup checks compare one forward; this one trains.

At level 2 one small model (a convolution, batch norm, ReLU, layer norm: ``mini``, compiled in
this process), at level 3 a small transformer block and a small conv
net, train a few steps from the same seeded weights and batches three ways: eager in the
working precision (AMP where the device has it), compiled (mode ``default`` at level 2, every
mode at level 3), and eager in fp64 (the reference). Each model is one compile of its forward
and its backward, most of the check's time, hence one model at level 2. A pass depends only on
the software stack and is reused while it stays (``stack_verdict``, doctor/verdicts.py). The loss and the global
gradient norm of every step form two curves; ``rocmkit.doctor.curves`` judges each compiled
curve against eager with ``torch._dynamo.utils.same``'s rule (allclose at the harness's
training tolerance, else the fp64 RMSE rule) and names the step the divergence began.

Options (``--set``): ``compile.steps`` (default 6; 30 at level 3), ``compile.models``
(``mini`` at level 2, ``transformer,convnet`` at level 3), ``compile.modes`` (default
``default``; at level 3 ``reduce-overhead`` too where CUDA/HIP graphs exist), ``compile.amp`` (``auto``: bf16 on a GPU that has it, else
fp16; ``off``), ``compile.backend`` (``inductor``, or ``module:function`` naming a dynamo
backend: a site's own compiler, or the test suite's deliberately wrong one).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.curves import TOLERANCE_SOURCE, TOLERANCES, CurveVerdict, judge_curve
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.proc.result_file import say_phase

NAME = "compile.correctness"
MODELS = ("mini", "transformer", "convnet")
# level -> the models trained: at level 2 one small model (each model is a compile, the cost of
# the check); at level 3 the transformer block and the conv net.
LEVEL_MODELS = {2: ("mini",), 3: ("transformer", "convnet")}
STEPS = {2: 6, 3: 30}  # level -> training steps
GRAPH_MODES = ("reduce-overhead",)  # modes that need CUDA/HIP graphs
ISSUES = {
    "reduce-overhead": "pytorch#187715 (ROCm: `cudagraph_trees` has no HIP guard, "
    "https://github.com/pytorch/pytorch/issues/187715) and pytorch#118228 (CUDA graph trees loss divergence)",
}


def _curves_remedy(mode: str, backend: str) -> str:
    if mode in ISSUES:
        return (
            f"avoid torch.compile(mode={mode!r}) on this node: compile with mode='default', or keep it and set "
            f"torch._inductor.config.triton.cudagraph_trees = False; known upstream: {ISSUES[mode]}"
        )
    return (
        f"train this model eager (or torch.compile(backend='aot_eager')) until fixed; find the op with the accuracy "
        f"minifier (TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=4) and report it to PyTorch; "
        f"use the torch/Triton pair `rocmkit resolve` picks (backend {backend})"
    )


def judge(runs: list[dict[str, Any]], *, backend: str, tol: float, skipped: list[str]) -> CheckResult:
    """The verdict on every (model, mode) run: each has eager, compiled and fp64 curves."""
    figures: list[Figure] = []
    bad: list[str] = []
    broken: list[str] = []
    remedy: str | None = None
    summary: list[dict[str, Any]] = []
    for run in runs:
        label = f"{run['model']} mode={run['mode']}"
        if run.get("error"):
            broken.append(f"{label}: {run['error']}")
            remedy = remedy or _curves_remedy(run["mode"], backend)
            summary.append({"model": run["model"], "mode": run["mode"], "error": run["error"]})
            continue
        verdicts: dict[str, CurveVerdict] = {}
        for curve in ("loss", "grad_norm"):
            ref64 = run["fp64"][curve] if run.get("fp64") else None
            verdicts[curve] = judge_curve(run["eager"][curve], run["compiled"][curve], ref64, tol=tol)
        summary.append(
            {"model": run["model"], "mode": run["mode"], **{k: v.to_dict() for k, v in verdicts.items()},
             "curves": {k: run[k] for k in ("eager", "compiled", "fp64")}}
        )
        loss = verdicts["loss"]
        figures.append(Figure(name=f"{run['model']}.{run['mode']}.loss_max_abs_diff", value=loss.max_abs_diff, unit=""))
        failed = [(k, v) for k, v in verdicts.items() if not v.ok]
        if failed:
            step = min(v.first_bad_step for _, v in failed if v.first_bad_step is not None) if any(
                v.first_bad_step is not None for _, v in failed) else None
            parts = []
            for k, v in failed:
                at = v.first_bad_step if v.first_bad_step is not None else 0
                e, c = run["eager"][k][at], run["compiled"][k][at]
                rule = (f"fp64 rmse {v.res_rmse:.3g} > {3:g}x {v.ref_rmse:.3g} + {tol / 10:g}"
                        if v.res_rmse is not None and v.ref_rmse is not None else v.method)
                parts.append(f"{k} from step {at} ({c:.6g} vs eager {e:.6g}; {rule})")
            bad.append(f"{label} diverged from eager at step {step}: " + "; ".join(parts))
            remedy = remedy or _curves_remedy(run["mode"], backend)
    details: dict[str, Any] = {"runs": summary, "tolerance": tol, "tolerance_source": TOLERANCE_SOURCE,
                               "compile_backend": backend, "not_run": skipped}
    note = f" ({'; '.join(skipped)})" if skipped else ""
    if bad or broken:
        return result(Status.FAIL, "; ".join(bad + broken) + note, remedy, figures=tuple(figures), **details)
    done = ", ".join(sorted({f"{r['model']}" for r in runs}))
    modes = ", ".join(sorted({r["mode"] for r in runs}))
    steps = len(runs[0]["eager"]["loss"]) if runs else 0
    return result(
        Status.PASS,
        f"{done}: {steps} training steps under mode {modes} match eager (loss and grad norm, tol {tol:g}){note}",
        figures=tuple(figures),
        **details,
    )


def _backend(spec: str) -> Any:
    """``inductor``, another registered backend's name, or ``module:function``."""
    if ":" not in spec:
        return spec
    import importlib

    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _models(torch: Any) -> dict[str, Callable[[], tuple[Any, Callable[[int, Any], tuple[Any, Any]]]]]:
    nn = torch.nn

    class Block(nn.Module):  # type: ignore[misc,name-defined]  # torch is imported in the child only
        """An embedding, one pre-norm transformer encoder layer, a classifier head."""

        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(64, 32)
            self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
            self.head = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.layer(self.emb(x)).mean(dim=1))

    def block() -> tuple[Any, Callable[[int, Any], tuple[Any, Any]]]:
        def batch(i: int, g: Any) -> tuple[Any, Any]:
            return torch.randint(0, 64, (8, 16), generator=g), torch.randint(0, 10, (8,), generator=g)

        return Block(), batch

    def convnet() -> tuple[Any, Callable[[int, Any], tuple[Any, Any]]]:
        model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
        )

        def batch(i: int, g: Any) -> tuple[Any, Any]:
            return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)

        return model, batch

    class Mini(nn.Module):  # type: ignore[misc,name-defined]  # torch is imported in the child only
        """Level 2's one model, kept to the ops whose compiled forward and backward inductor
        generates itself (each generated kernel is a C++ build on the CPU, most of the check's
        time): a convolution, batch norm (its running statistics are a mutation inductor must
        keep), ReLU, then the image's positions as tokens through a layer norm, a classifier.
        Attention is level 3's (the transformer block): here it added six kernels of its own."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.norm = nn.LayerNorm(8)
            self.head = nn.Linear(8, 10)

        def forward(self, x: Any) -> Any:
            tokens = torch.relu(self.bn(self.conv(x))).flatten(2).transpose(1, 2)
            return self.head(self.norm(tokens).mean(dim=1))

    def mini() -> tuple[Any, Callable[[int, Any], tuple[Any, Any]]]:
        def batch(i: int, g: Any) -> tuple[Any, Any]:
            return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)

        return Mini(), batch

    return {"mini": mini, "transformer": block, "convnet": convnet}


def _compile_threads(level: int) -> AbstractContextManager[Any]:
    """Level 2 builds its one small graph's kernels in this process (``compile_threads=1``):
    inductor's worker pool is a fresh Python importing torch, started per process, and for a
    handful of kernels it costs more than its parallel builds save (2 s of CPU more on a 2-core
    node, measured). The generated code is the same either way. Level 3, with more and larger
    graphs, and a TORCHINDUCTOR_COMPILE_THREADS the user set keep inductor's own choice."""
    import contextlib
    import importlib
    import os

    if level >= 3 or "TORCHINDUCTOR_COMPILE_THREADS" in os.environ:
        return contextlib.nullcontext()
    patched: AbstractContextManager[Any] = importlib.import_module("torch._inductor.config").patch(compile_threads=1)
    return patched


def _train(torch: Any, model: Any, batches: list[tuple[Any, Any]], *, step_fn: Any, device: str,
           amp: Any, fp64: bool, graphs: bool) -> dict[str, list[float]]:
    """Train ``steps`` steps; the loss and global grad norm of each."""
    import contextlib

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda") if amp == torch.float16 else None
    losses: list[float] = []
    norms: list[float] = []
    for xb, yb in batches:
        x, y = xb.to(device), yb.to(device)
        if fp64 and x.is_floating_point():
            x = x.double()
        opt.zero_grad(set_to_none=True)
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()  # each call is a new training step
        ctx = torch.autocast(device_type="cuda", dtype=amp) if amp is not None else contextlib.nullcontext()
        with ctx:
            out = step_fn(x)
        loss = torch.nn.functional.cross_entropy(out.double() if fp64 else out.float(), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        grads = [p.grad.detach().double().norm() for p in model.parameters() if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack(grads))))
        losses.append(float(loss.detach()))
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
    return {"loss": losses, "grad_norm": norms}


@check(
    NAME,
    level=2,
    description="torch.compile trains like eager: loss and grad-norm curves of a transformer block and a conv net "
    "agree (PyTorch's same() rule), in each compile mode; names the step a divergence began (#29)",
    needs=("torch",),
    isolated=True,
    timeout_s=900.0,
    options={"compile.*": "steps, models, modes, amp (auto|off), backend (inductor or module:function)"},
    stack_verdict=True,
    long_running=True,
)
def correctness(ctx: CheckContext) -> CheckResult:
    import copy

    import torch

    start = time.monotonic()
    gpu = ctx.backend in ("rocm", "cuda") and torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    opts = ctx.options
    steps = int(opts.get("compile.steps", STEPS.get(ctx.level, STEPS[3] if ctx.level > 3 else STEPS[2])))
    default_models = LEVEL_MODELS[3] if ctx.level >= 3 else LEVEL_MODELS[2]
    names = [n.strip() for n in str(opts.get("compile.models", ",".join(default_models))).split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or steps < 1:
        return result(
            Status.ERROR,
            f"compile.models {unknown} unknown" if unknown else f"compile.steps {steps} is not a positive count",
            f"use --set compile.models= a subset of {','.join(MODELS)} and --set compile.steps=N (N >= 1)",
        )
    spec = str(opts.get("compile.backend", "inductor"))
    # One mode at level 2 (each mode is a compile of every model); every mode at level 3.
    every_mode = ctx.level >= 3
    default_modes = ["default", *GRAPH_MODES] if gpu and every_mode else ["default"]
    modes = [m.strip() for m in str(opts.get("compile.modes", ",".join(default_modes))).split(",") if m.strip()]
    skipped = []
    if not gpu and ("compile.modes" not in opts or any(m in GRAPH_MODES for m in modes)):
        skipped.append("reduce-overhead not run: CUDA/HIP graphs need a GPU")
        modes = [m for m in modes if m not in GRAPH_MODES]
    elif gpu and not every_mode and "compile.modes" not in opts:
        skipped.append("reduce-overhead runs at level 3 (or --set compile.modes=default,reduce-overhead)")
    amp: Any = None
    if gpu and str(opts.get("compile.amp", "auto")) != "off":
        amp = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    tol = TOLERANCES["amp" if amp is not None else "fp32"]
    try:
        backend = _backend(spec)
    except (ImportError, AttributeError) as exc:
        return result(Status.ERROR, f"compile.backend {spec!r} cannot be loaded: {exc}",
                      "use inductor, or module:function naming a dynamo backend")
    runs: list[dict[str, Any]] = []
    for name in names:
        torch.manual_seed(0)
        base, make_batch = _models(torch)[name]()
        g = torch.Generator().manual_seed(1234)
        batches = [make_batch(i, g) for i in range(steps)]
        m_eager = copy.deepcopy(base).to(device)
        eager = _train(torch, m_eager, batches, step_fn=m_eager, device=device, amp=amp, fp64=False, graphs=False)
        m64 = copy.deepcopy(base).to(device).double()
        ref64: dict[str, list[float]] | None
        try:
            ref64 = _train(torch, m64, batches, step_fn=m64, device=device, amp=None, fp64=True, graphs=False)
        except RuntimeError as exc:  # an op without fp64 on this device: same() then has allclose only
            ref64, skipped = None, [*skipped, f"no fp64 reference on {device} ({str(exc).splitlines()[0][:80]})"]
        for mode in modes:
            torch._dynamo.reset()
            m_c = copy.deepcopy(base).to(device)
            kwargs: dict[str, Any] = {"backend": backend}
            if mode != "default":
                kwargs["mode"] = mode
            try:
                say_phase(f"training {name} under torch.compile (mode {mode}; compiles on the first step)")
                with _compile_threads(ctx.level):  # the backward compiles at the first step's backward
                    compiled_fn = torch.compile(m_c, **kwargs)
                    compiled = _train(torch, m_c, batches, step_fn=compiled_fn, device=device, amp=amp,
                                      fp64=False, graphs=mode in GRAPH_MODES)
            except Exception as exc:  # a compile error is this mode's finding
                text = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                runs.append({"model": name, "mode": mode, "error": f"torch.compile failed: {text}"})
                continue
            runs.append({"model": name, "mode": mode, "eager": eager, "compiled": compiled, "fp64": ref64})
    out = judge(runs, backend=spec, tol=tol, skipped=skipped)
    extra = {"device": device, "amp": str(amp).replace("torch.", "") if amp is not None else "off", "steps": steps}
    return result(out.status, out.message, out.remedy, figures=out.figures, backend=ctx.backend,
                  duration_s_inner=round(time.monotonic() - start, 2), **out.details, **extra)
