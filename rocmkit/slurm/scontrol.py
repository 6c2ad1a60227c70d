"""Read and change one node's Slurm state through ``scontrol``.

Only root or the SlurmUser may drain or resume a node; slurmd runs the health
check and the prolog as root, which is why rocmkit drains from there and never
from a job. rocmkit marks the nodes it drains with :data:`REASON_PREFIX` in the
reason and resumes only those: a node an admin drained stays drained.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.errors import ToolError, UsageError, rerun
from rocmkit.proc.runner import run, which

REASON_PREFIX = "rocmkit:"
TIMEOUT_S = 20.0
# slurmd starts its hooks with no PATH at all.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# One slurm.conf or scontrol value: a line break would start another line (another key),
# "=" another key=value pair, and whitespace or "#" ends the value in slurm.conf.
_BREAKS_VALUE = re.compile(r"[\x00-\x20\x7f=#]")
# A drain reason is free text with spaces, but one line and no key=value pair of its own.
_BREAKS_REASON = re.compile(r"[\x00-\x1f\x7f=]")


def slurm_value(what: str, value: str, *, spaces: bool = False) -> str:
    """``value`` when it is one slurm.conf/scontrol value; else a :class:`UsageError` (exit 4):
    a newline or ``=`` in a node name, a state list or a check name would write another
    setting into slurm.conf, or another field into ``scontrol update``."""
    bad = (_BREAKS_REASON if spaces else _BREAKS_VALUE).search(value)
    if not value or bad:
        found = "is empty" if not value else f"holds {bad.group(0)!r}" if bad else ""
        raise UsageError(
            f"{what} {value!r} {found}: it must be one Slurm value",
            "give it without line breaks, '='" + ("" if spaces else ", spaces or '#'"),
        )
    return value


def reason_safe(text: str) -> str:
    """``text`` made fit for a drain reason: what :func:`slurm_value` refuses there (a line
    break, ``=``) becomes ``_``; an empty one is ``?``."""
    return _BREAKS_REASON.sub("_", text) or "?"


@dataclass(frozen=True, kw_only=True)
class NodeState:
    name: str
    state: str  # "IDLE", "IDLE+DRAIN", "MIXED+DRAIN", ...
    reason: str  # "" when none

    @property
    def flags(self) -> set[str]:
        return set(self.state.upper().replace("*", "").split("+"))

    @property
    def drained(self) -> bool:
        """Drained or draining (``DRAIN`` is a flag on top of the base state)."""
        return "DRAIN" in self.flags or self.state.upper().startswith(("DRAIN", "DRNG"))

    @property
    def drained_by_rocmkit(self) -> bool:
        return self.drained and self.reason.startswith(REASON_PREFIX)


def parse_node(text: str, name: str) -> NodeState:
    """``scontrol show node --oneliner NAME`` output -> NodeState."""
    line = next((ln for ln in text.splitlines() if f"NodeName={name} " in ln + " "), "")
    if not line:
        raise ToolError(f"scontrol knows no node {name!r}", "pass --node with the NodeName slurm.conf uses")
    # Reason=... runs to the end of the record and holds spaces; Slurm appends "[user@time]".
    head, _, reason = line.partition(" Reason=")
    state = re.search(r"\bState=(\S+)", head)
    reason = re.sub(r"\s*\[[^\]]*\]\s*$", "", reason.strip())
    return NodeState(name=name, state=state.group(1) if state else "UNKNOWN", reason=reason)


class Scontrol:
    """``scontrol`` at an absolute path, with the environment it needs."""

    def __init__(self, exe: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})
        self.env.setdefault("PATH", DEFAULT_PATH)
        found = which(exe or "scontrol", self.env)
        if found is None:
            raise ToolError(
                f"`{exe or 'scontrol'}` is not installed or not on {self.env['PATH']}",
                (rerun("--scontrol", "/path/to/scontrol"), "run this on a Slurm node"),
            )
        self.exe = found

    def _run(self, *args: str) -> str:
        res = run([self.exe, *args], timeout=TIMEOUT_S, env=self.env)
        if not res.ok:
            raise ToolError(
                res.describe(), "check that slurmctld answers (`scontrol ping`) and that this runs as root"
            )
        return res.stdout

    def node(self, name: str) -> NodeState:
        slurm_value("node name", name)
        return parse_node(self._run("show", "node", "--oneliner", name), name)

    def drain(self, name: str, reason: str) -> None:
        # The reason names checks (a site check, a --report file): never another field.
        slurm_value("node name", name)
        slurm_value("drain reason", reason, spaces=True)
        self._run("update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}")

    def resume(self, name: str) -> None:
        slurm_value("node name", name)
        self._run("update", f"NodeName={name}", "State=RESUME")
