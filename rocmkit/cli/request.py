"""Thin commands: a command's options arrive as one typed, frozen request, and it prints through
one output object.

``@request(InstallRequest)`` hands the command a single ``InstallRequest`` built from click's
parameters (their names are the request's fields). The request checks itself when it is made,
so option combinations are validated in the core, where the API and the tests use the same
rules. ``OUT`` is the one place a command writes to: data to stdout, messages to stderr (as
hatch's ``Terminal``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

R = TypeVar("R")


def request(cls: Callable[..., R]) -> Callable[[Callable[[R], None]], Callable[..., None]]:
    """Decorate a click command body that takes one ``cls`` instead of one argument per option."""

    def wrap(body: Callable[[R], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(**params: Any) -> None:
            body(cls(**params))

        return command

    return wrap


def command_line() -> tuple[str, ...]:
    """The words after ``rocmkit`` this command was run with, as handed to the runner
    (:func:`rocmkit.cli.group.run`), never ``sys.argv`` read behind an in-process call's back;
    a context made elsewhere (click's test runner) gives its command path."""
    ctx = click.get_current_context()
    root = ctx.find_root().obj
    if isinstance(root, dict) and "argv" in root:
        return tuple(root["argv"])
    return tuple(ctx.command_path.split()[1:])


class Output:
    """Where a command writes: data (what a pipe or a file should get) on stdout, everything a
    person reads while it runs (progress, notes, warnings) on stderr.

    ``tee``, when set, also receives every write as (to stderr, text): the output cache
    (:mod:`rocmkit.cache.output_cache`) stores that transcript and replays it on a rerun."""

    def __init__(self) -> None:
        self.tee: list[tuple[bool, str]] | None = None

    def _echo(self, text: str, *, err: bool = False, nl: bool = True) -> None:
        from rocmkit.util.redact import redact_text
        from rocmkit.util.ticker import shared

        # The one place rocmkit's output is rendered: a mirror's user:token in any URL (a plan's
        # index, an error naming a page, a pip.conf source) leaves as user:***, whatever made it.
        text = redact_text(text)
        # A status line on the terminal (util/ticker.py) is wiped first and drawn again after,
        # so no line is written into its middle; stdout gets only the data.
        with shared().quiet():
            click.echo(text, nl=nl, err=err)
        if self.tee is not None:
            self.tee.append((err, text + "\n" if nl else text))

    def data(self, text: str, *, nl: bool = True) -> None:
        self._echo(text, nl=nl)

    def json(self, obj: Any) -> None:
        self._echo(json.dumps(obj, indent=2))

    def lines(self, lines: list[str] | tuple[str, ...]) -> None:
        for line in lines:
            self._echo(line)

    def message(self, text: str) -> None:
        self._echo(text, err=True)

    def note(self, text: str) -> None:
        self._echo(f"note: {text}", err=True)

    def warning(self, text: str) -> None:
        self._echo(f"warning: {text}", err=True)

    def file(self, path: Path, text: str, *, mode: int | None = None, fix: str = "choose a writable path") -> None:
        """Write an output file the user named (--html, --out, --write), whole or not at all:
        a full disk or a read-only folder leaves no half page behind and is one error line."""
        from rocmkit.errors import StorageError, UsageError, storage_error
        from rocmkit.util.atomicio import write_text_atomic
        from rocmkit.util.redact import redact_text

        try:
            write_text_atomic(path, redact_text(text), mode=mode)
        except OSError as exc:
            # A full or read-only disk is the storage error (its own exit code); anything
            # else (no such folder, no permission) is this path's problem.
            full = storage_error(exc)
            if isinstance(full, StorageError):
                raise full from exc
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}", fix) from exc


OUT = Output()
