"""Engine speed: instructions per second, memory and trace size, from 10^3 to 10^6 instructions.

For every kernel of ``bench/kernels.py`` (``vector``: double-buffered with RecordEvent sync
and WAR hand-backs; ``auto``: the same without its tokens, as compiler output comes, so a
default run inserts the sync and places the tiles first (auto mode); ``cube``: ``vector``
plus a double-buffered cube stream on the same unit;
``chip``: 8 cores, each running the cube stream on its cube unit and a vector stream on
each of its two vector units) at every size, it builds the kernel through the builder,
then simulates it timing-only and with the numpy functional units, end to end:
``sim.simulate`` plus reading ``Result.trace`` (the pandas DataFrame of every unit's
rows). Mode ``races`` is timing-only with race checking on (as ``ptosim run`` checks a
kernel that synchronises by hand) and no trace rows (``trace="none"``), so its memory is
the race checker's. Each case runs in a fresh process so its peak RSS is its own. Printed per
case:

* ``instrs``      PTO instructions simulated over all units (``Result.instructions``; for
  ``chip`` the size asked for rounded down to whole units);
* ``build s``     building the kernel and its program through the builder;
* ``sim s``, ``k instr/s``   wall seconds end to end incl. the trace, and PTO instructions
  simulated per wall second;
* ``cpu s``, ``k/cpu s``     the same in CPU time of the process (``time.process_time``):
  on a shared machine the figure to compare;
* ``peak MB``     the process's peak RSS;
* ``B/instr``     (peak RSS - RSS before simulating) / instructions: the engine's memory;
* ``trace B/instr``  bytes of the trace DataFrame (``memory_usage(deep=True)``) per instruction;
* ``again k/cpu s``  the same program simulated (and its trace read) a second time in the
  process, as the runs of a sweep or a notebook loop go: what the first run worked out per
  distinct instruction (lowering, verifier verdicts, trace dtypes) is kept per process,
  and what it worked out for the program (auto mode's prepared program, clean plans) with
  the program;
* after each kernel and mode, the CPU time per instruction between consecutive sizes and
  the fixed cost per run the two smallest imply (cost = fixed + marginal x n), split into
  ``sim.simulate`` and the first read of ``Result.trace`` (building the DataFrame).

Before the measured run the process simulates ``kernels.warmup()``, a few instructions on
other tiles and shapes: the imports are paid there, the per-instruction caches are not.

Targets on a 2-core machine: >= 300 k instr/s timing-only on ``vector``, >= 100 k instr/s
functional (Perf-Sim, pto-isa's C++ simulator, runs 0.3-0.5 M instr/s on such kernels:
bench/data/perfsim_speed.toml), flat from 10^3 to 10^6, <= 600 B per instruction.

    python bench/bench_engine.py                 # 10^3 .. 10^5 (about two minutes)
    python bench/bench_engine.py --max 1000000   # up to 10^6
    python bench/bench_engine.py --repeat 3      # the median of 3 processes per case
    python bench/bench_engine.py --kernels chip --modes timing --sizes 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

MODES = ("timing", "functional", "races")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one(kernel: str, n: int, mode: str) -> dict:
    """Run one case in this process; returns its figures."""
    import kernels

    import sim

    opts = {"functional": mode == "functional"}
    if mode == "races":
        opts.update(races=True, trace="none")
    _ = sim.simulate(kernels.warmup(), **opts).trace  # imports, not the engine's cost
    t0 = time.perf_counter()
    k = kernels.build(kernel, n)
    program = k.program()
    build_s = time.perf_counter() - t0
    inputs, block_dim = dict(k.inputs), k.block_dim
    opts["block_dim"] = block_dim
    del k
    gc.collect()
    before = _rss_bytes()
    t0, c0 = time.perf_counter(), time.process_time()
    r = sim.simulate(program, inputs=inputs, **opts)
    c1 = time.process_time()
    trace = r.trace
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ops = r.instructions
    out = {
        "kernel": kernel,
        "n": ops,
        "mode": mode,
        "build_s": build_s,
        "sim_s": secs,
        "instr_per_s": ops / secs,
        "cpu_s": cpu,
        "instr_per_cpu_s": ops / cpu,
        "trace_cpu_s": cpu - (c1 - c0),
        "peak_rss_mb": peak / 2**20,
        "bytes_per_instr": max(0, peak - before) / ops,
        "rows": len(trace),
        "trace_bytes_per_instr": int(trace.memory_usage(deep=True).sum()) / ops,
        "cycles": r.total_cycles,
    }
    # the same program again in this process, as the runs of a sweep or a notebook loop go
    del r, trace
    c0 = time.process_time()
    _ = sim.simulate(program, inputs=inputs, **opts).trace  # the trace is built on first use
    out["again_instr_per_cpu_s"] = ops / (time.process_time() - c0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["vector", "auto", "cube", "chip"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument(
        "--sizes", nargs="+", type=int, help="instruction counts (default 10^3 .. --max)"
    )
    ap.add_argument(
        "--max", type=int, default=100_000, help="largest size when --sizes is not given"
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each case in N fresh processes and print the median of each "
        "figure (short runs are noisy on a shared machine)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    ap.add_argument("--one", nargs=3, metavar=("KERNEL", "N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        kernel, n, mode = args.one
        print(json.dumps(one(kernel, int(n), mode)))
        return 0
    sizes = args.sizes or [10**e for e in range(3, 7) if 10**e <= args.max]
    if not args.json:
        print(
            f"{'kernel':<8} {'mode':<10} {'instrs':>8} {'build s':>8} {'sim s':>7} "
            f"{'k instr/s':>9} {'cpu s':>7} {'k/cpu s':>8} {'peak MB':>8} {'B/instr':>8} "
            f"{'trace B/instr':>13} {'cycles':>10} {'again k/cpu s':>13}"
        )
    for kernel in args.kernels:
        for mode in args.modes:
            points = []  # (instructions, CPU seconds, of them reading .trace) per size
            for n in sizes:
                runs = []
                for _ in range(max(1, args.repeat)):
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", kernel, str(n), mode],
                        capture_output=True,
                        text=True,
                    )
                    if out.returncode:
                        sys.stderr.write(out.stderr)
                        return out.returncode
                    runs.append(json.loads(out.stdout))
                r = {
                    k: (statistics.median(x[k] for x in runs) if isinstance(v, float) else v)
                    for k, v in runs[0].items()
                }
                points.append((r["n"], r["n"] / r["instr_per_cpu_s"], r["trace_cpu_s"]))
                if args.json:
                    print(json.dumps(r))
                    continue
                print(
                    f"{kernel:<8} {mode:<10} {r['n']:>8} {r['build_s']:>8.2f} {r['sim_s']:>7.2f} "
                    f"{r['instr_per_s'] / 1e3:>9.1f} {r['cpu_s']:>7.2f} "
                    f"{r['instr_per_cpu_s'] / 1e3:>8.1f} {r['peak_rss_mb']:>8.0f} "
                    f"{r['bytes_per_instr']:>8.0f} {r['trace_bytes_per_instr']:>13.0f} "
                    f"{r['cycles']:>10} {r['again_instr_per_cpu_s'] / 1e3:>13.1f}",
                    flush=True,
                )
            if len(points) > 1 and not args.json:
                print(f"{'':<8} {mode:<10} {_marginal(points)}", flush=True)
    return 0


def _marginal(points) -> str:
    """CPU time per instruction between consecutive sizes, and the fixed cost per run that
    the two smallest imply (when they are small enough to show it), split into simulating
    and building the trace DataFrame: time = fixed + marginal x n is linear when the
    marginals agree, and the fixed cost is what keeps the smallest size off the line."""

    def fixed(i):  # of total (1) or trace (2) CPU seconds
        (n0, *a), (n1, *b) = points[0], points[1]
        return a[i - 1] - (b[i - 1] - a[i - 1]) / (n1 - n0) * n0

    steps = [(t1 - t0) / (n1 - n0) for (n0, t0, _), (n1, t1, _) in pairwise(points)]
    out = "marginal us/instr " + " -> ".join(f"{x * 1e6:.2f}" for x in steps)
    if points[0][0] <= 10_000:  # a few ms out of seconds is noise: small sizes only
        total, trace = fixed(1), fixed(2)
        out += (
            f"; fixed {total * 1e3:.1f} ms per run (simulate {(total - trace) * 1e3:.1f}, "
            f"trace {trace * 1e3:.1f})"
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
