"""GEMM + AllReduce at the structure of the public kernel (communication.md §8.3, pto-isa
``kernels/manual/a2a3/gemm_ar``), for timing at its size: 8 ranks, ``C = sum_p A_p x B`` with
``M x K`` f16 A_p (M = 5416 padded to 5504), a ``K x N`` f16 B (N = 1408 padded to 1536),
K = 6144, f16 output; 128 x 256 output tiles (43 x 6 = 258), tile t owned by rank t mod N.

* **compute** (cube): one output tile per block, the blocks in waves on the 24 cube cores
  (the public kernel's 24 AIC blocks walking their tiles); per tile the production K loop of
  ``examples/gemm.py``: A and B into L1 ``step_k`` base steps at a time (double-buffered),
  ``base_m x base_k`` / ``base_k x base_n`` extracts into L0A / L0B (double-buffered),
  TMATMUL then TMATMUL_ACC over K, the FIXPIPE store (f32 -> f16) to ``gemm_out``; then the
  release (``pipe_barrier(PIPE_ALL)``) and the tile's doorbell: a local ``TNOTIFY`` of
  ``ready[t]``;
* **communication** (vector): one block per tile, in waves on 24 cores (the public 24 AIV
  blocks); block t waits for the doorbell (``TWAIT ready[t]``), reduce-scatters the tile
  into its owner's ``reduced`` with an atomic-add ``TPUT`` staged through two 64-row
  subtiles (ping / pong: one subtile's store overlaps the next one's load), releases it and
  bumps the owner's ``rs_count[t]`` (``TNOTIFY atomic_add``); on the owner it then waits
  until all N ranks' parts have landed (``TWAIT rs_count[t] >= N``; on the other ranks the
  wait reads a word the host set, ``rs_count[tiles]``) and all-gathers the reduced tile to
  every rank (``TBROADCAST`` from the owner, run by the owner only).

Compute and communication overlap tile by tile: the reduce-scatter of tile t runs while
later tiles are computed, the all-gather of tile t while later tiles are reduced.
Simplifications against the public kernel: one doorbell and one reduce-scatter count per
tile (the public kernel counts per 64-row subtile), blocks in waves instead of persistent
blocks polling ready queues (``TTEST``), output tiles in row-major order (not swizzled), and
the owner's own store in the broadcast. ``bench/bench_ranks.py`` (``gemm_ar_public``) runs it
against the public figures (compute-only, sequential, pipelined).

    import sim, examples.comm.gemm_ar as g
    r = sim.simulate(g.compute(), ranks=8, streams=[g.comm()], functional=False, trace="none")

or from the command line (``build`` is the compute kernel, ``comm`` the second stream)::

    ptosim run examples/comm/gemm_ar.py --ranks 8 --stream examples/comm/gemm_ar.py:comm \
        --timing-only
"""

import numpy as np

import sim

NZ = dict(blayout="col_major", slayout="row_major")  # L1 staging
L0A = dict(blayout="row_major", slayout="row_major")
L0B = dict(blayout="row_major", slayout="col_major")
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)
HOST_SET = 1 << 20  # the word a non-owner's all-gather wait reads: set by the host


def _tiles(m: int, n: int, base_m: int, base_n: int) -> tuple[int, int]:
    if m % base_m or n % base_n:
        raise ValueError(f"m={m}, n={n} must be multiples of base_m={base_m}, base_n={base_n}")
    return (m // base_m) * (n // base_n), n // base_n


def compute(
    ranks: int = 8,
    m: int = 5504,
    k: int = 6144,
    n: int = 1536,
    base_m: int = 128,
    base_k: int = 64,
    base_n: int = 256,
    step_k: int = 4,
) -> sim.Kernel:
    tiles, tn = _tiles(m, n, base_m, base_n)
    if k % (base_k * step_k):
        raise ValueError(f"k={k} must be a multiple of base_k * step_k = {base_k * step_k}")
    kern = sim.Kernel("gemm_ar_compute", block_dim=tiles)
    a = kern.gm("a", "f16", (m, k))
    b = kern.gm("b", "f16", (k, n))
    out = kern.gm("gemm_out", "f16", (m, n))
    ready = kern.gm("ready", "i32", (1, tiles), np.zeros((1, tiles), np.int32))
    t = kern.block_idx
    r0, c0 = (t // tn) * base_m, (t % tn) * base_n
    kc = base_k * step_k
    with kern.cube():
        a_l1 = [kern.tile("mat", "f16", base_m, kc, name=f"a_l1_{i}", **NZ) for i in range(2)]
        b_l1 = [kern.tile("mat", "f16", kc, base_n, name=f"b_l1_{i}", **NZ) for i in range(2)]
        a_l0 = [kern.tile("left", "f16", base_m, base_k, name=f"a_l0_{i}", **L0A) for i in range(2)]
        b_l0 = [
            kern.tile("right", "f16", base_k, base_n, name=f"b_l0_{i}", **L0B) for i in range(2)
        ]
        acc = kern.tile("acc", "f32", base_m, base_n, name="acc", **ACC)
        l1_free: list = [None, None]  # an L1 pair read for the last time
        l0_free: list = [None, None]  # an L0A / L0B pair consumed by the cube
        mm = None
        for ks in range(k // base_k):
            i, j = (ks // step_k) % 2, ks % 2
            if ks % step_k == 0:  # the next chunk of A and B into the other L1 pair
                wait = [l1_free[i]] if l1_free[i] is not None else []
                ea = kern.TLOAD(a_l1[i], a.view(base_m, kc, row=r0, col=ks * base_k), *wait)
                eb = kern.TLOAD(b_l1[i], b.view(kc, base_n, row=ks * base_k, col=c0), *wait)
            wait = [l0_free[j]] if l0_free[j] is not None else []
            off = (ks % step_k) * base_k
            xa = kern.TEXTRACT(a_l0[j], a_l1[i], 0, off, ea, *wait)
            xb = kern.TEXTRACT(b_l0[j], b_l1[i], off, 0, eb, *wait)
            if ks % step_k == step_k - 1:
                l1_free[i] = xb
            if ks == 0:
                mm = kern.TMATMUL(acc, a_l0[j], b_l0[j], xa, xb)
            else:
                mm = kern.TMATMUL_ACC(acc, acc, a_l0[j], b_l0[j], xa, xb)
            l0_free[j] = mm
        kern.TSTORE(out.view(base_m, base_n, row=r0, col=c0), acc, mm)
        kern.pipe_barrier("PIPE_ALL")  # release: the tile is in GM before its doorbell
        kern.TNOTIFY(ready.view(1, 1, col=t), 1, op="set")
    return kern


def build(
    ranks: int = 8,
    m: int = 5504,
    k: int = 6144,
    n: int = 1536,
    base_m: int = 128,
    base_k: int = 64,
    base_n: int = 256,
    step_k: int = 4,
) -> sim.Kernel:
    """The compute kernel (``ptosim run`` builds this one; ``comm`` is its second stream)."""
    return compute(ranks, m, k, n, base_m, base_k, base_n, step_k)


def comm(
    ranks: int = 8,
    m: int = 5504,
    n: int = 1536,
    base_m: int = 128,
    base_n: int = 256,
    sub_m: int = 64,
) -> sim.Kernel:
    tiles, tn = _tiles(m, n, base_m, base_n)
    kern = sim.Kernel("gemm_ar_comm", block_dim=tiles)
    me = kern.rank_idx
    out = kern.gm("gemm_out", "f16", (m, n))
    reduced = kern.gm("reduced", "f16", (m, n), np.zeros((m, n), np.float16))
    ready = kern.gm("ready", "i32", (1, tiles), np.zeros((1, tiles), np.int32))
    rs = kern.gm("rs_count", "i32", (1, tiles + 1), signals(tiles)["rs_count"])
    stage = [kern.tile("vec", "f16", sub_m, base_n, name=f"stage_{i}") for i in range(2)]
    t = kern.block_idx
    owner = t % ranks
    r0, c0 = (t // tn) * base_m, (t % tn) * base_n
    tile = out.view(base_m, base_n, row=r0, col=c0)
    dst = reduced.view(base_m, base_n, row=r0, col=c0)
    kern.TWAIT(ready.view(1, 1, col=t), 1, cmp="ge")  # the compute stream's doorbell
    kern.TPUT(dst, tile, *stage, peer=owner, atomic="atomic_add")  # reduce-scatter
    kern.pipe_barrier("PIPE_ALL")  # release: my part has landed before the count
    kern.TNOTIFY(rs.view(1, 1, col=t), 1, op="atomic_add", peer=owner)
    # all-gather: the owner waits for every rank's part (the others read the host's word)
    other = ((me + ranks - owner) % ranks + ranks - 1) // ranks  # 0 on the owner, else 1
    kern.TWAIT(rs.view(1, 1, col=t + other * (tiles - t)), ranks, cmp="ge")
    kern.TBROADCAST(dst, dst, *stage, root=owner)
    return kern


def signals(tiles: int = 258) -> dict:
    """The host-initialised words (§7 item 7): reduce-scatter counts zeroed, the last word set."""
    rs = np.zeros((1, tiles + 1), np.int32)
    rs[0, tiles] = HOST_SET
    return {"rs_count": rs}
