"""A readiness barrier for the cross-node all-reduce, before any node starts it.

torch's rendezvous cannot tell a peer that never comes from one that is late: a
node whose torch does not import never joins, and its peers wait out the whole
rendezvous timeout, then blame nobody in particular. So before the doctor
starts, every node of the job says whether it can take part ("torch imports")
at a small store of its own on the first node (``MASTER_ADDR``, port
``MASTER_PORT + 2``), in plain Python, which works on a node without torch.
The first "cannot" is told to every node at once, with its name and reason.

Protocol: one JSON line each way over TCP. A node sends ``{"rank", "node",
"ready", "reason"}``; the store answers ``{"go": bool, "not_ready": [...],
"missing": [...]}`` as soon as the outcome is known: any node not ready, or all
of them ready, or the timeout with some nodes never heard from.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 120.0
PORT_OFFSET = 2  # MASTER_PORT is torch's store, MASTER_PORT + 1 torchrun's workers


@dataclass(frozen=True, kw_only=True)
class Answer:
    rank: int
    node: str
    ready: bool
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    go: bool
    not_ready: tuple[Answer, ...] = ()
    missing: tuple[str, ...] = ()  # "rank 2 (n2)" for nodes never heard from
    error: str = ""  # this node could not reach the store

    def to_dict(self) -> dict[str, Any]:
        return {
            "go": self.go,
            "not_ready": [asdict(a) for a in self.not_ready],
            "missing": list(self.missing),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(
            go=bool(d.get("go")),
            not_ready=tuple(Answer(**a) for a in d.get("not_ready", ())),
            missing=tuple(str(m) for m in d.get("missing", ())),
            error=str(d.get("error", "")),
        )

    def describe(self) -> str:
        """``n1 cannot take part (torch.import: ImportError: ...)``, for a result message."""
        parts = [f"{a.node} (rank {a.rank}) cannot take part: {a.reason}" for a in self.not_ready]
        if self.missing:
            parts.append(f"never reported ready: {', '.join(self.missing)}")
        if self.error:
            parts.append(self.error)
        return "; ".join(parts)


def _label(rank: int, names: Sequence[str]) -> str:
    return f"rank {rank} ({names[rank]})" if rank < len(names) else f"rank {rank}"


@dataclass
class ReadyStore:
    """The store on the first node: collects answers and tells every node the verdict."""

    port: int
    nnodes: int
    own: Answer
    timeout_s: float = DEFAULT_TIMEOUT_S
    names: Sequence[str] = ()  # node names by rank, to name the missing ones
    answers: dict[int, Answer] = field(default_factory=dict)
    told: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._decided = threading.Event()
        self._done = threading.Event()
        self._verdict: Verdict | None = None
        self._deadline = time.monotonic() + self.timeout_s
        self._sock = socket.create_server(("", self.port), reuse_port=False)
        self._sock.settimeout(0.2)
        self._record(self.own)
        self.told.add(self.own.rank)
        self._thread = threading.Thread(target=self._serve, name="rocmkit-ready", daemon=True)
        self._thread.start()

    def _record(self, answer: Answer) -> None:
        with self._lock:
            self.answers[answer.rank] = answer
            if self._verdict is None:
                bad = tuple(a for _, a in sorted(self.answers.items()) if not a.ready)
                if bad:
                    self._verdict = Verdict(go=False, not_ready=bad)
                elif len(self.answers) >= self.nnodes:
                    self._verdict = Verdict(go=True)
                if self._verdict is not None:
                    self._decided.set()

    def _timeout_verdict(self) -> None:
        with self._lock:
            if self._verdict is None:
                missing = tuple(_label(r, self.names) for r in range(self.nnodes) if r not in self.answers)
                self._verdict = Verdict(go=False, missing=missing)
                self._decided.set()

    def _serve(self) -> None:
        workers: list[threading.Thread] = []
        try:
            while time.monotonic() < self._deadline and len(self.told) < self.nnodes:
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    break
                t = threading.Thread(target=self._client, args=(conn,), daemon=True)
                t.start()
                workers.append(t)
            self._timeout_verdict()
            for t in workers:
                t.join(timeout=5)
        finally:
            self._sock.close()
            self._done.set()

    def _client(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(max(1.0, self._deadline - time.monotonic()))
            try:
                line = conn.makefile("r", encoding="utf-8").readline()
                answer = Answer(**json.loads(line))
            except (OSError, ValueError, TypeError):
                return
            self._record(answer)
            self._decided.wait(timeout=max(0.0, self._deadline - time.monotonic()))
            self._timeout_verdict()
            assert self._verdict is not None
            with suppress(OSError):
                conn.sendall((json.dumps(self._verdict.to_dict()) + "\n").encode())
                with self._lock:
                    self.told.add(answer.rank)

    def verdict(self) -> Verdict:
        """The outcome, as soon as it is known (at the latest at the timeout)."""
        self._decided.wait(timeout=max(0.0, self._deadline - time.monotonic()))
        self._timeout_verdict()
        assert self._verdict is not None
        return self._verdict

    def finish(self) -> None:
        """Keep telling late nodes until every node heard the verdict, or the timeout."""
        self._done.wait(timeout=max(0.0, self._deadline - time.monotonic()) + 6)


def ask(host: str, port: int, answer: Answer, timeout_s: float = DEFAULT_TIMEOUT_S) -> Verdict:
    """A node other than the first: report, and wait for the verdict."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=min(5.0, timeout_s)) as conn:
                conn.sendall((json.dumps(asdict(answer)) + "\n").encode())
                conn.settimeout(max(1.0, deadline - time.monotonic()))
                line = conn.makefile("r", encoding="utf-8").readline()
                if line:
                    return Verdict.from_dict(json.loads(line))
                last = "the store closed the connection without a verdict"
        except (OSError, ValueError) as exc:
            last = str(exc)
        time.sleep(0.2)
    return Verdict(
        go=False,
        error=f"the first node never answered at {host}:{port} within {timeout_s:g} s ({last})",
    )
