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
def cli(as_json: bool, capture: Path | None) -> None:
    """Detect GPUs, ROCm, drivers, host facts and device permissions.

    \b
    Exit codes: 0 detected (problems are reported, not fatal), 4 bad capture or
    override variable, 5 corrupt matrix data. See docs/detect.md.
    """
    from rocmkit.detect import load_machine
    from rocmkit.detect.view import render

    machine = load_machine(capture)
    if as_json:
        OUT.json(machine.to_dict())
        return
    render(machine)
