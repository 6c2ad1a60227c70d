"""Package facts: names, pins and requirements.

Everything rocmkit knows about *package names* (PEP 503 canonical names, the
four Triton distributions torch has pinned over the years, the companions) and
how it reads a ``name==version`` pin lives here, so install, resolve and
``matrix refresh`` cannot disagree about either. Reading a package index is
:mod:`rocmkit.pkgindex`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:

    from packaging.utils import NormalizedName

# -- names ---------------------------------------------------------------------

# The distributions torch has pinned for Triton, newest naming first: ROCm wheels
# moved from pytorch-triton-rocm to triton-rocm with 2.10; CUDA wheels pin triton
# (pytorch-triton on nightly).
TRITON_DISTRIBUTIONS: tuple[NormalizedName, ...] = cast(
    "tuple[NormalizedName, ...]", ("triton-rocm", "pytorch-triton-rocm", "pytorch-triton", "triton")
)
COMPANIONS: tuple[NormalizedName, ...] = cast("tuple[NormalizedName, ...]", ("torchvision", "torchaudio"))

# packaging.utils.canonicalize_name's rule, without importing packaging.utils: it imports
# packaging.tags (subprocess, sysconfig, platform), which resolve never needs.
_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> NormalizedName:
    """PEP 503 normalised project name ("Pytorch_Triton.ROCm" -> "pytorch-triton-rocm")."""
    return cast("NormalizedName", _SEPARATORS.sub("-", name).lower())


def wheel_escape(name: str) -> str:
    """A name as a wheel's file and ``.data``/``.dist-info`` folder names spell it: runs of
    ``-_.`` become one ``_``, case kept ("pytorch-triton-rocm" -> "pytorch_triton_rocm";
    https://packaging.python.org/en/latest/specifications/binary-distribution-format/#escaping-and-unicode)."""
    return re.sub(r"[-_.]+", "_", name)


def is_triton(name: str) -> bool:
    return canonical(name) in TRITON_DISTRIBUTIONS


# -- requirements --------------------------------------------------------------


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# name [extras] == version, then whatever follows (markers, options, a line continuation).
# A regex rather than packaging.requirements, which costs ~40 ms to import and rejects
# the option and continuation tails that pip and uv print after a pin.
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*==\s*([^\s,;\\]+)")


def requirement_name(line: str) -> NormalizedName | None:
    """The canonical project name a requirement line starts with ("Torch>=2" -> "torch")."""
    m = _NAME.match(line)
    return canonical(m.group(1)) if m else None


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One ``name==version`` pin, as :func:`parse_pin` read it."""

    name: str  # as written: "Pytorch_Triton_ROCm"
    version: str  # "3.1.0", "2.5.1+rocm6.2"
    plain: bool  # the text was exactly ``name==version``: no extras, spaces, markers or options

    @property
    def project(self) -> NormalizedName:
        return canonical(self.name)

    def __str__(self) -> str:
        return f"{self.project}=={self.version}"


def parse_pin(text: str) -> Pin | None:
    """The one ``name==version`` reader: a requirement ("torch[opt] == 2.5.1 ; python_version>'3'"),
    a lock or requirements-file line ("torch==2.5.1 \\"), or a data value. None: not a pin."""
    m = _PIN.match(text)
    if m is None:
        return None
    name, _extras, version = m.groups()
    return Pin(name=name, version=version, plain=text == f"{name}=={version}")


def triton_pin(requires: Iterable[str]) -> str | None:
    """The Triton requirement torch pins ("triton-rocm==3.6.0"), markers dropped."""
    for line in requires:
        name = requirement_name(line)
        if name is None or name not in TRITON_DISTRIBUTIONS:
            continue
        # Old Requires-Dist lines wrap the specifier in parentheses: "triton (==2.1.0)".
        pin = parse_pin(line.split(";", 1)[0].replace("(", "").replace(")", ""))
        return str(pin) if pin else str(name)
    return None


def torch_requirement(requires: Iterable[str]) -> str | None:
    """A companion's requirement on torch ("torch==2.14.0", "torch>=2.14.0"), markers dropped."""
    for line in requires:
        if requirement_name(line) == "torch":
            spec = line.split(";", 1)[0].strip()
            return re.sub(r"^torch\s*\(?\s*", "torch", spec).rstrip(")").replace(" ", "")
    return None
