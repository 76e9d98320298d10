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

**Key tile.** ``s1_tile`` (128, 256 or 512) is the number of keys one softmax step covers.
By default it follows a rule like the production kernels' (which pick it per case, 128
for short S1 and larger as S1 grows): ``default_s1_tile(s1)`` = 128 below 2048 keys; from
2048 keys on 512 when it divides S1, else 256 when it does, else 128. A per-row reduction
(TROWMAX, TROWSUM) costs several cycles per row and grows slowly with the row's length
(data/a2a3_formula_params.csv: TROWSUM f16 ~7 cycles per row at 128 columns, ~11 at
496), and each softmax step also pays the running-max and O-rescale ops once per row:
longer key tiles spread both over more keys. Per further 128 keys at S1 4096 -> 8192 the
tiles cost 1.658 / 1.171 / 1.026 us (128 / 256 / 512; on-board 0.952): 512 is fastest,
then 256 (bench/bench_fidelity.py; docs/benchmarks.md). The model runs a longer
tile faster below 2048 keys too; the rule keeps 128 there as the production kernels do.
ASSUMPTION: the production rule itself (its thresholds) is not published with the
on-board figures.

With a key tile above 128 the tile is worked in 128-key chunks — an S chunk (128 x 128
f32) fills half of L0C and a K / V chunk half of L0B — and in two row passes of 64 query
rows (32 per AIV): pass h holds query rows [64 h, 64 h + 64), so AIV s works on rows
64 h + 32 s .. + 32, and its S chunks of one pass (32 x T f32) fit UB with the rest. The
vector unit reduces a pass's rows once per key tile: the chunks are combined element-wise
as they arrive (TMAX / TADD of 32 x 128 tiles; each S chunk is scaled and folded in right
after its pop, so the softmax starts while the cube still pushes the pass's later chunks)
and the one 32 x 128 result is reduced (TROWMAX / TROWSUM). A key tile's K^T (head x T)
and V (T x head) come into L1 with one TLOAD each (one DMA start-up per tile, not per
chunk) and their chunks are extracted from there, once per pass. L1 holds Q, the P FIFO
(4 slots), two K^T tiles and ``V_SETS`` V tiles: two at 256 keys, one at 512 (480 of 512
KiB). **Preload** by pass: with 256-key tiles the cube issues S two passes on before O of
this pass (``AHEAD``): O of pass n needs P of pass n, and S of pass n + 2 queued behind it
on the one FIXPIPE would leave the vector units waiting (one pass ahead: 1.328 us per 128
keys, two: 1.171). With 512-key tiles it is one pass. The next tiles' loads are issued
after a pass's P pops, which MTE2 serves in order, in the order they are needed: with
two V sets V of tile j + 1 after pass 0 of tile j and K^T of tile j + 2 after pass 1;
with one V set K^T of tile j + 2 after pass 0 (its set was freed by pass 1's scores, issued
before) and V of tile j + 1 after pass 1 (when tile j's V is done). Issuing the K^T loads
of tile j + 1 ahead of pass 0's P pops instead (the previous 512-key form) held the pops
behind 4 x 525 cycles of loads on the one in-order MTE2 and left the vector units idle
~3 000 cycles per tile: 1.383 us per 128 keys against 1.026 now.

**Softmax arithmetic** (``softmax``). ``"mixed"`` (the default) is what a production
kernel does to keep its vector units off the critical path without losing f32 accuracy:
the scale, the row max, the running max and the max subtraction run in f32 (S - m <= 0,
so the large exponentials keep their precision), then S - m is converted to f16 — the
S FIFO slot is handed back right there — and exp, the row sum and P stay f16: the
exponentials *are* P (no f32 TEXP pass and no final P conversion) and f16 passes take
half the vector repeats of f32 ones. The running sum l, the rescale factors and O stay
f32 (O within ~5e-4 of max |O| of float64 in the tests). The per-row statistics (m, l,
alpha: one value per row in a 32-byte block) are updated as flat tiles
(``pto.treshape`` of the column to rows of 64 f32): the element-wise update then runs
rows/8 full repeats instead of one per row (Ascend C's softmax keeps its max / sum
buffers the same way and updates them over the whole buffer). ``"f32"`` is the all-f32
softmax of the previous version (P converted once at the end), for comparison.
ASSUMPTION: the on-board kernel's exact fusion is not published.

``examples/flash_attention.pto`` is this kernel with s0 = head = 128 (the mixed softmax) in
PTO IR, to the cycle for each key tile: its ``S1_TILE`` argument is ``s1_tile`` (0: the
default rule).

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
L0A = {
    "a2a3": dict(blayout="row_major", slayout="row_major"),  # zZ on A2/A3, nZ on A5
    "a5": dict(blayout="col_major", slayout="row_major"),
}  # (as PTOAS derives it)
L0B = dict(blayout="row_major", slayout="col_major")
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)
NEG = -1.0e30  # the running max before the first block (exp(NEG - m) = 0)


KEY_TILES = (512, 256, 128)
SOFTMAX = ("mixed", "f32")  # the softmax arithmetic (module doc, "Softmax arithmetic")
# S chunk slots per AIV with the mixed softmax, by chunks per key tile: the vector hands a
# slot back as soon as its chunk is in f16, so one pass's chunks are enough for 512 keys
MIXED_S_SLOTS = {2: 4, 4: 4}
# passes of preload on the cube where L1 holds two key tiles of K / V (256-key tiles):
# S two passes on is issued before this pass's O (module doc, "Preload")
AHEAD = 2
# L1 sets of V tiles by chunks per key tile: two 256-key tiles, one 512-key tile (L1 holds
# Q 32 KiB, the P FIFO 64 KiB, two K^T tiles and these: 480 KiB of 512 at 512 keys)
V_SETS = {2: 2, 4: 1}
P_SLOTS = 4  # P FIFO slots (64 x 128 f16 each) in L1
CHUNK = 128  # keys of one S / K / V chunk when the key tile is longer


def default_s1_tile(s1: int) -> int:
    """The key tile for ``s1`` keys: from 2048 keys on the longest of 512 and 256 that
    divides ``s1``; else 128 (module doc, "Key tile")."""
    if s1 >= 2048:
        for tile in (512, 256):
            if s1 % tile == 0:
                return tile
    return 128


def build(
    s1=512, s1_tile=None, head=128, s0=128, cores=1, arch="a2a3", softmax="mixed"
) -> sim.Kernel:
    if not _sizes_checked(s1, s1_tile, head, s0, cores):  # s1_tile None or 0
        s1_tile = default_s1_tile(s1)
    if softmax not in SOFTMAX:
        raise ValueError(f"softmax={softmax!r}: expected one of {', '.join(SOFTMAX)}")
    if s1_tile > CHUNK:
        return _build_chunked(s1, s1_tile, head, s0, cores, arch, softmax)
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
    s_fifo = k.fifo("c2v", "f32", h, T, split=1)  # S_j, half the rows to each AIV
    p_fifo = k.fifo("v2c", "f16", s0, T, split=1)  # P_j, the halves stacked
    # O_j: one slot (UB holds 2 S slots, this one, O and 2 f16 P tiles: 160 of 184 KiB)
    o_fifo = k.fifo("c2v", "f32", h, head, split=1, slots=1)
    q0, k0 = k.block_idx * s0, k.block_idx * s1
    with k.cube():
        _cube(
            k, q[q0 : q0 + s0, :], kt, v, k0, s_fifo, p_fifo, o_fifo, blocks, T, head, s0, L0A[arch]
        )
    with k.vector():
        r0 = q0 + k.subblock_idx * h
        vec = _vector if softmax == "f32" else _vector_mixed
        vec(k, o[r0 : r0 + h, :], s_fifo, p_fifo, o_fifo, blocks, T, head, h)
    return k


def _cube(k, q_view, kt, v, k0, s_fifo, p_fifo, o_fifo, blocks, T, head, s0, l0a):
    q_l1 = k.tile("mat", "f16", s0, head, name="q_l1", **NZ)
    q_l0 = k.tile("left", "f16", s0, head, name="q_l0", **l0a)
    p_l0 = k.tile("left", "f16", s0, T, name="p_l0", **l0a)
    kt_l1 = [k.tile("mat", "f16", head, T, name=f"kt_l1_{i}", **NZ) for i in range(2)]
    v_l1 = [k.tile("mat", "f16", T, head, name=f"v_l1_{i}", **NZ) for i in range(2)]
    # one L0B ring for both B operands: K_j^T (head x T) and V_j (T x head) alias slot i
    kt_l0 = [
        k.tile("right", "f16", head, T, name=f"kt_l0_{i}", addr=i * 32768, **L0B) for i in range(2)
    ]
    v_l0 = [
        k.tile("right", "f16", T, head, name=f"v_l0_{i}", addr=i * 32768, **L0B) for i in range(2)
    ]
    s_acc = k.tile("acc", "f32", s0, T, name="s_acc", **ACC)
    o_acc = k.tile("acc", "f32", s0, head, name="o_acc", **ACC)
    xq = k.TEXTRACT(q_l0, q_l1, 0, 0, k.TLOAD(q_l1, q_view))
    free = {
        "kt": [None, None],
        "v": [None, None],
        "l0b": [None, None],
        "s": None,
        "o": None,
        "p": None,
    }

    def qk(j):
        i, r = j % 2, min(j, 1)  # L0B: K_0^T in slot 0, later K_j^T in 1, V_j in 0
        e = k.TLOAD(kt_l1[i], kt[:, k0 + j * T : k0 + (j + 1) * T], *_w(free["kt"][i]))
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
        e = k.TLOAD(v_l1[i], v[k0 + j * T : k0 + (j + 1) * T, :], *_w(free["v"][i]))
        x = k.TEXTRACT(v_l0[r], v_l1[i], 0, 0, e, *_w(free["l0b"][r]))
        free["v"][i] = x
        mm = k.TMATMUL(o_acc, p_l0, v_l0[r], xp, x, *_w(free["o"]))
        free["p"] = free["l0b"][r] = mm
        free["o"] = k.tpush(o_fifo, o_acc, mm)

    qk(0)
    for j in range(blocks):
        if j + 1 < blocks:
            qk(j + 1)  # preload: the next block's scores first
        pv(j)


def _vector(k, o_view, s_fifo, p_fifo, o_fifo, blocks, T, head, h):
    scale = 1.0 / math.sqrt(head)

    def col(name):  # an h x 1 column (row-major, one 32-byte block wide)
        return k.tile("vec", "f32", h, 8, valid=(h, 1), name=name)

    m = [col("m0"), col("m1")]  # running max, ping-pong: m[j % 2] before block j
    alpha = [col("alpha0"), col("alpha1")]
    lsum, mj, lj = col("l"), col("mj"), col("lj")
    acc = k.tile("vec", "f32", h, head, name="o_acc")
    p16 = [k.tile("vec", "f16", h, T, name=f"p16_{i}") for i in range(2)]
    k.TEXPANDS(m[0], NEG)
    k.TEXPANDS(lsum, 0.0)
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
        e = k.TMUL(lsum, lsum, a)
        k.TADD(lsum, lsum, lj, e)
        e = k.TCVT(p16[j % 2], s, *_w(pushed[j % 2]))
        k.tfree(s_fifo)
        pushed[j % 2] = k.tpush(p_fifo, p16[j % 2], e)

    _run_passes(
        k,
        [(j, 0) for j in range(blocks)],
        lambda j, h: softmax(j),
        o_fifo,
        [acc],
        [alpha],
        [lsum],
        [o_view],
    )


def _vector_mixed(k, o_view, s_fifo, p_fifo, o_fifo, blocks, T, head, h):
    """``_vector`` with the exponentials in f16 (module doc, "Softmax arithmetic"): the
    scale, row max and max subtraction in f32, then S - m converted to f16 (its FIFO slot
    handed straight back), exp and the row sum on f16 tiles — the exponentials are P."""
    scale = 1.0 / math.sqrt(head)

    col = _columns(k, h, COLUMNS_128)  # h x 1 columns, by hand (_columns)
    m = [col("m0"), col("m1")]  # running max, ping-pong: m[j % 2] before block j
    alpha = [col("alpha0"), col("alpha1")]
    lsum, mj, lj, lj16 = col("l"), col("mj"), col("lj"), col("lj16", "f16")
    acc = k.tile("vec", "f32", h, head, name="o_acc")
    p16 = [k.tile("vec", "f16", h, T, name=f"p16_{i}") for i in range(2)]
    f = {c: _flat(k, c) for c in m + alpha + [lsum, mj, lj]}
    k.TEXPANDS(f[m[0]], NEG)  # every lane defined: the column ops run flat
    for c in alpha + [lsum, mj, lj]:
        k.TEXPANDS(f[c], 0.0)
    k.TEXPANDS(acc, 0.0)
    pushed = [None, None]

    def softmax(j):
        s = k.tpop(s_fifo)
        x, old, new, a = p16[j % 2], m[j % 2], m[(j + 1) % 2], alpha[j % 2]
        e = k.TMULS(s, s, scale)
        e = k.TROWMAX(mj, s, e)
        e = k.TMAX(f[new], f[old], f[mj], e)
        e = k.TSUB(f[a], f[old], f[new], e)
        k.TEXP(f[a], f[a], e)
        e = k.TROWEXPANDSUB(s, s, new, e)
        e = k.TCVT(x, s, e, *_w(pushed[j % 2]))
        k.tfree(s_fifo)
        e = k.TEXP(x, x, e)
        pushed[j % 2] = k.tpush(p_fifo, x, e)
        e = k.TROWSUM(lj16, x, e)
        e = k.TCVT(lj, lj16, e)
        e = k.TMUL(f[lsum], f[lsum], f[a], e)
        k.TADD(f[lsum], f[lsum], f[lj], e)

    _run_passes(
        k,
        [(j, 0) for j in range(blocks)],
        lambda j, h: softmax(j),
        o_fifo,
        [acc],
        [alpha],
        [lsum],
        [o_view],
    )


def _build_chunked(s1, T, head, s0, cores, arch, softmax="f32") -> sim.Kernel:
    """Key tile ``T`` > 128: 128-key chunks, two row passes of ``s0 / 2`` rows (module doc)."""
    if T not in KEY_TILES:
        raise ValueError(f"s1_tile={T}: expected one of {', '.join(map(str, KEY_TILES))}")
    if s1 % T:
        raise ValueError(f"s1_tile={T} must divide s1={s1}")
    if s0 != 128 or head != 128:
        raise ValueError(f"s1_tile={T} > 128 needs s0 = head = 128, found s0={s0} head={head}")
    if arch not in L0A:
        raise ValueError(f"arch={arch!r}: expected one of {', '.join(L0A)} (the target run)")
    blocks, c, r = s1 // T, T // CHUNK, s0 // 4  # key tiles, chunks per tile, rows per AIV pass
    k = sim.Kernel(f"fa_{s0}x{s1}x{head}_t{T}", block_dim=cores)
    q = k.gm("q", "f16", (cores * s0, head))
    kt = k.gm("kt", "f16", (head, cores * s1))
    v = k.gm("v", "f16", (cores * s1, head))
    o = k.gm("o", "f32", (cores * s0, head))
    # S chunk slots: two passes' worth where UB has room, else one pass's and one more
    # (UB per AIV, f32 softmax: slots x 16 KiB + O slot 16 + O 32 + combine 16 + P 16 +
    # columns 12 KiB; mixed: P tiles per chunk and an f16 combine tile as well)
    slots = min(2 * c, 5) if softmax == "f32" else MIXED_S_SLOTS[c]
    s_fifo = k.fifo("c2v", "f32", r, CHUNK, split=1, slots=slots)
    p_fifo = k.fifo("v2c", "f16", 2 * r, CHUNK, split=1, slots=P_SLOTS)
    o_fifo = k.fifo("c2v", "f32", r, head, split=1, slots=1)
    q0, k0 = k.block_idx * s0, k.block_idx * s1
    passes = [(j, h) for j in range(blocks) for h in range(2)]
    with k.cube():
        _cube_chunked(
            k,
            q[q0 : q0 + s0, :],
            kt,
            v,
            k0,
            s_fifo,
            p_fifo,
            o_fifo,
            passes,
            c,
            T,
            head,
            s0,
            L0A[arch],
        )
    with k.vector():
        rows = [q0 + h * 2 * r + k.subblock_idx * r for h in range(2)]
        vec = _vector_chunked if softmax == "f32" else _vector_chunked_mixed
        vec(k, [o[x : x + r, :] for x in rows], s_fifo, p_fifo, o_fifo, passes, c, head, r)
    return k


def _cube_chunked(k, q_view, kt, v, k0, s_fifo, p_fifo, o_fifo, passes, c, T, head, s0, l0a):
    rows = s0 // 2  # query rows of one pass
    q_l1 = k.tile("mat", "f16", s0, head, name="q_l1", **NZ)
    q_l0 = [k.tile("left", "f16", rows, head, name=f"q_l0_{h}", **l0a) for h in range(2)]
    p_l0 = [k.tile("left", "f16", rows, CHUNK, name=f"p_l0_{i}", **l0a) for i in range(2)]
    # L1: the K^T / V tiles (one TLOAD each), two K^T tiles, V tiles per V_SETS
    nl1 = {"kt": 2, "v": V_SETS[c]}
    l1 = {
        "kt": [k.tile("mat", "f16", head, T, name=f"kt_l1_{t}", **NZ) for t in range(2)],
        "v": [k.tile("mat", "f16", T, head, name=f"v_l1_{t}", **NZ) for t in range(nl1["v"])],
    }
    # one L0B ring of two 32 KiB slots for both B operands (K chunk^T, V chunk)
    kt_l0 = [
        k.tile("right", "f16", head, CHUNK, name=f"kt_l0_{i}", addr=i * 32768, **L0B)
        for i in range(2)
    ]
    v_l0 = [
        k.tile("right", "f16", CHUNK, head, name=f"v_l0_{i}", addr=i * 32768, **L0B)
        for i in range(2)
    ]
    s_acc = [k.tile("acc", "f32", rows, CHUNK, name=f"s_acc_{i}", **ACC) for i in range(2)]
    o_acc = [k.tile("acc", "f32", rows, head, name=f"o_acc_{h}", **ACC) for h in range(2)]
    eq = k.TLOAD(q_l1, q_view)
    xq = [k.TEXTRACT(q_l0[h], q_l1, h * rows, 0, eq) for h in range(2)]
    free = {
        "kt": [None, None],
        "v": [None] * nl1["v"],
        "l0b": [None, None],
        "s": [None, None],
        "o": [None, None],
        "p": [None, None],
    }
    loaded = {"kt": [None, None], "v": [None] * nl1["v"]}
    ahead = AHEAD if nl1["v"] == 2 else 1
    ring = {"l0b": 0, "s": 0, "p": 0}

    def take(name):
        i = ring[name]
        ring[name] = (i + 1) % 2
        return i

    blocks = passes[-1][0] + 1

    def load(name, j):
        """Tile ``j``'s K^T or V into L1 (one TLOAD), after the last extract of the tile the
        buffer held (issued early: MTE2 fetches the next tile under this one's work)."""
        if j >= blocks:
            return
        t = j % nl1[name]
        keys = k0 + j * T
        src = kt[:, keys : keys + T] if name == "kt" else v[keys : keys + T, :]
        loaded[name][t] = k.TLOAD(l1[name][t], src, *_w(free[name][t]))

    def qk(j, h):
        t = j % 2
        for b in range(c):
            i, si = take("l0b"), take("s")
            x = k.TEXTRACT(
                kt_l0[i], l1["kt"][t], 0, b * CHUNK, loaded["kt"][t], *_w(free["l0b"][i])
            )
            mm = k.TMATMUL(s_acc[si], q_l0[h], kt_l0[i], xq[h], x, *_w(free["s"][si]))
            free["l0b"][i] = mm
            free["s"][si] = k.tpush(s_fifo, s_acc[si], mm)
        if h == 1:
            free["kt"][t] = x  # MTE1 is in order: the tile's last extract

    def pv(j, h):
        mm = None
        t = j % nl1["v"]
        for b in range(c):
            pi = take("p")
            p = k.tpop(p_fifo)
            xp = k.TEXTRACT(p_l0[pi], p, 0, 0, *_w(free["p"][pi]))
            k.tfree(p_fifo)
            i = take("l0b")
            x = k.TEXTRACT(v_l0[i], l1["v"][t], b * CHUNK, 0, loaded["v"][t], *_w(free["l0b"][i]))
            if b == 0:
                mm = k.TMATMUL(o_acc[h], p_l0[pi], v_l0[i], xp, x, *_w(free["o"][h]))
            else:
                mm = k.TMATMUL_ACC(o_acc[h], o_acc[h], p_l0[pi], v_l0[i], xp, x)
            free["p"][pi] = free["l0b"][i] = mm
        if h == 1:
            free["v"][t] = x
        free["o"][h] = k.tpush(o_fifo, o_acc[h], mm)
        # the next tiles' loads go after this pass's P pops, which MTE2 serves in order
        if nl1["v"] == 1:
            load("kt", j + 2) if h == 0 else load("v", j + 1)
        else:
            load("v", j + 1) if h == 0 else load("kt", j + 2)

    load("kt", 0)
    load("v", 0)
    load("kt", 1)
    for n in range(min(ahead, len(passes))):
        qk(*passes[n])
    for n, (j, h) in enumerate(passes):
        if n + ahead < len(passes):
            qk(*passes[n + ahead])  # preload: the scores ``ahead`` passes on first
        pv(j, h)


def _vector_chunked(k, o_views, s_fifo, p_fifo, o_fifo, passes, c, head, r):
    scale = 1.0 / math.sqrt(head)

    def col(name):  # an r x 1 column (row-major, one 32-byte block wide)
        return k.tile("vec", "f32", r, 8, valid=(r, 1), name=name)

    m = [[col(f"m{h}_{i}") for i in range(2)] for h in range(2)]  # running max, per pass
    alpha = [[col(f"alpha{h}_{i}") for i in range(2)] for h in range(2)]
    lsum = [col(f"l{h}") for h in range(2)]
    mj, lj = col("mj"), col("lj")
    acc = [k.tile("vec", "f32", r, head, name=f"o_acc{h}") for h in range(2)]
    t = k.tile("vec", "f32", r, CHUNK, name="chunks")  # the chunks combined element-wise
    p16 = [k.tile("vec", "f16", r, CHUNK, name=f"p16_{i}") for i in range(2)]
    for h in range(2):
        k.TEXPANDS(m[h][0], NEG)
        k.TEXPANDS(lsum[h], 0.0)
        k.TEXPANDS(acc[h], 0.0)
    pushed = [None, None]
    npush = [0]

    def combine(op, reduce, out, s, e):
        """``reduce`` over the rows of the c chunks: element-wise ``op`` first."""
        if c == 1:
            return reduce(out, s[0], e)
        e = op(t, s[0], s[1], e)
        for b in range(2, c):
            e = op(t, t, s[b], e)
        return reduce(out, t, e)

    def softmax(j, h):
        # a vector op reading what an op after the last barrier wrote waits on its token
        s = [k.tpop(s_fifo) for _ in range(c)]
        old, new, a = m[h][j % 2], m[h][(j + 1) % 2], alpha[h][j % 2]
        e = None
        for x in s:
            e = k.TMULS(x, x, scale)
        e = combine(k.TMAX, k.TROWMAX, mj, s, e)
        e = k.TMAX(new, old, mj, e)
        e = k.TSUB(a, old, new, e)
        k.TEXP(a, a, e)
        # chunk by chunk: exp, P out (its push overlaps the next exp), the chunk added to
        # the running element-wise sum and its slot handed back, so the cube can push the
        # next pass's scores while this one is still being summed
        for b, x in enumerate(s):
            e = k.TROWEXPANDSUB(x, x, new, *([e] if b == 0 else []))
            e = k.TEXP(x, x, e)
            i = npush[0] % 2
            pushed[i] = k.tpush(p_fifo, p16[i], k.TCVT(p16[i], x, e, *_w(pushed[i])))
            npush[0] += 1
            if b >= 1:
                e = k.TADD(t, s[0] if b == 1 else t, x, e)
                k.tfree(s_fifo)  # chunk b - 1 is done
        e = k.TROWSUM(lj, t if c > 1 else s[0], e)
        k.tfree(s_fifo)
        e = k.TMUL(lsum[h], lsum[h], a, e)
        k.TADD(lsum[h], lsum[h], lj, e)

    _run_passes(k, passes, softmax, o_fifo, acc, alpha, lsum, o_views)


def _vector_chunked_mixed(k, o_views, s_fifo, p_fifo, o_fifo, passes, c, head, r):
    """``_vector_chunked`` with the exponentials in f16, as ``_vector_mixed``: each chunk
    converted to f16 after its max subtraction (its FIFO slot handed straight back), exp,
    the chunks' element-wise sum and the row sum on f16 tiles."""
    scale = 1.0 / math.sqrt(head)

    col = _columns(k, r, COLUMNS_CHUNKED)  # r x 1 columns, by hand (_columns)

    m = [[col(f"m{h}_{i}") for i in range(2)] for h in range(2)]  # running max, per pass
    alpha = [[col(f"alpha{h}_{i}") for i in range(2)] for h in range(2)]
    lsum = [col(f"l{h}") for h in range(2)]
    mj, lj, lj16 = col("mj"), col("lj"), col("lj16", "f16")
    acc = [k.tile("vec", "f32", r, head, name=f"o_acc{h}") for h in range(2)]
    t = k.tile("vec", "f32", r, CHUNK, name="chunks")  # the chunks' element-wise max
    t16 = k.tile("vec", "f16", r, CHUNK, name="chunks16")  # ... and sum
    nb = 2 * c if c <= 2 else c  # P tiles, a ring (one pass's for a 512-key tile: UB)
    p16 = [k.tile("vec", "f16", r, CHUNK, name=f"p16_{i}") for i in range(nb)]
    f = {x: _flat(k, x) for x in sum(m + alpha, []) + lsum + [mj, lj]}
    for h in range(2):  # every lane defined: the column ops run flat
        k.TEXPANDS(f[m[h][0]], NEG)
        for x in alpha[h] + [lsum[h]]:
            k.TEXPANDS(f[x], 0.0)
        k.TEXPANDS(acc[h], 0.0)
    k.TEXPANDS(f[mj], 0.0)
    k.TEXPANDS(f[lj], 0.0)
    pushed = [None] * nb
    nx = [0]

    def softmax(j, h):
        ix = [(nx[0] + b) % nb for b in range(c)]
        nx[0] += c
        x = [p16[i] for i in ix]
        # each chunk scaled and combined as it arrives (the pops block the dispatch)
        s, e = [], None
        for b in range(c):
            s.append(k.tpop(s_fifo))
            e = k.TMULS(s[b], s[b], scale)
            if b >= 1:
                e = k.TMAX(t, s[0] if b == 1 else t, s[b], e)
        e = k.TROWMAX(mj, t if c > 1 else s[0], e)
        old, new, a = m[h][j % 2], m[h][(j + 1) % 2], alpha[h][j % 2]
        e = k.TMAX(f[new], f[old], f[mj], e)
        e = k.TSUB(f[a], f[old], f[new], e)
        k.TEXP(f[a], f[a], e)
        # chunk by chunk: S - m, to f16 (the slot handed back), exp, P out (its push
        # overlaps the next chunk), the chunk added to the running element-wise sum
        for b in range(c):
            e = k.TROWEXPANDSUB(s[b], s[b], new, *([e] if b == 0 else []))
            e = k.TCVT(x[b], s[b], e, *_w(pushed[ix[b]]))
            k.tfree(s_fifo)
            e = k.TEXP(x[b], x[b], e)
            pushed[ix[b]] = k.tpush(p_fifo, x[b], e)
            if b >= 1:
                e = k.TADD(t16, x[0] if b == 1 else t16, x[b], e)
        e = k.TROWSUM(lj16, t16 if c > 1 else x[0], e)
        e = k.TCVT(lj, lj16, e)
        e = k.TMUL(f[lsum[h]], f[lsum[h]], f[a], e)
        k.TADD(f[lsum[h]], f[lsum[h]], f[lj], e)

    _run_passes(k, passes, softmax, o_fifo, acc, alpha, lsum, o_views)


def _run_passes(k, passes, softmax, o_fifo, acc, alpha, lsum, o_views):
    """The pipelined pass loop of every form: the softmax of pass n + 1 is issued before
    the O update of pass n (its S is ready first), then each row half's O / l is stored.
    ``passes`` are (key tile, row half) pairs; the 128-key forms have one half."""

    def update(j, h):
        oj = k.tpop(o_fifo)
        e = k.TROWEXPANDMUL(acc[h], acc[h], alpha[h][j % 2])
        e = k.TADD(acc[h], acc[h], oj, e)
        k.tfree(o_fifo)
        return e

    softmax(*passes[0])
    e = None
    for n, (j, h) in enumerate(passes):
        if n + 1 < len(passes):
            softmax(*passes[n + 1])
        e = update(j, h)
    for h in range(len(acc)):
        e = k.TROWEXPANDDIV(acc[h], acc[h], lsum[h], e)
        k.TSTORE(o_views[h], acc[h], e)


# Hand-placed per-row columns of the mixed softmax, (first UB byte, step): 32 bytes more
# than a column apart, so the two sources of every flat update start in different UB
# banks (first-fit placement would put the 2 KiB / 1 KiB columns all in one bank). The
# 128-key form uses examples/flash_attention.pto's addresses; the chunked form the top of
# UB below the 8 KiB scratch at 184 KiB.
COLUMNS_128 = (163872, 2080)
COLUMNS_CHUNKED = (174688, 1056)


def _columns(k, rows, where):
    """A function ``col(name, dtype="f32")`` declaring ``rows x 1`` columns (row-major,
    one 32-byte block per row) one after the other at ``where`` = (first byte, step)."""
    start, step = where
    n = [0]

    def col(name, dt="f32"):
        addr = start + n[0] * step
        n[0] += 1
        return k.tile(
            "vec", dt, rows, 32 // (4 if dt == "f32" else 2), valid=(rows, 1), name=name, addr=addr
        )

    return col


def _flat(k, column):
    """An f32 column tile (rows x 8, one 32-byte block per row, the value in lane 0) seen
    as one flat tile of 64-element rows: an element-wise op over it runs rows / 8 full
    repeats instead of one repeat per row (the other lanes carry copies along)."""
    n = column.type.rows * column.type.cols
    return k.reshape(column, n // 64, 64)


def _w(token):
    return [token] if token is not None else []


def _sizes_checked(s1, s1_tile, head, s0, cores):
    """``s1_tile`` once the sizes are checked: each counts elements (256.0 or True is no
    size); ``s1_tile`` None or 0 asks for the default rule, as the ``.pto``'s 0 does."""
    for name, value in (("s1", s1), ("head", head), ("s0", s0), ("cores", cores)):
        if type(value) is not int or value < 1:
            raise ValueError(f"{name}={value!r}: expected a positive integer")
    if s1_tile is not None and (type(s1_tile) is not int or s1_tile < 0):
        raise ValueError(f"s1_tile={s1_tile!r}: expected 0 (the default rule) or a key count")
    return s1_tile
