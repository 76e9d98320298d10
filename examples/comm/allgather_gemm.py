"""AllGather + GEMM with chunk streaming on two streams (the structure of communication.md
§8.2, small).

``C = A x B`` on every rank: rank p holds rows ``[p R, (p+1) R)`` of A (f16, ``R = m / N``) in
its window buffer ``a`` (the other rows arrive from their owners), B (f16) is the same on every
rank, each rank computes all of C (f32).

* **communication** (vector, one block): marks its own chunks ready locally, then pushes each
  chunk (``base`` rows of its A) to every other rank with ``TPUT``, releases it
  (``pipe_barrier(PIPE_ALL)``) and sets that rank's ``flags[me, chunk]``;
* **compute** (cube, one ``base x base`` tile of C per block): waits with ``TWAIT`` (on the
  cube unit) until the chunk of A its tile needs is ready, then loads, extracts, multiplies
  and stores — tiles of the rank's own rows run at once, the others as their chunks stream in.

    import sim, examples.comm.allgather_gemm as g
    r = sim.simulate(g.compute(4), ranks=4, streams=[g.comm(4)], inputs=[...])
"""

import numpy as np

import sim

NZ = dict(blayout="col_major", slayout="row_major")  # L1 staging
L0A = dict(blayout="row_major", slayout="row_major")
L0B = dict(blayout="row_major", slayout="col_major")
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)


def _shape(ranks, m, base):
    if m % (ranks * base):
        raise ValueError(f"m={m} must be a multiple of ranks * base = {ranks * base}")
    return m // ranks // base  # chunks (tile rows) per rank


def compute(ranks: int = 4, m: int = 256, k: int = 64, n: int = 128, base: int = 64) -> sim.Kernel:
    per = _shape(ranks, m, base)
    tn = n // base
    kern = sim.Kernel("gemm_streamed", block_dim=(m // base) * tn)
    a = kern.gm("a", "f16", (m, k))
    b = kern.gm("b", "f16", (k, n))
    c = kern.gm("c", "f32", (m, n))
    flags = kern.gm("flags", "i32", (1, ranks * per), np.zeros((1, ranks * per), np.int32))
    t = kern.block_idx
    row_tile = t // tn  # = source * per + chunk: the flag of the A rows this tile needs
    r0, c0 = row_tile * base, (t % tn) * base
    with kern.cube():
        kern.TWAIT(flags.view(1, 1, col=row_tile), 1, cmp="ge")
        a_l1 = kern.tile("mat", "f16", base, k, **NZ)
        b_l1 = kern.tile("mat", "f16", k, base, **NZ)
        a_l0 = kern.tile("left", "f16", base, k, **L0A)
        b_l0 = kern.tile("right", "f16", k, base, **L0B)
        acc = kern.tile("acc", "f32", base, base, **ACC)
        ea = kern.TLOAD(a_l1, a.view(base, k, row=r0, col=0))
        eb = kern.TLOAD(b_l1, b.view(k, base, row=0, col=c0))
        xa = kern.TEXTRACT(a_l0, a_l1, 0, 0, ea)
        xb = kern.TEXTRACT(b_l0, b_l1, 0, 0, eb)
        mm = kern.TMATMUL(acc, a_l0, b_l0, xa, xb)
        kern.TSTORE(c.view(base, base, row=r0, col=c0), acc, mm)
    return kern


def comm(ranks: int = 4, m: int = 256, k: int = 64, base: int = 64) -> sim.Kernel:
    per = _shape(ranks, m, base)
    kern = sim.Kernel("allgather_push")
    me = kern.rank_idx
    a = kern.gm("a", "f16", (m, k))
    flags = kern.gm("flags", "i32", (1, ranks * per), np.zeros((1, ranks * per), np.int32))
    stage = [kern.tile("vec", "f16", base // 2, k) for _ in range(2)]  # ping, pong
    for ch in range(per):  # my own chunks are ready here
        kern.TNOTIFY(flags.view(1, 1, col=me * per + ch), 1, op="set")
    for ch in range(per):  # stream my chunks to every other rank, in the order they are used
        rows = a.view(base, k, row=me * (per * base) + ch * base, col=0)
        for step in range(1, ranks):
            kern.TPUT(rows, rows, *stage, peer=(me + step) % ranks)
        kern.pipe_barrier("PIPE_ALL")  # release: the chunk is there before its flag
        for step in range(1, ranks):
            kern.TNOTIFY(flags.view(1, 1, col=me * per + ch), 1, op="set", peer=(me + step) % ranks)
    return kern


def inputs(ranks: int = 4, m: int = 256, k: int = 64, n: int = 128, seed: int = 0) -> tuple:
    """(per-rank inputs, the whole A, B): rank p's ``a`` holds only its own rows."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    rows = m // ranks
    mine = []
    for p in range(ranks):
        ap = np.zeros_like(a)
        ap[p * rows : (p + 1) * rows] = a[p * rows : (p + 1) * rows]
        mine.append({"a": ap, "b": b})
    return mine, a, b
