"""A real Slurm for tests: munged, slurmctld and one or more slurmd on this host.

Debian's Slurm 22.05 packages (``slurmctld slurmd slurm-client munge``) are
enough. Everything lives in one folder: a private munge key and socket, a
``slurm.conf`` with non-default ports, state and spool folders, logs. Nodes are
``n0``, ``n1``, ...: each slurmd runs in its own UTS and mount namespace
(``unshare --uts --mount``) with that hostname and an ``/etc/hosts`` that maps
every node name to 127.0.0.1, so ``hostname -s`` in a job step says which node
it runs on and a fault can be injected into one node's mounts alone
(:meth:`SlurmCluster.node_mount`).

Every daemon is started in the foreground (``-D``/``-F``) by this module, so
its PID is the one we hold; :meth:`SlurmCluster.stop` ends each by that PID
(SIGTERM, then SIGKILL), also when a test fails.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "unshare", "nsenter")
# How long a daemon gets to come up, and a node to register as idle.
START_TIMEOUT_S = 30.0


def missing_reason() -> str | None:
    """Why a real Slurm cannot run here (a skip reason), or None when it can."""
    if os.geteuid() != 0:
        return "a real Slurm needs root (slurmd runs its health check and prolog as root)"
    absent = [b for b in BINARIES if shutil.which(b, path=_PATH) is None]
    if absent:
        return f"not installed: {', '.join(absent)} (apt-get install -y slurmctld slurmd slurm-client munge)"
    # Each node needs its own hostname and mounts; a container without CAP_SYS_ADMIN cannot.
    probe = subprocess.run(
        ["unshare", "--uts", "--mount", "--propagation", "private", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": _PATH},
    )
    if probe.returncode != 0:
        return f"cannot make a node's namespaces here (unshare --uts --mount: {probe.stderr.strip()})"
    return None


_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _session_of(pid: int) -> int | None:
    try:
        # The command name may hold spaces and parentheses: split after its last ")".
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return int(fields[3]) if len(fields) > 3 else None


def _session_members(sid: int) -> list[int]:
    """The processes of session ``sid`` other than its leader (from /proc)."""
    pids = (int(p.name) for p in Path("/proc").glob("[0-9]*"))
    return [pid for pid in pids if pid != sid and _session_of(pid) == sid]


def _kill_session(sid: int) -> None:
    for pid in _session_members(sid):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class SlurmCluster:
    """One controller and ``nodes`` compute nodes; use as a context manager."""

    root: Path
    nodes: int = 1
    # Extra slurm.conf lines (HealthCheckProgram=..., Prolog=...).
    extra_conf: Sequence[str] = ()
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.conf = self.root / "slurm.conf"
        self.names = [f"n{i}" for i in range(self.nodes)]
        ctld, *node_ports = free_ports(1 + self.nodes)
        self.ctld_port = ctld
        self.node_ports = dict(zip(self.names, node_ports, strict=True))
        self.munge_socket = self.root / "munge" / "munge.socket"

    # -- environment for clients (sbatch, scontrol) ---------------------------------

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf), "PATH": _PATH}

    def client_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        env.update(self.env)
        env.update(extra or {})
        return env

    # -- start / stop ------------------------------------------------------------------

    def __enter__(self) -> SlurmCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._start_munge()
        self._write_conf()
        self._spawn(
            "slurmctld",
            ["slurmctld", "-D", "-i", "-f", str(self.conf), "-L", str(self.root / "slurmctld.log")],
        )
        self._wait_for(lambda: self._scontrol_ok(["ping"]), "slurmctld to answer `scontrol ping`")
        hosts = self.root / "hosts"
        hosts.write_text("127.0.0.1 localhost " + " ".join(self.names) + "\n::1 localhost ip6-localhost\n")
        for name in self.names:
            (self.root / "spool" / name).mkdir(parents=True, exist_ok=True)
            script = (
                f"mount --bind {hosts} /etc/hosts && hostname {name} && "
                f"exec slurmd -D -f {self.conf} -N {name} -L {self.root / f'slurmd-{name}.log'}"
            )
            self._spawn(
                f"slurmd-{name}",
                ["unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c", script],
            )
        self.wait_state(self.names, "IDLE")

    def _start_munge(self) -> None:
        mdir = self.root / "munge"
        mdir.mkdir(parents=True, exist_ok=True)
        # munged refuses a key folder others can read and a socket folder others can write.
        mdir.chmod(0o755)
        keydir = self.root / "munge-key"
        keydir.mkdir(exist_ok=True)
        keydir.chmod(0o700)
        key = keydir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._spawn(
            "munged",
            [
                "munged",
                "-F",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={mdir / 'munged.pid'}",
                f"--log-file={self.root / 'munged.log'}",
                f"--seed-file={keydir / 'munged.seed'}",
            ],
        )
        self._wait_for(self.munge_socket.exists, "munged to open its socket")

    def _write_conf(self) -> None:
        lines = [
            "ClusterName=rocmkit-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={self.munge_socket}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}/%n",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'spool'}/%n/slurmd.pid",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "MinJobAge=300",
            "KillWait=5",
            "Waittime=0",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            *self.extra_conf,
        ]
        cpus = os.cpu_count() or 1
        for name, port in self.node_ports.items():
            lines.append(f"NodeName={name} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} State=UNKNOWN")
        lines.append(f"PartitionName=debug Nodes={','.join(self.names)} Default=YES MaxTime=60 State=UP")
        (self.root / "state").mkdir(exist_ok=True)
        self.conf.write_text("\n".join(lines) + "\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.out", "ab")  # noqa: SIM115 - the daemon keeps it
        try:
            self.procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={"PATH": _PATH, "SLURM_CONF": str(self.conf)},
                start_new_session=True,
            )
        finally:
            log.close()

    def stop(self) -> None:
        """End every daemon this cluster started, by its PID, slurmd first, and what
        they started: job steps (slurmstepd daemonizes, so it would outlive slurmd)
        and running hooks."""
        self._kill_jobs()
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            # A running health check or prolog (slurmd's children, in the session we
            # started it in): slurmd would wait for it before exiting.
            if name.startswith("slurmd-") and proc.poll() is None:
                _kill_session(proc.pid)
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    with suppress(ProcessLookupError):
                        os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            # What it started and left (a hook started meanwhile, slurmctld's
            # slurmscriptd after a SIGKILL) would outlive it otherwise.
            _kill_session(proc.pid)
        self._kill_jobs()
        self.procs.clear()

    def _kill_jobs(self) -> None:
        """SIGKILL, by PID, every process that carries this cluster's SLURM_CONF in its
        environment (slurmstepd and the job's processes), other than the daemons."""
        mark = f"SLURM_CONF={self.conf}".encode()
        # The daemons and their own helpers (slurmctld's slurmscriptd, which it needs
        # to shut down cleanly) share the daemons' sessions; job steps have their own.
        daemons = {p.pid for p in self.procs.values()}
        for environ in Path("/proc").glob("[0-9]*/environ"):
            pid = int(environ.parent.name)
            if pid in daemons or pid == os.getpid() or _session_of(pid) in daemons:
                continue
            try:
                found = mark in environ.read_bytes().split(b"\0")
            except OSError:
                continue
            if found:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    # -- queries -----------------------------------------------------------------------

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.logs()}")

    def _wait_for(self, ready: object, what: str, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")

    def _scontrol_ok(self, args: list[str]) -> bool:
        res = self.scontrol(args)
        return res.returncode == 0

    def scontrol(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, env=self.client_env(), timeout=30
        )

    def node_info(self, name: str) -> dict[str, str]:
        """``scontrol show node NAME`` as KEY -> VALUE (State, Reason, ...)."""
        out = self.scontrol(["show", "node", "--oneliner", name]).stdout
        info: dict[str, str] = {}
        # Reason=... runs to the end of the line and may hold spaces.
        head, _, reason = out.strip().partition(" Reason=")
        for m in re.finditer(r"(\w+)=(\S*)", head):
            info[m.group(1)] = m.group(2)
        if reason:
            info["Reason"] = re.sub(r" \[[^\]]*\]$", "", reason.strip())
        return info

    def wait_state(
        self,
        names: Sequence[str],
        want: str,
        *,
        reason: str | None = None,
        without: str | None = None,
        timeout: float = START_TIMEOUT_S,
    ) -> None:
        """Wait until every node's State contains ``want`` (IDLE, DRAIN), and not the flag
        ``without`` (``IDLE`` but not ``DRAIN``) and, when given, its Reason starts with
        ``reason``."""

        def ok() -> bool:
            for n in names:
                info = self.node_info(n)
                flags = info.get("State", "").split("+")
                if want not in flags or (without is not None and without in flags):
                    return False
                if reason is not None and not info.get("Reason", "").startswith(reason):
                    return False
            return True

        what = f"{', '.join(names)} to be {want}" + (f" without {without}" if without else "")
        self._wait_for(ok, what + (f" ({reason})" if reason else ""), timeout)

    def node_pid(self, name: str) -> int:
        return self.procs[f"slurmd-{name}"].pid

    @contextmanager
    def node_mount(self, name: str, source: Path, target: Path) -> Iterator[None]:
        """Bind ``source`` over ``target`` on one node only (its slurmd's mount namespace):
        a fault that node's jobs, health check and prolog see, and no other node does."""
        ns = ["nsenter", "--target", str(self.node_pid(name)), "--mount"]
        subprocess.run([*ns, "mount", "--bind", str(source), str(target)], check=True, timeout=30)
        try:
            yield
        finally:
            subprocess.run([*ns, "umount", str(target)], check=False, timeout=30)

    def sbatch(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        """Submit and return the job id."""
        res = subprocess.run(
            ["sbatch", "--parsable", *argv],
            capture_output=True,
            text=True,
            env=self.client_env(env),
            timeout=60,
        )
        if res.returncode != 0:
            raise RuntimeError(f"sbatch failed: {res.stderr}\n{self.logs()}")
        return res.stdout.strip().split(";")[0]

    def job_info(self, job_id: str) -> dict[str, str]:
        out = self.scontrol(["show", "job", "--oneliner", job_id]).stdout
        return {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\S*)", out)}

    def wait_job(self, job_id: str, timeout: float = 300.0) -> dict[str, str]:
        """Wait until the job has ended; returns its ``scontrol show job`` fields."""
        done = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            info = self.job_info(job_id)
            if info.get("JobState") in done:
                return info
            time.sleep(0.2)
        raise RuntimeError(f"job {job_id} did not end within {timeout:g} s: {self.job_info(job_id)}")

    def logs(self, tail: int = 40) -> str:
        parts = []
        for path in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)
