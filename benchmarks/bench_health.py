"""What the hardware-health reads add to `rocmkit detect` on an 8-GPU capture (docs/hardware.md).

Detects `tests/data/captures/synthetic-mi300x8-health-sysfs` (8 x MI300X, ~320 sysfs files) and
the same capture with the health files taken out (no `cmd/pci-gpus.txt`, no
`root/sys/bus/pci/devices`), in this process, alternating, and prints the medians and the
difference. The claim: at most 50 ms more. Exit code 1 when it fails. Also times
`rocmkit detect --json --capture` in a fresh process both ways (what a user sees).

    .venv/bin/python benchmarks/bench_health.py [--repeat 21]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests" / "data" / "captures" / "synthetic-mi300x8-health-sysfs"
LIMIT_MS = 50.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from rocmkit.detect import detect_machine
    from rocmkit.sources import CaptureSource

    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "bare"
        shutil.copytree(CAPTURE, bare)
        (bare / "cmd" / "pci-gpus.txt").unlink()
        shutil.rmtree(bare / "root" / "sys" / "bus")
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(args.repeat):
            for key, path in (("with", CAPTURE), ("without", bare)):
                start = time.perf_counter()
                m = detect_machine(CaptureSource(path), environ={})
                times[key].append((time.perf_counter() - start) * 1000)
                assert (len(m.health) == 8) == (key == "with"), (key, len(m.health))
        med = {k: statistics.median(v) for k, v in times.items()}
        extra = med["with"] - med["without"]
        print(f"in process, median of {args.repeat}: detect with health {med['with']:.1f} ms, "
              f"without {med['without']:.1f} ms, added {extra:.1f} ms (limit {LIMIT_MS:.0f} ms)")
        cli: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(max(3, args.repeat // 4)):
            for key, path in (("with", CAPTURE), ("without", bare)):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "rocmkit", "detect", "--json", "--capture", str(path)],
                               check=True, capture_output=True, cwd=REPO, timeout=120)
                cli[key].append((time.perf_counter() - start) * 1000)
        cmed = {k: statistics.median(v) for k, v in cli.items()}
        print(f"fresh process `rocmkit detect --json --capture`: with {cmed['with']:.0f} ms, "
              f"without {cmed['without']:.0f} ms, added {cmed['with'] - cmed['without']:.0f} ms")
    return 0 if extra <= LIMIT_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
