"""A real Docker engine for tests, and a base image that needs no registry.

``Dockerd`` starts ``dockerd`` (Debian's docker.io) with everything of its own in
one short folder: data root, exec root, pid file and a unix socket (no TCP, no
iptables rules, no bridge: builds and runs use ``--network host``). It is ended
by the PID we started, also when a test fails.

``base_tarball`` makes a Debian root filesystem with ``debootstrap
--variant=minbase`` through the apt mirror this machine is configured with, and
caches the tarball (``/var/cache/rocmkit-tests`` or ``$DOCKER_TEST_CACHE``), so
only the first run pays for it (about 3 minutes); ``docker import`` turns it into
an image in seconds. ``python_wheels`` caches, the same way, the wheels a
``pip install`` of rocmkit needs (its build backend and dependencies), and the real
torch CPU build the CPU image installs (with the Triton and numpy its plan adds, and their
dependencies), for 127.0.0.1 indexes to serve inside the build.

Both are downloads, so they are made before the tests, never by a test:
``python -m tests.support.dockerd prepare`` (``.ci/run`` runs it, and fails saying why when
it cannot); the test reads them with :func:`prepared`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 spelling, as rocmkit/util/safeload.py has it
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUITE = "bookworm"
# What the rendered Dockerfiles' apt step installs, so that step needs no download.
INCLUDE = ("python3", "python3-venv", "python3-pip")
DEFAULT_MIRROR = "http://deb.debian.org/debian"


# What `pip install` of rocmkit pulls inside the image: its build backend and its dependencies,
# read from pyproject.toml itself (a list restated here went stale when uv became a dependency,
# and the image's offline pip then found no uv).
def _rocmkit_needs() -> tuple[str, ...]:
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    return (*project["build-system"]["requires"], *project["project"]["dependencies"])


ROCMKIT_NEEDS = _rocmkit_needs()


# The CPU image's torch: the real CPU build scripts/test.sh installs (these machines' pip finds
# it through its find-links, /opt/wheels), the Triton a CPU plan adds for the doctor's
# interpreter kernels, and numpy (which Triton's interpreter needs); pip adds their dependencies.
TORCH_CPU = ("torch==2.13.0+cpu", "triton==3.8.0", "numpy")


@dataclass(frozen=True)
class Material:
    """What ``prepare`` made: the base tarball and two wheel folders."""

    base: Path
    wheels: Path  # rocmkit's build backend and dependencies
    torch_cpu: Path  # TORCH_CPU and its dependencies


def cache_dir() -> Path:
    return Path(os.environ.get("DOCKER_TEST_CACHE", "/var/cache/rocmkit-tests"))


def missing_reason() -> str | None:
    """Why a real Docker build cannot run here (a skip reason), or None when it can."""
    if os.geteuid() != 0:
        return "a real dockerd needs root"
    absent = [b for b in ("dockerd", "docker", "debootstrap") if shutil.which(b, path=_PATH) is None]
    if absent:
        return f"not installed: {', '.join(absent)} (apt-get install -y docker.io debootstrap)"
    return None


def apt_mirror(paths: Sequence[Path] | None = None) -> str:
    """The Debian mirror apt uses here (``URIs:`` in deb822 files, or a ``deb URL SUITE``
    line), not its security archive."""
    files = (
        list(paths)
        if paths is not None
        else [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))]
    )
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in re.finditer(r"^\s*(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.MULTILINE):
            uri = m.group(1).rstrip("/")
            if uri.startswith(("http://", "https://")) and not uri.endswith("-security"):
                return uri
    return DEFAULT_MIRROR


def base_tarball(timeout: float = 900.0) -> Path:
    """A cached ``debootstrap --variant=minbase`` root filesystem of Debian ``SUITE``
    with Python, as a tar file for ``docker import``. Raises RuntimeError (with
    debootstrap's log) when the mirror cannot be reached."""
    cache = cache_dir()
    tarball = _tarball_path()
    if tarball.is_file():
        return tarball
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        res = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(INCLUDE)}",
                SUITE,
                str(rootfs),
                apt_mirror(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"PATH": _PATH, "LANG": "C.UTF-8"},
        )
        if res.returncode != 0:
            raise RuntimeError(f"debootstrap failed ({res.returncode}): {(res.stdout + res.stderr)[-2000:]}")
        partial = tarball.with_suffix(".tar.part")
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True, timeout=600)
        partial.rename(tarball)
    return tarball


def _tarball_path() -> Path:
    return cache_dir() / f"{SUITE}-minbase-{'-'.join(INCLUDE)}.tar"


def _wheels_folder(name: str = "wheels") -> Path:
    return cache_dir() / f"{name}-py{sys.version_info.major}{sys.version_info.minor}"


def _wanted(requirements: Sequence[str]) -> str:
    return "\n".join(sorted(requirements)) + "\n"


def _has(folder: Path, requirements: Sequence[str]) -> bool:
    stamp = folder / ".requirements"
    return stamp.is_file() and stamp.read_text() == _wanted(requirements)


def prepared() -> Material | None:
    """The base tarball and the wheel folders, where ``prepare`` made them (else None)."""
    tarball, wheels, torch_cpu = _tarball_path(), _wheels_folder(), _wheels_folder("torch-cpu")
    if tarball.is_file() and _has(wheels, ROCMKIT_NEEDS) and _has(torch_cpu, TORCH_CPU):
        return Material(base=tarball, wheels=wheels, torch_cpu=torch_cpu)
    return None


def python_wheels(requirements: Sequence[str], timeout: float = 600.0, *, name: str = "wheels") -> Path:
    """The wheels ``pip install`` of these requirements needs, for this Python's
    version (the image's Debian Python is the same minor version), cached in the folder
    ``name`` (pip's own sources: its index, and the find-links these machines configure)."""
    folder = _wheels_folder(name)
    stamp = folder / ".requirements"
    want = _wanted(requirements)
    if _has(folder, requirements):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(folder), *requirements],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if res.returncode != 0:
        raise RuntimeError(f"pip download failed: {res.stderr[-2000:]}")
    stamp.write_text(want)
    return folder


class Dockerd:
    """``with Dockerd() as d: d.docker("build", ...)``; stopped by its PID on exit."""

    def __init__(self) -> None:
        # Short: containerd's sockets live under the exec root, and a unix socket
        # path must stay under 108 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="rkd-", dir="/tmp"))
        self.socket = self.root / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": _PATH,
            "HOME": str(self.root),
            "DOCKER_HOST": f"unix://{self.socket}",
            # The classic builder: BuildKit would fetch its frontend image for a
            # `# syntax=` line, and needs more than a bare dockerd here.
            "DOCKER_BUILDKIT": "0",
            "DOCKER_CONFIG": str(self.root / "client"),
        }

    def __enter__(self) -> Dockerd:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> None:
        with (self.root / "dockerd.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "dockerd",
                    "--iptables=false",
                    "--ip6tables=false",
                    "--bridge=none",
                    f"--data-root={self.root / 'data'}",
                    f"--exec-root={self.root / 'exec'}",
                    f"--pidfile={self.root / 'dockerd.pid'}",
                    f"--host=unix://{self.socket}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={"PATH": _PATH},
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited with {self.proc.returncode}:\n{self.log()}")
            if self.socket.exists() and self.docker("version", timeout=30).returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"dockerd did not answer within {timeout:g} s:\n{self.log()}")

    def docker(self, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=timeout, env=self.env
        )

    def log(self, tail: int = 40) -> str:
        path = self.root / "dockerd.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(lines[-tail:])

    def stop(self) -> None:
        """End dockerd by its PID (it stops its containers and its containerd, and
        unmounts its layers, first), then remove its folder."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # dockerd leaves its network namespace file bind-mounted (exec/netns/default).
        for point in _mounts_under(self.root):
            subprocess.run(["umount", "--lazy", point], capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _mounts_under(root: Path) -> list[str]:
    """Mount points below ``root``, deepest first."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    prefix = f"{root}/"
    points = [ln.split()[1].replace("\\040", " ") for ln in lines if len(ln.split()) > 1]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def prepare() -> str | None:
    """Make the base tarball and the wheels (downloads: before the tests). None when done,
    else why not (one line)."""
    why = missing_reason()
    if why:
        return why
    try:
        base_tarball()
        python_wheels(ROCMKIT_NEEDS)
        python_wheels(TORCH_CPU, timeout=1200.0, name="torch-cpu")
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    return None


if __name__ == "__main__":
    if sys.argv[1:] != ["prepare"]:
        sys.exit("usage: python -m tests.support.dockerd prepare")
    problem = prepare()
    if problem:
        sys.exit(f"docker build test material: {problem}")
    print(f"docker build test material ready in {cache_dir()}")
