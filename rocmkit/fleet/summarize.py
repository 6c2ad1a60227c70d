"""Compare nodes: the node table, failures by cause, version drift, performance outliers.

The summary is data (``rocmkit.fleet/1``); text, JSON and HTML are views of it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.fleet.load import LoadedReport
from rocmkit.machine import GpuHealth

SCHEMA = "rocmkit.fleet/1"
DEFAULT_THRESHOLD = 0.2
# What can drift between nodes that should be identical.
DRIFT_FIELDS = ("torch", "triton", "rocm", "driver", "rocmkit", "vbios")
# Figures in these units are times: lower is better. Every other figure
# (GB/s, TFLOP/s, speedup x) is a rate: higher is better.
LOWER_IS_BETTER_UNITS = frozenset({"s", "ms", "us", "µs", "ns", "min"})
NONE = "(none)"
_SEVERITY = {Status.FAIL: 0, Status.ERROR: 1, Status.WARN: 2}


@dataclass(frozen=True, kw_only=True)
class FigureValue:
    value: float
    unit: str


@dataclass(frozen=True, kw_only=True)
class NodeRow:
    hostname: str
    host_id: str
    path: str
    verdict: Status
    level: int
    finished_at: str
    archs: tuple[str, ...]
    gpus: int
    rocm: str | None
    driver: str | None
    torch: str | None
    triton: str | None
    rocmkit: str | None
    counts: dict[str, int]  # status -> number of results
    figures: dict[str, FigureValue]  # "check:figure" -> value
    vbios: str | None = None  # the node's GPU VBIOS versions ("+"-joined when they differ)

    def version(self, name: str) -> str | None:
        value: str | None = getattr(self, name)
        return value

    def to_dict(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "host_id": self.host_id,
            "path": self.path,
            "verdict": self.verdict.value,
            "level": self.level,
            "finished_at": self.finished_at,
            "archs": list(self.archs),
            "gpus": self.gpus,
            "rocm": self.rocm,
            "driver": self.driver,
            "torch": self.torch,
            "triton": self.triton,
            "rocmkit": self.rocmkit,
            "counts": self.counts,
            "figures": {k: {"value": f.value, "unit": f.unit} for k, f in self.figures.items()},
            "vbios": self.vbios,
        }


@dataclass(frozen=True, kw_only=True)
class FailureGroup:
    """Nodes where one check ended the same way for the same reason."""

    check: str
    status: Status
    remedy: str | None
    message: str  # from the first node; messages differ in their numbers
    nodes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status.value,
            "remedy": self.remedy,
            "message": self.message,
            "nodes": list(self.nodes),
        }


@dataclass(frozen=True, kw_only=True)
class Drift:
    field: str
    values: dict[str, tuple[str, ...]]  # value -> hostnames
    majority: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "majority": self.majority,
            "values": {k: list(v) for k, v in self.values.items()},
        }


@dataclass(frozen=True, kw_only=True)
class Outlier:
    figure: str  # "check:figure"
    hostname: str
    value: float
    unit: str
    median: float
    deviation: float  # how much worse than the median, as a fraction (0.35 = 35 % worse)
    nodes_compared: int
    peers: str  # which nodes it was compared with: "8x gfx942"

    def to_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "hostname": self.hostname,
            "value": self.value,
            "unit": self.unit,
            "median": self.median,
            "deviation": round(self.deviation, 4),
            "nodes_compared": self.nodes_compared,
            "peers": self.peers,
        }


@dataclass(frozen=True, kw_only=True)
class DrainEntry:
    """A node to take out of service, with the reason a scheduler shows for it
    (the same ``rocmkit: CHECK`` reason ``rocmkit slurm healthcheck`` drains with)."""

    hostname: str
    reason: str
    checks: tuple[str, ...]
    verdict: Status

    def to_dict(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "reason": self.reason,
            "checks": list(self.checks),
            "verdict": self.verdict.value,
        }


@dataclass(frozen=True, kw_only=True)
class HardwareEntry:
    """A GPU whose hardware facts (docs/hardware.md) show a degraded link or memory errors."""

    hostname: str
    gpu: str  # PCI bus id
    problems: tuple[str, ...]  # "PCIe x8 of x16", "2 uncorrectable ECC errors", "3 retired pages"

    def to_dict(self) -> dict[str, Any]:
        return {"hostname": self.hostname, "gpu": self.gpu, "problems": list(self.problems)}


@dataclass(frozen=True, kw_only=True)
class FleetSummary:
    nodes: tuple[NodeRow, ...]
    failures: tuple[FailureGroup, ...]
    drift: tuple[Drift, ...]
    outliers: tuple[Outlier, ...]
    key_figures: tuple[str, ...]  # the figures worth a column in the node table
    threshold: float
    skipped: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)  # verdict -> nodes
    drain: tuple[DrainEntry, ...] = ()
    hardware: tuple[HardwareEntry, ...] = ()

    @property
    def healthy(self) -> bool:
        """Every node passed, the versions agree and no node is slow."""
        return (
            all(n.verdict in (Status.PASS, Status.SKIP) for n in self.nodes)
            and not self.drift
            and not self.outliers
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "threshold": self.threshold,
            "healthy": self.healthy,
            "counts": self.counts,
            "key_figures": list(self.key_figures),
            "nodes": [n.to_dict() for n in self.nodes],
            "failures": [f.to_dict() for f in self.failures],
            "drift": [d.to_dict() for d in self.drift],
            "outliers": [o.to_dict() for o in self.outliers],
            "drain": [d.to_dict() for d in self.drain],
            "hardware": [h.to_dict() for h in self.hardware],
            "skipped": list(self.skipped),
            "superseded": list(self.superseded),
        }


def figure_key(result: CheckResult, name: str) -> str:
    return f"{result.name}:{name}"


def node_row(loaded: LoadedReport) -> NodeRow:
    r = loaded.report
    machine = r.machine
    gpus = [g for g in machine.get("gpus", ()) if isinstance(g, dict) and g.get("visible", True)]
    archs = tuple(sorted({str(g["arch"]) for g in gpus if g.get("arch")}))
    rocm = machine.get("rocm") or {}
    nvidia = machine.get("nvidia") or {}
    counts: dict[str, int] = {}
    figures: dict[str, FigureValue] = {}
    for res in r.results:
        counts[res.status.value] = counts.get(res.status.value, 0) + 1
        for fig in res.figures:
            figures[figure_key(res, fig.name)] = FigureValue(value=fig.value, unit=fig.unit)
    return NodeRow(
        hostname=r.hostname,
        host_id=r.host_id,
        path=str(loaded.path),
        verdict=r.verdict,
        level=r.level,
        finished_at=r.finished_at,
        archs=archs,
        gpus=len(gpus),
        rocm=rocm.get("version") or None,
        driver=rocm.get("driver_version") or nvidia.get("driver_version") or None,
        torch=r.versions.get("torch"),
        triton=r.versions.get("triton"),
        rocmkit=r.versions.get("rocmkit"),
        counts=counts,
        figures=figures,
        vbios="+".join(sorted({h.vbios for h in _health(machine) if h.vbios})) or None,
    )


def _health(machine: dict[str, Any]) -> list[GpuHealth]:
    out = []
    for entry in machine.get("health") or ():
        try:
            out.append(GpuHealth.from_dict(entry))
        except (TypeError, ValueError):
            continue  # a report from another rocmkit: its verdicts still count
    return out


def hardware_entries(reports: Sequence[Report]) -> tuple[HardwareEntry, ...]:
    """GPUs with a link below its maximum width or an ECC fact worth a look, across the fleet:
    read from the facts, so a node whose check was skipped or set looser still shows."""
    out = []
    for rep in reports:
        for h in _health(rep.machine):
            found: list[str] = []
            if h.link_width is not None and h.link_width_max and h.link_width < h.link_width_max:
                found.append(f"PCIe x{h.link_width} of x{h.link_width_max}")
            ue = sum(v for k, v in h.ecc_uncorrectable.items() if not k.endswith("_lifetime"))
            if ue:
                found.append(f"{ue} uncorrectable ECC error(s)")
            if h.retired_pages:
                found.append(f"{h.retired_pages} retired page(s)")
            if h.remap_failure:
                found.append("row remapping failed")
            if h.xgmi_links and sum(1 for n in h.xgmi_links if n == 0) > 1:
                found.append("an XGMI link down")
            if found:
                out.append(HardwareEntry(hostname=rep.hostname, gpu=h.pci_bus_id, problems=tuple(found)))
    return tuple(sorted(out, key=lambda e: (e.hostname, e.gpu)))


def group_failures(reports: Sequence[Report]) -> tuple[FailureGroup, ...]:
    groups: dict[tuple[str, Status, str], list[tuple[str, CheckResult]]] = {}
    for rep in reports:
        for res in rep.results:
            if res.status not in _SEVERITY:
                continue
            # The remedy names the cause; without one, the message has to.
            cause = res.remedy or res.message
            groups.setdefault((res.name, res.status, cause), []).append((rep.hostname, res))
    out = [
        FailureGroup(
            check=check,
            status=status,
            remedy=members[0][1].remedy,
            message=members[0][1].message,
            nodes=tuple(sorted({h for h, _ in members})),
        )
        for (check, status, _), members in groups.items()
    ]
    out.sort(key=lambda g: (_SEVERITY[g.status], -len(g.nodes), g.check))
    return tuple(out)


def find_drift(nodes: Sequence[NodeRow], fields: Sequence[str] = DRIFT_FIELDS) -> tuple[Drift, ...]:
    out = []
    for name in fields:
        by_value: dict[str, list[str]] = {}
        for n in nodes:
            by_value.setdefault(n.version(name) or NONE, []).append(n.hostname)
        known = [v for v in by_value if v != NONE]
        if len(by_value) < 2 or not known:
            continue
        majority = max(by_value, key=lambda v: (len(by_value[v]), v != NONE, v))
        out.append(
            Drift(
                field=name,
                values={v: tuple(sorted(h)) for v, h in sorted(by_value.items())},
                majority=majority,
            )
        )
    return tuple(out)


def lower_is_better(unit: str) -> bool:
    return unit.strip() in LOWER_IS_BETTER_UNITS


def peer_group(node: NodeRow) -> str:
    """Nodes are compared with their like: "8x gfx942", "2x gfx1100", "no GPU"."""
    return f"{node.gpus}x {'+'.join(node.archs)}" if node.archs else "no GPU"


def find_outliers(nodes: Sequence[NodeRow], threshold: float) -> tuple[Outlier, ...]:
    """Nodes worse than the median of the same figure by more than ``threshold``.

    The median is taken among nodes with the same GPU archs and count: an MI210
    node is not slow for being slower than an MI300X node."""
    groups: dict[str, list[NodeRow]] = {}
    for n in nodes:
        groups.setdefault(peer_group(n), []).append(n)
    out = []
    for peers, members in sorted(groups.items()):
        for key in sorted({k for n in members for k in n.figures}):
            have = [(n.hostname, n.figures[key]) for n in members if key in n.figures]
            if len(have) < 2:
                continue
            median = statistics.median(f.value for _, f in have)
            if median <= 0:
                continue
            for host, fig in have:
                # Worse means slower: above the median for a time, below it for a rate.
                deviation = fig.value / median - 1 if lower_is_better(fig.unit) else 1 - fig.value / median
                if deviation > threshold:
                    out.append(
                        Outlier(
                            figure=key,
                            hostname=host,
                            value=fig.value,
                            unit=fig.unit,
                            median=median,
                            deviation=deviation,
                            nodes_compared=len(have),
                            peers=peers,
                        )
                    )
    out.sort(key=lambda o: (-o.deviation, o.figure, o.hostname))
    return tuple(out)


def pick_key_figures(nodes: Sequence[NodeRow]) -> tuple[str, ...]:
    """One rate per check for the node table: its last figure (a sweep's largest size),
    among checks whose figures at least half the nodes report."""
    per_check: dict[str, str] = {}
    seen: dict[str, int] = {}
    for n in nodes:
        for key, fig in n.figures.items():
            seen[key] = seen.get(key, 0) + 1
            if not lower_is_better(fig.unit):
                per_check[key.split(":", 1)[0]] = key
    return tuple(sorted(k for k in per_check.values() if seen[k] * 2 >= len(nodes)))


def drain_list(reports: Sequence[Report]) -> tuple[DrainEntry, ...]:
    """Nodes with a failed check or one that could not run, with the checks named."""
    from rocmkit.slurm.checks import drain_reason, result_finding

    out = []
    for rep in reports:
        bad = [r for r in rep.results if r.status in (Status.FAIL, Status.ERROR)]
        if not bad:
            continue
        # Failures first: they are defects; an error only says a check could not run.
        bad.sort(key=lambda r: _SEVERITY[r.status])
        findings = [result_finding(r, "report") for r in bad]
        out.append(
            DrainEntry(
                hostname=rep.hostname,
                reason=drain_reason(findings),
                checks=tuple(dict.fromkeys(r.name for r in bad)),
                verdict=rep.verdict,
            )
        )
    return tuple(sorted(out, key=lambda d: d.hostname))


def summarize(
    loaded: Sequence[LoadedReport],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    skipped: Sequence[str] = (),
    superseded: Sequence[str] = (),
) -> FleetSummary:
    nodes = tuple(node_row(lr) for lr in loaded)
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.verdict.value] = counts.get(n.verdict.value, 0) + 1
    return FleetSummary(
        nodes=nodes,
        failures=group_failures([lr.report for lr in loaded]),
        drift=find_drift(nodes),
        outliers=find_outliers(nodes, threshold),
        key_figures=pick_key_figures(nodes),
        threshold=threshold,
        skipped=tuple(skipped),
        superseded=tuple(superseded),
        counts=counts,
        drain=drain_list([lr.report for lr in loaded]),
        hardware=hardware_entries([lr.report for lr in loaded]),
    )
