"""How many compile jobs a build host takes: one rule for `rocmkit build` and companion source
builds (`--with flash-attn`), stated in every plan that sets MAX_JOBS."""

from __future__ import annotations

from rocmkit.arch import GpuBackend as Backend

GIB = 1024**3
# Peak memory of one compile job. A torch translation unit needs about 2-4 GB; HIP units compiled
# for several GPU archs sit at the top of that range, hence more per job for ROCm.
JOB_MEMORY_GIB: dict[str, float] = {"rocm": 4.0, "cuda": 3.0}
# Left for the OS, the linker and the desktop while the build runs.
RESERVED_MEMORY_GIB = 2.0


def max_jobs(cores: int | None, memory_bytes: int | None, backend: Backend) -> tuple[int, str]:
    """Parallel compile jobs that fit in memory, and the rule as a sentence for the plan.

    Rule: min(logical cores, (total memory - 2 GiB) / per-job memory), at least 1, where a job
    takes 4 GiB for ROCm and 3 GiB for CUDA (memory: see `rocmkit.source_build.targets.build_memory`). Total, not free,
    memory keeps the number stable between runs, so a resumed build keeps its plan.
    """
    per_job = JOB_MEMORY_GIB[backend]
    cpu = max(1, cores or 1)
    rule = (
        f"MAX_JOBS = min(cores, (memory - {RESERVED_MEMORY_GIB:g} GiB) / {per_job:g} GiB per job), at least 1"
    )
    if memory_bytes is None:
        return cpu, rule + f" = {cpu} (memory unknown: cores only)"
    by_memory = int((memory_bytes / GIB - RESERVED_MEMORY_GIB) // per_job)
    jobs = max(1, min(cpu, by_memory))
    return jobs, rule + f" = min({cpu}, {max(by_memory, 0)}) = {jobs}"
