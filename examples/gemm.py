"""Production-style tiled GEMM on the cube units: C (m x n, f32) = A (m x k, f16) . B (k x n, f16).

The structure is the one the Ascend C matmul kernels ship (tiling names as theirs):

* **Split over cores.** C is cut into ``singleCoreM x singleCoreN`` blocks, one per core
  (``block_dim = m / singleCoreM * n / singleCoreN``); every core runs the whole K
  (``singleCoreK = k``). ``get_block_idx`` picks the block, row-major.
* **Base tiles.** Each core walks its block in ``baseM x baseN`` output tiles (row-major).
  One tile accumulates in L0C (``baseM x baseN`` f32; 128 x 256 fills all 128 KiB) over
  ``k / baseK`` cube steps of ``baseM x baseK x baseN``, then the FIXPIPE writes it to GM.
* **L1 staging, double-buffered.** A comes into L1 ``stepKa`` base steps at a time
  (``baseM x baseK*stepKa``), B ``stepKb`` at a time (``baseK*stepKb x baseN``), each into
  one of two L1 buffers, so MTE2 loads the next chunk while MTE1 and the cube work on this
  one (ND GM -> NZ L1, the ``nd2nz`` copy).
* **L0A / L0B, double-buffered.** MTE1 extracts step s+1's ``baseM x baseK`` A and
  ``baseK x baseN`` B fractal tiles into the other L0A / L0B buffer while the cube
  multiplies step s. The first step of a tile is a TMATMUL, the others TMATMUL_ACC.

RecordEvent tokens carry every dependency: load -> extract (MTE2 -> MTE1), extract ->
matmul (MTE1 -> M), and the write-after-read hand-backs that free an L1 buffer for its next
load (MTE1 -> MTE2), an L0 buffer for its next extract (M -> MTE1) and the accumulator for
the next tile (FIX -> M); matmul -> store is M -> FIX.

Every argument of ``build`` is a parameter; the defaults are a small case the tests check
against numpy. The 24-core 6144^3 case::

    ptosim run examples/gemm.py --timing-only --arg m=6144 --arg k=6144 --arg n=6144 \\
        --arg singleCoreM=1536 --arg singleCoreK=6144 --arg singleCoreN=1024 \\
        --arg baseM=128 --arg baseK=64 --arg baseN=256 --arg stepKa=4 --arg stepKb=4
"""

import sim

NZ = dict(blayout="col_major", slayout="row_major")  # L1 staging
L0A = dict(blayout="row_major", slayout="row_major")  # zZ (A2/A3 Left)
L0B = dict(blayout="row_major", slayout="col_major")  # ZN (Right)
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)


def _check(m, k, n, singleCoreM, singleCoreK, singleCoreN, baseM, baseK, baseN, stepKa, stepKb):
    def divides(a, an, b, bn):
        if b % a:
            raise ValueError(f"{an}={a} must divide {bn}={b}")

    if singleCoreK != k:
        raise ValueError(
            f"singleCoreK={singleCoreK}: this kernel runs the whole K on every "
            f"core (singleCoreK = k = {k})"
        )
    divides(singleCoreM, "singleCoreM", m, "m")
    divides(singleCoreN, "singleCoreN", n, "n")
    divides(baseM, "baseM", singleCoreM, "singleCoreM")
    divides(baseN, "baseN", singleCoreN, "singleCoreN")
    divides(baseK * stepKa, "baseK*stepKa", k, "k")
    divides(baseK * stepKb, "baseK*stepKb", k, "k")


def build(
    m=128,
    k=256,
    n=128,
    singleCoreM=64,
    singleCoreK=256,
    singleCoreN=64,
    baseM=32,
    baseK=32,
    baseN=64,
    stepKa=2,
    stepKb=2,
) -> sim.Kernel:
    _check(m, k, n, singleCoreM, singleCoreK, singleCoreN, baseM, baseK, baseN, stepKa, stepKb)
    blocks_n = n // singleCoreN
    kern = sim.Kernel(f"gemm_{m}x{k}x{n}", block_dim=(m // singleCoreM) * blocks_n)
    a = kern.gm("a", "f16", (m, k))
    b = kern.gm("b", "f16", (k, n))
    c = kern.gm("c", "f32", (m, n))
    bi = kern.block_idx
    row0 = (bi // blocks_n) * singleCoreM  # this core's block of C
    col0 = (bi % blocks_n) * singleCoreN
    ka, kb = baseK * stepKa, baseK * stepKb
    with kern.cube():
        a_l1 = [kern.tile("mat", "f16", baseM, ka, name=f"a_l1_{i}", **NZ) for i in range(2)]
        b_l1 = [kern.tile("mat", "f16", kb, baseN, name=f"b_l1_{i}", **NZ) for i in range(2)]
        a_l0 = [kern.tile("left", "f16", baseM, baseK, name=f"a_l0_{i}", **L0A) for i in range(2)]
        b_l0 = [kern.tile("right", "f16", baseK, baseN, name=f"b_l0_{i}", **L0B) for i in range(2)]
        acc = kern.tile("acc", "f32", baseM, baseN, name="acc", **ACC)
        a_free, b_free = [None, None], [None, None]  # L1 buffer read for the last time
        l0_free = [None, None]  # L0A/L0B pair consumed by the cube
        acc_free = None  # accumulator written out
        na = nb = step = 0  # chunks loaded, cube steps issued
        for mi in range(singleCoreM // baseM):
            for ni in range(singleCoreN // baseN):
                r, cc = row0 + mi * baseM, col0 + ni * baseN
                mm = None
                for ks in range(k // baseK):
                    if ks % stepKa == 0:  # next A chunk into the other L1 buffer
                        ia = na % 2
                        ea = kern.TLOAD(
                            a_l1[ia],
                            a[r : r + baseM, ks * baseK : ks * baseK + ka],
                            *_w(a_free[ia]),
                        )
                        na += 1
                    if ks % stepKb == 0:
                        ib = nb % 2
                        eb = kern.TLOAD(
                            b_l1[ib],
                            b[ks * baseK : ks * baseK + kb, cc : cc + baseN],
                            *_w(b_free[ib]),
                        )
                        nb += 1
                    j = step % 2
                    xa = kern.TEXTRACT(
                        a_l0[j], a_l1[ia], 0, (ks % stepKa) * baseK, ea, *_w(l0_free[j])
                    )
                    xb = kern.TEXTRACT(
                        b_l0[j], b_l1[ib], (ks % stepKb) * baseK, 0, eb, *_w(l0_free[j])
                    )
                    if ks % stepKa == stepKa - 1:
                        a_free[ia] = xa
                    if ks % stepKb == stepKb - 1:
                        b_free[ib] = xb
                    if ks == 0:
                        mm = kern.TMATMUL(acc, a_l0[j], b_l0[j], xa, xb, *_w(acc_free))
                    else:
                        mm = kern.TMATMUL_ACC(acc, acc, a_l0[j], b_l0[j], xa, xb)
                    l0_free[j] = mm
                    step += 1
                acc_free = kern.TSTORE(c[r : r + baseM, cc : cc + baseN], acc, mm)
    return kern


def _w(token):
    return [token] if token is not None else []
