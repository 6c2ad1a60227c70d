"""`rocmkit` run in this process through Click's CliRunner, as a user's shell would see it.

``main`` (not the bare click group) is what turns rocmkit's errors into one line on stderr and
an exit code, so this helper calls it inside ``CliRunner.isolation``: stdout and stderr are
captured apart and ``os.environ`` overrides are undone afterwards. A bad-input case costs no
interpreter start, and in tests/unit the subprocess guard still proves that none was needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from click.testing import CliRunner

from rocmkit.cli import main
from rocmkit.util.paths import matrices_dir


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    def one_line_error(self) -> str:
        """The single ``error: ...`` line on stderr (asserting there is exactly one, no traceback)."""
        lines = self.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), self.stderr
        assert "Traceback" not in self.stderr
        return lines[0]


def rocmkit(*args: str, env: Mapping[str, str | None] | None = None) -> CliResult:
    """Run ``rocmkit ARGS`` in-process; ``env`` sets (or, with None, removes) variables for the call."""
    runner = CliRunner()
    # A fresh process reads ROCMKIT_MATRICES_DIR once; so does this call, and the next call again.
    matrices_dir.cache_clear()
    try:
        with runner.isolation(env=env) as streams:
            try:
                main(list(args))
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            stdout, stderr = streams[0].getvalue(), streams[1].getvalue()
    finally:
        matrices_dir.cache_clear()
    return CliResult(code=code, stdout=stdout.decode(), stderr=stderr.decode())
