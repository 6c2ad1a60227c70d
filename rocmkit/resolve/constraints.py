"""What the user asked for, on top of what the machine has."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rocmkit.errors import UsageError
from rocmkit.plan import CPU, Backend

# ASCII digits, a few of them: `\d` also takes other scripts' digits, and a 5000-digit
# part would pass a regex only to overflow int() later.
_RELEASE = r"[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?"

# PyTorch's two channels, then AMD's three (matrices/channels.toml); "therock" is the old
# name of amd-nightly and still accepted.
CHANNELS = ("stable", "nightly", "amd", "amd-rc", "amd-nightly", "therock")
AMD_CHANNELS = ("amd", "amd-rc", "amd-nightly", "therock")
FRAMEWORKS = ("torch", "jax", "torch-xla")


@dataclass(frozen=True, kw_only=True)
class Constraints:
    torch: str | None = None  # "2.5" (newest 2.5.x) or "2.5.1" (exact)
    rocm: str | None = None  # "6.2" or "6.2.4"; forces a ROCm build
    python: str | None = None  # "3.11"; default: the running interpreter
    channel: str = "stable"  # stable | nightly | amd | amd-rc | amd-nightly (therock)
    cuda: str | None = None  # "12.4" or "cu124"; forces a CUDA build
    index_base: str | None = None  # replaces https://download.pytorch.org/whl (env ROCMKIT_INDEX_BASE)
    # Where index_base came from when not an option (the session names ROCMKIT_INDEX_BASE): for the reason.
    index_base_from: str | None = None
    cpu: bool = False  # force CPU wheels
    # Only facts a source confirms: a build known only from upstream's build lists (not yet
    # seen on an index) is never planned unless --backend names its index.
    strict_data: bool = False
    framework: str = "torch"  # torch | jax | torch-xla | torch,jax (what to plan for)
    jax: str | None = None  # "0.10" (newest 0.10.x) or "0.10.2": --framework jax=0.10

    def validated(self) -> Constraints:
        """Check the shape of every value; one clear error per bad value."""
        if self.channel not in CHANNELS:
            raise UsageError(f"unknown channel {self.channel!r}", f"use one of {', '.join(CHANNELS)}")
        if self.torch is not None and not re.fullmatch(_RELEASE, self.torch):
            raise UsageError(f"--torch {self.torch!r} is not a version", "give a release like 2.5 or 2.5.1")
        if self.rocm is not None and not re.fullmatch(_RELEASE, self.rocm_version or ""):
            raise UsageError(
                f"ROCm {self.rocm!r} is not a release", "give --backend rocmX.Y or rocmX.Y.Z, e.g. rocm6.2 or rocm6.2.4"
            )
        if self.python is not None and not re.fullmatch(r"3\.[0-9]{1,3}", self.python):
            raise UsageError(f"--python {self.python!r} is not a CPython version", "give one like 3.11")
        if self.cuda is not None and not re.fullmatch(r"(cu[0-9]{3}|[0-9]{1,3}\.[0-9])", self.cuda):
            raise UsageError(f"CUDA {self.cuda!r} is not a release", "give --backend cuXYZ, e.g. cu124 (CUDA 12.4)")
        names = self.frameworks
        bad = [n for n in names if n not in FRAMEWORKS]
        if bad or not names or len(set(names)) != len(names):
            raise UsageError(
                f"--framework {self.framework!r} is not one of {', '.join(FRAMEWORKS)} (or torch,jax)",
                "give torch, jax, torch-xla, or torch,jax",
            )
        if "torch-xla" in names and len(names) > 1:
            raise UsageError("--framework torch-xla goes alone", "plan torch-xla and the others separately")
        if self.jax is not None and "jax" not in names:
            raise UsageError(f"a JAX release ({self.jax}) goes with --framework jax", f"write --framework jax={self.jax}")
        if self.jax is not None and not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,4}){1,3}", self.jax):
            raise UsageError(f"JAX {self.jax!r} is not a release", "give --framework jax=0.10 or jax=0.10.2")
        if "torch" not in names and self.torch is not None:
            raise UsageError("--torch goes with --framework torch", ("drop --torch", "add torch to --framework"))
        if "torch" not in names and self.channel != "stable":
            raise UsageError(f"--channel {self.channel} is for torch", "drop --channel for --framework jax/torch-xla")
        rocm = Backend.rocm_index(self.rocm_version or "") if self.rocm else None
        forced = [str(b) for b in (rocm, self.cuda_index, CPU if self.cpu else None) if b is not None]
        if len(forced) > 1:
            raise UsageError(f"two backends asked for: {' and '.join(forced)}", "give one --backend")
        base = index_base_of(self)
        return self if base == self.index_base else replace(self, index_base=base)

    @property
    def amd_channel(self) -> bool:
        """One of AMD's own channels (repo.amd.com and its rc and nightly streams)."""
        return self.channel in AMD_CHANNELS

    @property
    def frameworks(self) -> tuple[str, ...]:
        return tuple(n.strip() for n in self.framework.split(",") if n.strip())

    @property
    def rocm_version(self) -> str | None:
        """ "6.2" or PyTorch's index name "rocm6.2" -> "6.2"."""
        if not self.rocm:
            return None
        named = Backend.read(self.rocm)
        return named.rocm or "" if named is not None else self.rocm

    @property
    def cuda_index(self) -> Backend | None:
        """ "12.4" or "cu124" -> PyTorch's cu124 index."""
        if self.cuda is None:
            return None
        return Backend.read(self.cuda) or Backend.cuda_index(self.cuda)


def index_base_of(cons: Constraints) -> str | None:
    """The mirror that replaces download.pytorch.org (``--index-base`` or, through the session,
    ``ROCMKIT_INDEX_BASE``), checked, with any credentials in it masked: the plan, its
    reasons and every cache and report hold the masked URL; the installers and rocmkit's
    HTTP client get the real one back (:func:`rocmkit.util.redact.reveal`)."""
    from rocmkit.util.redact import check_url, conceal

    if cons.index_base is None:
        return None
    return conceal(check_url(cons.index_base_from or "--index-base", cons.index_base))
