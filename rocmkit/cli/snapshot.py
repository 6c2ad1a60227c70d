"""``rocmkit snapshot DIR``: write a capture of this machine, to attach to a bug report."""

from __future__ import annotations

from pathlib import Path

import click

from rocmkit.cli.request import OUT


@click.command(name="snapshot")
@click.argument("dest", type=click.Path(path_type=Path), metavar="DIR")
@click.option("--force", is_flag=True,
    help="Write into DIR even if it already holds files (an earlier snapshot's are replaced).")
def cli(dest: Path, force: bool) -> None:
    """Write every command output and file detection reads (docs/captures.md) into DIR.

    `rocmkit detect --capture DIR` then prints what `rocmkit detect` prints here.
    Exit codes: 0 written, 4 DIR cannot be used.
    """
    import os

    from rocmkit.detect import parse_overrides
    from rocmkit.errors import CaptureError, rerun
    from rocmkit.probes import health
    from rocmkit.sources import PCI_DEVICES, LiveSource, RecordingSource, snapshot

    if dest.exists() and not dest.is_dir():
        raise CaptureError(f"{dest} exists and is not a folder", "pass a new or empty folder")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise CaptureError(f"{dest} is not empty", (rerun("--force") + "   # write into it anyway", "pass a new folder"))
    overrides = parse_overrides(os.environ)
    source = LiveSource(timeout_s=overrides.probe_timeout_s)
    extra: tuple[str, ...] = ()
    rocm_path = os.environ.get("ROCM_PATH", "").rstrip("/")
    if rocm_path:
        extra = (f"{rocm_path}/.info/version",)
    # The per-GPU hardware files (docs/hardware.md) depend on the machine: record what the
    # probe reads, so that the capture holds exactly those.
    recorder = RecordingSource(source, (PCI_DEVICES,))
    health.finish(health.start(recorder), {}, overrides.probe_timeout_s)
    written = snapshot(source, dest, extra_files=extra, recorded=recorder)
    OUT.message(f"wrote {len(written)} files to {dest}")
    OUT.message(f"next: rocmkit detect --capture {dest}   # what rocmkit reads from it (attach the folder to a report)")
    OUT.data(str(dest))
