"""Time and check one model the way PyTorch's dynamo benchmark harness does.

Method (``benchmarks/dynamo/common.py`` and ``torch/_dynamo/utils.py::same``,
summarised in docs/bench.md):

- warm-up: ``warmup`` eager calls, then the first compiled call (its time is
  the compile latency), then ``warmup - 1`` more compiled calls;
- timing: ``repeat`` samples, eager and compiled **interleaved** (so
  frequency scaling and load changes hit both), medians of each,
  ``speedup = median eager / median compiled``; the quartiles of the paired
  ratios and of each timing are kept as the spread;
- accuracy: compiled against eager with ``allclose`` at the suite's
  tolerance; if that fails, the fp64 rule (``rmse(compiled, fp64) <=
  multiplier * rmse(eager, fp64) + tol / 10``); with ``cosine``, a cosine
  similarity of at least 0.99 also passes.

A tiny model on a CPU runs in tens of microseconds, below what one
``perf_counter`` pair resolves well, so one timing sample runs the model
``calls_per_sample`` times, chosen from the eager warm-up so a sample lasts at
least ``min_sample_ms`` (the same count for eager and compiled).

Runs inside the child process only: it imports torch.
"""

from __future__ import annotations

import copy
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

from rocmkit.bench.models import Impl, ModelSpec
from rocmkit.bench.results import Accuracy, ModelResult, ModelStatus, Spread
from rocmkit.proc.result_file import say_phase

Mode = Literal["infer", "train"]
Dtype = Literal["fp32", "bf16", "fp16"]

# Tolerances of PyTorch's harness (huggingface.py get_tolerance_and_cosine_flag,
# timm_models.py): inference 1e-3, training 1e-2. Under AMP rocmkit widens to
# 1e-2 / 2e-2, the harness's "higher" lists, as reduced precision needs.
TOLERANCES: dict[tuple[str, bool], float] = {
    ("fp32", False): 1e-3,
    ("fp32", True): 1e-2,
    ("amp", False): 1e-2,
    ("amp", True): 2e-2,
}
COSINE_MIN = 0.99


@dataclass(frozen=True, kw_only=True)
class HarnessOptions:
    mode: Mode = "infer"
    dtype: Dtype = "fp32"
    size: str = "tiny"
    repeat: int = 10
    warmup: int = 3
    device: str = "cpu"  # "cpu" or "cuda" (ROCm builds of torch use "cuda" too)
    impl: Impl = "auto"
    cosine: bool = False
    threads: int | None = None  # CPU threads for torch (None: torch's default)
    # torch.compile's mode: "default", "reduce-overhead" (CUDA/HIP graphs, as PyTorch's GPU
    # dashboard runs inductor), "max-autotune", "max-autotune-no-cudagraphs".
    compile_mode: str = "default"
    min_sample_ms: float = 2.0
    max_calls_per_sample: int = 200
    # Test and diagnosis hook: added to the compiled outputs before the accuracy check.
    perturb: float = 0.0


def _sync(device: str) -> Callable[[], None]:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.synchronize
    return lambda: None


class _PeakRss:
    """Samples this process's RSS in a thread; peak growth over the baseline, in MB."""

    def __init__(self, interval_s: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self._interval = interval_s
        self.baseline: int = self._proc.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)

    @property
    def growth_mb(self) -> float:
        return float(self.peak - self.baseline) / 2**20


@contextmanager
def _peak_memory(device: str, out: dict[str, float]) -> Iterator[None]:
    """Peak memory of the block: allocator peak on a GPU, RSS growth on the CPU."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        yield
        torch.cuda.synchronize()
        out["mb"] = (torch.cuda.max_memory_allocated() - base) / 2**20
        return
    with _PeakRss() as rss:
        yield
    out["mb"] = rss.growth_mb


def _autocast(device: str, dtype: Dtype) -> Callable[[], AbstractContextManager[Any]]:
    import torch

    if dtype == "fp32":
        return nullcontext
    torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    return lambda: torch.autocast(device_type=device_type, dtype=torch_dtype)


def _reduce_to_loss(out: Any) -> Any:
    """The harness's ``reduce_to_scalar_loss``: the mean of every output tensor."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.float().sum() / out.numel()
    if isinstance(out, (list, tuple)):
        return sum(_reduce_to_loss(o) for o in out) / len(out)
    if isinstance(out, dict):
        return sum(_reduce_to_loss(o) for o in out.values()) / len(out)
    raise TypeError(f"cannot make a loss from {type(out).__name__}")


def _flatten(out: Any) -> list[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _flatten(out[k])]
    return []


class _Runner:
    """One model copy and how to call it once (an inference or a training step)."""

    def __init__(self, module: Any, inputs: tuple[Any, ...], opts: HarnessOptions, loss: str = "mean") -> None:
        import torch

        self.loss = loss
        self.module = module
        self.inputs = inputs
        self.opts = opts
        self.autocast = _autocast(opts.device, opts.dtype)
        self.optimizer: Any = None
        self.scaler: Any = None
        if opts.mode == "train":
            # SGD as in PyTorch's harness: its update adds no noise of its own to compare.
            self.optimizer = torch.optim.SGD(module.parameters(), lr=0.01)
            if opts.dtype == "fp16":
                self.scaler = torch.amp.GradScaler("cuda" if opts.device.startswith("cuda") else "cpu")

    def __call__(self) -> Any:
        import torch

        if self.opts.mode == "infer":
            with torch.no_grad(), self.autocast():
                return self.module(*self.inputs)
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            out = self.module(*self.inputs)
            # "first": the model computed its own loss from the labels (PyTorch's compute_loss: pred[0]).
            loss = out[0] if self.loss == "first" else _reduce_to_loss(out)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        return out, loss

    def results(self, out: Any) -> list[tuple[str, Any]]:
        """What accuracy compares: outputs, and in training the loss and every gradient."""
        if self.opts.mode == "infer":
            return [("output", t) for t in _flatten(out)]
        pred, loss = out
        named = [("output", t) for t in _flatten(pred)] + [("loss", loss)]
        for i, p in enumerate(self.module.parameters()):
            if p.grad is not None:
                named.append((f"grad[{i}]", p.grad))
        return named


def _rmse(a: Any, b: Any) -> float:
    import torch

    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


def compare(
    ref: Any, res: Any, fp64: Any | None, *, tol: float, cosine: bool
) -> tuple[bool, dict[str, float | str]]:
    """``torch._dynamo.utils.same`` for one tensor: allclose, then the fp64 RMSE rule, or cosine."""
    import torch

    if not ref.is_floating_point():
        ok = bool(torch.equal(ref, res))
        return ok, {"method": "exact" if ok else "failed:exact"}
    ref32, res32 = ref.float(), res.float()
    info: dict[str, float | str] = {
        "max_abs_diff": float((ref32 - res32).abs().max()) if ref.numel() else 0.0
    }
    if torch.allclose(ref32, res32, atol=tol, rtol=tol, equal_nan=True):
        info["method"] = "allclose"
        return True, info
    if cosine:
        cos = float(torch.nn.functional.cosine_similarity(ref32.flatten(), res32.flatten(), dim=0, eps=1e-6))
        info["cosine"] = cos
        info["method"] = "cosine" if cos >= COSINE_MIN else "failed:cosine"
        return cos >= COSINE_MIN, info
    if fp64 is None:
        info["method"] = "failed:allclose"
        return False, info
    # The multiplier the harness uses: 2, or 3 for reduced precision, small outputs or loose tolerances.
    multiplier = 2.0
    if res.dtype in (torch.bfloat16, torch.float16) or res.numel() < 1000 or tol >= 2e-2:
        multiplier = 3.0
    res_err, ref_err = _rmse(res, fp64), _rmse(ref, fp64)
    info["res_rmse"], info["ref_rmse"] = res_err, ref_err
    ok = res_err <= multiplier * ref_err + tol / 10.0
    info["method"] = "fp64_rmse" if ok else "failed:fp64_rmse"
    return ok, info


def check_accuracy(
    ref: list[tuple[str, Any]],
    res: list[tuple[str, Any]],
    fp64: list[tuple[str, Any]] | None,
    *,
    tol: float,
    cosine: bool,
) -> Accuracy:
    if len(ref) != len(res) or (fp64 is not None and len(fp64) != len(ref)):
        return Accuracy(ok=False, method="failed:structure", tolerance=tol, worst="outputs differ in number")
    methods: set[str] = set()
    worst_name, worst_info = "", {}
    worst_diff = -1.0
    for i, ((name, a), (_, b)) in enumerate(zip(ref, res, strict=True)):
        if a.shape != b.shape:
            return Accuracy(ok=False, method="failed:shape", tolerance=tol, worst=name)
        ok, info = compare(a, b, fp64[i][1] if fp64 is not None else None, tol=tol, cosine=cosine)
        if not ok:
            return _accuracy(False, str(info["method"]), tol, name, info)
        methods.add(str(info["method"]))
        diff = float(info.get("max_abs_diff", 0.0))
        if diff > worst_diff:
            worst_name, worst_info, worst_diff = name, info, diff
    # Name the loosest rule that was needed, so a pass "by fp64" is visible.
    for method in ("cosine", "fp64_rmse", "allclose", "exact"):
        if method in methods:
            return _accuracy(True, method, tol, worst_name, worst_info)
    return Accuracy(ok=True, method="allclose", tolerance=tol)


def _accuracy(ok: bool, method: str, tol: float, name: str, info: dict[str, float | str]) -> Accuracy:
    def num(key: str) -> float | None:
        v = info.get(key)
        return float(v) if isinstance(v, (int, float)) else None

    return Accuracy(
        ok=ok,
        method=method,
        tolerance=tol,
        max_abs_diff=num("max_abs_diff"),
        res_rmse=num("res_rmse"),
        ref_rmse=num("ref_rmse"),
        cosine=num("cosine"),
        worst=name,
    )


def _to(obj: Any, device: str, dtype: Any | None = None) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        if dtype is not None and obj.is_floating_point():
            return obj.to(device=device, dtype=dtype)
        return obj.to(device)
    return obj


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def _spread(values_ms: list[float]) -> Spread:
    q1, q3 = _quartiles(values_ms)
    return Spread(q1=q1, q3=q3, min=min(values_ms), max=max(values_ms))


def _timed(fn: Callable[[], Any], calls: int, sync: Callable[[], None]) -> float:
    """Seconds per call over ``calls`` back-to-back calls."""
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def _error_text(exc: BaseException) -> str:
    """The exception's first line, and its root cause's: dynamo wraps the error that matters."""
    # The full traceback goes to stderr, which the parent keeps for rows that did not pass.
    traceback.print_exception(exc, file=sys.stderr)
    parts = [exc]
    while len(parts) < 10:
        nxt = parts[-1].__cause__ or parts[-1].__context__
        if nxt is None:
            break
        parts.append(nxt)
    texts = []
    for e in (parts[0], parts[-1]) if len(parts) > 1 else (parts[0],):
        lines = str(e).strip().splitlines()
        texts.append(f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": "))
    return " <- ".join(dict.fromkeys(texts))[:400]


def run_model(spec: ModelSpec, opts: HarnessOptions) -> ModelResult:
    """Build, warm up, compile, check and time one model. Never raises for the model's sake."""
    start = time.monotonic()
    base = ModelResult(name=spec.name, status="error", suite=spec.suite, repeat=opts.repeat)

    def done(status: ModelStatus, message: str = "", **kw: Any) -> ModelResult:
        return replace(base, status=status, message=message, duration_s=time.monotonic() - start, **kw)

    try:
        import torch

        if opts.threads:
            torch.set_num_threads(opts.threads)
        torch.manual_seed(0)
        say_phase("building the model")  # the parent's status line on a terminal shows each phase
        cfg = spec.sizes.get(opts.size) or next(iter(spec.sizes.values()))
        built = spec.build(cfg, opts.impl)
        module = built.module.to(opts.device)
        module.train(opts.mode == "train")
        inputs = tuple(_to(x, opts.device) for x in built.inputs)
        base = replace(
            base,
            impl=built.impl,
            batch_size=built.batch_size,
            params=sum(p.numel() for p in module.parameters()),
            memory_kind="cuda_max_allocated" if opts.device.startswith("cuda") else "rss_growth",
        )
    except Exception as exc:
        return done("error", f"building the model failed: {_error_text(exc)}")

    sync = _sync(opts.device)
    # Training mutates weights: eager and compiled each get their own copy, from the same start.
    fp64_module = copy.deepcopy(module).double()
    compiled_module = copy.deepcopy(module) if opts.mode == "train" else module
    eager = _Runner(module, inputs, opts, built.loss)
    try:
        mem: dict[str, float] = {}
        say_phase("running eager")
        with _peak_memory(opts.device, mem):
            eager_out = eager()
            ref = [(n, t.detach().clone()) for n, t in eager.results(eager_out)]
            warm: list[float] = []
            for _ in range(max(1, opts.warmup)):
                warm.append(_timed(eager, 1, sync))
        eager_peak = mem.get("mb")
    except Exception as exc:
        return done("error", f"eager run failed: {_error_text(exc)}")

    fp64: list[tuple[str, Any]] | None = None
    if not opts.cosine:
        say_phase("computing the fp64 reference")
        try:
            fp64_opts = replace(opts, dtype="fp32")
            fp64_inputs = tuple(_to(x, opts.device, torch.float64) for x in inputs)
            r64 = _Runner(fp64_module, fp64_inputs, fp64_opts, built.loss)
            fp64 = [(n, t.detach().clone()) for n, t in r64.results(r64())]
        except Exception:  # some kernels have no fp64 version on some devices: allclose/cosine only
            fp64 = None
    del fp64_module

    try:
        mode = None if opts.compile_mode == "default" else opts.compile_mode
        say_phase("compiling (torch.compile's first call)")
        compiled = _Runner(torch.compile(compiled_module, mode=mode), inputs, opts, built.loss)
        mem = {}
        with _peak_memory(opts.device, mem):
            sync()
            t0 = time.perf_counter()
            compiled_out = compiled()
            sync()
            compile_s = time.perf_counter() - t0
            res = [(n, t.detach().clone()) for n, t in compiled.results(compiled_out)]
            say_phase("warming up the compiled model")
            for _ in range(max(0, opts.warmup - 1)):
                compiled()
        compiled_peak = mem.get("mb")
    except Exception as exc:
        return done("compile_error", _error_text(exc), eager_peak_mb=eager_peak)

    if opts.perturb:
        res = [(n, t + opts.perturb) if n == "output" and t.is_floating_point() else (n, t) for n, t in res]
    amp = "fp32" if opts.dtype == "fp32" else "amp"
    tol = TOLERANCES[(amp, opts.mode == "train")]
    accuracy = check_accuracy(ref, res, fp64, tol=tol, cosine=opts.cosine)
    common: dict[str, Any] = {
        "compile_s": compile_s,
        "eager_peak_mb": eager_peak,
        "compiled_peak_mb": compiled_peak,
        "accuracy": accuracy,
    }
    if not accuracy.ok:
        where = f" in {accuracy.worst}" if accuracy.worst else ""
        diff = f", max |diff| {accuracy.max_abs_diff:.3g}" if accuracy.max_abs_diff is not None else ""
        return done(
            "fail_accuracy", f"compiled output differs from eager{where} ({accuracy.method}{diff})", **common
        )

    calls = max(1, min(opts.max_calls_per_sample, round(opts.min_sample_ms / 1000 / max(min(warm), 1e-9))))
    eager_s: list[float] = []
    compiled_s: list[float] = []
    say_phase(f"timing eager against compiled ({opts.repeat} rounds)")
    try:
        for _ in range(opts.repeat):
            eager_s.append(_timed(eager, calls, sync))
            compiled_s.append(_timed(compiled, calls, sync))
    except Exception as exc:  # a recompilation that fails, or an out-of-memory in the loop
        return done("compile_error", f"during timing: {_error_text(exc)}", **common)

    eager_ms = [t * 1000 for t in eager_s]
    compiled_ms = [t * 1000 for t in compiled_s]
    ratios = [e / c for e, c in zip(eager_s, compiled_s, strict=True) if c > 0]
    q1, q3 = _quartiles(ratios)
    med_e, med_c = statistics.median(eager_ms), statistics.median(compiled_ms)
    return done(
        "pass",
        speedup=med_e / med_c if med_c > 0 else None,
        speedup_q1=q1,
        speedup_q3=q3,
        eager_ms=med_e,
        compiled_ms=med_c,
        eager_spread=_spread(eager_ms),
        compiled_spread=_spread(compiled_ms),
        calls_per_sample=calls,
        **common,
    )
