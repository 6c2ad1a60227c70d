"""Which torch build do rocmkit and its peers pick for each real capture, and which is right?

For every capture folder (default: ../shared/captures beside the repository, else
tests/data/captures), three pickers are asked for a torch build, offline:

  * rocmkit: `resolve` on the captured machine (detect -> resolve, no index round-trip);
  * uv: `uv pip install --torch-backend auto --dry-run --offline -v torch`, told the GPU
    through uv's own overrides (UV_AMD_GPU_ARCHITECTURE: the first discrete AMD GPU's
    target, uv takes one; UV_CUDA_DRIVER_VERSION: the NVIDIA driver). uv cannot reach
    download.pytorch.org here, so its choice is read from its verbose log (the first
    `.../whl/<index>/torch/` it asks for: uv's first index wins) or its error;
  * torchruntime (PyPI, in a venv of its own): its `get_torch_platform` on the capture's
    PCI ids (the capture's `lspci -nn` read by torchruntime's own parser, else the PCI ids
    rocmkit detected), and the ROCm variables its `configure()` would set;
  * rocm-bootstrap (AMD, PyPI, its own venv): its WheelNext variant plugin's
    `get_supported_configs()` (the `gfx_arch` values a variant-aware installer selects AMD's
    whl-next device packages by). It reads KFD topology from a fixed path, so where the
    capture recorded `root/sys/class/kfd/kfd/topology/nodes` the plugin's own `_platform`
    is pointed there (as its tests do); else it is told the targets rocmkit detected through
    its own override, ROCM_BOOTSTRAP_FORCE_GFX_ARCH (every visible AMD GPU, in order);
  * light-the-torch (PyPI, its own venv): its `detect_compatible_computation_backends()`,
    which runs `nvidia-smi --query-gpu=driver_version --format=csv`: a stub `nvidia-smi`
    on an otherwise empty PATH answers with the capture's NVIDIA driver (none: no stub).
    It has no ROCm detection. Its pick is what its pip patch selects: candidates sort by
    computation backend first, so the highest detected backend on which matrices/ records
    a torch for Python 3.12, and the newest torch there.

Each pick is judged on the facts in matrices/ (not on rocmkit's resolver): a build runs on
a GPU when the index's wheels carry code for its target, natively or through the
HSA_OVERRIDE_GFX_VERSION that the picker sets; every visible GPU that cannot run must be
hidden (HIP_VISIBLE_DEVICES), or it breaks the process; a ROCm build must be inside the
node's amdgpu driver window where AMD documents one; a CUDA build needs the toolkit's driver
floor and compute capability. "right" = runs and is the newest such torch release
(every build matrices/ records, confirmed or named by upstream's build lists; Python 3.12); "old" = runs, but an older torch than the node can have;
"wrong" = would not run, or no GPU build for a GPU that has one.

rocm-bootstrap's pick lives on AMD's own channel (matrices/channels.toml, `amd`: the
stable whl-next index, one device package per target): it runs when every visible AMD GPU
has a device package there (no GPU is hidden: rocm-bootstrap sets no variable) and the
channel's ROCm is inside the node's driver window. matrices/ records no torch version for
AMD's channels, so a pick that runs is graded "runs" (right vs old not judged). With no
target reported, the installer gets torch's host code only: judged as CPU wheels. Where the
capture recorded no KFD topology and no tool in it named the targets, what rocm-bootstrap
would read on that machine is unknown: "not judged".

A peer that cannot be installed (no network) leaves its column "skipped", not the run.

    python benchmarks/bench_resolve_peers.py [--captures DIR] [--torchruntime-python PY]
        [--rocm-bootstrap-python PY] [--ltt-python PY]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmkit.arch import override_to_gfx  # noqa: E402
from rocmkit.detect import load_machine  # noqa: E402
from rocmkit.errors import RocmkitError  # noqa: E402
from rocmkit.machine import Gpu, Machine  # noqa: E402
from rocmkit.matrix import Matrix, load_matrix  # noqa: E402
from rocmkit.matrix.model import release_key  # noqa: E402
from rocmkit.matrix.platforms import load_platforms  # noqa: E402
from rocmkit.resolve import Constraints, resolve  # noqa: E402
from rocmkit.resolve.driver import in_window, window_filter  # noqa: E402

PYTHON = "3.12"
TORCHRUNTIME = "torchruntime==2.24.0"
ROCM_BOOTSTRAP = "rocm-bootstrap==0.3.0"
LTT = "light-the-torch==0.8.1"
AMD_CHANNEL = "amd"  # rocm-bootstrap's packages: AMD's stable whl-next (matrices/channels.toml)
_UV_INDEX = re.compile(r"GET request for: https://download\.pytorch\.org/whl/([a-z0-9.]+)/torch/")

# The child run in torchruntime's venv: its own detection and configuration, nothing else.
_TR_CHILD = r"""
import json, os, sys
from torchruntime.device_db import get_device_infos, parse_linux_output
from torchruntime.platform_detection import get_torch_platform
from torchruntime import configuration
args = json.loads(sys.argv[1])
ids = parse_linux_output(args["lspci"]) if args["lspci"] else [tuple(p) for p in args["ids"]]
gpus = get_device_infos(ids)
out = {"gpus": [f"{g.vendor_name} {g.device_name}" for g in gpus], "env": {}}
try:
    platform = get_torch_platform(gpus)
    out["platform"] = platform
    before = dict(os.environ)
    if platform.startswith("rocm"):
        configuration.set_rocm_env_vars(gpus, platform)
    out["env"] = {k: v for k, v in os.environ.items() if before.get(k) != v}
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
print(json.dumps(out))
"""

# rocm-bootstrap's own detection: its variant plugin, KFD topology at the capture's recorded
# path (its _platform module holds the path; its tests patch it the same way), or its override.
_RB_CHILD = r"""
import json, sys
from pathlib import Path
from rocm_bootstrap import _platform
from rocm_bootstrap.variant_provider import AMDVariantPlugin
kfd = sys.argv[1]
# Never the host's own /sys: the capture's nodes, or a path that does not exist.
_platform.KFD_TOPOLOGY = Path(kfd) if kfd else Path("/nonexistent/kfd/topology/nodes")
try:
    configs = AMDVariantPlugin.get_supported_configs()
    print(json.dumps({"targets": [v for c in configs if c.name == "gfx_arch" for v in c.values]}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:160]}"}))
"""

# light-the-torch's own detection (nvidia-smi on PATH), nothing else.
_LTT_CHILD = r"""
import json
from light_the_torch import _cb
print(json.dumps(sorted(str(b) for b in _cb.detect_compatible_computation_backends())))
"""


@dataclass
class Pick:
    index: str | None  # "rocm7.2", "cu129", "cpu"; None: no pick (an error)
    torch: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    grade: str = ""
    why: str = ""
    label: str | None = None  # what the cell names instead of "<index> → torch <version>"

    def cell(self) -> str:
        if self.grade in ("skipped", "not judged"):
            return f"{self.grade}: {self.error}"
        if self.index is None:
            return f"**{self.grade}**: {self.error}"
        env = "".join(f", {k}={v}" for k, v in sorted(self.env.items()))
        what = self.label or f"{self.index} → torch {self.torch or '?'}"
        return f"{what}{env}: **{self.grade}**" + (f" ({self.why})" if self.why else "")


def newest_on(m: Matrix, index: str, machine: Machine | None = None) -> str | None:
    """The newest torch built on ``index`` for Python 3.12: what a resolver reading that index gets
    (confirmed builds and those upstream's build lists name); for an aarch64 ``machine``, only the
    CUDA builds published for linux-aarch64 (matrices/platforms.toml)."""
    for rel in reversed(m.torch_releases):
        if rel.variant(index) is not None and rel.supports_python(PYTHON) and _built_for(machine, rel.version, index):
            return rel.version
    return None


def _built_for(machine: Machine | None, version: str, index: str) -> bool:
    if machine is None or (machine.host.arch or "").lower() not in ("aarch64", "arm64") or not index.startswith("cu"):
        return True
    return index in (load_platforms().cuda_aarch64(version) or ())


def _cuda_ok(m: Matrix, machine: Machine, index: str) -> bool:
    if not index.startswith("cu") or machine.nvidia is None or not machine.nvidia.driver_version:
        return False
    tk = m.cuda_toolkit(f"{index[2:-1]}.{index[-1]}")
    if tk is None or release_key(machine.nvidia.driver_version)[:2] < release_key(tk.min_driver)[:2]:
        return False
    ccs = [g.compute_capability for g in machine.nvidia_gpus if g.visible and g.compute_capability]
    floor = tk.min_compute_capability
    return not floor or all(release_key(c) >= release_key(floor) for c in ccs)


def _pci_arch(m: Matrix, g: Gpu) -> str | None:
    dev = m.pci_device(g.pci_device_id) if g.pci_device_id else None
    return dev.arch if dev else None


def _amd_runs(m: Matrix, g: Gpu, archs: tuple[str, ...], env: dict[str, str]) -> bool:
    arch = g.arch
    if arch is None and g.pci_device_id:
        dev = m.pci_device(g.pci_device_id)
        arch = dev.arch if dev else None
    if arch is None:
        return False
    override = env.get("HSA_OVERRIDE_GFX_VERSION")
    if override:  # process-wide: every GPU is taken for the override's target
        target = override_to_gfx(override)
        info, as_info = m.gfx_arch(arch), m.gfx_arch(target or "")
        own = info.hsa_override if info else None
        # The override gfx.toml lists for this target, or a sibling of the same family (gfx1201
        # taken for gfx1200) whose own code the wheel carries anyway.
        sibling = arch in archs and info is not None and as_info is not None and info.family == as_info.family
        return target in archs and (own == override or target == arch or sibling)
    return arch in archs


def archs_of(m: Matrix, index: str, torch: str | None) -> tuple[str, ...] | None:
    """The targets compiled into torch ``torch`` on ``index`` (that build's own list, else the index's)."""
    rel = m.torch_release(torch) if torch else None
    variant = rel.variant(index) if rel else None
    if variant is not None and variant.archs:
        return variant.archs
    ix = m.rocm_indexes.get(index)
    return ix.archs if ix else None


def judge_amd(m: Matrix, machine: Machine, index: str, torch: str | None, env: dict[str, str]) -> tuple[bool, str]:
    """Whether torch ``torch`` from ROCm ``index`` with ``env`` runs on the machine's AMD GPUs, and why not."""
    ix = m.rocm_indexes.get(index)
    archs = archs_of(m, index, torch)
    if ix is None or archs is None:
        return False, f"{index} is no ROCm index in matrices/torch.toml"
    gpus = [g for g in machine.amd_gpus if g.visible]
    hidden = {int(x) for x in env.get("HIP_VISIBLE_DEVICES", "").split(",") if x.strip().isdigit()}
    shown = [(i, g) for i, g in enumerate(gpus) if not hidden or i in hidden]
    # A target whose code a library of the wheel lacks (rocBLAS ..., torch.toml incomplete_archs)
    # fails at the first matrix multiply: it does not count as running.
    full = archs
    archs = tuple(a for a in archs if a not in ix.incomplete_archs)
    bad = [g for _, g in shown if not _amd_runs(m, g, archs, env)]
    if bad:
        what = f"torch {torch}+{index}" if torch else f"{index} wheels"
        names = ", ".join(dict.fromkeys(g.arch or "unknown" for g in bad))
        if any(_amd_runs(m, g, full, env) for g in bad):
            return False, f"a library {what} bundles lacks {names} code (torch.toml incomplete_archs)"
        return False, f"{names} cannot run {what} and is not hidden"
    if not any(not (g.integrated or False) for _, g in shown) and any(not (g.integrated or False) for g in gpus):
        return False, "the discrete GPU is hidden"
    rel, how = window_filter(machine, m)
    if rel is not None and in_window(rel, ix.rocm) is False:
        return False, f"ROCm {ix.rocm} is outside the window of {how}"
    return _wsl_runtime_fits(machine, ix.rocm)


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _wsl_runtime_fits(machine: Machine, rocm: str) -> tuple[bool, str]:
    """On WSL2 torch runs on /opt/rocm's runtime, not the wheel's: AMD's WSL PyTorch steps remove
    the wheel's libhsa-runtime64.so* (ROCm 6.x's copied /opt/rocm's in: rocm.docs.amd.com/projects/
    radeon/en/docs-6.3/docs/install/wsl/install-pytorch.html; docs/platforms.md). So a ROCm build
    runs only on the installed ROCm line; with none installed, on a line AMD supports on WSL2
    (matrices/platforms.toml [[wsl_release]]), which install then puts in."""
    if not machine.platform.wsl:
        return True, ""
    if machine.rocm.version:
        installed = _line(machine.rocm.version)
        if _line(rocm) != installed:
            return False, f"ROCm {rocm} wheels on WSL2 run on /opt/rocm's runtime, ROCm {installed} here"
        return True, ""
    if _line(rocm) not in {r.rocm for r in load_platforms().wsl_releases}:
        return False, f"ROCm {rocm} is not a line AMD supports on WSL2"
    return True, ""


def best_amd(m: Matrix, machine: Machine) -> str | None:
    """The newest torch any ROCm index runs on this machine with, hiding and overriding allowed."""
    best: str | None = None
    for rel in m.torch_releases:
        if not rel.supports_python(PYTHON):
            continue
        for variant in rel.of_kind("rocm"):
            for env in _env_options(m, machine, variant.index, rel.version):
                if judge_amd(m, machine, variant.index, rel.version, env)[0] and (
                    best is None or release_key(rel.version) > release_key(best)
                ):
                    best = rel.version
    return best


def _env_options(m: Matrix, machine: Machine, index: str, torch: str) -> list[dict[str, str]]:
    gpus = [g for g in machine.amd_gpus if g.visible]
    ix = m.rocm_indexes.get(index)
    archs = tuple(a for a in archs_of(m, index, torch) or () if not ix or a not in ix.incomplete_archs)
    out: list[dict[str, str]] = [{}]
    overrides = {i.hsa_override for g in gpus if (i := m.gfx_arch(g.arch or "")) and i.hsa_override}
    for ov in [None, *sorted(overrides)]:
        env = {"HSA_OVERRIDE_GFX_VERSION": ov} if ov else {}
        keep = [str(i) for i, g in enumerate(gpus) if _amd_runs(m, g, archs, env)]
        if keep:
            out.append({**env, "HIP_VISIBLE_DEVICES": ",".join(keep)})
        out.append(env)
    return out


def grade(m: Matrix, machine: Machine, pick: Pick) -> None:
    if pick.grade in ("skipped", "not judged"):  # set where the pick was made
        return
    if pick.index == AMD_CHANNEL:
        _grade_amd_channel(m, machine, pick)
        return
    amd = any(g.visible for g in machine.amd_gpus)
    cuda = [i for i in {c.tag for c in m.cuda_toolkits} if newest_on(m, i, machine) and _cuda_ok(m, machine, i)]
    unknown = [g for g in machine.amd_gpus if g.visible and not g.arch and not _pci_arch(m, g)]
    no_gpu_build = not (best_amd(m, machine) if amd else None) and not cuda
    if pick.index is None:
        # A refusal is right only where no known GPU build runs, and it names the way on:
        # the GPU's target (ROCMKIT_GFX) when nobody can tell it, else CPU wheels (--backend cpu).
        if no_gpu_build and ("ROCMKIT_GFX" in (pick.error or "") if unknown else "--backend cpu" in (pick.error or "")):
            pick.grade = "right"
        else:
            pick.grade, pick.why = "wrong", ""
        return
    if pick.index.startswith("rocm"):
        ok, why = judge_amd(m, machine, pick.index, pick.torch, pick.env)
        best = best_amd(m, machine)
    elif pick.index.startswith("cu"):
        ok, why = _cuda_ok(m, machine, pick.index), "the driver or GPU is below this CUDA's floor"
        best = max((newest_on(m, i, machine) or "0" for i in cuda), key=release_key, default=None)
    else:
        if not no_gpu_build:
            pick.grade, pick.why = "wrong", "CPU wheels, but a GPU build runs here"
            return
        if unknown:
            pick.grade, pick.why = "wrong", f"CPU wheels for {len(unknown)} AMD GPU(s) whose target it did not ask for"
            return
        ok, why, best = True, "", pick.torch
    if not ok:
        pick.grade, pick.why = "wrong", why
    elif best and pick.torch and release_key(pick.torch) < release_key(best):
        pick.grade, pick.why = "old", f"torch {best} runs here"
    else:
        pick.grade, pick.why = "right", ""


def _grade_amd_channel(m: Matrix, machine: Machine, pick: Pick) -> None:
    """A pick of AMD's own channel (rocm-bootstrap's): torch with a device package per reported
    target, and no variable set, so a GPU without its package stays visible."""
    chan = m.channels[AMD_CHANNEL]
    shown = [g for g in machine.amd_gpus if g.visible]
    missing = [g.arch or _pci_arch(m, g) or "unknown" for g in shown if (g.arch or _pci_arch(m, g)) not in chan.archs]
    rel, how = window_filter(machine, m)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        pick.grade, pick.why = "wrong", f"{names} has no device package on AMD's stable whl-next and is not hidden"
    elif rel is not None and chan.rocm and in_window(rel, chan.rocm) is False:
        pick.grade, pick.why = "wrong", f"ROCm {chan.rocm} ({chan.name} channel) is outside the window of {how}"
    else:
        pick.grade = "runs"
        pick.why = f"matrices/ has no torch version for AMD's index: not judged against torch {best_amd(m, machine)}"


def rocmkit_pick(m: Matrix, machine: Machine) -> Pick:
    try:
        plan = resolve(machine, Constraints(python=PYTHON), matrix=m)
    except RocmkitError as exc:
        return Pick(None, error=f"refused: {exc.message} (fix: {exc.fix})")
    torch = (plan.torch_version or "").split("+")[0] or None
    return Pick(str(plan.backend), torch=torch, env=dict(plan.env))


def _index_rank(index: str) -> tuple[int, ...]:
    if index.startswith("rocm"):
        return (2, *release_key(index[4:]))
    if index.startswith("cu"):
        return (1, int(index[2:]))
    return (0,)


def uv_pick(m: Matrix, machine: Machine, python: Path, uv: str) -> tuple[Pick, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    told = ""
    amd = [g for g in machine.amd_gpus if g.visible and g.arch]
    discrete = [g for g in amd if not g.integrated] or amd
    if discrete:
        env["UV_AMD_GPU_ARCHITECTURE"] = told = discrete[0].arch or ""
    if machine.nvidia is not None and machine.nvidia.driver_version and machine.nvidia_gpus:
        env["UV_CUDA_DRIVER_VERSION"] = machine.nvidia.driver_version
        told = (told + " " if told else "") + f"driver {machine.nvidia.driver_version}"
    argv = [uv, "pip", "install", "--offline", "--python", str(python), "--torch-backend", "auto", "--dry-run", "-v", "torch"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    text = proc.stdout + proc.stderr
    # uv asks its backend's indexes at once, in its priority order (newest first); with its
    # first-index strategy the first that has torch wins, and the log's order can interleave.
    asked = _UV_INDEX.findall(text)
    if asked:
        index = max(asked, key=_index_rank)
        return Pick(index, torch=newest_on(m, index)), told
    error = next((line for line in text.splitlines() if line.startswith("error:")), "no index chosen")
    return Pick(None, error=error.removeprefix("error: ")[:140]), told


def torchruntime_pick(m: Matrix, capture: Path, machine: Machine, python: str | None) -> tuple[Pick, str]:
    if python is None:
        return Pick(None, grade="skipped", error=f"{TORCHRUNTIME} not installed"), ""
    lspci = capture / "cmd" / "lspci.txt"
    ids = [
        ((g.pci_vendor_id or ("0x1002" if g.vendor == "amd" else "0x10de")).removeprefix("0x"), g.pci_device_id.removeprefix("0x"))
        for g in machine.gpus
        if g.pci_device_id
    ]
    arg = json.dumps({"lspci": lspci.read_text() if lspci.is_file() else "", "ids": ids})
    proc = subprocess.run([python, "-c", _TR_CHILD, arg], capture_output=True, text=True, timeout=60, check=False)
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return Pick(None, error=f"torchruntime crashed: {proc.stderr.strip()[-140:]}"), ""
    names = [re.sub(r"^(Advanced Micro Devices, Inc\. \[AMD/ATI\]|NVIDIA Corporation|Intel Corporation) ", "", n) for n in out["gpus"]]
    seen = "; ".join(_grouped(names)) or "no GPU in its PCI table"
    if "error" in out:
        return Pick(None, error=out["error"]), seen
    env = {k: v for k, v in out["env"].items() if k in ("HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES")}
    return Pick(out["platform"], torch=newest_on(m, out["platform"]), env=env), seen


def rocm_bootstrap_told(capture: Path, machine: Machine) -> tuple[str, dict[str, str]]:
    """How rocm-bootstrap is asked: the capture's KFD topology when recorded (returns its path),
    else its ROCM_BOOTSTRAP_FORCE_GFX_ARCH override with the targets rocmkit detected."""
    nodes = capture / "root" / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
    if nodes.is_dir():
        return str(nodes), {}
    archs = [g.arch for g in machine.amd_gpus if g.visible and g.arch]
    return "", ({"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": ",".join(archs)} if archs else {})


def rocm_bootstrap_pick(m: Matrix, capture: Path, machine: Machine, python: str | None) -> tuple[Pick, str]:
    if python is None:
        return Pick(None, grade="skipped", error=f"{ROCM_BOOTSTRAP} not installed"), ""
    kfd, told = rocm_bootstrap_told(capture, machine)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCM_BOOTSTRAP_")} | told
    proc = subprocess.run([python, "-c", _RB_CHILD, kfd], capture_output=True, text=True, env=env, timeout=60, check=False)
    how = "read the capture's KFD topology" if kfd else ", ".join(f"{k}={v}" for k, v in told.items()) or "nothing"
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return Pick(None, error=f"rocm-bootstrap crashed: {proc.stderr.strip()[-140:]}"), how
    if "error" in out:
        return Pick(None, error=out["error"]), how
    if not kfd and not told and any(g.visible for g in machine.amd_gpus):
        # On the machine it reads KFD, which names every target; this capture recorded no KFD
        # and no tool in it named one, so what it would report there is not known.
        why = "the capture recorded no KFD topology and no tool in it named the AMD targets rocm-bootstrap reads there"
        return Pick(None, grade="not judged", error=why), how
    return rocm_bootstrap_judgeable(out["targets"]), how


def rocm_bootstrap_judgeable(targets: list[str]) -> Pick:
    """The variant plugin's gfx_arch values as a pick: AMD's whl-next torch with a device package
    per target; none: torch's host code only (judged as CPU wheels)."""
    if not targets:
        return Pick("cpu", label="AMD whl-next torch, host code only (no gfx_arch reported)")
    extras = ",".join(f"device-{t}" for t in targets)
    return Pick(AMD_CHANNEL, label=f"AMD whl-next torch[{extras}]")


def ltt_backend(m: Matrix, backends: list[str]) -> str:
    """light-the-torch's choice among its detected backends: its candidate sort key puts the
    computation backend first (cpu < cuXY by version), so the highest backend with a torch wins."""
    def rank(b: str) -> tuple[int, ...]:
        return (1, *release_key(f"{b[2:-1]}.{b[-1]}")) if b.startswith("cu") else (0,)

    having = [b for b in backends if newest_on(m, b)]
    return max(having, key=rank, default="cpu")


def nvidia_smi_stub(folder: Path, machine: Machine) -> tuple[Path, str | None]:
    """A folder for PATH holding an `nvidia-smi` that answers light-the-torch's one query
    (`--query-gpu=driver_version --format=csv`: a header, one row a GPU) with the capture's
    driver; without an NVIDIA driver the folder is empty, as PATH is on such a node."""
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.unlink(missing_ok=True)
    driver = machine.nvidia.driver_version if machine.nvidia is not None else None
    if driver:
        rows = "\n".join([driver] * max(1, len(machine.nvidia_gpus)))
        smi.write_text(f"#!/bin/sh\nprintf 'driver_version\\n{rows}\\n'\n")
        smi.chmod(0o755)
    return folder, driver or None


def ltt_pick(m: Matrix, machine: Machine, python: str | None, base: Path) -> tuple[Pick, str]:
    if python is None:
        return Pick(None, grade="skipped", error=f"{LTT} not installed"), ""
    stub, driver = nvidia_smi_stub(base / "ltt-path", machine)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTT_")} | {"PATH": str(stub)}
    proc = subprocess.run([python, "-c", _LTT_CHILD], capture_output=True, text=True, env=env, timeout=60, check=False)
    told = f"nvidia-smi: driver {driver}" if driver else "no nvidia-smi"
    try:
        backends = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return Pick(None, error=f"light-the-torch crashed: {proc.stderr.strip()[-140:]}"), told
    index = ltt_backend(m, backends)
    return Pick(index, torch=newest_on(m, index)), told


def _note(text: str) -> str:
    return f" ({text})" if text else ""  # a skipped column has nothing to say how it was asked


def _grouped(names: list[str]) -> list[str]:
    counts = dict.fromkeys(names, 0)
    for n in names:
        counts[n] += 1
    return [f"{c} x {n}" if c > 1 else n for n, c in counts.items()]


def describe(machine: Machine) -> str:
    parts = _grouped([f"{g.arch or g.pci_device_id or '?'}{' (iGPU)' if g.integrated else ''}" for g in machine.amd_gpus])
    parts += _grouped([g.name or g.arch or "NVIDIA" for g in machine.nvidia_gpus])
    drv = machine.rocm.driver_version
    extra = f"; amdgpu {drv}" if drv else ""
    if machine.nvidia is not None and machine.nvidia.driver_version:
        extra += f"; driver {machine.nvidia.driver_version}"
    return (", ".join(parts) or "no GPU") + extra


def _scratch_python(base: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "uv-target")], check=True)
    return base / "uv-target" / "bin" / "python"


def peer_python(base: Path, spec: str) -> str | None:
    """A venv of its own with ``spec`` from PyPI; None (its column is skipped) when pip cannot."""
    venv = base / spec.split("==")[0]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", spec]
    try:
        proc = subprocess.run(pip, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        print(f"{spec}: pip install timed out; its column is skipped", file=sys.stderr)
        return None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"{spec}: pip install failed ({last}); its column is skipped", file=sys.stderr)
        return None
    return str(venv / "bin" / "python")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = REPO.parent / "shared" / "captures"
    ap.add_argument(
        "--captures",
        type=Path,
        default=shared if shared.is_dir() else REPO / "tests" / "data" / "captures",
        help="a folder of capture folders (default: ../shared/captures, else tests/data/captures)",
    )
    ap.add_argument("--torchruntime-python", help=f"a Python with {TORCHRUNTIME} (default: make a venv, pip install it)")
    ap.add_argument("--rocm-bootstrap-python", help=f"a Python with {ROCM_BOOTSTRAP} (default: make a venv)")
    ap.add_argument("--ltt-python", help=f"a Python with {LTT} (default: make a venv)")
    ap.add_argument("--uv", default=str(Path(sys.executable).with_name("uv")))
    args = ap.parse_args()
    m = load_matrix()
    rows = []
    names = ("rocmkit", "uv", "torchruntime", "rocm-bootstrap", "light-the-torch")
    picks: dict[str, list[Pick]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="rocmkit-peers-") as tmp:
        base = Path(tmp)
        target = _scratch_python(base)
        tr_python = args.torchruntime_python or peer_python(base, TORCHRUNTIME)
        rb_python = args.rocm_bootstrap_python or peer_python(base, ROCM_BOOTSTRAP)
        ltt_python = args.ltt_python or peer_python(base, LTT)
        for capture in sorted(p for p in args.captures.iterdir() if p.is_dir()):
            machine = load_machine(capture)
            ours = rocmkit_pick(m, machine)
            uv, told = uv_pick(m, machine, target, args.uv)
            tr, seen = torchruntime_pick(m, capture, machine, tr_python)
            rb, rb_told = rocm_bootstrap_pick(m, capture, machine, rb_python)
            lt, lt_told = ltt_pick(m, machine, ltt_python, base)
            for name, pick in zip(names, (ours, uv, tr, rb, lt), strict=True):
                grade(m, machine, pick)
                picks[name].append(pick)
            rows.append(
                f"| {capture.name} | {describe(machine)} | {ours.cell()} | {uv.cell()} ({told or 'nothing'}) "
                f"| {tr.cell()}{_note(seen)} | {rb.cell()}{_note(rb_told)} | {lt.cell()}{_note(lt_told)} |"
            )
    where = os.path.relpath(args.captures, REPO)
    print(f"{len(rows)} captures from {where}; Python {PYTHON}; judged on matrices/\n")
    print(
        "| capture | GPUs (rocmkit detect) | rocmkit | uv --torch-backend auto (told) | torchruntime (saw) "
        "| rocm-bootstrap (told) | light-the-torch (told) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print("\n" + summary(picks))


def summary(picks: dict[str, list[Pick]]) -> str:
    """One line: how many picks of each tool are right; where some are, how many only "run" (AMD's
    channel, whose torch version matrices/ does not record) and how many could not be judged."""
    parts = []
    for name, ps in picks.items():
        if ps and all(p.grade == "skipped" for p in ps):
            parts.append(f"{name} skipped (not installed)")
            continue
        right = sum(p.grade == "right" for p in ps)
        runs = sum(p.grade == "runs" for p in ps)
        unjudged = sum(p.grade == "not judged" for p in ps)
        more = [f"{runs} more run, newest not judged"] if runs else []
        more += [f"{unjudged} not judged"] if unjudged else []
        parts.append(f"{name} {right}/{len(ps)}" + (f" ({'; '.join(more)})" if more else ""))
    return "right: " + ", ".join(parts)


if __name__ == "__main__":
    main()
