"""JAX in the checked Python: the plugin really loaded, the devices it sees, jit vs op by op,
matmul throughput and a collective (``rocmkit doctor --framework jax``).

Every check runs apart from the doctor's warm worker (``pristine``), which imports torch and
Triton that a jax venv need not have: each forks from a jax worker of its own (``worker="jax"``,
:func:`rocmkit.doctor.run.jax_server`), a fresh interpreter of the checked Python that imported
jax alone, once, with ``JAX_PLATFORMS`` set to the platform this node should use (``--isolation
spawn``, or where that worker cannot run: a fresh interpreter per check, as before). The
platform is pinned before jax is imported and the backend starts in each check (never in the
worker), so a plugin that cannot load fails loudly instead of jax falling back to the CPU with
a warning. jax is imported inside the functions, never at module level. The platform names, plugin packages,
arch lists and remedies come from ``matrices/jax.toml`` (read from the wheels themselves).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.preloaded import import_seconds
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status, exception_line
from rocmkit.kernels.metrics import median
from rocmkit.packages import canonical
from rocmkit.plan import Backend
from rocmkit.proc.result_file import say_phase

_PLUGIN = re.compile(r"^jax-(rocm|cuda)([0-9]+)-(plugin|pjrt)$")


# -- pure helpers (tested in-process) ---------------------------------------------------


def expected_platform(backend: str) -> str:
    """The jax platform this node should run on: ``rocm``, ``cuda`` or ``cpu``."""
    return backend if backend in ("rocm", "cuda") else "cpu"


def installed_jax(dists: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """jax, jaxlib, every jax GPU plugin and PJRT, and AMD's pip ROCm, by distribution name."""
    if dists is not None:
        return {k: v for k, v in dists.items() if v is not None}
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = str(canonical(str(dist.metadata["Name"] or "")))
        if name in ("jax", "jaxlib", "rocm", "rocm-sdk-core") or _PLUGIN.match(name):
            out[name] = dist.version
    return out


def _release(text: str) -> tuple[int, ...] | None:
    try:
        return Version(text).release
    except InvalidVersion:
        return None


def families(dists: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``{"rocm7": {"plugin": "0.10.2", "pjrt": "0.10.2"}}`` from installed distributions."""
    out: dict[str, dict[str, str]] = {}
    for name, version in dists.items():
        m = _PLUGIN.match(name)
        if m:
            out.setdefault(f"{m.group(1)}{m.group(2)}", {})[m.group(3)] = version
    return out


def version_problems(dists: Mapping[str, str]) -> list[str]:
    """jax, jaxlib, the plugin and its PJRT must be one release (a plugin may be a post-release)."""
    problems: list[str] = []
    jax, jaxlib = dists.get("jax"), dists.get("jaxlib")
    if jaxlib is None:
        problems.append("jaxlib is not installed")
    elif jax is not None and _release(jax) != _release(jaxlib):
        problems.append(f"jax is {jax} but jaxlib is {jaxlib}")
    for family, parts in sorted(families(dists).items()):
        plugin, pjrt = parts.get("plugin"), parts.get("pjrt")
        if plugin is None or pjrt is None:
            have, lack = ("pjrt", "plugin") if plugin is None else ("plugin", "pjrt")
            problems.append(f"jax-{family}-{have} {parts[have]} is installed without jax-{family}-{lack}")
            continue
        if plugin != pjrt:
            problems.append(f"jax-{family}-plugin is {plugin} but jax-{family}-pjrt is {pjrt}")
        if jaxlib is not None and _release(plugin) != _release(jaxlib):
            problems.append(f"jax-{family}-plugin is {plugin} but jaxlib is {jaxlib}")
    return problems


def rocm_major_problem(dists: Mapping[str, str], node_rocm: str | None) -> str | None:
    """A ROCm plugin built for another ROCm major than the one it will load: the pip ROCm in
    the venv (AMD's multi-arch route) if there is one, else the node's."""
    rocm_families = _rocm_families(dists)
    if not rocm_families:
        return None
    pip_rocm = dists.get("rocm") or dists.get("rocm-sdk-core")
    loads = pip_rocm or node_rocm
    if loads is None:
        return None
    where = f"the venv's pip ROCm {loads}" if pip_rocm else f"the node's ROCm {loads}"
    major = loads.split(".")[0]
    wrong = [f for f, rocm in rocm_families.items() if rocm != major]
    if wrong and len(wrong) == len(rocm_families):
        return f"jax-{wrong[0]}-plugin is built for ROCm {rocm_families[wrong[0]]}.x, but it will load {where}"
    return None


def _rocm_families(dists: Mapping[str, str]) -> dict[str, str]:
    """The installed ROCm plugin families and the ROCm major each is built for ({"rocm7": "7"})."""
    return {f: b.rocm for f in families(dists) if (b := Backend.read(f)) is not None and b.rocm is not None}


def pick_fix(text: str, backend: str) -> tuple[str, str]:
    """The known fix (name, remedy) that matches an error's text, from matrices/jax.toml."""
    from rocmkit.matrix.jaxdata import load_jax

    jd = load_jax()
    low = text.lower()
    if backend == "rocm":
        if "lld" in low:
            name = "lld"
        elif "bitcode" in low or "device lib" in low or "ocml" in low:
            name = "device-libs"
        elif "command buffer" in low or "command_buffer" in low:
            name = "command-buffer"
        elif re.search(r"lib[\w+-]+\.so", text) or "shared object" in low:
            name = "system-libraries"
        else:
            name = "platforms"
    else:
        name = "platforms-cuda" if backend == "cuda" else ""
    fix = jd.fix(name) if name else None
    if fix is None:
        return "", "reinstall with `rocmkit install --framework jax --venv V`"
    remedy = fix.remedy.replace("{rocm_path}", _rocm_path())
    if fix.libraries:
        missing = [lib for lib in fix.libraries if lib in text]
        if missing:
            remedy = f"provide {', '.join(missing)}: {remedy}"
    return fix.name, remedy


def _rocm_path() -> str:
    return os.environ.get("ROCM_PATH") or "/opt/rocm"


def _install_remedy() -> str:
    return f"rocmkit install --framework jax --venv {sys.prefix}"


# -- the checks ----------------------------------------------------------------------------


def _import_jax(platform: str) -> Any:
    """jax, imported with JAX_PLATFORMS pinned: here, in a fresh interpreter, or before the fork
    by the doctor's jax worker, started with the same JAX_PLATFORMS."""
    if "jax" in sys.modules and os.environ.get("JAX_PLATFORMS") != platform:
        raise RuntimeError(f"jax was imported before JAX_PLATFORMS was set to {platform}")
    os.environ["JAX_PLATFORMS"] = platform
    if "jax" not in sys.modules:
        say_phase("importing jax")  # seconds in a fresh interpreter: the terminal names the wait
    # Untyped on purpose: rocmkit never depends on jax, and its stubs (where installed) would make
    # rocmkit's types depend on the jax version the checked Python happens to have.
    return importlib.import_module("jax")


@check(
    "jax.import",
    level=1,
    description="jax, jaxlib, the plugin and its PJRT are one release, built for the ROCm it will load, "
    "and the plugin loads with JAX_PLATFORMS set (no silent CPU fall-back).",
    needs=("live",),
    worker="jax",
    timeout_s=180.0,
)
def jax_import(ctx: CheckContext) -> CheckResult:
    dists = installed_jax()
    if "jax" not in dists:
        return result(Status.FAIL, f"jax is not installed in {sys.executable}", _install_remedy())
    versions = {k: v for k, v in sorted(dists.items())}
    problems = version_problems(dists)
    major = rocm_major_problem(dists, ctx.machine.rocm.version)
    if major:
        problems.append(major)
    platform = expected_platform(ctx.backend)
    if platform != "cpu" and not any(f.startswith(platform) for f in families(dists)):
        return result(
            Status.FAIL,
            f"this node has {'AMD' if platform == 'rocm' else 'NVIDIA'} GPUs but no jax {platform} plugin is "
            "installed: jax would run on the CPU",
            _install_remedy(),
            versions=versions,
        )
    start = time.perf_counter()
    try:
        jax = _import_jax(platform)
        # In a fork of the jax worker the import was the worker's: its time, not ~0 s.
        imported = import_seconds("jax", time.perf_counter() - start)
        start = time.perf_counter()
        devices = jax.devices()
    except Exception as exc:
        fix, remedy = pick_fix(str(exc), platform)
        return result(
            Status.FAIL,
            f"the {platform} plugin did not load with JAX_PLATFORMS={platform}: {exception_line(exc)}",
            remedy,
            versions=versions,
            fix=fix,
        )
    seconds = imported + time.perf_counter() - start
    if problems:
        return result(Status.FAIL, "; ".join(problems), _install_remedy(), versions=versions)
    plugin = ", ".join(f"jax-{f}-plugin {p.get('plugin')}" for f, p in sorted(families(dists).items()))
    return result(
        Status.PASS,
        f"jax {dists['jax']}, jaxlib {dists.get('jaxlib')}" + (f", {plugin}" if plugin else "")
        + f": platform {platform} loaded ({len(devices)} device(s), import {seconds:.1f} s)",
        versions=versions,
        import_s=round(seconds, 3),
    )


def _gpus(ctx: CheckContext, platform: str) -> list[Any]:
    vendor = "amd" if platform == "rocm" else "nvidia"
    return [g for g in ctx.machine.gpus if g.vendor == vendor and g.visible]


@check(
    "jax.devices",
    level=1,
    description="jax.devices() reports the expected platform and every visible GPU; each AMD GPU's arch "
    "is among the plugin's code objects (#7).",
    needs=("jax", "live"),
    worker="jax",
    timeout_s=180.0,
)
def jax_devices(ctx: CheckContext) -> CheckResult:
    platform = expected_platform(ctx.backend)
    jax = _import_jax(platform)
    devices = jax.devices()
    found = sorted({d.platform for d in devices})
    if found != [platform]:
        return result(Status.FAIL, f"jax.devices() reports {found}, expected {platform}", pick_fix("", platform)[1])
    if platform == "cpu":
        return result(Status.PASS, f"cpu: {len(devices)} device(s)", count=len(devices))
    gpus = _gpus(ctx, platform)
    kinds = [str(getattr(d, "device_kind", "?")) for d in devices]
    if len(devices) < len(gpus):
        return result(
            Status.FAIL,
            f"jax sees {len(devices)} of the {len(gpus)} visible GPUs ({', '.join(kinds)})",
            "check HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES and `rocmkit doctor --only env`",
            kinds=kinds,
        )
    problems: list[str] = []
    if platform == "rocm":
        problems = _arch_problems(devices, gpus)
    integrated = [g for g in gpus if g.integrated]
    status = Status.FAIL if problems else Status.WARN if integrated and len(gpus) > len(integrated) else Status.PASS
    message = f"{platform}: {len(devices)} device(s): {', '.join(kinds)}"
    if problems:
        message = "; ".join(problems)
    elif status is Status.WARN:
        message += "; an integrated GPU is visible beside a discrete one (hide it with HIP_VISIBLE_DEVICES)"
    return result(status, message, None if status is Status.PASS else _arch_remedy(), kinds=kinds)


def _arch_problems(devices: list[Any], gpus: list[Any]) -> list[str]:
    from rocmkit.matrix.jaxdata import load_jax

    dists = installed_jax()
    fams = list(_rocm_families(dists))
    if not fams:
        return []
    plugin = dists.get(f"jax-{fams[0]}-plugin", "0")
    read = load_jax().archs_for(fams[0], plugin)
    if read is None:
        return []
    problems = []
    for i, d in enumerate(devices):
        arch = str(getattr(d, "compute_capability", "") or "")
        if not arch.startswith("gfx") and i < len(gpus):
            arch = gpus[i].arch or ""  # detection's arch, in the same order
        base = arch.split(":")[0]
        if base and base not in read.archs:
            problems.append(f"device {i} is {base}, which jax-{fams[0]}-plugin {plugin} carries no code for")
    return problems


def _arch_remedy() -> str:
    return "hide that GPU with HIP_VISIBLE_DEVICES, or pick a plugin release that lists its arch (`rocmkit resolve --framework jax`)"


# The small workloads jit is compared on: (name, builder). A builder returns (function, args).
def _workloads(jax: Any, size: int) -> list[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    jnp = jax.numpy
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    x = jax.random.normal(k1, (size, size), dtype=jnp.float32)
    w1 = jax.random.normal(k2, (size, 4 * size), dtype=jnp.float32) / size**0.5
    w2 = jax.random.normal(k3, (4 * size, size), dtype=jnp.float32) / (4 * size) ** 0.5
    b1 = jnp.zeros((4 * size,), jnp.float32)
    g = jax.random.normal(k4, (size,), dtype=jnp.float32)

    def mlp(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        h = x @ w1 + b1
        h = h * 0.5 * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # gelu, op by op
        return x + h @ w2

    def softmax(x: Any) -> Any:
        e = jnp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def layer_norm(x: Any, g: Any) -> Any:
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g

    return [("mlp", mlp, (x, w1, b1, w2)), ("softmax", softmax, (x,)), ("layer_norm", layer_norm, (x, g))]


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    out = fn()
    out.block_until_ready()
    return (time.perf_counter() - start) * 1000.0


@check(
    "jax.jit",
    level=1,
    description="An MLP block, softmax and layer norm run op by op (jax.disable_jit) and jitted: results "
    "allclose, speedup reported from interleaved medians.",
    needs=("jax", "live"),
    worker="jax",
    exclusive=True,
    timeout_s=300.0,
    options={"jax_jit_size": "rows and columns of the jit workloads (default 256 on a GPU, 128 on a CPU)",
             "jax_jit_repeats": "interleaved op-by-op / jitted pairs timed (default 9)"},
)
def jax_jit(ctx: CheckContext) -> CheckResult:
    import numpy as np

    platform = expected_platform(ctx.backend)
    jax = _import_jax(platform)
    size = int(ctx.options.get("jax_jit_size", 256 if platform != "cpu" else 128))
    repeats = int(ctx.options.get("jax_jit_repeats", 9))
    figures: list[Figure] = []
    bad: list[str] = []
    speedups: dict[str, float] = {}
    for name, fn, args in _workloads(jax, size):
        jitted = jax.jit(fn)
        say_phase(f"compiling {name} with jax.jit")
        jitted(*args).block_until_ready()  # compile
        say_phase(f"timing {name}: op by op against jitted")
        with jax.disable_jit():
            eager = fn(*args)
            eager.block_until_ready()
        want, got = np.asarray(eager), np.asarray(jitted(*args))
        # fp32 on both sides; XLA fuses and reorders reductions, so not bit-equal.
        if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
            bad.append(f"{name}: jitted differs from op by op (max |diff| {float(np.max(np.abs(got - want))):.3g})")
        eager_ms: list[float] = []
        jit_ms: list[float] = []
        for _ in range(repeats):  # interleaved, so drift (clocks, other load) hits both alike
            with jax.disable_jit():
                eager_ms.append(_timed(functools.partial(fn, *args)))
            jit_ms.append(_timed(functools.partial(jitted, *args)))
        e, j = median(eager_ms), median(jit_ms)
        speedups[name] = e / j if j > 0 else float("inf")
        figures.append(Figure(name=f"{name}.speedup", value=round(speedups[name], 3), unit="x"))
        figures.append(Figure(name=f"{name}.jit_ms", value=round(j, 4), unit="ms", reference=round(e, 4)))
    shown = ", ".join(f"{n} {s:.1f}x" for n, s in speedups.items())
    if bad:
        return result(Status.FAIL, "; ".join(bad), pick_fix("command buffer", platform)[1], figures=tuple(figures))
    return result(
        Status.PASS,
        f"jit vs op by op on {platform} ({size}x{size}, median of {repeats}): {shown}; results allclose",
        figures=tuple(figures),
        speedups={n: round(s, 3) for n, s in speedups.items()},
    )


@check(
    "jax.matmul",
    level=2,
    description="bf16 and fp16 matmul throughput under jit, correct against an fp32 reference; GPU figures "
    "are held to the same per-device floors as torch's GEMM.",
    needs=("jax", "live"),
    worker="jax",
    exclusive=True,
    timeout_s=300.0,
    options={"jax_matmul_size": "n of the n x n matmul (default 4096 on a GPU, 512 on a CPU)"},
)
def jax_matmul(ctx: CheckContext) -> CheckResult:
    import numpy as np

    platform = expected_platform(ctx.backend)
    jax = _import_jax(platform)
    jnp = jax.numpy
    n = int(ctx.options.get("jax_matmul_size", 4096 if platform != "cpu" else 512))
    figures: list[Figure] = []
    bad: list[str] = []
    for dtype in ("bfloat16", "float16"):
        k1, k2 = jax.random.split(jax.random.PRNGKey(1))
        a = jax.random.normal(k1, (n, n), dtype=jnp.float32).astype(dtype)
        b = jax.random.normal(k2, (n, n), dtype=jnp.float32).astype(dtype)
        mm = jax.jit(lambda a, b: a @ b)
        out = mm(a, b)
        out.block_until_ready()
        rows = min(n, 64)  # the reference: fp32 over the same rounded inputs, a slice of rows
        ref = np.asarray(a[:rows], np.float32) @ np.asarray(b, np.float32)
        got = np.asarray(out[:rows], np.float32)
        rel = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
        if rel > 2e-2:
            bad.append(f"{dtype}: relative error {rel:.3g} against fp32")
        ms = median([_timed(functools.partial(mm, a, b)) for _ in range(10)])
        tflops = 2.0 * n**3 / (ms / 1000.0) / 1e12
        short = "bf16" if dtype == "bfloat16" else "fp16"
        figures.append(Figure(name=f"matmul.{short}", value=round(tflops, 3), unit="TFLOP/s"))
    shown = ", ".join(f"{f.name.split('.')[1]} {f.value:.3g} TFLOP/s" for f in figures)
    if bad:
        return result(Status.FAIL, "; ".join(bad), pick_fix("", platform)[1], figures=tuple(figures))
    return result(Status.PASS, f"{n}x{n} on {platform}: {shown}", figures=tuple(figures), size=n)


@check(
    "jax.psum",
    level=3,
    description="A psum across every local device (RCCL/NCCL through XLA) gives the exact sum.",
    needs=("jax", "live"),
    worker="jax",
    exclusive=True,
    timeout_s=300.0,
)
def jax_psum(ctx: CheckContext) -> CheckResult:
    platform = expected_platform(ctx.backend)
    jax = _import_jax(platform)
    jnp = jax.numpy
    devices = jax.local_devices()
    n = len(devices)
    if n < 2:
        return result(Status.SKIP, f"one {platform} device: a collective needs two or more", None, devices=n)
    sharding = importlib.import_module("jax.sharding")
    Mesh, PartitionSpec = sharding.Mesh, sharding.PartitionSpec
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:  # older jax
        shard_map = importlib.import_module("jax.experimental.shard_map").shard_map
    mesh = Mesh(devices, ("i",))
    x = jnp.arange(n * 1024, dtype=jnp.float32).reshape(n, 1024)
    f = jax.jit(shard_map(lambda v: jax.lax.psum(v, "i"), mesh=mesh, in_specs=PartitionSpec("i"),
                          out_specs=PartitionSpec()))
    start = time.perf_counter()
    got = f(x)
    got.block_until_ready()
    ms = (time.perf_counter() - start) * 1000.0
    want = x.sum(axis=0, keepdims=True)
    if not bool(jnp.array_equal(got, want)):
        return result(Status.FAIL, f"psum over {n} devices gave a wrong sum", pick_fix("", platform)[1])
    return result(Status.PASS, f"psum over {n} {platform} devices: exact ({ms:.1f} ms with compile)", devices=n)
