"""The order in which xdist's workers take the suite's files (``--dist loadfile``): longest first.

xdist gives each worker whole files, by default the files with the most tests first. The long
poles have few tests (the TIMM file has one), so they started last and one worker ran them
alone at the end while the other two had finished (measured: the TIMM test's 176 s were the
last three minutes of a 12.8-minute run). Here a worker takes the longest file left, as the
classic longest-processing-time rule does, so the long poles run side by side from the start
and the many short files fill the end.

A worker runs a test only once it knows the next one (pytest's teardown needs it), so xdist
hands a worker its next file while the previous one is still queued. When what is queued there
is a long pole, that next file is the shortest left, not another long pole stuck behind it.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

# Seconds each long file took (setup, calls and teardown together) in a fresh clone's
# `scripts/test.sh --durations=0` on the 2-core test machine (scaled to a 10-minute pytest; the
# machine was shared); an estimate to order by, not a limit. Any other file counts
# SECONDS_PER_TEST per test.
LONG_FILES: dict[str, float] = {
    "tests/integration/test_bench_timm.py": 228,
    "tests/integration/test_bench_models.py": 197,
    "tests/integration/test_bench_suites.py": 179,
    "tests/integration/test_docker_build_real.py": 157,
    "tests/integration/test_kernels_interpreter.py": 92,
    "tests/integration/test_slurm_real.py": 69,
    "tests/integration/test_bench_modes.py": 68,
    "tests/integration/test_compile_correctness.py": 64,
    "tests/integration/test_install_faults.py": 59,
    "tests/integration/test_warm_caches.py": 51,
    "tests/integration/test_progress_pty.py": 46,
    "tests/integration/test_install_e2e.py": 42,
    "tests/integration/test_progress_piped.py": 33,
    "tests/integration/test_jax_install_doctor.py": 28,
    "tests/integration/test_build_torch_recipe.py": 18,
    "tests/integration/test_install_restore_files.py": 15,
    "tests/integration/test_install_journal_tamper.py": 14,
    "tests/integration/test_readme.py": 13,
    "tests/unit/test_loaders_fuzz.py": 11,
}
SECONDS_PER_TEST = 0.2
# A file this long is a long pole: a worker that has one queued gets the shortest file next.
LONG_POLE_S = 20.0


def file_seconds(scope: str, tests: int) -> float:
    """The estimated seconds of one file (``scope``: its path from the rootdir) of ``tests`` tests."""
    return LONG_FILES.get(scope, SECONDS_PER_TEST * tests)


class LongestFileFirst(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no types
    """``--dist loadfile``, taking the longest file left (see the module's docstring)."""

    def _seconds(self, scope: str) -> float:
        return file_seconds(scope, len(self.workqueue[scope]))

    def _assign_work_unit(self, node: WorkerController) -> None:
        queued = [
            scope for scope, tests in self.assigned_work.get(node, {}).items() if not all(tests.values())
        ]
        busy_with_long_pole = any(file_seconds(s, 0) >= LONG_POLE_S for s in queued)
        pick = (min if busy_with_long_pole else max)(self.workqueue, key=self._seconds)
        # The parent takes the first file of its queue: put the chosen one there.
        self.workqueue.move_to_end(pick, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        # The parent's, with the refill mark at one pending test rather than two: the one test
        # a worker holds back until it knows the next. A file is handed out when a worker is
        # about to wait for it, not while it still has a test to run, so it goes to whichever
        # worker comes free first.
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)
