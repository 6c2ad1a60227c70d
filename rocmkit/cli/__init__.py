"""The ``rocmkit`` command line.

This module is the entry point and stays light: a rerun of ``rocmkit detect`` or an
offline ``rocmkit resolve`` whose inputs did not change is answered from the output
cache (:mod:`rocmkit.cache.output_cache`) before click or any detection code is imported.
Everything else goes to the click group in :mod:`rocmkit.cli.group`, which imports each
subcommand's module only when it is invoked.
"""

from __future__ import annotations

import sys

# Not typing.TYPE_CHECKING: importing typing costs this entry point a few ms on every run.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Names the click group module holds, reachable here as before (``from rocmkit.cli import cli``).
_GROUP_NAMES = ("cli", "COMMANDS", "INTERRUPTED_EXIT", "LazyGroup")
# The commands whose output may be replayed (rocmkit.cache.output_cache.COMMANDS, kept equal by a
# test): any other command line does not import the output cache at all.
CACHED_COMMANDS = ("detect", "resolve")


def main(argv: list[str] | None = None) -> Any:
    """Entry point: runs the CLI and turns rocmkit's errors into one line and an exit code.

    Only the process's own command line (``argv`` None) is replayed from, or stored in, the
    output cache: an in-process call (tests, the API) may run with patched internals."""
    recording = None
    if argv is None and sys.argv[1:2] and sys.argv[1] in CACHED_COMMANDS:
        from rocmkit.cache import output_cache

        recording = output_cache.start(sys.argv[1:])
        if recording is not None and recording.replay():
            return None
    from rocmkit.cli.group import run

    if recording is None:
        return run(argv)
    from rocmkit.cli.request import OUT

    OUT.tee = recording.chunks
    result = run(argv)
    # Here only when the command returned normally: errors leave through sys.exit.
    recording.commit()
    return result


def __getattr__(name: str) -> Any:
    if name in _GROUP_NAMES:
        from rocmkit.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
