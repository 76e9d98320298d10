"""A race that exists only across ranks (tests/test_ranks.py, tests/test_ranks_cli_checks.py).

Each of 2 ranks pushes its block into its rows of rank 1's ``buf``; every rank then loads its
whole ``buf``: on rank 1 that reads what rank 0 wrote, ordered by a signal only when
``signal`` is true (each rank alone is correctly synchronised).
"""

import numpy as np

import sim


def build(signal: bool = False) -> sim.Kernel:
    k = sim.Kernel("put_read")
    me = k.rank_idx
    src = k.gm("src", "f32", (8, 64))
    buf = k.gm("buf", "f32", (16, 64), np.zeros((16, 64), np.float32))
    out = k.gm("out", "f32", (16, 64))
    sig = k.gm("sig", "i32", (1, 1), np.zeros((1, 1), np.int32))
    stage, t = k.tile("vec", "f32", 8, 64), k.tile("vec", "f32", 16, 64)
    k.TPUT(buf.view(8, 64, row=me * 8), src, stage, peer=1)
    k.pipe_barrier("PIPE_ALL")
    if signal:
        for p in range(2):
            k.TNOTIFY(sig, 1, op="atomic_add", peer=p)
        k.TWAIT(sig, 2, cmp="ge")
    e = k.TLOAD(t, buf)
    k.TSTORE(out, t, e)
    return k
