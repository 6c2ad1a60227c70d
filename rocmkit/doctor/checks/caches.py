"""Compile caches that survive the job: where Triton, inductor and MIOpen keep what they compiled.

A cold start recompiles everything: MIOpen's find database not reused across processes costs
~15 s per convolution layer (ROCm/rocm-libraries#3553), and Triton and inductor caches in a
temp folder, a tmpfs or a per-job folder are gone when the job ends. ``env.caches`` (level 0)
says, for each cache, where it is (and which variable put it there), whether it persists
across jobs, whether this user can write it and no other user can (a cache holds compiled
code that is loaded and run: trust rules in ``rocmkit/util/trust.py``), its size and the free
space. ``compile.cache_speed`` (level 2) measures one compiled training step cold and warm, in
two fresh processes sharing a cache. ``rocmkit doctor --warm-caches`` fills the caches the
user's jobs will use (an image build, a Slurm prolog).

Default locations (read from the sources, not guessed): Triton ``$TRITON_HOME/.triton/cache``
(``~`` without ``TRITON_HOME``; triton/knobs.py); inductor ``<tempfile.gettempdir()>/
torchinductor_<user>`` (torch/_inductor/runtime/cache_dir_utils.py ``default_cache_dir``);
MIOpen's kernel cache ``$HOME/.cache/miopen`` (``MIOPEN_CUSTOM_CACHE_DIR`` moves it) and its
user find/perf database ``$HOME/.config/miopen`` (``MIOPEN_USER_DB_PATH``) (MIOpen docs,
"Kernel cache" and "Setting up locations").
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status

GIB = 1024**3
MIB = 1024**2
VOLATILE_FS = {"tmpfs", "ramfs"}
JOB_IDS = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "FLUX_JOB_ID")
DEFAULT_MIN_FREE_BYTES = 2 * GIB
MAX_WALK = 200_000  # entries counted for a cache's size; a bigger cache is "at least" that
WALK_BUDGET_S = 0.3  # seconds spent counting one cache


@dataclass(frozen=True, kw_only=True)
class CacheDir:
    name: str  # "triton", "inductor", "miopen kernels", "miopen user db"
    path: Path
    variable: str  # the variable that sets it
    configured: bool  # the variable was set (else the tool's default)


def cache_dirs(env: Mapping[str, str], *, miopen: bool = True) -> list[CacheDir]:
    """Where each cache is for a job with this environment."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    tmp = env.get("TMPDIR") or tempfile.gettempdir()

    def one(name: str, var: str, default: Path) -> CacheDir:
        value = env.get(var, "").strip()
        return CacheDir(name=name, path=Path(value) if value else default, variable=var, configured=bool(value))

    triton_home = Path(env.get("TRITON_HOME") or home)
    out = [
        one("triton", "TRITON_CACHE_DIR", triton_home / ".triton" / "cache"),
        one("inductor", "TORCHINDUCTOR_CACHE_DIR",
            Path(tmp) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))),
    ]
    if miopen:  # ROCm's convolution library: only where ROCm runs
        out += [
            one("miopen kernels", "MIOPEN_CUSTOM_CACHE_DIR", home / ".cache" / "miopen"),
            one("miopen user db", "MIOPEN_USER_DB_PATH", home / ".config" / "miopen"),
        ]
    return out


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def fs_type(path: Path, mounts: str | None) -> tuple[str | None, str | None]:
    """(file system type, mount point) of the mount holding ``path``, from /proc/mounts text."""
    real = os.path.realpath(path)
    best: tuple[str, str] | None = None
    for line in (mounts or "").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point, kind = _unescape(parts[1]), parts[2]
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, kind)
    return (best[1], best[0]) if best else (None, None)


def _existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _in_temp(path: Path, env: Mapping[str, str]) -> str | None:
    """The temp folder ``path`` is in, if any (the system's, or ``$TMPDIR``)."""
    real = os.path.realpath(path)
    for tmp in dict.fromkeys(p for p in ("/tmp", "/var/tmp", env.get("TMPDIR") or "") if p):
        top = os.path.realpath(tmp)
        if real == top or real.startswith(top.rstrip("/") + "/"):
            return tmp
    return None


def _size(path: Path, budget_s: float = WALK_BUDGET_S) -> tuple[int, bool]:
    """Bytes under ``path`` (not following links), and whether the walk was cut short (by
    ``MAX_WALK`` entries or ``budget_s`` seconds: level 0 stays fast on a cache of 100k files)."""
    total, seen = 0, 0
    deadline = time.monotonic() + budget_s
    for root, dirs, files in os.walk(path):
        if time.monotonic() > deadline:
            return total, True
        for f in files:
            seen += 1
            if seen > MAX_WALK:
                return total, True
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return total, False


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def judge_cache(c: CacheDir, env: Mapping[str, str], mounts: str | None, min_free: int) -> dict[str, Any]:
    """One cache's facts and findings: ``problems`` (fail), ``warnings`` (warn)."""
    from rocmkit.util.trust import folder_problem

    base = _existing(c.path)
    kind, point = fs_type(base, mounts)
    out: dict[str, Any] = {
        "name": c.name, "path": str(c.path), "variable": c.variable, "configured": c.configured,
        "exists": c.path.is_dir(), "fs": kind, "mount": point, "problems": [], "warnings": [],
    }
    problems: list[str] = out["problems"]
    warnings: list[str] = out["warnings"]
    how = f"{c.variable}={c.path}" if c.configured else f"default, {c.variable} unset"
    unsafe = folder_problem(c.path)
    if unsafe:
        problems.append(f"{c.name} cache {c.path} ({how}) is not safe: {unsafe}")
    elif not os.access(base, os.W_OK):
        problems.append(f"{c.name} cache {c.path} ({how}) is not writable by this user ({base} is not)")
    job = next((env[v] for v in JOB_IDS if env.get(v)), None)
    per_job = job is not None and job in str(c.path)
    volatile = kind in VOLATILE_FS
    temp = _in_temp(c.path, env)
    if (volatile or per_job) and not c.configured:
        if volatile:
            where = f"on {kind} ({point}): it is lost at reboot and with the job's mount"
        else:
            where = f"in a per-job folder (job {job}): it is lost when the job ends"
        warnings.append(f"{c.name} cache {c.path} is {where}, so jobs compile again")
    elif temp and not c.configured:
        # A disk-backed /tmp keeps it from job to job (the stock setup of most nodes): not a
        # fault, but said, since a reboot or a tmp cleaner empties it.
        out["note"] = (
            f"in the temp folder {temp} on disk: kept across jobs, emptied at reboot or by a tmp cleaner "
            f"(set {c.variable} to keep it longer)"
        )
    elif volatile or per_job or temp:
        out["note"] = f"{c.variable} puts it on {kind if volatile else 'a temporary folder'}, as configured"
    if c.path.is_dir():
        size, cut = _size(c.path)
        out["size_bytes"], out["size_truncated"] = size, cut
    try:
        free = shutil.disk_usage(base).free
        out["free_bytes"] = free
        if free < min_free:
            warnings.append(f"{c.name} cache {c.path}: only {free / GIB:.1f} GiB free")
    except OSError:
        pass
    return out


def _remedy(facts: list[dict[str, Any]]) -> str:
    lines = []
    for f in facts:
        if f["problems"] or f["warnings"]:
            lines.append(f"export {f['variable']}=/path/on/a/persistent/disk/{f['name'].replace(' ', '-')}")
    return (
        "; ".join(lines)
        + " (owned by you, mode 0700, on a local or shared disk that outlives the job); then fill them once with "
        "`rocmkit doctor --warm-caches` in the image build or the Slurm prolog"
    )


@check(
    "env.caches",
    level=0,
    description="Triton, inductor and MIOpen caches persist across jobs (not tmpfs or a per-job folder), "
    "are writable by this user and by no other, with their size and free space (#30)",
    needs=("live",),
    options={"cache_min_free_bytes": "free bytes the cache folder needs"},
)
def caches(ctx: CheckContext) -> CheckResult:
    if ctx.image_build:
        # The running container's environment and mounts decide where its caches are.
        return result(Status.SKIP, "not applicable in an image build: the caches are those of the running "
                      "container (check them there, or fill them here with --warm-caches)")
    env = {**os.environ, **ctx.env}
    min_free = int(ctx.options.get("cache_min_free_bytes", DEFAULT_MIN_FREE_BYTES))
    mounts = _read("/proc/self/mounts") or _read("/proc/mounts")
    # MIOpen is ROCm's: its caches matter on AMD nodes only (a CPU-only box checks them too, since
    # nothing says which GPU its jobs will see; an NVIDIA node does not).
    amd = bool(ctx.machine.amd_gpus) or ctx.backend == "rocm" or not ctx.machine.nvidia_gpus
    facts = [judge_cache(c, env, mounts, min_free) for c in cache_dirs(env, miopen=amd)]
    figures = tuple(
        Figure(name=f"{f['name'].replace(' ', '_')}.size", value=round(f["size_bytes"] / MIB, 2), unit="MiB")
        for f in facts if "size_bytes" in f
    ) + tuple(
        Figure(name=f"{f['name'].replace(' ', '_')}.free", value=round(f["free_bytes"] / GIB, 2), unit="GiB")
        for f in facts if "free_bytes" in f
    )
    problems = [p for f in facts for p in f["problems"]]
    warnings = [w for f in facts for w in f["warnings"]]
    if problems:
        return result(Status.FAIL, "; ".join(problems + warnings), _remedy(facts), figures=figures, caches=facts)
    if warnings:
        return result(Status.WARN, "; ".join(warnings), _remedy(facts), figures=figures, caches=facts)
    where = ", ".join(f"{f['name']} {f['path']} ({f['fs'] or '?'})" for f in facts)
    notes = "".join(f"; {f['name']}: {f['note']}" for f in facts if f.get("note"))
    return result(Status.PASS, f"kept across jobs and private: {where}{notes}", figures=figures, caches=facts)


# ---------------------------------------------------------------- level 2: cold vs warm

# One training step of a small conv net, compiled with inductor: the child prints its seconds.
STEP = r"""
import sys, time
t0 = time.perf_counter()
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                        torch.nn.Flatten(), torch.nn.Linear(8, 10))
dev = sys.argv[1]
m = m.to(dev)
x = torch.randn(4, 3, 16, 16, device=dev)
t1 = time.perf_counter()
f = torch.compile(m)
loss = f(x).float().square().mean()
loss.backward()
if dev == "cuda":
    torch.cuda.synchronize()
t2 = time.perf_counter()
from torch._dynamo.utils import counters
ind = counters["inductor"]
write_result({"import_s": t1 - t0, "step_s": t2 - t1,
              "hits": ind["fxgraph_cache_hit"], "misses": ind["fxgraph_cache_miss"]})
"""


def _step(python: str, device: str, env: dict[str, str], timeout: float) -> tuple[dict[str, float] | None, str]:
    """One fresh process's compiled step: its seconds and inductor's FX-graph cache hits and misses."""
    from rocmkit.pyenv import Inline, run_json

    # The child answers through the one result protocol (a file, read bounded), not stdout,
    # which torch and inductor may write to as they please.
    ran = run_json(python, Inline(STEP), [device], timeout=timeout, env=env)
    if not ran.ok:
        tail = (ran.proc.stderr or ran.proc.stdout or "").strip().splitlines()
        return None, (ran.error or (tail[-1] if tail else ran.why_none()))[:300]
    try:
        got = ran.data
        return {k: float(got[k]) for k in ("step_s", "hits", "misses")}, ""
    except (ValueError, KeyError, IndexError, TypeError, OverflowError):
        return None, "the child wrote no timing"


# Where rocmkit notes that it compiled the step into the jobs' caches (--warm-caches, or a
# level-2 run that found them filled): only then does a warm start from them say something.
FILLED_FOLDER = "filled-caches"


def _filled_key(python: str, dirs: Mapping[str, str]) -> str:
    import hashlib
    import json

    facts = [python, dirs.get("TRITON_CACHE_DIR"), dirs.get("TORCHINDUCTOR_CACHE_DIR")]
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:32]


def _filled_at(cache_dir: Path, key: str) -> float | None:
    """When rocmkit compiled the step into these caches (for this Python), or None."""
    import json

    from rocmkit.util.trust import load_cached

    try:
        return float(json.loads(load_cached(cache_dir / FILLED_FOLDER / f"{key}.json") or b"{}")["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _note_filled(cache_dir: Path, key: str) -> None:
    import contextlib
    import json

    from rocmkit.util.trust import store_cached

    with contextlib.suppress(OSError):
        store_cached(cache_dir / FILLED_FOLDER / f"{key}.json", json.dumps({"at": time.time()}).encode())


@check(
    "compile.cache_speed",
    level=2,
    description="A fresh process starts warm from the jobs' compile caches (level 2, once they are filled); "
    "one compiled training step cold vs warm in two fresh processes (level 3, or --warm-caches: fills the "
    "caches the jobs use)",
    needs=("torch",),
    timeout_s=900.0,
    options={"caches.warm": "fill the jobs' own caches (set by --warm-caches)"},
    long_running=True,
)
def cache_speed(ctx: CheckContext) -> CheckResult:
    import sys

    env = {**os.environ, **ctx.env}
    python = str(ctx.python.executable) if ctx.python is not None else sys.executable
    device = "cuda" if ctx.backend in ("rocm", "cuda") else "cpu"
    fill = bool(ctx.options.get("caches.warm"))
    jobs = {c.variable: str(c.path) for c in cache_dirs(env, miopen=False)}
    filled_key = _filled_key(python, jobs)
    if not fill and ctx.level < 3:
        return _warm_start(ctx, python, device, env, jobs, filled_key)
    scratch: tempfile.TemporaryDirectory[str] | None = None
    if fill:
        dirs = jobs
        for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
            Path(dirs[var]).mkdir(mode=0o700, parents=True, exist_ok=True)
        child = {**env, "TRITON_CACHE_DIR": dirs["TRITON_CACHE_DIR"], "TORCHINDUCTOR_CACHE_DIR": dirs["TORCHINDUCTOR_CACHE_DIR"]}
        where = f"the jobs' caches ({dirs['TORCHINDUCTOR_CACHE_DIR']}, {dirs['TRITON_CACHE_DIR']})"
    else:
        # A private, empty cache: the cold run is truly cold whatever the jobs' caches hold.
        scratch = tempfile.TemporaryDirectory(prefix="rocmkit-cache-speed-")
        child = {**env, "TRITON_CACHE_DIR": f"{scratch.name}/triton", "TORCHINDUCTOR_CACHE_DIR": f"{scratch.name}/inductor"}
        where = "a private empty cache"
    for var in ("TRITON_ALWAYS_COMPILE", "TORCHINDUCTOR_FORCE_DISABLE_CACHES"):
        child.pop(var, None)
    started = time.monotonic()
    try:
        cold, err = _step(python, device, child, 420.0)
        warm, err2 = (None, "") if cold is None else _step(python, device, child, 420.0)
    finally:
        if scratch is not None:
            scratch.cleanup()
    if cold is None or warm is None:
        return result(Status.ERROR, f"the compiled step did not run: {err or err2}",
                      "run it by hand: python -c 'import torch; torch.compile(torch.nn.Linear(2, 2))(torch.ones(2))'")
    if fill:
        _note_filled(ctx.cache_dir, filled_key)  # later level-2 runs judge a warm start from them
    ratio = warm["step_s"] / cold["step_s"] if cold["step_s"] > 0 else 1.0
    figures = (
        Figure(name="compiled_step.cold", value=round(cold["step_s"], 3), unit="s"),
        Figure(name="compiled_step.warm", value=round(warm["step_s"], 3), unit="s", reference=round(cold["step_s"], 3)),
    )
    details: dict[str, Any] = {"cold": cold, "warm": warm, "ratio": ratio, "filled": fill, "where": where,
               "duration_s_inner": round(time.monotonic() - started, 2)}
    head = (f"one compiled step: cold {cold['step_s']:.1f} s, warm {warm['step_s']:.1f} s ({ratio:.0%} of cold) "
            f"with {where}")
    # Judged by what the warm process found in the cache, not by the clock: a busy node moves
    # the times, never the hits.
    if warm["misses"] > 0 or warm["hits"] == 0:
        return result(
            Status.WARN,
            f"{head}: the warm start compiled again ({warm['misses']:.0f} graph(s) missed the cache)",
            "check that TORCHINDUCTOR_FORCE_DISABLE_CACHES and TRITON_ALWAYS_COMPILE are unset, and that "
            "env.caches passes (a writable, persistent, private cache folder)",
            figures=figures, **details,
        )
    return result(Status.PASS, f"{head}; the warm start loaded all {warm['hits']:.0f} graph(s) from the cache"
                  + (" (filled for later jobs)" if fill else ""), figures=figures, **details)


FILL_REMEDY = (
    "`rocmkit doctor --warm-caches` fills the jobs' caches and measures cold vs warm (in a Slurm prolog or "
    "the image build); `rocmkit doctor --level 3` measures it in a private cache"
)


def _warm_start(
    ctx: CheckContext, python: str, device: str, env: Mapping[str, str], jobs: Mapping[str, str], key: str
) -> CheckResult:
    """Level 2: a job's warm start, judged in the caches the jobs use, where rocmkit compiled
    the step into them before; nothing compiled cold (that experiment is level 3's and
    --warm-caches')."""
    from rocmkit.util.trust import folder_problem

    where = f"the jobs' caches ({jobs['TORCHINDUCTOR_CACHE_DIR']}, {jobs['TRITON_CACHE_DIR']})"
    for path in (jobs["TORCHINDUCTOR_CACHE_DIR"], jobs["TRITON_CACHE_DIR"]):
        # Compiled code in a folder another user can write is never loaded (env.caches fails it).
        problem = folder_problem(_existing(Path(path)))
        if problem is not None:
            return result(Status.SKIP, f"not judged: {path} is not safe to load compiled code from ({problem})",
                          "see env.caches for the fix", where=where)
    filled = _filled_at(ctx.cache_dir, key)
    if filled is None or not all(Path(p).is_dir() for p in jobs.values()):
        return result(Status.SKIP, f"not judged: rocmkit has not compiled its step into {where} yet",
                      FILL_REMEDY, where=where)
    child = {**env, **jobs}
    for var in ("TRITON_ALWAYS_COMPILE", "TORCHINDUCTOR_FORCE_DISABLE_CACHES"):
        child.pop(var, None)
    started = time.monotonic()
    warm, err = _step(python, device, child, 420.0)
    if warm is None:
        return result(Status.ERROR, f"the compiled step did not run: {err}",
                      "run it by hand: python -c 'import torch; torch.compile(torch.nn.Linear(2, 2))(torch.ones(2))'")
    from rocmkit.doctor.verdicts import when_text

    when = when_text(filled)
    figures = (Figure(name="compiled_step.warm", value=round(warm["step_s"], 3), unit="s"),)
    details: dict[str, Any] = {"warm": warm, "filled": False, "filled_at": when, "where": where,
                               "duration_s_inner": round(time.monotonic() - started, 2)}
    if warm["misses"] > 0 or warm["hits"] == 0:
        return result(
            Status.WARN,
            f"a fresh process compiled the step again ({warm['misses']:.0f} graph(s) missed {where}, "
            f"filled {when}): a job's start there compiles everything",
            "check that env.caches passes (a persistent, private cache folder) and that "
            "TORCHINDUCTOR_FORCE_DISABLE_CACHES and TRITON_ALWAYS_COMPILE are unset, then "
            + FILL_REMEDY.split(";", 1)[0],
            figures=figures, **details,
        )
    return result(Status.PASS, f"a fresh process started warm from {where}: all {warm['hits']:.0f} graph(s) "
                  f"of the step filled {when} loaded ({warm['step_s']:.1f} s)", figures=figures, **details)
