"""Check out the Triton commit that a torch checkout pins: ``python -m rocmkit.source_build.pin``.

A build step, not a library: the commit is only known once torch is cloned (it lives in
``.ci/docker/ci_commit_pins/triton.txt`` of that tag), so the step reads it then. When
build.toml records the commit too, the two must agree, or the step stops.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from rocmkit.errors import DataError, RocmkitError, ToolError
from rocmkit.proc.runner import run

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
GIT_TIMEOUT_S = 1800.0


def read_pin(torch_src: Path, pin_file: str) -> str:
    path = torch_src / pin_file
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise DataError(
            f"torch checkout has no Triton pin file {path} ({exc.strerror})",
            "check [triton].pin_file for this release in matrices/build.toml",
        ) from exc
    if not FULL_SHA.match(text):
        raise DataError(f"{path} does not hold a 40-digit commit: {text[:60]!r}", "check the torch checkout")
    return text


def check_expected(pin: str, expect: str | None, pin_file: str) -> None:
    if expect and not pin.startswith(expect.lower()):
        raise DataError(
            f"build.toml says the Triton commit is {expect}, but {pin_file} in the torch checkout says {pin}",
            "fix [triton].commit in matrices/build.toml (the checkout is authoritative)",
        )


def _git(argv: list[str]) -> None:
    result = run(["git", *argv], timeout=GIT_TIMEOUT_S)
    print(f"$ git {' '.join(argv)}", flush=True)
    for stream in (result.stdout, result.stderr):
        if stream.strip():
            print(stream.rstrip(), flush=True)
    if not result.ok:
        raise ToolError(result.describe(), "check the network and the repository URL")


def checkout(repo: str, commit: str, dest: Path) -> None:
    """A shallow fetch of exactly ``commit`` into a fresh ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)  # a half-fetched earlier attempt
    dest.mkdir(parents=True)
    _git(["init", "--quiet", str(dest)])
    _git(["-C", str(dest), "remote", "add", "origin", repo])
    _git(["-C", str(dest), "fetch", "--depth", "1", "origin", commit])
    _git(["-C", str(dest), "checkout", "--quiet", "--detach", "FETCH_HEAD"])
    _git(["-C", str(dest), "rev-parse", "HEAD"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocmkit.source_build.pin", description=__doc__)
    parser.add_argument("--torch-src", required=True, type=Path)
    parser.add_argument("--pin-file", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--dest", required=True, type=Path)
    parser.add_argument("--expect", default=None, help="commit (or prefix) build.toml records")
    args = parser.parse_args(argv)
    try:
        pin = read_pin(args.torch_src, args.pin_file)
        check_expected(pin, args.expect, args.pin_file)
        print(f"torch pins Triton {pin} ({args.pin_file})", flush=True)
        checkout(args.repo, pin, args.dest)
    except RocmkitError as exc:
        print("\n".join(exc.lines()), file=sys.stderr, flush=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
