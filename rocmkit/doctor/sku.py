"""Per-GPU-model peaks and floors (``matrices/sku.toml``), and the judging of figures against them.

A bandwidth or a TFLOP/s figure means little without the GPU's peak and a floor a healthy
device reaches. After the checks ran, :func:`apply_floors` gives every level-2/3 figure it
knows (the Triton kernels' bandwidth and matmul throughput, torch.matmul's as their
reference, the all-reduce bus bandwidth) its % of peak and the floor it was judged by; a
figure below its floor turns a passing result into a warning that says so
(``rocmkit doctor --strict`` then fails).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.errors import DataError, UsageError
from rocmkit.machine import Machine
from rocmkit.matrix.fields import FIX, Row, check_keys, did_you_mean, read_sources, read_toml, rows
from rocmkit.util.paths import matrices_dir

FILE = "sku.toml"
_NUMBERS = (
    "mem_tbps", "fp16_tflops", "bf16_tflops", "copy_tbps", "copy_vs_torch", "gemm_fp16_tflops",
    "gemm_bf16_tflops", "gemm_vs_torch", "allreduce_busbw_gbs", "p2p_link_gbs", "p2p_gbs", "xgmi_direct_peers", "nvlink_links",
)
_KEYS = ("name", "match", "gfx", *_NUMBERS, "allreduce_gpus", "allreduce_min_bytes", "peak_sources")
_FRACTIONS = ("copy_vs_torch", "gemm_vs_torch")


@dataclass(frozen=True, kw_only=True)
class Sku:
    name: str
    match: tuple[str, ...]
    gfx: str | None
    values: dict[str, float]  # the numbers above, those the row gives
    allreduce_gpus: int | None
    allreduce_min_bytes: int | None
    peak_sources: tuple[str, ...]
    sources: tuple[str, ...]  # the floors'
    unconfirmed: tuple[str, ...]

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    def matches(self, gpu_name: str) -> bool:
        low = gpu_name.lower()
        return any(m.lower() in low for m in self.match)


@dataclass(frozen=True, kw_only=True)
class Skus:
    skus: tuple[Sku, ...]
    sources: dict[str, str]

    def find(self, name: str) -> Sku:
        """By row name or marketing name (``MI300X``, ``AMD Instinct MI300X``); UsageError if none."""
        for s in self.skus:
            if s.name.lower() == name.strip().lower() or s.matches(name):
                return s
        names = [s.name for s in self.skus]
        raise UsageError(
            f"no GPU model {name!r} in {FILE}{did_you_mean(name, names)}",
            f"known: {', '.join(names)} (add a row with its sources to matrices/{FILE})",
        )

    def for_machine(self, machine: Machine) -> Sku | None:
        """The row of the machine's first visible GPU with a known name, if any."""
        for g in machine.gpus:
            if g.visible and g.name:
                for s in self.skus:
                    if s.matches(g.name):
                        return s
        return None


def parse_skus(path: Path) -> Skus:
    doc = read_toml(path)
    file = path.name
    check_keys(doc, ("schema", "sources", "sku"), file=file, where="top level")
    src = read_sources(doc, file=file)
    out: list[Sku] = []
    seen: set[str] = set()
    for i, data in enumerate(rows(doc, "sku", file=file)):
        row = Row(data, file=file, where=f"[[sku]] #{i + 1}", keys=_KEYS, sources=src, name_key="name")
        name = row.string("name")
        if name in seen:
            raise row.error(f"GPU model {name!r} is listed twice")
        seen.add(name)
        values: dict[str, float] = {}
        for key in _NUMBERS:
            raw = row.data.get(key)
            if raw is None:
                continue
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0:
                raise row.error(f"{key} must be a positive number, got {raw!r}")
            if key in _FRACTIONS and raw > 1:
                raise row.error(f"{key} is a fraction of torch's figure (0 to 1), got {raw!r}")
            values[key] = float(raw)
        for peak in ("mem_tbps", "fp16_tflops"):
            if peak not in values:
                raise row.error(f"missing required key {peak!r} (the peak a figure's % is taken of)")
        ints: dict[str, int | None] = {}
        for key in ("allreduce_gpus", "allreduce_min_bytes"):
            raw = row.data.get(key)
            if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int) or raw < 1):
                raise row.error(f"{key} must be a positive whole number, got {raw!r}")
            ints[key] = raw
        if "allreduce_busbw_gbs" in values and ints["allreduce_gpus"] is None:
            raise row.error("allreduce_busbw_gbs needs allreduce_gpus (the floor holds for that many GPUs)")
        out.append(
            Sku(
                name=name,
                match=row.strings("match", required=True),
                gfx=row.opt_string("gfx"),
                values=values,
                allreduce_gpus=ints["allreduce_gpus"],
                allreduce_min_bytes=ints["allreduce_min_bytes"],
                peak_sources=row.source_keys("peak_sources"),
                sources=row.source_keys(),
                unconfirmed=row.unconfirmed(),
            )
        )
    if not out:
        raise DataError(f"{file}: no [[sku]] rows", FIX)
    return Skus(skus=tuple(out), sources=src)


def load_skus(folder: Path | None = None) -> Skus:
    return _cached(str(((folder or matrices_dir()) / FILE).resolve()))


@lru_cache(maxsize=4)
def _cached(path: str) -> Skus:
    return parse_skus(Path(path))


def show_lines(skus: Skus, sku: Sku) -> list[str]:
    """``rocmkit matrix show --sku NAME``: the peaks and floors with their sources."""

    def val(key: str, unit: str) -> str | None:
        v = sku.get(key)
        if v is None:
            return None
        mark = " (unconfirmed)" if key in sku.unconfirmed or "*" in sku.unconfirmed else ""
        return f"{v:g} {unit}{mark}"

    lines = [f"{sku.name} (matches {', '.join(repr(m) for m in sku.match)}{', ' + sku.gfx if sku.gfx else ''})"]
    lines.append("  peaks:")
    for key, label, unit in (("mem_tbps", "memory bandwidth", "TB/s"), ("fp16_tflops", "dense fp16", "TFLOPS"),
                             ("bf16_tflops", "dense bf16", "TFLOPS")):
        if (text := val(key, unit)) is not None:
            lines.append(f"    {label:34} {text}")
    lines.append("  floors (level-2/3 figures below them warn; --strict fails):")
    for key, label, unit in (
        ("copy_tbps", "Triton vector add bandwidth", "TB/s"),
        ("copy_vs_torch", "  vs torch copy on this GPU", "x"),
        ("gemm_fp16_tflops", "torch.matmul fp16", "TFLOPS"),
        ("gemm_bf16_tflops", "torch.matmul bf16", "TFLOPS"),
        ("gemm_vs_torch", "Triton matmul vs torch.matmul", "x"),
        ("allreduce_busbw_gbs", "all-reduce bus bandwidth", "GB/s"),
    ):
        if (text := val(key, unit)) is not None:
            if key == "allreduce_busbw_gbs":
                text += f" ({sku.allreduce_gpus} GPUs, >= {(sku.allreduce_min_bytes or 0) >> 20} MiB)"
            lines.append(f"    {label:34} {text}")
    lines.append("  sources of the peaks:")
    lines += [f"    {k}: {skus.sources[k]}" for k in sku.peak_sources]
    lines.append("  sources of the floors:")
    lines += [f"    {k}: {skus.sources[k]}" for k in sku.sources]
    return lines


# ---------------------------------------------------------------- judging figures


@dataclass(frozen=True, kw_only=True)
class _Rule:
    peak: float | None  # in the figure's unit
    floor: float | None
    floor_key: str
    fraction_floor: float | None = None  # of the figure's reference (torch's, same run)


def _rule(result: CheckResult, fig: Figure, sku: Sku) -> _Rule | None:
    """Which peak and floor apply to this figure, in its unit; None: none known."""
    check = result.name
    mem = sku.get("mem_tbps")
    if check == "triton.vector_add" and fig.unit == "GB/s" and fig.name.endswith(".bandwidth"):
        floor = sku.get("copy_tbps")
        return _Rule(peak=mem * 1000 if mem else None, floor=floor * 1000 if floor else None,
                     floor_key="copy_tbps", fraction_floor=sku.get("copy_vs_torch"))
    if check.startswith("triton.") and fig.unit == "GB/s" and fig.name.endswith(".bandwidth"):
        return _Rule(peak=mem * 1000 if mem else None, floor=None, floor_key="")
    if check == "triton.matmul" and fig.unit == "TFLOP/s":
        dtype = "bf16" if ".bf16." in f".{fig.name}." else "fp16" if ".fp16." in f".{fig.name}." else None
        if dtype is None:
            return None
        return _Rule(peak=sku.get(f"{dtype}_tflops"), floor=None, floor_key=f"gemm_{dtype}_tflops",
                     fraction_floor=sku.get("gemm_vs_torch"))
    if check == "jax.matmul" and fig.unit == "TFLOP/s":
        # XLA's GEMM (hipBLASLt / cuBLAS underneath) is held to the floor torch.matmul's is.
        dtype = fig.name.rsplit(".", 1)[-1]
        if dtype not in ("bf16", "fp16"):
            return None
        return _Rule(peak=sku.get(f"{dtype}_tflops"), floor=sku.get(f"gemm_{dtype}_tflops"),
                     floor_key=f"gemm_{dtype}_tflops")
    if check.startswith("distributed.") and fig.name.startswith("busbw_") and fig.unit == "GB/s":
        world = int(result.details.get("world_size") or 0)
        nbytes = _bytes(fig.name[len("busbw_"):])
        floor = sku.get("allreduce_busbw_gbs")
        applies = (floor is not None and world == sku.allreduce_gpus and nbytes is not None
                   and nbytes >= (sku.allreduce_min_bytes or 0))
        return _Rule(peak=None, floor=floor if applies else None, floor_key="allreduce_busbw_gbs")
    return None


def _bytes(label: str) -> int | None:
    for suffix, shift in (("G", 30), ("M", 20), ("K", 10), ("B", 0)):
        if label.endswith(suffix) and label[:-1].isdigit():
            return int(label[:-1]) << shift
    return None


def apply_floors(results: list[CheckResult], sku: Sku | None, *, backend: str) -> list[CheckResult]:
    """Each known figure with its peak and floor; a passing result below a floor becomes a warning."""
    if sku is None or backend == "cpu":
        return results  # the interpreter's figures on a CPU say nothing about a GPU's floors
    out: list[CheckResult] = []
    for r in results:
        figures: list[Figure] = []
        below: list[str] = []
        for fig in r.figures:
            rule = _rule(r, fig, sku)
            if rule is None:
                figures.append(fig)
                continue
            pct = 100.0 * fig.value / rule.peak if rule.peak else None
            floor = rule.floor
            misses: list[str] = []
            if floor is not None and fig.value < floor:
                misses.append(f"{fig.name} {fig.value:.4g} {fig.unit} < floor {floor:.4g} {fig.unit}")
            if rule.fraction_floor is not None and fig.fraction is not None and fig.fraction < rule.fraction_floor:
                misses.append(f"{fig.name} {fig.fraction:.2f}x torch's < floor {rule.fraction_floor:.2f}x")
            # torch.matmul's own TFLOP/s (the reference) has the vendor library's floor.
            ref_floor = sku.get(rule.floor_key) if r.name == "triton.matmul" else None
            if ref_floor is not None and fig.reference is not None and fig.reference < ref_floor:
                misses.append(f"torch.matmul {fig.reference:.4g} TFLOP/s < floor {ref_floor:.4g} TFLOP/s")
            below += misses
            figures.append(replace(
                fig, peak=rule.peak, pct_of_peak=None if pct is None else round(pct, 1),
                floor=floor, floor_fraction=rule.fraction_floor,
                reference_floor=ref_floor, sku=sku.name, below_floor=bool(misses),
            ))
        new = replace(r, figures=tuple(figures))
        if below and r.status is Status.PASS:
            new = replace(
                new,
                status=Status.WARN,
                message=f"{r.message}; below the {sku.name} floor: {'; '.join(below)}",
                remedy=f"compare with `rocmkit matrix show --sku '{sku.name}'`; check the GPU is not shared, "
                "throttled (`amd-smi metric` / `nvidia-smi -q -d PERFORMANCE`) or in a low power profile",
            )
        elif below:
            new = replace(new, details={**new.details, "below_floor": below})
        out.append(new)
    return out
