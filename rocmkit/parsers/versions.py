"""Version files and version commands: ROCm release files, ``hipconfig --version``, the amdgpu module.

The ROCm release comes only from these (``.info/version``, versioned folder
names, hipconfig, amd-smi's banner): never from rocminfo.
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^\s*(?P<v>\d+\.\d+(?:\.\d+)?)")
_FOLDER = re.compile(r"^rocm-(?P<v>\d+\.\d+(?:\.\d+)?)(?:[-.].*)?$")
_HIP = re.compile(r"^\s*(?P<full>(?P<mm>\d+\.\d+)\.\d+(?:-[0-9A-Za-z.]+)?)")
_MODULE = re.compile(r"^\s*(?P<v>\d+(?:\.\d+){1,3}(?:[-+][0-9A-Za-z.]+)?)\s*$")


def parse_rocm_version_file(text: str | None) -> str | None:
    """``/opt/rocm/.info/version``: "6.2.4-120" -> "6.2.4" (the build number is dropped)."""
    if not text:
        return None
    m = _RELEASE.match(text)
    return m.group("v") if m else None


def version_from_folder(name: str) -> str | None:
    """ "rocm-6.2.4" -> "6.2.4"; "rocm" -> None."""
    m = _FOLDER.match(name.strip())
    return m.group("v") if m else None


def parse_hipconfig_version(text: str | None) -> tuple[str | None, str | None]:
    """ "6.2.41134-65d174c3e" -> ("6.2.41134-65d174c3e", "6.2"): the HIP version, and the ROCm
    major.minor it belongs to (HIP's patch number is a build number, not ROCm's patch)."""
    if not text:
        return None, None
    for line in text.splitlines():
        m = _HIP.match(line)
        if m:
            return m.group("full"), m.group("mm")
    return None, None


def parse_module_version(text: str | None) -> str | None:
    """``/sys/module/amdgpu/version``: "6.8.5" (present only for the DKMS driver)."""
    if not text:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _MODULE.match(first)
    return m.group("v") if m else None
