"""``rocmkit detect``: what this machine has, as a table or as rocmkit.machine/1 JSON."""

from __future__ import annotations

from pathlib import Path

import click

from rocmkit.cli.request import OUT


@click.command(name="detect")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the rocmkit.machine/1 JSON document (docs/schemas.md)."
)
@click.option(
    "--capture",
    type=click.Path(path_type=Path, file_okay=True, dir_okay=True),
    default=None,
    metavar="DIR",
    help="Replay a capture folder (from `rocmkit snapshot DIR`) instead of probing this machine.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Detect again: ignore (and refresh) the detection cached for this boot and driver state.",
)
def cli(as_json: bool, capture: Path | None, fresh: bool) -> None:
    """Detect GPUs, ROCm, drivers, host facts and device permissions.

    A rerun on the same boot, driver, devices and environment, within the hour, reads
    the detection cached by the last run (`--fresh`: detect again).

    \b
    Exit codes: 0 detected (problems are reported, not fatal), 4 bad capture or
    override variable, 5 corrupt matrix data. See docs/detect.md.
    """
    from rocmkit.session import Session

    session = Session(capture=capture, fresh=fresh)
    machine = session.machine()
    if as_json and session.detected_at is not None:
        # The table is drawn by rich, not through OUT: only the JSON is replayed.
        from rocmkit.cache import output_cache

        output_cache.cacheable(session.detected_at)
    if as_json:
        from rocmkit.detect.amd_names import amd_names

        # AMD's names for each GPU's levels ride beside the machine record (Machine.from_dict
        # ignores the key), as rocm-bootstrap-detect --hierarchy would print them.
        OUT.json({**machine.to_dict(), "amd_targets": amd_names(machine)})
        return
    from rocmkit.detect.view import render

    render(machine)
