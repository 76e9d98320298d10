"""Engine speed: simulated instructions per second for a 10^5-instruction vector kernel.

The kernel streams TADD / TMULS / TEXP / TMAX over a handful of resident UB tiles, with a
load -> compute -> store hand-off every 50 instructions, so the run exercises the vector
queue, the flags and the dispatcher. Reported twice: timing only, and with the numpy
functional units. Target on a 2-core machine: >= 100 k instr/s timing-only.

    python bench/bench_engine.py [--instructions N] [--repeat K]
"""

from __future__ import annotations

import argparse
import time

import sim

_OPS = ("TADD", "TMULS", "TEXP", "TMAX")


def build(n_instr: int) -> sim.Kernel:
    k = sim.Kernel("bench")
    g = k.gm("x", "f32", (32, 64))
    o = k.gm("y", "f32", (32, 64))
    a, b, c = (k.tile("vec", "f32", 32, 64, name=n) for n in "abc")
    issued = 0
    while issued < n_instr:
        e = k.TLOAD(a, g)
        issued += 1
        for i in range(min(48, n_instr - issued - 1)):
            op = _OPS[i % len(_OPS)]
            args = {"TADD": (c, a, b), "TMULS": (b, c, 0.5), "TEXP": (c, b), "TMAX": (b, c, a)}[op]
            e = k.instr(op, *args, *([e] if i == 0 else []))
            issued += 1
        if issued < n_instr:
            k.TSTORE(o, b, e)
            issued += 1
    return k


def measure(kernel, functional: bool, repeat: int) -> tuple[float, int, int]:
    program = kernel.program()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = sim.simulate(program, functional=functional, inputs=kernel.inputs)
        best = min(best, time.perf_counter() - t0)
    n = int((r.trace["kind"] == "op").sum())
    return best, n, r.total_cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    kernel = build(args.instructions)
    kernel.program()
    print(f"build: {time.perf_counter() - t0:.2f} s for {args.instructions} instructions")
    for functional in (False, True):
        secs, n, cycles = measure(kernel, functional, args.repeat)
        label = "with functional units" if functional else "timing only"
        print(f"{label:<24} {n:>7} instr  {secs:6.2f} s  {n / secs / 1e3:7.1f} k instr/s  "
              f"({cycles} simulated cycles)")


if __name__ == "__main__":
    main()
