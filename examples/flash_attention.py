"""Flash-attention forward on the whole chip: QK^T and PV on the cube, online softmax on the
two vector units of each core, cube <-> vector FIFOs between them, preload pipelining.

Each core takes ``s0`` query rows of its own head: O = softmax(Q K^T / sqrt(head)) V with Q
``s0 x head``, K and V ``s1 x head`` (f16 in, f32 out). K comes in transposed (``kt``,
``head x s1`` per core side by side) so the QK^T B operand is an ND load. The keys are
walked in blocks of ``s1_tile``:

* **Cube** (per block j): load K_j^T into L1 and extract it to L0B, S_j = Q K_j^T into L0C
  (Q stays in L0A), push S_j to the vector units (``split=1``: AIV s gets rows
  [s*s0/2, (s+1)*s0/2)); pop P_j (f16, from both AIVs, stacked in L1), extract it to L0A,
  load V_j and extract it, O_j = P_j V_j into L0C, push O_j. **Preload**: the cube issues
  S_{j+1} before O_j, so QK^T of the next block overlaps the softmax of this one. L1 K / V
  buffers are double-buffered; L0B holds K_0^T in slot 0, later K_j^T in slot 1 and V_j in
  slot 0, so consecutive cube steps alternate slots.
* **Vector** (each AIV, ``s0/2`` rows): online softmax on S_j — row max, running max
  m_j, P = exp(S/sqrt(head) - m_j), row sum, l_j = l_{j-1} exp(m_{j-1} - m_j) + rowsum;
  P to f16 and pushed to the cube; then O = O exp(m_{j-1} - m_j) + O_j when O_j arrives
  (one block behind, the preload); finally O / l to GM. A vector op that reads what an op
  after the last barrier wrote waits on its token: a ``pipe_barrier(PIPE_V)``.

``examples/flash_attention.pto`` is this kernel (s0 = head = s1_tile = 128) in PTO IR, to
the cycle.

On A2/A3 the FIFOs move data through GM (FIXPIPE / MTE3 writes, an MTE2 read in the pop);
on A5 the FIXPIPE writes L0C straight into UB (``[chip] fifo_data_path``). ``arch`` picks
the L0A layout of the target the kernel is built for (A5 lays L0A out nZ).

Every argument of ``build`` is a parameter::

    ptosim run examples/flash_attention.py --timing-only --arg s1=8192 --arg cores=24
    ptosim run examples/flash_attention.py --target a5 --arg arch=a5
"""

import math

import sim

NZ = dict(blayout="col_major", slayout="row_major")
L0A = {"a2a3": dict(blayout="row_major", slayout="row_major"),     # zZ on A2/A3, nZ on A5
       "a5": dict(blayout="col_major", slayout="row_major")}       # (as PTOAS derives it)
L0B = dict(blayout="row_major", slayout="col_major")
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)
NEG = -1.0e30          # the running max before the first block (exp(NEG - m) = 0)


def build(s1=512, s1_tile=128, head=128, s0=128, cores=1, arch="a2a3") -> sim.Kernel:
    if s1 % s1_tile:
        raise ValueError(f"s1_tile={s1_tile} must divide s1={s1}")
    if s0 % 32 or head % 16 or s1_tile % 16:
        raise ValueError("s0 must be a multiple of 32, head and s1_tile of 16")
    if arch not in L0A:
        raise ValueError(f"arch={arch!r}: expected one of {', '.join(L0A)} (the target run)")
    if head * s1_tile * 2 > 32768:
        raise ValueError(f"a {head}x{s1_tile} f16 block must fit half of L0B (32 KiB)")
    blocks, T, h = s1 // s1_tile, s1_tile, s0 // 2
    k = sim.Kernel(f"fa_{s0}x{s1}x{head}", block_dim=cores)
    q = k.gm("q", "f16", (cores * s0, head))
    kt = k.gm("kt", "f16", (head, cores * s1))
    v = k.gm("v", "f16", (cores * s1, head))
    o = k.gm("o", "f32", (cores * s0, head))
    s_fifo = k.fifo("c2v", "f32", h, T, split=1)        # S_j, half the rows to each AIV
    p_fifo = k.fifo("v2c", "f16", s0, T, split=1)       # P_j, the halves stacked
    # O_j: one slot (UB holds 2 S slots, this one, O and 2 f16 P tiles: 160 of 184 KiB)
    o_fifo = k.fifo("c2v", "f32", h, head, split=1, slots=1)
    q0, k0 = k.block_idx * s0, k.block_idx * s1
    with k.cube():
        _cube(k, q[q0:q0 + s0, :], kt, v, k0, s_fifo, p_fifo, o_fifo, blocks, T, head, s0,
              L0A[arch])
    with k.vector():
        r0 = q0 + k.subblock_idx * h
        _vector(k, o[r0:r0 + h, :], s_fifo, p_fifo, o_fifo, blocks, T, head, h)
    return k


def _cube(k, q_view, kt, v, k0, s_fifo, p_fifo, o_fifo, blocks, T, head, s0, l0a):
    q_l1 = k.tile("mat", "f16", s0, head, name="q_l1", **NZ)
    q_l0 = k.tile("left", "f16", s0, head, name="q_l0", **l0a)
    p_l0 = k.tile("left", "f16", s0, T, name="p_l0", **l0a)
    kt_l1 = [k.tile("mat", "f16", head, T, name=f"kt_l1_{i}", **NZ) for i in range(2)]
    v_l1 = [k.tile("mat", "f16", T, head, name=f"v_l1_{i}", **NZ) for i in range(2)]
    # one L0B ring for both B operands: K_j^T (head x T) and V_j (T x head) alias slot i
    kt_l0 = [k.tile("right", "f16", head, T, name=f"kt_l0_{i}", addr=i * 32768, **L0B)
             for i in range(2)]
    v_l0 = [k.tile("right", "f16", T, head, name=f"v_l0_{i}", addr=i * 32768, **L0B)
            for i in range(2)]
    s_acc = k.tile("acc", "f32", s0, T, name="s_acc", **ACC)
    o_acc = k.tile("acc", "f32", s0, head, name="o_acc", **ACC)
    xq = k.TEXTRACT(q_l0, q_l1, 0, 0, k.TLOAD(q_l1, q_view))
    free = {"kt": [None, None], "v": [None, None], "l0b": [None, None],
            "s": None, "o": None, "p": None}

    def qk(j):
        i, r = j % 2, min(j, 1)       # L0B: K_0^T in slot 0, later K_j^T in 1, V_j in 0
        e = k.TLOAD(kt_l1[i], kt[:, k0 + j * T:k0 + (j + 1) * T], *_w(free["kt"][i]))
        x = k.TEXTRACT(kt_l0[r], kt_l1[i], 0, 0, e, *_w(free["l0b"][r]))
        free["kt"][i] = x
        mm = k.TMATMUL(s_acc, q_l0, kt_l0[r], xq, x, *_w(free["s"]))
        free["l0b"][r] = mm
        free["s"] = k.tpush(s_fifo, s_acc, mm)

    def pv(j):
        i, r = j % 2, 0
        p = k.tpop(p_fifo)
        xp = k.TEXTRACT(p_l0, p, 0, 0, *_w(free["p"]))
        k.tfree(p_fifo)
        e = k.TLOAD(v_l1[i], v[k0 + j * T:k0 + (j + 1) * T, :], *_w(free["v"][i]))
        x = k.TEXTRACT(v_l0[r], v_l1[i], 0, 0, e, *_w(free["l0b"][r]))
        free["v"][i] = x
        mm = k.TMATMUL(o_acc, p_l0, v_l0[r], xp, x, *_w(free["o"]))
        free["p"] = free["l0b"][r] = mm
        free["o"] = k.tpush(o_fifo, o_acc, mm)

    qk(0)
    for j in range(blocks):
        if j + 1 < blocks:
            qk(j + 1)                 # preload: the next block's scores first
        pv(j)


def _vector(k, o_view, s_fifo, p_fifo, o_fifo, blocks, T, head, h):
    scale = 1.0 / math.sqrt(head)

    def col(name):                    # an h x 1 column (row-major, one 32-byte block wide)
        return k.tile("vec", "f32", h, 8, valid=(h, 1), name=name)

    m = [col("m0"), col("m1")]        # running max, ping-pong: m[j % 2] before block j
    alpha = [col("alpha0"), col("alpha1")]
    l, mj, lj = col("l"), col("mj"), col("lj")
    acc = k.tile("vec", "f32", h, head, name="o_acc")
    p16 = [k.tile("vec", "f16", h, T, name=f"p16_{i}") for i in range(2)]
    k.TEXPANDS(m[0], NEG)
    k.TEXPANDS(l, 0.0)
    k.TEXPANDS(acc, 0.0)
    pushed = [None, None]

    def softmax(j):
        # a vector op reading what an op after the last barrier wrote waits on its token:
        # a pipe_barrier(PIPE_V), as the hardware needs inside one pipe
        s = k.tpop(s_fifo)
        old, new, a = m[j % 2], m[(j + 1) % 2], alpha[j % 2]
        e = k.TMULS(s, s, scale)
        e = k.TROWMAX(mj, s, e)
        e = k.TMAX(new, old, mj, e)
        e = k.TSUB(a, old, new, e)
        k.TEXP(a, a, e)
        e = k.TROWEXPANDSUB(s, s, new)
        e = k.TEXP(s, s, e)
        k.TROWSUM(lj, s, e)
        e = k.TMUL(l, l, a)
        k.TADD(l, l, lj, e)
        e = k.TCVT(p16[j % 2], s, *_w(pushed[j % 2]))
        k.tfree(s_fifo)
        pushed[j % 2] = k.tpush(p_fifo, p16[j % 2], e)

    def update(j):
        oj = k.tpop(o_fifo)
        e = k.TROWEXPANDMUL(acc, acc, alpha[j % 2])
        e = k.TADD(acc, acc, oj, e)
        k.tfree(o_fifo)
        return e

    softmax(0)
    for j in range(blocks):
        if j + 1 < blocks:
            softmax(j + 1)
        e = update(j)
    e = k.TROWEXPANDDIV(acc, acc, l, e)
    k.TSTORE(o_view, acc, e)


def _w(token):
    return [token] if token is not None else []
