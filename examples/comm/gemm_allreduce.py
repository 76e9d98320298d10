"""GEMM + AllReduce on two streams (the structure of communication.md §8.3, small).

Every rank p computes ``C_p = A_p x B`` (A_p its own ``m x k`` f16, B the same ``k x n`` f16 on
every rank) and the all-reduce leaves ``C = sum_p C_p`` (f32) in ``reduced`` on every rank.
Two kernels run side by side on each rank, as the host's compute and communication streams:

* **compute** (cube, one ``base x base`` output tile per block): L1 loads of the A rows and B
  columns, extracts to L0, one TMATMUL over the whole k, the FIXPIPE store of the tile to
  ``gemm_out``; then the release (``pipe_barrier(PIPE_ALL)``) and a local ``TNOTIFY`` of the
  tile's ``ready`` flag;
* **communication** (vector, one block), tile by tile as they become ready: reduce-scatter —
  ``TPUT`` with atomic add of the tile into its owner's ``reduced`` (owner = tile mod N),
  release, ``TNOTIFY atomic_add`` of the tile's ``rs_count`` on every rank; all-gather — once
  ``rs_count`` of the tile reaches N, the owner broadcasts its reduced tile to every rank
  (``TBROADCAST`` runs on the root only); after its broadcasts each rank bumps every rank's
  ``ag_done`` (a cross-rank barrier, §8.6), and the kernel ends when its own counts N.

    import sim, examples.comm.gemm_allreduce as g
    r = sim.simulate(g.compute(4), ranks=4, streams=[g.comm(4)], inputs={"b": B})

or from the command line (``build`` is the compute kernel, ``comm`` the second stream)::

    ptosim run examples/comm/gemm_allreduce.py --ranks 4 --arg ranks=4 \
        --stream examples/comm/gemm_allreduce.py:comm
"""

import numpy as np

import sim

NZ = dict(blayout="col_major", slayout="row_major")  # L1 staging
L0A = dict(blayout="row_major", slayout="row_major")
L0B = dict(blayout="row_major", slayout="col_major")
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)


def compute(ranks: int = 4, m: int = 128, k: int = 64, n: int = 128, base: int = 64) -> sim.Kernel:
    tn = n // base
    tiles = (m // base) * tn
    kern = sim.Kernel("gemm", block_dim=tiles)
    a = kern.gm("a", "f16", (m, k))  # each rank's own A (seeded per rank)
    b = kern.gm("b", "f16", (k, n))  # the same B on every rank (given by the host)
    out = kern.gm("gemm_out", "f32", (m, n))
    ready = kern.gm("ready", "i32", (1, tiles), np.zeros((1, tiles), np.int32))
    t = kern.block_idx
    r0, c0 = (t // tn) * base, (t % tn) * base
    with kern.cube():
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
        kern.TSTORE(out.view(base, base, row=r0, col=c0), acc, mm)
        kern.pipe_barrier("PIPE_ALL")  # release: the tile is in GM before its flag
        kern.TNOTIFY(ready.view(1, 1, col=t), 1, op="set")
    return kern


def build(ranks: int = 4, m: int = 128, k: int = 64, n: int = 128, base: int = 64) -> sim.Kernel:
    """The compute kernel (``ptosim run`` builds this one; ``comm`` is its second stream)."""
    return compute(ranks, m, k, n, base)


def comm(ranks: int = 4, m: int = 128, n: int = 128, base: int = 64) -> sim.Kernel:
    tn = n // base
    tiles = (m // base) * tn
    kern = sim.Kernel("allreduce")
    out = kern.gm("gemm_out", "f32", (m, n))
    reduced = kern.gm("reduced", "f32", (m, n), np.zeros((m, n), np.float32))
    ready = kern.gm("ready", "i32", (1, tiles), np.zeros((1, tiles), np.int32))
    rs = kern.gm("rs_count", "i32", (1, tiles), np.zeros((1, tiles), np.int32))
    done = kern.gm("ag_done", "i32", (1, 1), np.zeros((1, 1), np.int32))
    stage = [kern.tile("vec", "f32", base // 2, base) for _ in range(2)]  # ping, pong
    for t in range(tiles):  # reduce-scatter, tile by tile as the compute stream finishes
        r0, c0 = (t // tn) * base, (t % tn) * base
        kern.TWAIT(ready[0:1, t : t + 1], 1, cmp="ge")
        tile = out[r0 : r0 + base, c0 : c0 + base]
        dst = reduced[r0 : r0 + base, c0 : c0 + base]
        kern.TPUT(dst, tile, *stage, peer=t % ranks, atomic="atomic_add")
        kern.pipe_barrier("PIPE_ALL")
        for p in range(ranks):
            kern.TNOTIFY(rs[0:1, t : t + 1], 1, op="atomic_add", peer=p)
    for t in range(tiles):  # all-gather: each owner broadcasts its reduced tiles
        r0, c0 = (t // tn) * base, (t % tn) * base
        kern.TWAIT(rs[0:1, t : t + 1], ranks, cmp="ge")
        dst = reduced[r0 : r0 + base, c0 : c0 + base]
        kern.TBROADCAST(dst, dst, *stage, root=t % ranks)
    kern.pipe_barrier("PIPE_ALL")  # my broadcasts have landed: tell every rank
    for p in range(ranks):
        kern.TNOTIFY(done, 1, op="atomic_add", peer=p)
    kern.TWAIT(done, ranks, cmp="ge")  # every rank's broadcasts have landed here
    return kern
