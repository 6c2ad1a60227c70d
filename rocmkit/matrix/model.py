"""The typed, validated view of ``matrices/*.toml``.

Every record carries ``sources`` (keys into the file's [sources] table, resolved
to text by :meth:`Matrix.source_text`) and ``unconfirmed`` (fields that no
source we could read confirms; ``"*"`` means the whole record), so the resolver
can say when it relies on a fact that is not confirmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from packaging.version import Version

from rocmkit.arch import Backend, override_to_gfx
from rocmkit.plan import Backend as PlanBackend


def release_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True, kw_only=True)
class Fact:
    sources: tuple[str, ...] = ()
    unconfirmed: tuple[str, ...] = ()

    def is_confirmed(self, field_name: str | None = None) -> bool:
        if "*" in self.unconfirmed:
            return False
        return field_name is None or field_name not in self.unconfirmed


@dataclass(frozen=True, kw_only=True)
class PythonSpan:
    """The CPython minor versions a release's wheels are built for, ends included. One rule for
    torch, jax/jaxlib, their plugins and torch_xla: "3.12" and "3.12.4" are both 3.12."""

    python_min: str  # "3.9"
    python_max: str  # "3.12"

    def supports_python(self, python: str) -> bool:
        key = release_key(python)[:2]
        return release_key(self.python_min) <= key <= release_key(self.python_max)


@dataclass(frozen=True, kw_only=True)
class PciDevice(Fact):
    pci_id: str  # "0x744c"
    product: str
    arch: str
    integrated: bool | None = None


@dataclass(frozen=True, kw_only=True)
class GfxArch(Fact):
    name: str  # "gfx1031"
    family: str  # "gfx103"
    generation: str  # "RDNA2"
    integrated: bool | None = None
    products: tuple[str, ...] = ()
    hsa_override: str | None = None  # "10.3.0"
    override_sources: tuple[str, ...] = ()

    @property
    def override_arch(self) -> str | None:
        """The arch whose code runs under ``hsa_override`` ("10.3.0" -> "gfx1030")."""
        return override_to_gfx(self.hsa_override)


@dataclass(frozen=True, kw_only=True)
class NvidiaGpu(Fact):
    pattern: str
    compute_capability: str
    regex: re.Pattern[str] = field(compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class CudaToolkit(Fact):
    version: str  # "12.8"
    min_driver: str  # "525.60.13": the floor under CUDA minor-version compatibility
    min_compute_capability: str | None = None  # toolkits drop old GPUs
    ga_driver: str | None = None  # the GA release's driver; below it PTX JIT of newer code may fail

    @property
    def tag(self) -> str:
        """The wheel index name: "12.8" -> "cu128"."""
        return str(PlanBackend.cuda_index(self.version))


@dataclass(frozen=True, kw_only=True)
class RocmIndex(Fact):
    name: str  # "rocm6.2.4"
    rocm: str  # "6.2.4"
    archs: tuple[str, ...]  # the gfx targets compiled into the wheels on this index
    # Archs whose code is in torch but missing from a bundled library (rocBLAS ...).
    incomplete_archs: tuple[str, ...] = ()
    incomplete_sources: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TorchVariant(Fact):
    index: str  # "rocm6.2", "cu124", "cpu"
    kind: Backend
    triton: str | None = None  # "pytorch-triton-rocm==3.1.0"
    archs: tuple[str, ...] = ()  # ROCm: gfx targets in the wheel
    # CPU: the PyPI Triton that runs rocmkit's smoke kernels under TRITON_INTERPRET=1
    # with this CPU build (CPU wheels pin no Triton; a plan offers it as a companion).
    interpreter_triton: str | None = None
    # Built for Linux only (no Windows wheel), e.g. cu129 for 2.9.1-2.11.0: test-infra's
    # CUDA_ARCHES_NO_WINDOWS, or a CUDA version its build script adds for Linux alone.
    linux_only: bool = False

    @property
    def backend(self) -> PlanBackend:
        """The index name read as a backend (the loader has checked that it is one)."""
        return PlanBackend.parse(self.index)

    @property
    def rocm(self) -> str | None:
        """ "rocm6.2.4" -> "6.2.4"."""
        return self.backend.rocm

    @property
    def cuda(self) -> str | None:
        """ "cu124" -> "12.4", "cu118" -> "11.8"."""
        return self.backend.cuda


@dataclass(frozen=True, kw_only=True)
class TorchRelease(Fact, PythonSpan):
    version: str  # "2.5.1"
    torchvision: str | None
    torchaudio: str | None
    released: str | None = None  # "2024-10-29"
    variants: tuple[TorchVariant, ...] = ()

    @property
    def series(self) -> str:
        v = Version(self.version)
        return f"{v.major}.{v.minor}"

    def variant(self, index: str) -> TorchVariant | None:
        return next((v for v in self.variants if v.index == index), None)

    def of_kind(self, kind: Backend) -> tuple[TorchVariant, ...]:
        return tuple(v for v in self.variants if v.kind == kind)


@dataclass(frozen=True, kw_only=True)
class RocmRelease(Fact):
    version: str  # "6.2"
    released: str | None = None
    supported: tuple[str, ...] = ()  # gfx archs AMD lists as supported
    deprecated: tuple[str, ...] = ()
    amdgpu_dkms: tuple[str, ...] = ()  # amdgpu-dkms kernel driver versions shipped with it ("6.8.5")
    userspace_min: str | None = None  # oldest user space this kernel driver works with
    userspace_max: str | None = None  # newest


@dataclass(frozen=True, kw_only=True)
class Channel(Fact):
    name: str  # stable | nightly | amd | amd-rc | amd-nightly
    kind: Literal["pytorch", "amd"]
    url: str  # "{base}/{index}" for pytorch channels; AMD's explicit-device-extras index (whl-next)
    description: str = ""
    indexes: tuple[str, ...] = ()  # nightly: the indexes it builds
    torch_min: str | None = None  # nightly: the lowest pre-release version to accept
    archs: tuple[str, ...] = ()  # amd: archs with a device-gfxNNNN extra (on url / all_arch_url)
    # amd: archs with a device extra on legacy_url, where that index is known to differ (nightly)
    legacy_archs: tuple[str, ...] = ()
    python_min: str | None = None
    python_max: str | None = None
    packages: tuple[str, ...] = ()  # amd: requirement templates with {gfx}
    aliases: tuple[str, ...] = ()  # other names of this channel ("therock" for amd-nightly)
    stream: str | None = None  # amd: "stable", "rc" or "nightly" (AMD's version scheme of each)
    all_arch_url: str | None = None  # amd: the whl/ index (device-all automatic)
    legacy_url: str | None = None  # amd: the whl-multi-arch index of releases before layout_from
    layout_from: str | None = None  # amd: the first ROCm release published in the whl/whl-next layout
    rocm: str | None = None  # amd: the ROCm release the stream publishes now (the driver check without --backend rocmX.Y)

    def index_for(self, rocm: str | None) -> str:
        """AMD's index for ROCm ``rocm`` ("7.13"): the legacy multi-arch one before layout_from."""
        if (
            rocm
            and self.legacy_url
            and self.layout_from
            and release_key(rocm)[:2] < release_key(self.layout_from)[:2]
        ):
            return self.legacy_url
        return self.url

    def archs_for(self, rocm: str | None) -> tuple[str, ...]:
        """The archs with a device package on the index :meth:`index_for` gives for ``rocm``."""
        if self.legacy_archs and self.legacy_url and self.index_for(rocm) == self.legacy_url != self.url:
            return self.legacy_archs
        return self.archs


@dataclass(frozen=True, kw_only=True)
class FamilyIndex(Fact):
    """One of AMD's older per-family TheRock indexes (no new releases)."""

    name: str  # "gfx110X-all"
    url: str
    archs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """Everything in matrices/, indexed for lookups. Built by :func:`rocmkit.matrix.load_matrix`."""

    pci: dict[str, PciDevice]
    archs: dict[str, GfxArch]
    nvidia_gpus: tuple[NvidiaGpu, ...]
    cuda_toolkits: tuple[CudaToolkit, ...]  # oldest first
    rocm_indexes: dict[str, RocmIndex]
    torch_releases: tuple[TorchRelease, ...]  # oldest first
    rocm_releases: tuple[RocmRelease, ...]  # oldest first
    channels: dict[str, Channel]
    pytorch_base: str  # "https://download.pytorch.org/whl"
    sources: dict[str, dict[str, str]]  # file -> source key -> text
    family_indexes: tuple[FamilyIndex, ...] = ()
    files: tuple[str, ...] = ()
    pypi_url: str | None = None  # "https://pypi.org/simple"

    # -- contract 1 ---------------------------------------------------------
    def pci_device(self, pci_id: str) -> PciDevice | None:
        return self.pci.get(normalize_pci_id(pci_id))

    def gfx_arch(self, name: str) -> GfxArch | None:
        return self.archs.get(name.strip().lower())

    def arch_for_product(self, name: str) -> GfxArch | None:
        """The arch whose ``products`` names this card ("Arcturus GL-XL [AMD Instinct MI100]" ->
        gfx908): the longest product found in the name as whole words, so "Instinct MI250"
        does not claim an "Instinct MI250X"; None when no product is named or two archs claim
        names of the same length (a name that cannot pick one arch picks none)."""
        best: list[tuple[int, GfxArch]] = []
        for arch in self.archs.values():
            for product in arch.products:
                if re.search(rf"(?<![A-Za-z0-9]){re.escape(product)}(?![A-Za-z0-9])", name, re.IGNORECASE):
                    best.append((len(product), arch))
        if not best:
            return None
        top = max(n for n, _ in best)
        archs = {a.name: a for n, a in best if n == top}
        return next(iter(archs.values())) if len(archs) == 1 else None

    def nvidia_compute_capability(self, name: str) -> str | None:
        for gpu in self.nvidia_gpus:
            if gpu.regex.search(name):
                return gpu.compute_capability
        return None

    # -- lookups used by resolve and the CLI --------------------------------
    def nvidia_gpu(self, name: str) -> NvidiaGpu | None:
        return next((g for g in self.nvidia_gpus if g.regex.search(name)), None)

    def cuda_toolkit(self, version: str) -> CudaToolkit | None:
        return next((c for c in self.cuda_toolkits if c.version == version), None)

    def torch_release(self, version: str) -> TorchRelease | None:
        return next((r for r in self.torch_releases if r.version == version), None)

    def torch_series(self, spec: str) -> tuple[TorchRelease, ...]:
        """Releases matching "2.5" (the series) or "2.5.1" (exact), newest first."""
        exact = self.torch_release(spec)
        if exact is not None:
            return (exact,)
        return tuple(r for r in reversed(self.torch_releases) if r.series == spec)

    def rocm_release(self, version: str) -> RocmRelease | None:
        """The row for "6.2" or "6.2.4" (falls back to the "major.minor" row)."""
        for cand in (version, ".".join(version.split(".")[:2])):
            hit = next((r for r in self.rocm_releases if r.version == cand), None)
            if hit is not None:
                return hit
        return None

    def rocm_release_for_dkms(self, dkms: str) -> RocmRelease | None:
        """The ROCm release whose amdgpu-dkms driver has this version ("6.8.5" -> 6.2)."""
        for rel in self.rocm_releases:
            if any(
                dkms == d or dkms.startswith(d + ".") or dkms.startswith(d + "-") for d in rel.amdgpu_dkms
            ):
                return rel
        return None

    def source_text(self, file: str, key: str) -> str:
        return self.sources.get(file, {}).get(key, key)

    def index_url(self, channel: str, index: str, base: str | None = None) -> str:
        chan = self.channels[channel]
        return self.rebase(chan.url.format(base=self.pytorch_base.rstrip("/"), index=index), base)

    def rebase(self, url: str, base: str | None) -> str:
        """``--index-base``, the one rule (resolve and install both use it): an index under
        PyTorch's root (``pytorch_base``) moves to the mirror ``base``; any other URL stays."""
        root = self.pytorch_base.rstrip("/")
        if not base or not (url == root or url.startswith(root + "/")):
            return url
        from rocmkit.util.redact import url_under

        # On the mirror's path, never after its query (a signed or tokened mirror URL).
        return url_under(base, url[len(root) :], slash=url.endswith("/")) if url != root else base


def normalize_pci_id(pci_id: str) -> str:
    """ "0x744C", "744c", "0x0744c" -> "0x744c"."""
    text = pci_id.strip().lower()
    text = text.removeprefix("0x")
    try:
        return f"0x{int(text, 16):04x}"
    except ValueError:
        return pci_id
