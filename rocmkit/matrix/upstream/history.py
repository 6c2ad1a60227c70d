"""Where upstream files come from: a git checkout (its history, through the runner)
or a recording folder (``tests/data/upstream``: the same files at the same commits).

A recording folder holds ``<repo>/<ISO date>_<commit>/<path>`` for each revision
used, so replaying it gives the generator byte-for-byte what a checkout gave.
"""

from __future__ import annotations

from pathlib import Path

from rocmkit.errors import ToolError, UsageError
from rocmkit.matrix.upstream.testinfra import Snapshot
from rocmkit.proc import runner

GIT_TIMEOUT_S = 60.0


def _git(repo: Path, *args: str) -> str:
    res = runner.run(["git", "-C", str(repo), *args], timeout=GIT_TIMEOUT_S)
    if not res.ok:
        raise ToolError(f"git in {repo}: {res.describe()}", "pass a clone of the upstream repository")
    return res.stdout


def git_history(repo: Path, path: str, *, since: str = "2024-06-01") -> list[Snapshot]:
    """Every revision of ``path`` in the clone ``repo`` since ``since``, oldest first."""
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise UsageError(f"{repo} is not a git clone", "clone the upstream repository and pass its folder")
    out: list[Snapshot] = []
    lines = _git(repo, "log", "--format=%H %cI", f"--since={since}", "--", path).split("\n")
    for line in reversed([ln for ln in lines if ln.strip()]):
        commit, date = line.split()
        out.append(Snapshot(commit=commit, date=date, text=_git(repo, "show", f"{commit}:{path}")))
    return out


def git_head(repo: Path, path: str) -> Snapshot:
    line = _git(repo, "log", "-1", "--format=%H %cI").strip()
    commit, date = line.split()
    return Snapshot(commit=commit, date=date, text=_git(repo, "show", f"{commit}:{path}"))


def git_file(repo: Path, commit: str, path: str) -> str | None:
    """``path`` at ``commit`` (abbreviated is fine) in the clone ``repo``; None when it has neither."""
    res = runner.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], timeout=GIT_TIMEOUT_S)
    return res.stdout if res.ok else None


def recorded_history(folder: Path, path: str) -> list[Snapshot]:
    """The revisions of ``path`` recorded under ``folder`` (``<date>_<commit>/<path>``), oldest first."""
    out: list[Snapshot] = []
    if not folder.is_dir():
        raise UsageError(f"{folder} does not exist", "record the upstream files first")
    for rev in sorted(p for p in folder.iterdir() if p.is_dir() and "_" in p.name):
        file = rev / path
        if file.is_file():
            date, commit = rev.name.split("_", 1)
            out.append(Snapshot(commit=commit, date=date, text=file.read_text(encoding="utf-8")))
    return out


def record(folder: Path, path: str, snapshots: list[Snapshot]) -> None:
    """Write snapshots in the layout :func:`recorded_history` reads."""
    from rocmkit.util.atomicio import write_text_atomic

    for snap in snapshots:
        dest = folder / f"{snap.date[:10]}_{snap.commit}" / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(dest, snap.text)
