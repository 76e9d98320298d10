"""Builder speed: microseconds per instruction to build a kernel with the Python builder.

Each case builds a kernel through ``sim.Kernel`` and turns it into its ``Program``
(``Kernel.program()``), in a fresh process after a warm-up build (imports and the
builder's per-line caches of other code are paid there), and prints the CPU time
(``time.process_time``) per PTO instruction the program holds. Cases:

* the kernels of ``bench/kernels.py`` (``vector``: a double-buffered 32x64 f32 loop with
  RecordEvent tokens, 1.33 sync statements per instruction; ``auto``: the same without
  tokens; ``cube``: ``vector`` plus a cube stream) at each size: these count the user
  code of the loop too (slicing GM tensors, picking buffers), as any kernel does;
* ``gemm``: ``examples/gemm.py`` at 6144^3 on 24 cores (the tiling of docs/guide/chip.md;
  16 176 instructions in the program every core runs, each TLOAD window computed from
  ``block_idx`` with scalar statements, 2.4 statements per instruction).

After each kernel it prints the cost per instruction between consecutive sizes: flat
when building is linear (the event-id pools are O(log n) per token).

Target: <= 5 us per instruction, 10^6 instructions built in <= 5 s (keeps building a
kernel under the engine's cost of simulating it, and near Perf-Sim's 3 us per recorded
instruction).

    .venv/bin/python bench/bench_builder.py                    # 10^4 .. 10^6
    .venv/bin/python bench/bench_builder.py --sizes 100000 --repeat 3
    .venv/bin/python bench/bench_builder.py --root /tmp/old-checkout      # before
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("BENCH_ROOT") or HERE.parent)  # the checkout whose sim builds
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

GEMM_ARGS = dict(
    m=6144,
    k=6144,
    n=6144,
    singleCoreM=1536,
    singleCoreK=6144,
    singleCoreN=1024,
    baseM=128,
    baseK=64,
    baseN=256,
    stepKa=4,
    stepKb=4,
)


def _instructions(program) -> int:
    from sim.isa.program import Instr, walk

    return sum(type(s) is Instr for f in program.functions for s in walk(f.body))


def one(kernel: str, n: int) -> dict:
    """Build one case in this process; returns its figures."""
    import kernels

    kernels.build("vector", 100).program()  # imports, first-call costs
    if kernel == "gemm":
        from sim.kernel.files import load_kernel

        c0 = time.process_time()
        program = load_kernel(str(ROOT / "examples" / "gemm.py"), list(GEMM_ARGS.items())).program()
    else:
        c0 = time.process_time()
        program = kernels.build(kernel, n).program()
    cpu = time.process_time() - c0
    n = _instructions(program)
    return {"kernel": kernel, "n": n, "cpu_s": cpu, "us_per_instr": cpu / n * 1e6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["vector", "auto", "cube", "gemm"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="N fresh processes per case; the minimum is printed",
    )
    ap.add_argument(
        "--root",
        type=Path,
        default=None,
        help="build with another checkout's sim and kernels (before/after)",
    )
    ap.add_argument("--one", nargs=2, metavar=("KERNEL", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.root is not None:
        env["BENCH_ROOT"] = str(args.root.resolve())
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return 0
    print(f"{'kernel':<8} {'instrs':>9} {'cpu s':>8} {'us/instr':>9}")
    for kernel in args.kernels:
        points = []
        for n in [0] if kernel == "gemm" else args.sizes:
            runs = []
            for _ in range(max(1, args.repeat)):
                out = subprocess.run(
                    [sys.executable, __file__, "--one", kernel, str(n)],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if out.returncode:
                    sys.stderr.write(out.stderr)
                    return out.returncode
                runs.append(json.loads(out.stdout))
            r = min(runs, key=lambda x: x["cpu_s"])
            points.append((r["n"], r["cpu_s"]))
            print(
                f"{kernel:<8} {r['n']:>9} {r['cpu_s']:>8.2f} {r['us_per_instr']:>9.2f}", flush=True
            )
        if len(points) > 1:
            steps = [(t1 - t0) / (n1 - n0) * 1e6 for (n0, t0), (n1, t1) in pairwise(points)]
            print(f"{'':<8} marginal us/instr " + " -> ".join(f"{x:.2f}" for x in steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
