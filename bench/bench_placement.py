"""Manual-mode placement by liveness, with the kernel's own flags checked for every reuse
(sim.placement.reuse): time for N chained 16 KiB tiles that only fit sharing one address.

    .venv/bin/python bench/bench_placement.py [N ...]

Each tile is loaded then stored, the next load waiting for the previous store (a token),
so every tile may take the bytes of the one before. Placement must stay near-linear in N.
"""

import sys
import time

import sim
from sim.engine.placement import place_tiles
from sim.target import load_target


def build(n: int) -> sim.Kernel:
    k = sim.Kernel("chain")
    x, y = k.gm("x", "f32", (64, 64)), k.gm("y", "f32", (64, 64))
    prev = None
    for i in range(n):
        t = k.tile("vec", "f32", 64, 64, name=f"t{i}")
        loaded = k.TLOAD(t, x, *([prev] if prev else []))
        prev = k.TSTORE(y, t, loaded)
    return k


def main(sizes) -> None:
    target = load_target("a2a3")
    for n in sizes:
        program = build(n).program()
        t0 = time.perf_counter()
        placed = place_tiles(program, target)
        dt = time.perf_counter() - t0
        print(f"{n:6d} tiles: {dt:6.2f} s, {len(set(placed.values()))} distinct address(es)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200, 1000, 3000])
