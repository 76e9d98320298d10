"""Tiled, multi-buffered vector kernel: out = relu(a - b) over a HEIGHT x WIDTH f32 matrix.

The matrix is cut into ``rows`` x ``cols`` tiles, visited row-major. ``buffers`` sets of
UB tiles (a, b, result) form a ring: the MTE2 loads of tile i+1 .. i+buffers-1 overlap the
vector work on tile i and the MTE3 store of the tiles before it. ``buffers=1`` runs every
tile load -> compute -> store in turn; 2 is classic double buffering. Deeper rings only
help while the loads are the bottleneck, and every set costs 3 x rows x cols x 4 bytes of
the 184 KiB of UB user tiles may use, so large tiles with deep rings do not fit.

RecordEvent tokens carry the dependencies, as in ``relu_sub.py``: load -> compute (MTE2 -> V),
compute -> store (V -> MTE3), and the write-after-read hand-backs that free a buffer set for its
next load (V -> MTE2) and a result tile for its next compute (MTE3 -> V).

Every argument of ``build`` is a parameter::

    ptosim run examples/relu_sub_tiled.py --arg rows=64 --arg cols=128 --arg buffers=3
    ptosim sweep examples/relu_sub_tiled.py --param rows=16,32,64 --param buffers=1,2,3 \\
        -o out/sweep.parquet
"""

import numpy as np

import sim


def build(rows=32, cols=64, buffers=2, height=256, width=256) -> sim.Kernel:
    if height % rows or width % cols:
        raise ValueError(f"a {rows}x{cols} tile does not divide the {height}x{width} matrix")
    if buffers < 1:
        raise ValueError(f"buffers must be at least 1, found {buffers}")
    rng = np.random.default_rng(7)
    k = sim.Kernel(f"relu_sub_{rows}x{cols}_x{buffers}")
    a = k.gm("a", "f32", (height, width), rng.standard_normal((height, width)))
    b = k.gm("b", "f32", (height, width), rng.standard_normal((height, width)))
    out = k.gm("out", "f32", (height, width))

    sets = [
        {n: k.tile("vec", "f32", rows, cols, name=f"{n}{s}") for n in ("a", "b", "r")}
        for s in range(buffers)
    ]
    inputs_free = [None] * buffers  # token: vector unit done reading set s (WAR for TLOAD)
    result_free = [None] * buffers  # token: store done reading result s (WAR for compute)
    tiles = [(r, c) for r in range(0, height, rows) for c in range(0, width, cols)]
    for i, (r, c) in enumerate(tiles):
        s, n = sets[i % buffers], i % buffers
        window = (slice(r, r + rows), slice(c, c + cols))
        wait_in = [inputs_free[n]] if inputs_free[n] else []
        la = k.TLOAD(s["a"], a[window], *wait_in)
        lb = k.TLOAD(s["b"], b[window])
        wait_out = [result_free[n]] if result_free[n] else []
        d = k.TSUB(s["r"], s["a"], s["b"], la, lb, *wait_out)
        inputs_free[n] = d
        relu = k.TRELU(s["r"], s["r"], d)  # same pipe: a pipe_barrier(PIPE_V)
        result_free[n] = k.TSTORE(out[window], s["r"], relu)
    return k
