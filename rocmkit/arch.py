"""GPU architecture names: gfx targets, their feature flags and families, HSA overrides,
and the vendor and backend names every part of rocmkit uses.

One rule per fact, so that detection, resolve, doctor, the kernels and the matrix
loader agree on what a gfx target is. What varies by chip (which override a
consumer GPU uses, which family and generation an arch belongs to) is data and
lives in ``matrices/gfx.toml``; this module only knows the naming scheme.

LLVM names an AMDGPU target ``gfx`` + major (decimal, one or two digits) + minor
(one decimal digit) + stepping (one hex digit): ``gfx803``, ``gfx90a``, ``gfx1100``
(https://llvm.org/docs/AMDGPUUsage.html#processors). ROCm tools append target
features after colons (``gfx90a:sramecc+:xnack-``, same page, "Target ID"), and
``HSA_OVERRIDE_GFX_VERSION`` spells a target as ``major.minor.stepping`` in decimal
(``9.0.10`` is ``gfx90a``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal, get_args

Vendor = Literal["amd", "nvidia"]
VENDORS: Final[tuple[Vendor, ...]] = get_args(Vendor)

# A backend a GPU build or image targets, the backends rocmkit builds, checks and renders images
# for, and every kind a plan's backend can be (PyTorch's xpu index: Intel GPUs, which rocmkit
# neither detects nor plans for, but reads back: plan.Backend; download.pytorch.org/whl/xpu, built
# since pytorch/builder#1879).
GpuBackend = Literal["rocm", "cuda"]
Backend = Literal[GpuBackend, "cpu"]
BackendKind = Literal[Backend, "xpu"]
GPU_BACKENDS: Final[tuple[GpuBackend, ...]] = get_args(GpuBackend)
BACKENDS: Final[tuple[Backend, ...]] = get_args(Backend)
BACKEND_KINDS: Final[tuple[BackendKind, ...]] = get_args(BackendKind)

_GFX = re.compile(r"^gfx([0-9]{1,2})([0-9])([0-9a-f])$")
_OVERRIDE = re.compile(r"^([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{1,2})$")
# The code-object triple rocminfo prints before the target in its ISA section.
_TRIPLE = "amdgcn-amd-amdhsa--"


def strip_features(target: str) -> str:
    """``gfx90a:sramecc+:xnack-`` -> ``gfx90a``; also lower-cases and trims.

    Works on any target string (``sm_90`` stays ``sm_90``), so callers that hold
    either vendor's arch can use it."""
    return target.split(":", 1)[0].strip().lower()


def base_arch(arch: str | None) -> str | None:
    """:func:`strip_features`, with None (or an empty result) as None."""
    if not arch:
        return None
    return strip_features(arch) or None


def parse_gfx(value: object) -> str | None:
    """The gfx target ``value`` names, normalised, or None when it names none.

    ``"GFX90A"``, ``"gfx90a:sramecc+:xnack-"`` and ``"amdgcn-amd-amdhsa--gfx90a"``
    give ``"gfx90a"``; ``"gfx000"`` (rocminfo's name for the CPU agent), ``"navi31"``
    and non-strings give None."""
    if not isinstance(value, str):
        return None
    text = strip_features(value).removeprefix(_TRIPLE)
    if not _GFX.match(text) or text == "gfx000":
        return None
    return text


def is_gfx(value: object) -> bool:
    return parse_gfx(value) is not None


def family(arch: str) -> str:
    """The name prefix an arch shares with its siblings: ``gfx1031`` -> ``gfx103``.

    Only a naming rule: gfx9 spans generations (gfx906 is GCN5, gfx90a CDNA2), so a
    caller that must know whether two archs are compatible asks gfx.toml's
    ``generation`` as well."""
    return strip_features(arch)[:-1]


def override_to_gfx(value: str | None) -> str | None:
    """``HSA_OVERRIDE_GFX_VERSION`` -> the gfx target it makes the runtime report:
    ``10.3.0`` -> ``gfx1030``, ``9.0.10`` -> ``gfx90a``.

    The one rule for bad input: anything that does not spell a gfx target (unset,
    empty, not three numbers, a minor above 9, a stepping above 15) gives None. The
    caller says what is wrong in its own terms (a doctor finding, a data error)."""
    if not value:
        return None
    m = _OVERRIDE.match(value.strip())
    if not m:
        return None
    major, minor, step = (int(x) for x in m.groups())
    if minor > 9 or step > 15:
        return None
    return parse_gfx(f"gfx{major}{minor}{step:x}")


def gfx_to_override(arch: str) -> str | None:
    """The ``HSA_OVERRIDE_GFX_VERSION`` value that names ``arch``: ``gfx1030`` ->
    ``10.3.0``, ``gfx90a`` -> ``9.0.10``; None when ``arch`` is not a gfx target."""
    name = parse_gfx(arch)
    if name is None:
        return None
    m = _GFX.match(name)
    assert m is not None  # parse_gfx matched it
    major, minor, step = m.groups()
    return f"{int(major)}.{int(minor)}.{int(step, 16)}"


def wavefront_size(arch: str) -> int:
    """64 for GCN and CDNA (``gfx803``, ``gfx90a``, ``gfx942``), 32 for RDNA (``gfx1030``,
    ``gfx1100``), which is what Triton compiles for on each (RDNA runs wave32 by default)."""
    return 64 if len(strip_features(arch)) == 6 else 32


# -- NVIDIA: compute capability <-> sm_XY <-> the arch lists in wheels ------------------
#
# One naming rule, as CUDA's nvcc documents it (https://docs.nvidia.com/cuda/
# cuda-compiler-driver-nvcc/#gpu-feature-list): compute capability X.Y is the real
# architecture ``sm_XY`` (SASS) and the virtual one ``compute_XY`` (PTX); X has one or two
# digits (``sm_90``, ``sm_100``, ``sm_120``), Y one; an ``a`` or ``f`` suffix names the
# arch-specific or family-specific feature set (``sm_90a``, ``sm_100f``). torch's
# ``torch.cuda.get_arch_list()`` and ``TORCH_CUDA_ARCH_LIST`` use these spellings.

_CC = re.compile(r"^([0-9]{1,2})\.([0-9])([af]?)$")
_SM = re.compile(r"^(?:sm_?)?([0-9]{1,2})([0-9])([af]?)$")
_WHEEL_ARCH = re.compile(r"^(sm|compute)_([0-9]{1,2})([0-9])([af]?)$")


def parse_cc(value: object) -> str | None:
    """A compute capability from any of its spellings: ``9.0``, ``sm_90``, ``sm90``, ``90``
    (and ``9.0a`` / ``sm_90a``) -> ``"9.0"`` (``"9.0a"``); ``sm_100`` -> ``"10.0"``; else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    m = _CC.match(text) or _SM.match(text)
    if m is None:
        return None
    return f"{int(m.group(1))}.{m.group(2)}{m.group(3)}"


def cc_of(major: int, minor: int) -> str:
    """``(9, 0)`` (what ``torch.cuda.get_device_properties`` reports) -> ``"9.0"``."""
    return f"{major}.{minor}"


def sm_name(cc: str) -> str:
    """``"9.0"`` -> ``"sm_90"``; ``"9.0a"`` -> ``"sm_90a"``; ``"10.0"`` -> ``"sm_100"``.
    Raises ValueError for what is not a compute capability."""
    parsed = parse_cc(cc)
    if parsed is None:
        raise ValueError(f"not a compute capability: {cc!r} (expected e.g. 9.0 or sm_90)")
    number, suffix = parsed.rstrip("af"), parsed[len(parsed.rstrip("af")) :]
    major, minor = number.split(".")
    return f"sm_{major}{minor}{suffix}"


def sm_number(cc: str | None) -> int | None:
    """``"9.0"`` or ``"sm_90a"`` -> ``90`` (the feature suffix dropped): what arch lists compare."""
    parsed = parse_cc(cc)
    if parsed is None:
        return None
    major, minor = parsed.rstrip("af").split(".")
    return int(major) * 10 + int(minor)


def wheel_archs(arch_list: Iterable[str]) -> tuple[frozenset[int], frozenset[int]]:
    """A torch build's CUDA arch list (``["sm_80", "sm_90", "compute_90"]``) as the SASS
    numbers and the PTX numbers it carries: ``({80, 90}, {90})``. Other entries are ignored."""
    sass: set[int] = set()
    ptx: set[int] = set()
    for entry in arch_list:
        m = _WHEEL_ARCH.match(entry.strip().lower())
        if m is None:
            continue
        number = int(m.group(2)) * 10 + int(m.group(3))
        (sass if m.group(1) == "sm" else ptx).add(number)
    return frozenset(sass), frozenset(ptx)


def runs_on(cc: str, sass: Iterable[int], ptx: Iterable[int]) -> bool:
    """Whether a build with these SASS and PTX archs runs on a GPU of compute capability ``cc``:
    exact SASS, SASS of an older minor of the same major (binary compatible), or PTX of an
    older arch that the driver JIT-compiles."""
    number = sm_number(cc)
    if number is None:
        return False
    sass, ptx = set(sass), set(ptx)
    return number in sass or any(p <= number for p in ptx) or any(s // 10 == number // 10 and s <= number for s in sass)
