"""Whole-chip speed: the production-style tiled GEMM of ``examples/gemm.py`` on many cores.

The case is C = A . B with m = k = n = 6144 on 24 cores (singleCoreM 1536,
singleCoreK 6144, singleCoreN 1024, base 128 x 64 x 256, stepKa = stepKb = 4), timing
only; the aim is at most 60 s on the 2-core development machine. Each size runs in this
process once: build time, simulate time, instructions per second over all units, peak
RSS, and the kernel's cycles with the per-opcode busy ratios the report gives.

    .venv/bin/python bench/bench_chip.py              # 6144^3 on 24 cores
    .venv/bin/python bench/bench_chip.py --small      # 1536 x 6144 x 1024 on 1 core
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim  # noqa: E402
from sim.kernel.files import load_kernel  # noqa: E402

GEMM = str(ROOT / "examples" / "gemm.py")
TILING = dict(
    singleCoreM=1536,
    singleCoreK=6144,
    singleCoreN=1024,
    baseM=128,
    baseK=64,
    baseN=256,
    stepKa=4,
    stepKb=4,
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="one core's block only (m=1536, n=1024)")
    args = ap.parse_args(argv)
    m, n = (1536, 1024) if args.small else (6144, 6144)
    t0 = time.perf_counter()
    kernel = load_kernel(GEMM, list(dict(m=m, k=6144, n=n, **TILING).items()))
    t1 = time.perf_counter()
    r = sim.simulate(kernel, "a2a3", functional=False, trace="none")
    t2 = time.perf_counter()
    items = sum(p["instructions"] for u in r.units for p in u["pipes"].values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"gemm {m}x6144x{n} on {kernel.block_dim} cores (timing only)")
    print(
        f"build {t1 - t0:.1f} s, simulate {t2 - t1:.1f} s, peak RSS {rss:.0f} MB, "
        f"{items / (t2 - t1) / 1e3:.0f} k instructions/s"
    )
    print(f"total cycles {r.total_cycles}")
    for op, o in sorted(r.opcodes.items(), key=lambda kv: -kv[1]["busy_cycles"]):
        print(f"  {op:<12} busy ratio {o['ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
