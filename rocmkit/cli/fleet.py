"""``rocmkit fleet summarize``: compare doctor reports from many nodes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rocmkit.cli.request import OUT


@click.group("fleet")
def cli() -> None:
    """Summarize `rocmkit doctor --json` reports from many nodes."""


@cli.command("summarize")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the rocmkit.fleet/1 JSON on stdout instead of text."
)
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML page.")
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="A node is an outlier when a figure is worse than the fleet median by more than this fraction.",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 unless every node passed, versions agree and no node is slow."
)
def summarize_cmd(
    paths: tuple[Path, ...], as_json: bool, html_out: Path | None, threshold: float, strict: bool
) -> None:
    """Summarize REPORT files and/or folders of them (searched for *.json).

    \b
    Shows one row per node (verdict, arch, ROCm, torch, key figures), failures
    grouped by cause with the fix, version drift between nodes and performance
    outliers. Of several reports from one node, the newest is used.
    """
    from rocmkit.errors import UsageError
    from rocmkit.fleet import render_text
    from rocmkit.fleet.load import load_reports
    from rocmkit.fleet.summarize import summarize

    if html_out is not None and not html_out.parent.is_dir():
        raise UsageError(
            f"folder {html_out.parent} does not exist", f"create it or write {html_out.name} elsewhere"
        )
    loaded = load_reports(paths)
    for p in loaded.skipped:
        OUT.note(f"{p} is not a rocmkit.report/1 file; skipped")
    summary = summarize(
        loaded.reports,
        threshold=threshold,
        skipped=[str(p) for p in loaded.skipped],
        superseded=[str(p) for p in loaded.superseded],
    )
    if html_out is not None:
        from rocmkit.fleet import render_html

        OUT.file(html_out, render_html.render(summary))
        OUT.message(f"wrote {html_out}")
    if as_json:
        OUT.json(summary.to_dict())
    else:
        OUT.data(render_text.render(summary), nl=False)
    if strict and not summary.healthy:
        sys.exit(1)


@cli.command("drain")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of NODE<TAB>REASON lines.")
def drain_cmd(paths: tuple[Path, ...], as_json: bool) -> None:
    """Print the nodes to drain, with their reasons (`rocmkit: CHECK`), from REPORT
    files and/or folders: one NODE<TAB>REASON line each, nothing when all are fine.

    \b
    rocmkit fleet drain reports/ | while IFS=$'\\t' read -r node reason; do
      scontrol update NodeName="$node" State=DRAIN Reason="$reason"; done
    """
    from rocmkit.fleet import render_text
    from rocmkit.fleet.load import load_reports
    from rocmkit.fleet.summarize import drain_list

    loaded = load_reports(paths)
    for p in loaded.skipped:
        OUT.note(f"{p} is not a rocmkit.report/1 file; skipped")
    entries = drain_list([lr.report for lr in loaded.reports])
    if as_json:
        OUT.json([d.to_dict() for d in entries])
        return
    OUT.data(render_text.render_drain(entries), nl=False)


@cli.command("labels")
@click.argument("report", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--prefix", default="rocmkit.io", show_default=True, help="Label key prefix.")
@click.option("--apply-to-node", "node", metavar="NAME",
    help="Inside a pod: set these labels on node NAME through the API (and remove rocmkit's stale ones).")
def labels_cmd(report: Path, prefix: str, node: str | None) -> None:
    """Print Kubernetes node labels (KEY=VALUE, one a line) for one doctor REPORT, or
    set them on a node with --apply-to-node (the service account needs patch on nodes).

    \b
    kubectl label node "$NODE" $(rocmkit fleet labels report.json) --overwrite
    rocmkit fleet labels report.json --apply-to-node "$NODE_NAME"    # in the pod
    """
    import re

    from rocmkit.errors import DataError, UsageError
    from rocmkit.fleet.labels import all_keys, node_labels
    from rocmkit.fleet.load import read_report

    # Kubernetes label key prefix: a DNS subdomain; kubectl would refuse every label otherwise.
    part = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
    if len(prefix) > 253 or not re.fullmatch(rf"{part}(\.{part})*", prefix):
        raise UsageError(
            f"--prefix {prefix!r} is not a DNS subdomain, so kubectl would refuse the labels",
            "use lower-case letters, digits, '-' and '.', e.g. --prefix example.com",
        )
    if node is None:
        if not report.exists():
            raise UsageError(f"{report} does not exist", "pass a file written by `rocmkit doctor --json`")
        OUT.lines([f"{key}={value}" for key, value in node_labels(read_report(report), prefix).items()])
        return
    from rocmkit.fleet.kube import InCluster, label_patch, patch_node

    where = InCluster.from_env()
    try:
        labels = node_labels(read_report(report), prefix)
    except (DataError, UsageError) as exc:
        # No readable report: the node is not known to pass, so it keeps no rocmkit label but
        # doctor=unknown, and the error is still reported.
        patch_node(node, label_patch({f"{prefix}/doctor": "unknown"}, all_keys(prefix)), where)
        OUT.message(f"rocmkit: node {node} labelled {prefix}/doctor=unknown")
        raise exc
    patch_node(node, label_patch(labels, all_keys(prefix)), where)
    OUT.message(f"rocmkit: node {node} labelled " + " ".join(f"{k}={v}" for k, v in labels.items()))
