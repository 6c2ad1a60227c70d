"""``hw.memtest`` and ``hw.p2p_bandwidth`` (level 3): hardware checks that run work on the GPUs.

Both need a GPU: without one they are skipped and say so (the doctor's ``needs``), since device
memory and device links cannot be tested on the CPU. The work itself is plain torch
(rocmkit/doctor/hwload.py), run for real on CPU memory by the tests. docs/hardware.md has the
thresholds and where they come from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.machine import GpuHealth, Machine
from rocmkit.parsers.records import bus_key

GIB = 1024**3
DEFAULT_FRACTION = 0.5  # of free device memory: leaves room for what else runs
DEFAULT_P2P_BYTES = 256 * 1024 * 1024
# rocmkit's own rule: host-to-device copies reach at least 60 % of the link's payload peak
# (128b/130b encoding counted; TLP headers and flow control cost the rest: about 80 % is typical).
DEFAULT_H2D_FRACTION = 0.6


@check(
    "hw.memtest",
    level=3,
    description="Device memory pattern test: write, read back and verify zeros, ones, checkerboards, own "
    "address and random/inverse patterns over a share of each GPU's free memory (RVS mem, DCGM memory)",
    needs=("torch", "gpu"),
    isolated=True,
    exclusive=True,
    timeout_s=900.0,
    options={
        "memtest_fraction": f"share of each GPU's free memory to test (default {DEFAULT_FRACTION})",
        "memtest_passes": "times to run every pattern (default 1)",
    },
    option_kinds={"memtest_fraction": "fraction", "memtest_passes": "positive_int"},
)
def memtest(ctx: CheckContext) -> CheckResult:
    import torch

    from rocmkit.doctor.hwload import pattern_test

    fraction = float(ctx.options.get("memtest_fraction", DEFAULT_FRACTION))
    passes = int(ctx.options.get("memtest_passes", 1))
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return result(Status.SKIP, "torch sees no GPU: device memory cannot be tested here")
    runs = []
    for i in range(count):
        free, total = torch.cuda.mem_get_info(i)
        nbytes = int(free * fraction)
        r = pattern_test(torch, torch.device("cuda", i), nbytes, passes=passes, sync=_syncer(torch, i))
        runs.append((i, total, r))
        torch.cuda.empty_cache()
    return memtest_verdict(runs, fraction)


def _syncer(torch: Any, *devices: int) -> Callable[[], None]:
    def sync() -> None:
        for d in devices:
            torch.cuda.synchronize(d)

    return sync


def memtest_verdict(runs: list[tuple[int, int, Any]], fraction: float) -> CheckResult:
    """hw.memtest's result from each GPU's :class:`~rocmkit.doctor.hwload.MemtestResult` (pure)."""
    figures = tuple(Figure(name=f"gpu{i}.memtest_rate", value=round(r.gbs, 1), unit="GB/s") for i, _, r in runs)
    bad = [(i, r) for i, _, r in runs if r.errors]
    details: dict[str, Any] = {"gpus": [{"gpu": i, "bytes": r.bytes_tested, "total_bytes": total, "errors": r.errors,
                         "first_errors": r.first_errors, "patterns": list(r.patterns), "passes": r.passes,
                         "seconds": round(r.seconds, 2)} for i, total, r in runs]}
    if bad:
        what = "; ".join(f"GPU {i}: {r.errors} word(s) wrong, first at byte {r.first_errors[0]['offset']} "
                         f"({r.first_errors[0]['pattern']}: {r.first_errors[0]['got']} for "
                         f"{r.first_errors[0]['want']})" for i, r in bad)
        return result(Status.FAIL, f"memory errors: {what}",
                      "drain the node; check `hw.ecc` and `amd-smi bad-pages` / `nvidia-smi -q -d ECC,ROW_REMAPPER`; "
                      "the vendor's field diagnostic decides on replacement", figures=figures, **details)
    tested = sum(r.bytes_tested for _, _, r in runs)
    return result(Status.PASS, f"{len(runs)} GPU(s), {tested / GIB:.1f} GiB tested ({fraction:.0%} of free memory), "
                  f"{len(runs[0][2].patterns)} patterns, no error", figures=figures, **details)


@check(
    "hw.p2p_bandwidth",
    level=3,
    description="Device-to-device copy bandwidth for every GPU pair against the GPU model's floor "
    "(matrices/sku.toml), and host-to-device bandwidth per GPU against the PCIe link it trained at "
    "(RVS pbqt/pebb, DCGM pcie)",
    needs=("torch", "gpu"),
    isolated=True,
    exclusive=True,
    timeout_s=900.0,
    options={
        "p2p_bytes": f"bytes per copy (default {DEFAULT_P2P_BYTES})",
        "h2d_min_fraction": f"share of the link's peak a host-to-device copy must reach (default {DEFAULT_H2D_FRACTION})",
    },
    option_kinds={"p2p_bytes": "positive_int", "h2d_min_fraction": "fraction"},
)
def p2p_bandwidth(ctx: CheckContext) -> CheckResult:
    import torch

    from rocmkit.doctor.hwload import copy_gbs

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return result(Status.SKIP, "torch sees no GPU: device links cannot be measured here")
    nbytes = int(ctx.options.get("p2p_bytes", DEFAULT_P2P_BYTES))
    n = max(1, nbytes // 4)
    pairs: dict[tuple[int, int], float] = {}
    for i in range(count):
        for j in range(count):
            if i == j:
                continue
            src = torch.empty(n, dtype=torch.float32, device=f"cuda:{i}")
            dst = torch.empty(n, dtype=torch.float32, device=f"cuda:{j}")

            pairs[(i, j)] = copy_gbs(torch, src, dst, sync=_syncer(torch, i, j))
            del src, dst
    h2d: dict[int, float] = {}
    buses: dict[int, str | None] = {}
    under_load: dict[int, float | None] = {}  # read while copies run
    for i in range(count):
        host = torch.empty(n, dtype=torch.float32).pin_memory()
        dev = torch.empty(n, dtype=torch.float32, device=f"cuda:{i}")
        h2d[i] = copy_gbs(torch, host, dev, sync=_syncer(torch, i))
        buses[i] = _bus_of(torch, i)
        under_load[i] = _speed_under_load(torch, host, dev, buses[i], i)
        del host, dev
    return p2p_verdict(ctx.machine, pairs, h2d, buses, under_load,
                       float(ctx.options.get("h2d_min_fraction", DEFAULT_H2D_FRACTION)))


def _bus_of(torch: Any, i: int) -> str | None:
    p = torch.cuda.get_device_properties(i)
    bus, dev, dom = (getattr(p, k, None) for k in ("pci_bus_id", "pci_device_id", "pci_domain_id"))
    if isinstance(bus, int) and isinstance(dev, int):
        return f"{dom or 0:04x}:{bus:02x}:{dev:02x}.0"
    return None


def _speed_under_load(torch: Any, host: Any, dev: Any, bus: str | None, i: int) -> float | None:
    """The link's current speed read while copies run (an idle GPU may have lowered it)."""
    if bus is None:
        return None
    import threading

    from rocmkit.parsers.health import link_speed
    from rocmkit.sources import PCI_DEVICES, LiveSource

    seen: list[float | None] = []

    def read() -> None:
        seen.append(link_speed(LiveSource().read(f"{PCI_DEVICES}/{bus}/current_link_speed")))

    reader = threading.Timer(0.05, read)
    reader.start()
    for _ in range(20):
        dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize(i)
    reader.join(2.0)
    return seen[0] if seen else None


def _health_of(m: Machine, bus: str | None) -> GpuHealth | None:
    if bus is None:
        return None
    return next((h for h in m.health if bus_key(h.pci_bus_id) == bus_key(bus)), None)


def p2p_verdict(
    m: Machine,
    pairs: dict[tuple[int, int], float],
    h2d: dict[int, float],
    buses: Mapping[int, str | None],
    under_load: Mapping[int, float | None],
    h2d_fraction: float,
) -> CheckResult:
    """hw.p2p_bandwidth's result from the measured GB/s (pure, for tests)."""
    from rocmkit.doctor.hwload import pcie_gbs
    from rocmkit.doctor.sku import load_skus

    sku = load_skus().for_machine(m)
    floor = sku.get("p2p_gbs") if sku else None
    peak = sku.get("p2p_link_gbs") if sku else None
    figures: list[Figure] = []
    fails: list[str] = []
    notes: list[str] = []
    for (i, j), gbs in sorted(pairs.items()):
        figures.append(Figure(name=f"p2p.{i}to{j}", value=round(gbs, 1), unit="GB/s", peak=peak,
                              pct_of_peak=round(100 * gbs / peak, 1) if peak else None, floor=floor,
                              sku=sku.name if sku else None))
        if floor is not None and gbs < floor:
            fails.append(f"GPU {i} -> {j} copies at {gbs:.1f} GB/s, below the {sku.name if sku else ''} floor "
                         f"{floor:g} GB/s")
    if pairs and floor is None:
        notes.append("no P2P floor for this GPU model in matrices/sku.toml: figures reported, not judged")
    for i, gbs in sorted(h2d.items()):
        h = _health_of(m, buses.get(i))
        speed = under_load.get(i) or (h.link_speed_gts if h else None)
        width = h.link_width if h else None
        ref = pcie_gbs(speed, width) if speed and width else None
        figures.append(Figure(name=f"h2d.gpu{i}", value=round(gbs, 1), unit="GB/s",
                              reference=round(ref, 1) if ref else None,
                              floor=round(ref * h2d_fraction, 1) if ref else None))
        if ref is None:
            notes.append(f"GPU {i}: its trained link is not known (no sysfs facts), host copies not judged")
        elif gbs < ref * h2d_fraction:
            fails.append(f"GPU {i} host-to-device {gbs:.1f} GB/s, under {h2d_fraction:.0%} of its x{width} "
                         f"{speed:g} GT/s link's {ref:.1f} GB/s")
    details: dict[str, Any] = {"pairs": {f"{i}->{j}": round(v, 2) for (i, j), v in pairs.items()},
                               "h2d": {str(i): round(v, 2) for i, v in h2d.items()},
                               "link_speed_under_load_gts": {str(i): v for i, v in under_load.items()},
                               "notes": notes}
    tail = f" ({'; '.join(notes)})" if notes else ""
    if fails:
        return result(Status.FAIL, "; ".join(fails) + tail,
                      "a slow pair: check `hw.xgmi` / `hw.nvlink` and the topology (`amd-smi topology`, "
                      "`nvidia-smi topo -m`); a slow host copy: `hw.pcie_link`, the slot, NUMA placement "
                      "(pin the process near the GPU), IOMMU passthrough (`iommu=pt`)", figures=tuple(figures),
                      **details)
    low = min(pairs.values()) if pairs else None
    head = f"{len(pairs)} pair(s), slowest {low:.1f} GB/s; " if low is not None else "one GPU, no pair; "
    return result(Status.PASS, head + f"host-to-device {min(h2d.values()):.1f} GB/s at least" + tail,
                  figures=tuple(figures), **details)
