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
from typing import Final, Literal, get_args

Vendor = Literal["amd", "nvidia"]
VENDORS: Final[tuple[Vendor, ...]] = get_args(Vendor)

# A backend a GPU build or image targets, and the backends a torch build can have.
GpuBackend = Literal["rocm", "cuda"]
Backend = Literal[GpuBackend, "cpu"]
GPU_BACKENDS: Final[tuple[GpuBackend, ...]] = get_args(GpuBackend)
BACKENDS: Final[tuple[Backend, ...]] = get_args(Backend)

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
