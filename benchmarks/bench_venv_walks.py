"""What the root-safety walks of a venv cost (issue 39): the file list an install records
before it changes anything (``rocmkit.install.state.list_files``: a stat per entry, the
bytes of the files installers rewrite hashed) and the trust walk root makes before it starts
a venv's Python (``rocmkit.util.trust.interpreter_problem``).

    .venv/bin/python benchmarks/bench_venv_walks.py [--venv .venv] [--rounds 5]

Prints one JSON line: entries, hashed files, the list's size, and the median seconds of each
walk (warm page cache: the second and later rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from rocmkit.install.state import list_files
from rocmkit.util.trust import interpreter_problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=Path(".venv"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    listing, trust = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        found = list_files(args.venv)
        listing.append(time.perf_counter() - t)
        t = time.perf_counter()
        problem = interpreter_problem(args.venv / "bin" / "python")
        trust.append(time.perf_counter() - t)
    print(json.dumps({
        "venv": str(args.venv),
        "entries": len(found.entries),
        "hashed": sum(1 for v in found.entries.values() if v[0] == "f" and v[2]),
        "list_kib": len(found.to_json()) // 1024,
        "list_files_s": round(statistics.median(listing[1:] or listing), 3),
        "interpreter_problem_s": round(statistics.median(trust[1:] or trust), 3),
        "trusted": problem is None,
    }))


if __name__ == "__main__":
    main()
