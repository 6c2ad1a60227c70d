"""Make the build's wheelhouse installable elsewhere: ``python -m rocmkit.source_build.wheelhouse``.

A build step. It downloads the runtime dependencies of the wheels just built (sympy, numpy, ...)
next to them, then writes ``rocmkit-lock.txt`` with rocmkit.install's own lock format (every
wheel pinned with its sha256, plus a rocmkit plan read from the installed torch), so that
``rocmkit install --wheelhouse DIR`` installs the build on other nodes offline and verifies it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from rocmkit.errors import RocmkitError, ToolError
from rocmkit.plan import Backend, Plan
from rocmkit.proc.runner import run
from rocmkit.pyenv import Inline, run_json
from rocmkit.util.atomicio import write_text_atomic

BUILT = ("torch", "triton", "torchvision")
PIP_TIMEOUT_S = 3600.0
# Standard library and torch only: the build interpreter need not have rocmkit.
PROBE = "import torch\nwrite_result({'version': torch.__version__, 'hip': torch.version.hip, 'cuda': torch.version.cuda})\n"


def built_wheels(folder: Path) -> list[Path]:
    """The wheels this build made (torch, triton, torchvision), not the downloaded dependencies."""
    return sorted(p for p in folder.glob("*.whl") if p.name.split("-")[0].lower() in BUILT)


def backend_name(hip: str | None, cuda: str | None) -> Backend | None:
    """rocm6.2 from torch.version.hip "6.2.41134-65d174c3e" (a bare rocm when it names no release),
    cu124 from "12.4"."""
    if hip:
        m = re.match(r"(\d+)\.(\d+)", hip)
        return Backend(kind="rocm", toolkit=f"{m.group(1)}.{m.group(2)}" if m else None)
    if cuda:
        m = re.match(r"(\d+)\.(\d+)", cuda)
        return Backend.cuda_index(f"{m.group(1)}.{m.group(2)}") if m else None
    return None


def plan_for(python: str, versions: dict[str, str], archs: tuple[str, ...]) -> Plan | None:
    """A plan for install's verification, from the torch installed in the build environment."""
    ran = run_json(python, Inline(PROBE), timeout=300)
    if not ran.proc.ok:
        print(f"rocmkit: no plan in the lock: torch does not import here ({ran.proc.describe()})", flush=True)
        return None
    facts = ran.data
    if not isinstance(facts, dict) or "version" not in facts:
        why = ran.why_none() if facts is None else "no torch version in its result"
        print(f"rocmkit: no plan in the lock: the torch probe gave no answer ({why})", flush=True)
        return None
    backend = backend_name(facts.get("hip"), facts.get("cuda"))
    if backend is None:
        return None
    reqs = tuple(f"{name}=={versions[name]}" for name in BUILT if name in versions)
    return Plan(
        backend=backend,
        channel="source",
        torch_version=str(facts["version"]),
        triton=f"triton=={versions['triton']}" if "triton" in versions else None,
        requirements=reqs,
        target_archs=archs,
        reasons=(f"built from source by `rocmkit build` for {';'.join(archs)}",),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocmkit.source_build.wheelhouse", description=__doc__)
    parser.add_argument("--wheelhouse", required=True, type=Path)
    parser.add_argument("--python", required=True, help="interpreter the wheels were built for")
    parser.add_argument("--arch", action="append", default=[])
    parser.add_argument("--no-download", action="store_true", help="lock what is there; download nothing")
    args = parser.parse_args(argv)
    from rocmkit.install.base import Sources
    from rocmkit.install.lock import render
    from rocmkit.install.wheelhouse import LOCK_NAME, lock_from_folder

    folder: Path = args.wheelhouse.resolve()
    try:
        wheels = built_wheels(folder)
        if not wheels:
            raise ToolError(f"no torch, triton or torchvision wheel in {folder}", "run the wheel steps first")
        if not args.no_download:
            # Passing the files themselves makes pip take exactly these builds and fetch only
            # what they depend on, for the build interpreter's Python version and platform.
            cmd = [args.python, "-m", "pip", "download", "--dest", str(folder), "--find-links", str(folder)]
            result = run([*cmd, *map(str, wheels)], timeout=PIP_TIMEOUT_S, on_line=print)
            if not result.ok:
                raise ToolError(
                    f"downloading the dependencies failed: {result.describe()}", "check the network"
                )
        entries = lock_from_folder(folder)
        versions = {e.name: e.version for e in entries if e.name in BUILT}
        plan = plan_for(args.python, versions, tuple(args.arch))
        lock = folder / LOCK_NAME
        write_text_atomic(lock, render(entries, Sources(find_links=(str(folder),)), plan))
        print(
            f"rocmkit: wrote {lock}: {len(entries)} wheels; other nodes: rocmkit install --wheelhouse {folder}"
        )
    except RocmkitError as exc:
        print("\n".join(exc.lines()), file=sys.stderr, flush=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
