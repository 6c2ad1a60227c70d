"""Merging every tool's GPU sightings into one list, with the precedence rules in one place.

The first listing in :data:`LISTINGS` that shows GPUs seeds the list; later ones attach
to those GPUs by KFD node, PCI bus id or UUID (or, when there is nothing to tell them
apart and the counts agree, by order). :data:`FIELD_PRECEDENCE` says which tool wins
for each field; the PCI table of ``matrices/gfx.toml`` fills what no tool printed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rocmkit.arch import Vendor, parse_cc, sm_name
from rocmkit.machine import Gpu, Problem
from rocmkit.parsers.records import GpuRecord, bus_key

if TYPE_CHECKING:
    from rocmkit.matrix import Matrix

# AMD listings (a tool, or one output format of a tool) in merge order, best first.
LISTINGS: tuple[str, ...] = (
    "kfd",
    "rocminfo",
    "amd-smi static",
    "amd-smi list",
    "rocm-smi json",
    "rocm-smi productname",
    "rocm-smi productname csv",
    "rocm-smi csv",
    "rocm-smi",
    "rocm_agent_enumerator",
)
NVIDIA_LISTINGS: tuple[str, ...] = ("nvidia-smi query", "nvidia-smi")

# Which listing wins for each field; listings not named fall back to merge order.
# arch: KFD shows the real target; rocminfo shows HSA_OVERRIDE_GFX_VERSION's instead.
# name: rocm-smi's concise table cuts names to 20 characters, so it comes last.
# memory: KFD and amd-smi give the VRAM size; rocminfo's pool is what HSA may allocate.
FIELD_PRECEDENCE: dict[str, tuple[str, ...]] = {
    "arch": (
        "kfd",
        "rocminfo",
        "amd-smi static",
        "rocm-smi json",
        "rocm-smi productname",
        "rocm-smi productname csv",
        "rocm-smi csv",
        "rocm_agent_enumerator",
    ),
    "name": (
        "amd-smi static",
        "rocminfo",
        "rocm-smi json",
        "rocm-smi productname",
        "rocm-smi productname csv",
        "rocm-smi csv",
        "rocm-smi",
        "nvidia-smi query",
        "nvidia-smi",
    ),
    "memory_bytes": (
        "kfd",
        "amd-smi static",
        "rocminfo",
        "rocm-smi json",
        "rocm-smi csv",
        "nvidia-smi query",
    ),
    "pci_bus_id": ("kfd", "amd-smi static", "amd-smi list", "nvidia-smi query", "lspci", "rocminfo"),
    # uuid: the "GPU-<hex>" form that ROCR_VISIBLE_DEVICES accepts first.
    "uuid": ("rocminfo", "kfd", "amd-smi static", "amd-smi list", "nvidia-smi query"),
}

# Tool names for Gpu.sources (several listings come from one tool).
_TOOL = {
    "amd-smi static": "amd-smi",
    "amd-smi list": "amd-smi",
    "rocm-smi json": "rocm-smi",
    "rocm-smi productname": "rocm-smi",
    "rocm-smi productname csv": "rocm-smi",
    "rocm-smi csv": "rocm-smi",
    "nvidia-smi query": "nvidia-smi",
}

# The names APUs' integrated GPUs report: a hint of last resort for Gpu.integrated.
_APU_NAMES = re.compile(r"^(AMD )?Radeon(\(TM\))? Graphics$|^AMD Radeon \d{3}M Graphics$", re.I)


class MatrixRef:
    """Loads the matrix only when a fact is missing (detect stays fast without it)."""

    def __init__(self) -> None:
        self._loaded = False
        self._matrix: Matrix | None = None

    def get(self) -> Matrix | None:
        if not self._loaded:
            self._loaded = True
            try:
                from rocmkit.matrix import load_matrix
            except ModuleNotFoundError as exc:  # pragma: no cover - only before the matrix existed
                if exc.name and exc.name.startswith("rocmkit.matrix"):
                    return None
                raise
            self._matrix = load_matrix()  # a corrupt matrix is a DataError for the user
        return self._matrix


@dataclass
class _Acc:
    """One GPU being assembled: the record each listing gave for it."""

    vendor: Vendor
    records: dict[str, GpuRecord] = field(default_factory=dict)

    def first(self, attr: str, order: Sequence[str]) -> Any:
        for listing in (*order, *self.records):
            rec = self.records.get(listing)
            if rec is not None:
                value = getattr(rec, attr)
                if value is not None and not (
                    attr == "name" and rec.name_truncated and self._has_full_name()
                ):
                    return value
        return None

    def _has_full_name(self) -> bool:
        return any(r.name and not r.name_truncated for r in self.records.values())

    def value(self, attr: str) -> Any:
        return self.first(attr, FIELD_PRECEDENCE.get(attr, ()))


def _same_bus(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if len(a) > 7 and len(b) > 7:
        return a == b
    return bus_key(a) == bus_key(b)


def _keys(rec: GpuRecord, acc: _Acc) -> tuple[int, int]:
    """How many identity keys (KFD node, PCI bus id, UUID) agree and how many conflict."""
    agree = conflict = 0
    node = acc.value("kfd_node")
    if rec.kfd_node is not None and node is not None:
        agree, conflict = (agree + 1, conflict) if rec.kfd_node == node else (agree, conflict + 1)
    bus = acc.value("pci_bus_id")
    if rec.pci_bus_id is not None and bus is not None:
        same = _same_bus(rec.pci_bus_id, bus)
        agree, conflict = (agree + 1, conflict) if same else (agree, conflict + 1)
    uuids = {r.uuid for r in acc.records.values() if r.uuid}
    if rec.uuid is not None and uuids:
        agree, conflict = (agree + 1, conflict) if rec.uuid in uuids else (agree, conflict + 1)
    return agree, conflict


def _match(rec: GpuRecord, acc: _Acc) -> bool | None:
    """True: same GPU (a key agrees, none conflicts); False: some key differs; None: no key to tell."""
    agree, conflict = _keys(rec, acc)
    if conflict:
        return False
    return True if agree else None


class _KeyIndex:
    """The identity keys of some GPUs being assembled, indexed, so that matching a listing of n
    GPUs costs O(n) lookups instead of comparing every record with every GPU (O(n^2): 3.4 s at
    512 GPUs, and a CPX-partitioned node shows 64). Lookups give candidates; :func:`_keys`
    decides, with the same rules as before (a bus id's index key, its last 7 characters, is
    necessary for two bus ids to agree)."""

    def __init__(self, accs: Sequence[_Acc]) -> None:
        self.position = {id(a): i for i, a in enumerate(accs)}
        self.by: dict[tuple[str, object], list[_Acc]] = {}
        self.masks: dict[int, int] = {}  # which key kinds a GPU has -> how many GPUs
        for acc in accs:
            mask = 0
            for kind, value in _acc_keys(acc):
                self.by.setdefault((kind, value), []).append(acc)
                mask |= _KINDS[kind]
            self.masks[mask] = self.masks.get(mask, 0) + 1

    def candidates(self, rec: GpuRecord) -> list[_Acc]:
        """The GPUs sharing a key value with ``rec``, in their original order."""
        found: dict[int, _Acc] = {}
        for key in _rec_keys(rec):
            for acc in self.by.get(key, ()):
                found[id(acc)] = acc
        return sorted(found.values(), key=lambda a: self.position[id(a)])

    def comparable(self, rec: GpuRecord) -> int:
        """How many of the GPUs have at least one key kind ``rec`` has (a key to tell them apart)."""
        mask = _rec_mask(rec)
        return sum(n for m, n in self.masks.items() if m & mask)


_KINDS = {"kfd": 1, "bus": 2, "uuid": 4}


def _acc_keys(acc: _Acc) -> list[tuple[str, object]]:
    keys: list[tuple[str, object]] = []
    node = acc.value("kfd_node")
    if node is not None:
        keys.append(("kfd", node))
    bus = acc.value("pci_bus_id")
    if bus is not None:
        keys.append(("bus", bus_key(bus)))
    keys += [("uuid", u) for u in dict.fromkeys(r.uuid for r in acc.records.values() if r.uuid)]
    return keys


def _rec_keys(rec: GpuRecord) -> list[tuple[str, object]]:
    keys: list[tuple[str, object]] = []
    if rec.kfd_node is not None:
        keys.append(("kfd", rec.kfd_node))
    if rec.pci_bus_id is not None:
        keys.append(("bus", bus_key(rec.pci_bus_id)))
    if rec.uuid is not None:
        keys.append(("uuid", rec.uuid))
    return keys


def _rec_mask(rec: GpuRecord) -> int:
    return sum(_KINDS[kind] for kind, _ in _rec_keys(rec))


def _new_gpu(rec: GpuRecord, index: _KeyIndex, total: int) -> bool:
    """Provably another GPU: every known one differs from it, and it shares no key with any
    (no candidate agrees on a key, and every GPU has a key kind to compare)."""
    if any(_keys(rec, a)[0] > 0 for a in index.candidates(rec)):
        return False
    return index.comparable(rec) == total


def _dedupe_uuids(
    records: tuple[GpuRecord, ...], listing: str, problems: list[Problem]
) -> tuple[GpuRecord, ...]:
    """A UUID shown for several GPUs is a placeholder (a known amd-smi bug): not an identity."""
    seen: dict[str, int] = {}
    for r in records:
        if r.uuid:
            seen[r.uuid] = seen.get(r.uuid, 0) + 1
    dup = {u for u, n in seen.items() if n > 1}
    if not dup:
        return records
    problems.append(
        Problem(
            source=_TOOL.get(listing, listing),
            message=f"{listing} shows the same UUID for {max(seen.values())} GPUs ({sorted(dup)[0]})",
            hint="a driver/ROCm bug (ROCm issue #5480): update amdgpu, or reboot; rocmkit ignores these UUIDs",
            severity="info",
        )
    )
    return tuple(replace(r, uuid=None) if r.uuid in dup else r for r in records)


def merge(
    vendor: Vendor,
    listings: Mapping[str, tuple[GpuRecord, ...]],
    order: Sequence[str],
    problems: list[Problem],
) -> list[_Acc]:
    accs: list[_Acc] = []
    seeded_by = None
    for listing in order:
        recs = _dedupe_uuids(listings.get(listing, ()), listing, problems)
        if not recs:
            continue
        if not accs:
            accs = [_Acc(vendor=vendor, records={listing: r}) for r in recs]
            seeded_by = listing
            continue
        before = len(accs)
        index = _KeyIndex(accs)
        taken: set[int] = set()
        unmatched: list[GpuRecord] = []
        for rec in recs:
            hit = next(
                (a for a in index.candidates(rec) if id(a) not in taken and _match(rec, a) is True), None
            )
            if hit is not None:
                hit.records[listing] = rec
                taken.add(id(hit))
            else:
                unmatched.append(rec)
        free = [a for a in accs if id(a) not in taken]
        free_kinds = 0
        for acc in free:
            for kind, _ in _acc_keys(acc):
                free_kinds |= _KINDS[kind]
        # No key kind shared with any free GPU: nothing to tell it from them.
        keyless = [r for r in unmatched if not _rec_mask(r) & free_kinds]
        if keyless and len(keyless) == len(free) == len(unmatched):
            # Same number of GPUs and nothing to tell them apart: the tools list them in
            # the same (KFD/PCI) order.
            for rec, acc in zip(unmatched, free, strict=True):
                acc.records[listing] = rec
            continue
        # A new GPU only when its keys prove it differs from every known one.
        known = _KeyIndex(accs)  # the records matched above count too
        keyed_new = [r for r in unmatched if _new_gpu(r, known, len(accs))]
        for rec in keyed_new:
            accs.append(_Acc(vendor=vendor, records={listing: rec}))
        if len(unmatched) > len(keyed_new):
            problems.append(
                Problem(
                    source=_TOOL.get(listing, listing),
                    message=f"{listing} lists {len(recs)} {vendor.upper()} GPU(s) but {seeded_by} lists "
                    f"{before}; the extra ones could not be matched",
                    hint="a GPU may be hidden by ROCR_VISIBLE_DEVICES, held by a container, or the "
                    "output was cut; run `rocmkit snapshot DIR` and attach it to a bug report",
                    severity="info",
                )
            )
    return accs


def attach_pci(
    accs: list[_Acc], pci: tuple[GpuRecord, ...], vendor: Vendor, problems: list[Problem]
) -> list[_Acc]:
    """lspci fills PCI ids of known GPUs; it adds GPUs only when no driver tool saw any."""
    mine = [r for r in pci if r.vendor == vendor]
    if not accs:
        return [_Acc(vendor=vendor, records={"lspci": r}) for r in mine]
    by_bus: dict[str | None, list[_Acc]] = {}
    for acc in accs:
        by_bus.setdefault(bus_key(acc.value("pci_bus_id")), []).append(acc)
    every_bus_known = all(a.value("pci_bus_id") for a in accs)
    for rec in mine:
        same = by_bus.get(bus_key(rec.pci_bus_id), [])
        hit = next((a for a in same if _same_bus(rec.pci_bus_id, a.value("pci_bus_id"))), None)
        if hit is not None:
            hit.records["lspci"] = rec
        elif vendor == "amd" and every_bus_known:
            problems.append(
                Problem(
                    source="lspci",
                    message=f"lspci shows an AMD display device at {rec.pci_bus_id} ({rec.name}) that ROCm does not list",
                    hint="it may be an unsupported or disabled GPU, or one the amdgpu driver failed to "
                    "initialise: check `dmesg | grep -i amdgpu`",
                    severity="info",
                )
            )
    return accs


def _sort_key(acc: _Acc) -> tuple[int, int]:
    node = acc.value("kfd_node")
    return (0, node) if node is not None else (1, 0)


def build_amd(
    accs: list[_Acc], matrix: MatrixRef, env: Mapping[str, str], problems: list[Problem]
) -> list[Gpu]:
    if all(a.value("kfd_node") is not None for a in accs):
        accs = sorted(accs, key=_sort_key)
    gpus = []
    for i, acc in enumerate(accs):
        arch = acc.value("arch")
        name = acc.value("name")
        pci_id = acc.value("pci_device_id")
        integrated = acc.records["kfd"].integrated if "kfd" in acc.records else None
        sources = list(dict.fromkeys(_TOOL.get(k, k) for k in acc.records))
        kfd_arch = acc.records["kfd"].arch if "kfd" in acc.records else None
        ri_arch = acc.records["rocminfo"].arch if "rocminfo" in acc.records else None
        if kfd_arch and ri_arch and kfd_arch != ri_arch:
            override = env.get("HSA_OVERRIDE_GFX_VERSION")
            problems.append(
                Problem(
                    source="rocminfo",
                    message=f"GPU {i}: rocminfo reports {ri_arch} but the kernel (KFD) reports {kfd_arch}",
                    hint=(
                        f"HSA_OVERRIDE_GFX_VERSION={override} makes the runtime load {ri_arch} code; "
                        "rocmkit uses the real target"
                    )
                    if override
                    else "the HSA runtime and the kernel disagree: update ROCm and the amdgpu driver",
                    severity="info",
                )
            )
        m = matrix.get() if pci_id and (arch is None or name is None or integrated is None) else None
        dev = m.pci_device(pci_id) if m and pci_id else None
        if dev is not None:
            if arch is None or name is None:
                sources.append("matrix")
            arch = arch or dev.arch
            name = name or dev.product
            if integrated is None:
                integrated = dev.integrated
        if arch is None and name:
            # rocm-smi may name the card but print no device id (older releases print the
            # subsystem id where 6.x prints the device): the product in the name picks the arch.
            m3 = matrix.get()
            by_name = m3.arch_for_product(name) if m3 else None
            if by_name is not None:
                arch = by_name.name
                sources.append("matrix")
        if integrated is None and arch:
            m2 = matrix.get()
            ga = m2.gfx_arch(arch) if m2 else None
            if ga is not None:
                integrated = ga.integrated
        if integrated is None and name and _APU_NAMES.match(name):
            integrated = True
        if name is None and "lspci" in acc.records:
            name = acc.records["lspci"].name
        gpus.append(
            Gpu(
                vendor="amd",
                index=i,
                arch=arch,
                name=name,
                memory_bytes=acc.value("memory_bytes"),
                pci_device_id=pci_id,
                pci_vendor_id=acc.value("pci_vendor_id") or "0x1002",
                pci_bus_id=acc.value("pci_bus_id"),
                integrated=integrated,
                uuid=acc.value("uuid"),
                kfd_node=acc.value("kfd_node"),
                sources=tuple(dict.fromkeys(sources)),
            )
        )
    return gpus


def build_nvidia(accs: list[_Acc], matrix: MatrixRef) -> list[Gpu]:
    gpus = []
    for i, acc in enumerate(accs):
        name = acc.value("name")
        cc = acc.value("compute_capability")
        sources = list(dict.fromkeys(_TOOL.get(k, k) for k in acc.records))
        if cc is None and name:
            m = matrix.get()
            cc = m.nvidia_compute_capability(name) if m else None
            if cc:
                sources.append("matrix")
        ordinal = acc.value("ordinal")
        gpus.append(
            Gpu(
                vendor="nvidia",
                index=ordinal if isinstance(ordinal, int) else i,
                arch=sm_name(cc) if parse_cc(cc) else None,
                name=name,
                memory_bytes=acc.value("memory_bytes"),
                pci_device_id=acc.value("pci_device_id"),
                pci_vendor_id="0x10de",
                pci_bus_id=acc.value("pci_bus_id"),
                compute_capability=cc,
                uuid=acc.value("uuid"),
                sources=tuple(dict.fromkeys(sources)),
            )
        )
    return gpus
