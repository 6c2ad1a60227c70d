"""torch and Triton in this Python: installed, matching, importable, seeing the GPUs.

``triton.packages`` and ``torch.amdsmi`` read package metadata only (level 0: no
import, no child): the checked Python's facts (``ctx.python``, from its probe) or, for
rocmkit's own Python, this process's metadata.
The others import torch or triton, so they run isolated, in a child process
each: an import that aborts (hipErrorNoBinaryForGpu) or hangs is that check's
result. torch and triton are imported inside the functions, never at module
level: rocmkit itself never depends on them.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import time
import warnings
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from rocmkit.arch import base_arch, cc_of, override_to_gfx, parse_cc, runs_on, sm_name, wheel_archs
from rocmkit.doctor import preloaded
from rocmkit.doctor.absent import install_torch_remedy, pip_index
from rocmkit.doctor.checks import archs
from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status, exception_line
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.pyenv import this_python, triton_pin


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _installed(ctx: CheckContext, dist: str) -> str | None:
    """The version of ``dist`` in the checked Python."""
    if ctx.python is not None:
        return ctx.python.dists.get(dist)
    return _version(dist)


def _torch_requires(ctx: CheckContext) -> list[str] | None:
    """torch's Requires-Dist in the checked Python."""
    if ctx.python is not None:
        return list(ctx.python.torch_requires)
    return importlib.metadata.requires("torch")


@check(
    "triton.packages",
    level=0,
    description="Exactly one Triton distribution, at the version torch pins (#19, #20).",
    needs=("live",),
    # The checked Python's metadata, read here: a child (or the warm worker, which
    # imports torch) would cost more than the check.
    python_facts=True,
    timeout_s=30.0,
)
def triton_packages(ctx: CheckContext) -> CheckResult:
    installed = {d: v for d in TRITON_DISTRIBUTIONS if (v := _installed(ctx, d)) is not None}
    torch_version = _installed(ctx, "torch")
    listing = ", ".join(f"{d}=={v}" for d, v in installed.items())
    if len(installed) > 1:
        keep = None
        if torch_version is not None:
            pin = triton_pin(_torch_requires(ctx))
            keep = str(pin) if pin else None
        others = " ".join(
            d for d in installed if keep is None or canonicalize_name(Requirement(keep).name) != d
        )
        remedy = f"python -m pip uninstall -y {others}" + (
            f" && python -m pip install --force-reinstall '{keep}'{pip_index(ctx)}" if keep else ""
        )
        return result(
            Status.FAIL,
            f"{len(installed)} Triton distributions installed ({listing}): they overwrite each other's `triton` package",
            remedy,
            installed=installed,
        )
    if torch_version is None:
        if installed:
            return result(Status.PASS, f"{listing} installed (torch is not)", installed=installed)
        # ctx.python is the Python to fix; None: this one (rocmkit's own, or a child in it).
        fix = install_torch_remedy(ctx.python or this_python())
        return result(Status.SKIP, "neither torch nor Triton is installed", fix, missing="torch")
    pin = triton_pin(_torch_requires(ctx))
    if pin is None:
        if installed:
            return result(
                Status.PASS,
                f"torch {torch_version} pins no Triton; {listing} installed",
                installed=installed,
            )
        if ctx.backend != "cpu":
            return result(
                Status.WARN,
                f"torch {torch_version} pins no Triton and none is installed: torch.compile cannot generate GPU kernels",
                "install the Triton build matching torch (`rocmkit resolve` names it)",
            )
        return result(Status.PASS, f"torch {torch_version} pins no Triton (not needed on the CPU)")
    want = canonicalize_name(pin.name)
    have = installed.get(want)
    fix = f"python -m pip install --force-reinstall '{pin}'{pip_index(ctx)}"
    if have is None:
        found = f"; found {listing} instead" if installed else ""
        return result(
            Status.FAIL,
            f"torch {torch_version} requires {pin}, which is not installed{found}: torch.compile fails with TritonMissing",
            (f"python -m pip uninstall -y {' '.join(installed)} && " if installed else "") + fix,
            pin=str(pin),
            installed=installed,
        )
    try:
        fits = pin.specifier.contains(Version(have), prereleases=True)
    except ValueError:  # InvalidVersion, or more digits than int() takes
        fits = False
    if not fits:
        return result(
            Status.FAIL,
            f"torch {torch_version} requires {pin} but {want} {have} is installed: expect ImportError from triton (e.g. `triton_key`)",
            fix,
            pin=str(pin),
            installed=installed,
        )
    return result(
        Status.PASS,
        f"{want} {have}, as torch {torch_version} pins ({pin})",
        pin=str(pin),
        installed=installed,
    )


@check(
    "torch.amdsmi",
    level=0,
    description="The pip `amdsmi` package does not clash with the libamd_smi torch loads (#12).",
    needs=("live",),
    # As triton.packages: the checked Python's installed distributions, read here.
    python_facts=True,
    timeout_s=30.0,
)
def amdsmi_package(ctx: CheckContext) -> CheckResult:
    return amdsmi_result(
        ctx,
        amdsmi=_installed(ctx, "amdsmi"),
        torch=_installed(ctx, "torch"),
        rocm_sdk=_installed(ctx, "rocm-sdk-core"),
    )


def _is_rocm_torch(torch_version: str) -> bool:
    try:
        return "rocm" in (Version(torch_version).local or "")
    except ValueError:  # InvalidVersion, or more digits than int() takes
        return "rocm" in torch_version


def amdsmi_result(
    ctx: CheckContext, *, amdsmi: str | None, torch: str | None, rocm_sdk: str | None
) -> CheckResult:
    """torch on ROCm counts GPUs through the `amdsmi` Python package when it imports.
    A pip `amdsmi` whose libamd_smi differs from the one torch loaded first makes
    `amdsmi_get_processor_handles()` return nothing, so `torch.cuda.device_count()`
    is 0 while HIP sees the GPU (pytorch#186516)."""
    if torch is None:
        return result(Status.SKIP, "torch is not installed")
    if amdsmi is None:
        return result(Status.PASS, "the `amdsmi` package is not installed: no second libamd_smi")
    if not _is_rocm_torch(torch) and rocm_sdk is None:
        return result(
            Status.PASS, f"amdsmi {amdsmi} is installed, but torch {torch} is not a ROCm build"
        )
    fix = (
        "`python -m pip uninstall -y amdsmi` (torch then counts GPUs through HIP), then check "
        '`python -c "import torch; print(torch.cuda.device_count())"`'
    )
    details: dict[str, Any] = {"amdsmi": amdsmi, "torch": torch, "rocm_sdk_core": rocm_sdk}
    if rocm_sdk is not None:
        # The ROCm SDK wheels bundle libamd_smi.so.<N> in _rocm_sdk_core; torch's
        # loader hook cannot tell it and the package's libamd_smi.so apart.
        return result(
            Status.FAIL,
            f"amdsmi {amdsmi} is installed next to torch {torch}, whose ROCm SDK wheels (rocm-sdk-core "
            f"{rocm_sdk}) bundle another libamd_smi: torch.cuda.device_count() returns 0",
            fix,
            **details,
        )
    rocm = ctx.machine.rocm.version
    wanted = _major_minor(rocm)
    if wanted is not None and wanted == _major_minor(amdsmi):
        return result(
            Status.PASS,
            f"amdsmi {amdsmi} matches the ROCm {rocm} installed here",
            rocm=rocm,
            **details,
        )
    against = f"is not for the ROCm {rocm} installed here" if rocm else "matches no detected ROCm install"
    return result(
        Status.WARN,
        f"amdsmi {amdsmi} is installed for torch {torch} but {against}: two libamd_smi "
        "builds in one process can make torch.cuda.device_count() return 0",
        fix + "; or install the amdsmi matching your ROCm from /opt/rocm/share/amd_smi",
        rocm=rocm,
        **details,
    )


def _loaded_libraries(fragment: str) -> list[str]:
    """Shared objects whose path contains ``fragment`` in this process (#21)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split()[-1] for line in fh if fragment in line and "/" in line}
    except OSError:
        return []
    return sorted({os.path.realpath(p) for p in paths})


@check(
    "torch.import",
    level=1,
    description="torch imports, and which HIP runtime library it loaded (#21).",
    needs=("torch",),
    isolated=True,
    timeout_s=120.0,
)
def torch_import(ctx: CheckContext) -> CheckResult:
    start = time.perf_counter()
    try:
        import torch
    except Exception as exc:  # an import failure is the finding, not a crash of the check
        text = exception_line(exc)
        remedy = "reinstall torch for this machine: `rocmkit install` (it picks the wheel and index)"
        if "libamdhip64" in text or "libhsa" in text or "libroc" in text:
            remedy = "the ROCm libraries this torch build links are missing: install torch from the ROCm index (`rocmkit install`)"
        return result(Status.FAIL, f"import torch failed: {text}", remedy)
    # In a fork of the doctor's worker torch is already loaded: report what loading it took there.
    took = preloaded.import_seconds("torch", time.perf_counter() - start)
    versions = {
        "torch": str(torch.__version__),
        "hip": getattr(torch.version, "hip", None),
        "cuda": getattr(torch.version, "cuda", None),
    }
    hip_libs = _loaded_libraries("libamdhip64")
    kind = "ROCm" if versions["hip"] else ("CUDA" if versions["cuda"] else "CPU")
    fig = (Figure(name="import_time", value=round(took, 3), unit="s"),)
    details: dict[str, Any] = {
        "versions": versions,
        "libamdhip64": hip_libs,
        "torch_file": str(torch.__file__),
    }
    if len(hip_libs) > 1:
        return result(
            Status.WARN,
            f"two HIP runtimes loaded at once ({', '.join(hip_libs)}): kernels may run on the wrong ROCm",
            "remove the other ROCm from LD_LIBRARY_PATH so only the one torch ships with is found",
            figures=fig,
            **details,
        )
    return result(
        Status.PASS,
        f"torch {versions['torch']} ({kind} build) imports in {took:.1f} s",
        figures=fig,
        **details,
    )


def _major_minor(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    parts = version.split("-", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


@check(
    "torch.build",
    level=1,
    description="The torch build fits the node: torch.version.hip against the detected ROCm, CUDA against the driver.",
    needs=("torch",),
    isolated=True,
    timeout_s=120.0,
)
def torch_build(ctx: CheckContext) -> CheckResult:
    import torch

    return build_result(
        ctx,
        str(torch.__version__),
        getattr(torch.version, "hip", None),
        getattr(torch.version, "cuda", None),
    )


def build_result(ctx: CheckContext, tv: str, hip: str | None, cuda: str | None) -> CheckResult:
    """torch.build's verdict from the torch version strings (pure, for tests)."""
    m = ctx.machine
    install = "install the right build with `rocmkit install` (see `rocmkit resolve`)"
    if ctx.backend == "rocm":
        if hip is None:
            kind = f"a CUDA {cuda}" if cuda else "a CPU-only"
            return result(
                Status.FAIL, f"torch {tv} is {kind} build, but this node has AMD GPUs", install
            )
        window = archs.driver_window(m.rocm.driver_version)
        if window is not None and window.contains(hip) is False:
            # A wheel carries its ROCm user space but not the kernel driver (#6).
            return result(
                Status.WARN,
                f"torch {tv} carries HIP {hip}, outside the kernel driver's window: {window.describe()}",
                f"{install} (pick a ROCm inside the window), or upgrade amdgpu-dkms",
                hip=hip,
                driver=window.driver,
            )
        have, system = _major_minor(hip), _major_minor(m.rocm.version)
        if system is None:
            return result(
                Status.PASS,
                f"torch {tv} built for HIP {hip} (system ROCm unknown; the wheel ships its runtime)",
            )
        if have is not None and have[0] != system[0]:
            return result(
                Status.WARN,
                f"torch {tv} is built for HIP {hip} but the node runs ROCm {m.rocm.version}: a different major release",
                f"{install}; the wheel ships its own HIP runtime, but the amdgpu driver must support it",
                hip=hip,
                rocm=m.rocm.version,
            )
        return result(
            Status.PASS,
            f"torch {tv} built for HIP {hip}; node has ROCm {m.rocm.version}",
            hip=hip,
            rocm=m.rocm.version,
        )
    if ctx.backend == "cuda":
        if cuda is None:
            kind = f"a ROCm {hip}" if hip else "a CPU-only"
            return result(
                Status.FAIL, f"torch {tv} is {kind} build, but this node has NVIDIA GPUs", install
            )
        driver = m.nvidia.cuda_version if m.nvidia else None
        if _major_minor(driver) is not None and (_major_minor(cuda) or (0, 0)) > (
            _major_minor(driver) or (0, 0)
        ):
            return result(
                Status.FAIL,
                f"torch {tv} needs CUDA {cuda} but the NVIDIA driver supports CUDA {driver} at most",
                f"upgrade the NVIDIA driver, or {install}",
                cuda=cuda,
                driver_cuda=driver,
            )
        return result(
            Status.PASS, f"torch {tv} built for CUDA {cuda}; driver supports {driver or 'unknown'}"
        )
    kind = f"ROCm {hip}" if hip else (f"CUDA {cuda}" if cuda else "CPU")
    return result(Status.PASS, f"torch {tv} ({kind} build) on the CPU backend")


@check(
    "torch.devices",
    level=1,
    description="torch sees the GPUs detection found (count, order, no iGPU as device 0) (#10, #11, #13, #23).",
    needs=("torch", "gpu"),
    isolated=True,
    timeout_s=120.0,
)
def torch_devices(ctx: CheckContext) -> CheckResult:
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
        count = torch.cuda.device_count() if available else 0
    said = [str(w.message).splitlines()[0][:200] for w in caught]
    devices: list[dict[str, Any]] = []
    for i in range(count):
        p = torch.cuda.get_device_properties(i)
        devices.append(
            {
                "index": i,
                "name": str(p.name),
                "arch": getattr(p, "gcnArchName", None) or sm_name(cc_of(p.major, p.minor)),
                "memory_bytes": int(p.total_memory),
            }
        )
    return devices_result(ctx, devices, said)


def devices_result(ctx: CheckContext, devices: list[dict[str, Any]], said: list[str]) -> CheckResult:
    """torch.devices' verdict from what torch enumerated (pure, for tests)."""
    m = ctx.machine
    vendor = "amd" if ctx.backend == "rocm" else "nvidia"
    expected = [g for g in m.gpus if g.vendor == vendor and g.visible]
    count = len(devices)
    fig = (Figure(name="device_count", value=float(count), unit="GPUs"),)
    if count == 0:
        hint = f" ({said[0]})" if said else ""
        return result(
            Status.FAIL,
            f"torch sees no GPU, detection found {len(expected)}{hint}",
            "see env.device_nodes and env.device_groups (permissions are the usual cause); "
            "then `rocminfo` must list the GPU",
            figures=fig,
            warnings=said,
        )
    details: dict[str, Any] = {"devices": devices, "warnings": said, "expected": len(expected)}
    first_arch = base_arch(devices[0]["arch"])
    if vendor == "amd" and count > 1 and first_arch:
        first = next((g for g in expected if base_arch(g.arch) == first_arch), None)
        if (
            first is not None
            and archs.is_integrated(first)
            and any(archs.is_integrated(g) is False for g in expected)
        ):
            return result(
                Status.WARN,
                f"cuda:0 is the integrated GPU ({devices[0]['name']}, {first_arch}): code using the default device runs there",
                "hide it: export ROCR_VISIBLE_DEVICES=<discrete GPU indices> (see env.igpu)",
                figures=fig,
                **details,
            )
    if expected and count != len(expected):
        return result(
            Status.WARN,
            f"torch sees {count} GPU(s), detection found {len(expected)} visible",
            "check HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (see env.visible_devices)",
            figures=fig,
            **details,
        )
    names = ", ".join(sorted({f"{d['name']} ({d['arch']})" for d in devices}))
    return result(Status.PASS, f"torch sees {count} GPU(s): {names}", figures=fig, **details)


def _arch_flags(torch: Any) -> list[str]:
    # torch.cuda.get_arch_list() returns [] when no device is usable; the compiled
    # list underneath answers even then, which is when the prediction matters most.
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    raw = flags() if callable(flags) else None
    return str(raw).split() if raw else []


@check(
    "torch.arch_list",
    level=1,
    description="Every visible GPU's arch is in torch.cuda.get_arch_list(), else predict `invalid device function` (#7, #8).",
    needs=("torch", "gpu"),
    isolated=True,
    timeout_s=120.0,
)
def torch_arch_list(ctx: CheckContext) -> CheckResult:
    import torch

    return arch_list_result(ctx, str(torch.__version__), _arch_flags(torch))


def arch_list_result(ctx: CheckContext, tv: str, compiled: list[str]) -> CheckResult:
    """torch.arch_list's verdict from the compiled arch list (pure, for tests)."""
    m = ctx.machine
    if not compiled:
        return result(Status.SKIP, f"torch {tv} reports no compiled GPU archs (not a GPU build)")
    if ctx.backend == "cuda":
        return _nvidia_archs(ctx, compiled)
    wheel = {base_arch(a) for a in compiled}
    override = m.env.get("HSA_OVERRIDE_GFX_VERSION")
    via_override = override_to_gfx(override) if override else None
    missing: list[tuple[str, str]] = []
    notes: list[str] = []
    for g in m.amd_gpus:
        arch = base_arch(g.arch)
        if not g.visible or arch is None:
            continue
        if arch in wheel:
            notes.append(f"GPU {g.index} {arch}")
            continue
        if via_override in wheel and override and archs.override_fit(arch, override).verdict != "cross":
            notes.append(f"GPU {g.index} {arch} as {via_override} (HSA_OVERRIDE_GFX_VERSION={override})")
            continue
        missing.append((str(g.index), arch))
    details: dict[str, Any] = {"compiled": compiled, "override": override}
    if not missing:
        if not notes:
            return result(Status.SKIP, "no visible AMD GPU with a known arch", None, **details)
        return result(Status.PASS, "torch has code for " + ", ".join(notes), None, **details)
    listing = ", ".join(f"GPU {i} {a}" for i, a in missing)
    fixes: list[str] = []
    for _, arch in missing:
        usual = archs.recommended_override(arch)
        if usual and override_to_gfx(usual) in wheel:
            fixes.append(f"export HSA_OVERRIDE_GFX_VERSION={usual}")
        else:
            fixes.append(
                f"install a torch built for {arch} (`rocmkit resolve` shows one, e.g. TheRock's per-arch wheels)"
            )
    return result(
        Status.FAIL,
        f"torch has no code for {listing} (it has {', '.join(sorted(a for a in wheel if a))}): "
        "expect `HIP error: invalid device function` or hipErrorNoBinaryForGpu",
        "; ".join(sorted(set(fixes))),
        missing=[a for _, a in missing],
        **details,
    )


def _nvidia_archs(ctx: CheckContext, compiled: list[str]) -> CheckResult:
    sass, ptx = wheel_archs(compiled)
    missing = []
    for g in ctx.machine.nvidia_gpus:
        cc = parse_cc(g.compute_capability)
        if not g.visible or cc is None:
            continue
        # Exact SASS, or PTX for an older arch that the driver JIT-compiles.
        if runs_on(cc, sass, ptx):
            continue
        missing.append(f"GPU {g.index} {sm_name(cc)}")
    if missing:
        return result(
            Status.FAIL,
            f"torch has no code for {', '.join(missing)} (it has {', '.join(compiled)}): expect `no kernel image is available`",
            "install a torch wheel for a newer CUDA (`rocmkit resolve`)",
            compiled=compiled,
        )
    return result(
        Status.PASS,
        f"torch has code for every visible NVIDIA GPU ({', '.join(compiled)})",
        compiled=compiled,
    )


@check(
    "triton.import",
    level=1,
    description="Triton imports, and torch's inductor accepts it (#19).",
    needs=("triton",),
    isolated=True,
    timeout_s=120.0,
)
def triton_import(ctx: CheckContext) -> CheckResult:
    start = time.perf_counter()
    try:
        import triton
    except Exception as exc:
        text = exception_line(exc)
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        return result(
            Status.FAIL,
            f"import triton failed: {text}",
            # Triton imports numpy without declaring it: a missing module is not a bad Triton.
            f"{sys.executable} -m pip install {missing}"
            if missing and missing != "triton"
            else "reinstall the Triton torch pins (see triton.packages)",
        )
    took = preloaded.import_seconds("triton", time.perf_counter() - start)
    version = str(triton.__version__)
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    details: dict[str, Any] = {"triton_version": version, "interpreter": interp}
    fig = (Figure(name="import_time", value=round(took, 3), unit="s"),)
    backend = "cpu-interpreter" if interp else ctx.backend

    def outcome(status: Status, message: str, remedy: str | None = None) -> CheckResult:
        return result(status, message, remedy, figures=fig, backend=backend, **details)

    pins = "install the Triton torch pins (see triton.packages)"
    if _version("torch") is not None:
        try:
            from torch._inductor.runtime import triton_compat
        except Exception as exc:
            return outcome(
                Status.FAIL, f"torch's inductor cannot load triton {version}: {exception_line(exc)}", pins
            )
        if not getattr(triton_compat, "HAS_TRITON", True):
            return outcome(
                Status.FAIL, f"torch's inductor does not accept triton {version} (HAS_TRITON is False)", pins
            )
    if ctx.backend != "cpu":
        try:
            target = triton.runtime.driver.active.get_current_target()
            details["target"] = {"backend": target.backend, "arch": str(target.arch)}
        except Exception as exc:
            return outcome(
                Status.FAIL,
                f"triton {version} imports but finds no GPU driver: {exception_line(exc)}",
                "check torch.devices; a ROCm node needs the ROCm build of Triton (pytorch-triton-rocm)",
            )
    mode = " under the interpreter (TRITON_INTERPRET=1)" if interp else ""
    return outcome(Status.PASS, f"triton {version} imports in {took:.1f} s{mode}")


# Bytes each GPU must allocate, fill and read back (capped at a tenth of free memory).
SMOKE_BYTES = 256 * 2**20
SMOKE_N = 1024


def smoke_device(torch: Any, device: str, nbytes: int = SMOKE_BYTES, n: int = SMOKE_N) -> dict[str, Any]:
    """Allocate, fill and read back memory on ``device``, then check a matmul against
    the CPU. Raises nothing for a wrong answer: returns what it saw."""
    start = time.perf_counter()
    buf = torch.full((nbytes,), 7, dtype=torch.uint8, device=device)
    total = int(buf.sum(dtype=torch.int64).item())
    del buf
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen, dtype=torch.float32)
    b = torch.randn(n, n, generator=gen, dtype=torch.float32)
    ref = a.double() @ b.double()
    got = (a.to(device) @ b.to(device)).cpu().double()
    # Relative to the largest entry: fp32 accumulation over n terms, no TF32 by default.
    rel = float((got - ref).abs().max() / ref.abs().max())
    return {
        "device": device,
        "memory_ok": total == 7 * nbytes,
        "bytes": nbytes,
        "matmul_rel_error": rel,
        "seconds": time.perf_counter() - start,
    }


@check(
    "torch.device_smoke",
    options={"smoke_rel_tolerance": "relative error allowed in the device matmul"},
    option_kinds={"smoke_rel_tolerance": "fraction"},
    level=1,
    description="Every GPU torch sees allocates, fills and reads back memory, and multiplies correctly.",
    needs=("torch", "gpu"),
    isolated=True,
    timeout_s=120.0,
)
def torch_device_smoke(ctx: CheckContext) -> CheckResult:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return result(Status.SKIP, "torch sees no GPU (see torch.devices)")
    tolerance = float(ctx.options.get("smoke_rel_tolerance", 1e-3))
    bad: list[str] = []
    runs: list[dict[str, Any]] = []
    for i in range(count):
        free, _total = torch.cuda.mem_get_info(i)
        seen = smoke_device(torch, f"cuda:{i}", nbytes=min(SMOKE_BYTES, max(free // 10, 2**20)))
        torch.cuda.synchronize(i)
        runs.append(seen)
        if not seen["memory_ok"]:
            bad.append(f"cuda:{i} read back wrong memory contents")
        if not seen["matmul_rel_error"] <= tolerance:
            bad.append(f"cuda:{i} matmul relative error {seen['matmul_rel_error']:.2e} > {tolerance:g}")
    figures = tuple(
        Figure(name=f"cuda{r['device'][5:]}.matmul_rel_error", value=r["matmul_rel_error"], unit="ratio")
        for r in runs
    )
    if bad:
        return result(
            Status.FAIL,
            "; ".join(bad),
            "rerun with AMD_SERIALIZE_KERNEL=3 (ROCm) or CUDA_LAUNCH_BLOCKING=1; check `dmesg` for GPU errors and the device's ECC counters",
            figures=figures,
            runs=runs,
        )
    return result(
        Status.PASS,
        f"{count} GPU(s) allocate, read back and multiply correctly",
        figures=figures,
        runs=runs,
    )
