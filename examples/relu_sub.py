"""Double-buffered vector kernel: out = relu(a - b) / 4 over 8 chunks of 32x64 f32.

Two buffer sets (ping / pong) let the MTE2 loads of chunk i+1 overlap the vector work on
chunk i and the MTE3 store of chunk i-1. RecordEvent tokens carry the dependencies:
load -> compute (MTE2 -> V), compute -> store (V -> MTE3), and the write-after-read
hand-backs that free a buffer set for its next load (V -> MTE2) and a result tile for its
next compute (MTE3 -> V).

Run it:  ptosim run examples/relu_sub.py --trace out/trace.csv --plot out/occupancy.png
"""

import numpy as np

import sim

CHUNKS, ROWS, COLS = 8, 32, 64


def build() -> sim.Kernel:
    rng = np.random.default_rng(7)
    k = sim.Kernel("relu_sub")
    a = k.gm("a", "f32", (CHUNKS * ROWS, COLS), rng.standard_normal((CHUNKS * ROWS, COLS)))
    b = k.gm("b", "f32", (CHUNKS * ROWS, COLS), rng.standard_normal((CHUNKS * ROWS, COLS)))
    out = k.gm("out", "f32", (CHUNKS * ROWS, COLS))

    sets = [
        {n: k.tile("vec", "f32", ROWS, COLS, name=f"{n}{s}") for n in ("a", "b", "r")}
        for s in range(2)
    ]
    inputs_free = [None, None]  # token: vector unit done reading set s (WAR for TLOAD)
    result_free = [None, None]  # token: store done reading result s (WAR for compute)
    for i in range(CHUNKS):
        s = sets[i % 2]
        rows = slice(i * ROWS, (i + 1) * ROWS)
        wait_in = [inputs_free[i % 2]] if inputs_free[i % 2] else []
        la = k.TLOAD(s["a"], a[rows, :], *wait_in)
        lb = k.TLOAD(s["b"], b[rows, :])
        wait_out = [result_free[i % 2]] if result_free[i % 2] else []
        d = k.TSUB(s["r"], s["a"], s["b"], la, lb, *wait_out)
        inputs_free[i % 2] = d
        r = k.TRELU(s["r"], s["r"], d)  # same pipe: a pipe_barrier(PIPE_V)
        r = k.TMULS(s["r"], s["r"], 0.25, r)
        result_free[i % 2] = k.TSTORE(out[rows, :], s["r"], r)
    return k
