"""The suite's xdist file order (tests/support/xdist_schedule.py), on a simulated clock: workers
that hold back their last test as xdist's do, files of the lengths LONG_FILES records."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

from tests.support.xdist_schedule import LONG_FILES, LONG_POLE_S, LongestFileFirst

REPO = Path(__file__).resolve().parents[2]
WORKERS = 3


class _Config:
    option = SimpleNamespace(loadscopereorder=True)  # xdist's default: most tests first

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return [f"{WORKERS}*popen"]


class _Log:
    """xdist's logger, silent: ``log.loadfilesched(...)``."""

    def __getattr__(self, name: str) -> _Log:
        return self

    def __call__(self, *args: object) -> None:
        pass


class _Worker:
    """What the scheduler sees of an xdist worker, and the worker's own queue: it runs a test
    only once it knows the next one, or has been told to shut down."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.torun: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.torun.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _files() -> dict[str, list[float]]:
    """The long files (at most four tests each, their time split evenly) and 250 short ones."""
    files: dict[str, list[float]] = {}
    for i, (path, seconds) in enumerate(LONG_FILES.items()):
        tests = 1 + i % 4
        files[path] = [seconds / tests] * tests
    for i in range(250):
        files[f"tests/unit/test_short_{i}.py"] = [0.2] * (1 + i % 12)
    return files


def _run(scheduler: type[Any], files: dict[str, list[float]]) -> tuple[float, dict[str, list[str]]]:
    """The suite's length on the simulated clock, and each worker's files in the order begun."""
    collection = [f"{path}::test_{i}" for path, tests in files.items() for i in range(len(tests))]
    seconds = {f"{path}::test_{i}": s for path, tests in files.items() for i, s in enumerate(tests)}
    sched = scheduler(_Config(), _Log())
    workers = [_Worker(f"gw{i}") for i in range(WORKERS)]
    for w in workers:
        sched.add_node(w)
    for w in workers:
        sched.add_node_collection(w, collection)
    sched.schedule()
    now = 0.0
    running: dict[_Worker, tuple[float, int]] = {}
    begun: dict[str, list[str]] = {w.name: [] for w in workers}
    ran: list[str] = []
    while True:
        for w in workers:
            if w not in running and (len(w.torun) >= 2 or (w.torun and w.shutting_down)):
                index = w.torun.pop(0)
                path = collection[index].split("::")[0]
                if path not in begun[w.name]:
                    begun[w.name].append(path)
                running[w] = (now + seconds[collection[index]], index)
        if not running:
            break
        worker = min(running, key=lambda w: running[w][0])
        now, index = running.pop(worker)
        ran.append(collection[index])
        sched.mark_test_complete(worker, index)
    assert sorted(ran) == sorted(collection)  # every test once
    return now, begun


def test_the_long_poles_start_first_each_on_its_own_worker() -> None:
    _, begun = _run(LongestFileFirst, _files())
    longest = sorted(LONG_FILES, key=lambda p: -LONG_FILES[p])[:WORKERS]
    assert sorted(order[0] for order in begun.values()) == sorted(longest)


def test_a_long_pole_is_never_queued_behind_another() -> None:
    _, begun = _run(LongestFileFirst, _files())
    for order in begun.values():
        for first, then in itertools.pairwise(order):
            assert not (LONG_FILES.get(first, 0) >= LONG_POLE_S and LONG_FILES.get(then, 0) >= LONG_POLE_S), (
                order
            )


def test_the_suite_ends_sooner_than_with_xdists_own_order() -> None:
    files = _files()
    ours, _ = _run(LongestFileFirst, files)
    theirs, _ = _run(LoadFileScheduling, files)
    work = sum(sum(tests) for tests in files.values())
    # xdist's own order (most tests first) starts the one-test TIMM file last.
    assert theirs > work / WORKERS + 0.5 * LONG_FILES["tests/integration/test_bench_timm.py"]
    assert ours < theirs
    assert ours <= max(work / WORKERS, max(LONG_FILES.values())) * 1.05


@pytest.mark.parametrize("path", sorted(LONG_FILES))
def test_every_long_file_named_exists(path: str) -> None:
    # A renamed file would silently fall back to the per-test estimate.
    assert (REPO / path).is_file()
