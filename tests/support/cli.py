"""`rocmkit` run in this process through Click's CliRunner, as a user's shell would see it.

``main`` (not the bare click group) is what turns rocmkit's errors into one line on stderr and
an exit code, so this helper calls it inside ``CliRunner.isolation``: stdout and stderr are
captured apart and ``os.environ`` overrides are undone afterwards. A bad-input case costs no
interpreter start, and in tests/unit the subprocess guard still proves that none was needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import main
from rocmkit.util.paths import matrices_dir


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    def one_line_error(self) -> str:
        """The error on stderr: its one ``error: ...`` line (what is wrong) and the ``fix: ...``
        lines after it, joined by newlines; asserting that shape, and no traceback."""
        lines = self.stderr.strip().splitlines()
        assert lines and lines[0].startswith("error: "), self.stderr
        assert all(line.startswith("fix: ") for line in lines[1:]), self.stderr
        assert "Traceback" not in self.stderr
        return "\n".join(lines)


def last_error(stderr: str) -> str:
    """The last error on ``stderr`` (after any progress lines): its ``error: ...`` line and the
    ``fix: ...`` lines under it, joined by newlines."""
    lines = stderr.strip().splitlines()
    start = max((i for i, line in enumerate(lines) if line.startswith("error: ")), default=len(lines) - 1)
    assert all(line.startswith("fix: ") for line in lines[start + 1 :]), stderr
    return "\n".join(lines[start:])


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


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``rocmkit ARGS`` through ``main`` in this process, read through pytest's ``capsys``
    (what it printed since the last read is dropped first): (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# The developer's pip/uv settings that would change what an install test resolves or where.
USER_PIP_VARS = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONFIG_FILE", "VIRTUAL_ENV",
                 "UV_CONSTRAINT")


def keep_user_config_out(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's pip/uv configuration (find-links, extra indexes, caches) stays out: ``HOME``
    and the XDG folders move to ``home`` (made here), uv reads no config file."""
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for var in USER_PIP_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("UV_NO_CONFIG", "1")
