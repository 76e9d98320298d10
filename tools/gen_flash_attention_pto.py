"""Generate the 256- and 512-key branches of ``examples/flash_attention.pto``.

The long-key-tile forms of the flash-attention kernel (``examples/flash_attention.py``,
``_cube_chunked`` and ``_vector_chunked_mixed``) are ~1 500 lines of PTO IR with level-3
flags: written by hand they drift from the .py. This script writes them from one
description, ``FORMS`` below (chunks per key tile, L1 sets of V, passes of preload, UB and
L1 placement), walking the same pass schedule as the .py and emitting each instruction
with the flags the builder would insert for it — so the .pto follows any change of the
.py by editing this script and running it. ``tests/test_flash_attention.py`` checks that
the committed file is what this script writes and that each key tile runs the same
instructions and cycles as the .py.

The branches are the text between the ``// generated:`` and ``// end of generated`` lines
of ``@fa_cube`` and ``@fa_vec``; the rest of the file (the 128-key form, the key-tile
rule, the header) is written by hand.

Flag protocol (cube). Buffers that are reused wait for a "free" flag that is primed
before the loop, set by the buffer's last reader and drained after the loop; data that
is produced waits for a "ready" flag set by its producer:

* MTE1 -> MTE2 (free) / MTE2 -> MTE1 (ready): one id per L1 tile: K^T sets 0, 1 (ids 0,
  1), V sets (ids 2, 3). A tile is loaded with one TLOAD; the first extract of a tile
  waits for it (MTE1 runs in order: the later extracts need no wait) and the last extract
  of its second row pass frees it.
* M -> MTE1 (free) / MTE1 -> M (ready): the two L0B slots (ids 0, 1), the two P tiles of
  L0A (2, 3); Q's two row halves in L0A (4, 5) are waited once, by the first matmul.
* FIX -> M (free) / M -> FIX (ready): the S accumulators (0, 1) and O (2, 3).

Vector: MTE3 -> V (free) per P tile of the ring (ids 0-3), V -> MTE3 before each P push
and each output store; a vector op that reads what an op since the last barrier wrote is
preceded by ``pto.barrier <PIPE_V>`` exactly where the builder's token waits put one.

Loops take two key tiles per iteration, so every L1 set, ring position, running-max
ping/pong and flag id is static; the work of tiles past the end is guarded by
``scf.if %hastN`` (tile jt + N exists).

Run::

    .venv/bin/python tools/gen_flash_attention_pto.py          # rewrite the file
    .venv/bin/python tools/gen_flash_attention_pto.py --check  # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTO = ROOT / "examples" / "flash_attention.pto"

CHUNK = 128  # keys of one S / K / V chunk
HEAD = 128
KIB = 1024

# One entry per key tile: the .py's choices for it (examples/flash_attention.py:
# _build_chunked, _cube_chunked, V_SETS, P_SLOTS, AHEAD, MIXED_S_SLOTS).
FORMS = {
    256: dict(chunks=2, v_sets=2, ahead=2, p_slots=4, s_slots=4, p_ring=4),
    512: dict(chunks=4, v_sets=1, ahead=1, p_slots=4, s_slots=4, p_ring=4),
}

# UB of each vector unit (both forms): the S FIFO and the O FIFO first, then O per pass,
# the chunks' element-wise max (f32) and sum (f16), the P ring; each tile 32 bytes past a
# 16 KiB / 8 KiB boundary so the two sources of a binary op start in different banks.
UB_ACC = (81952, 98368)
UB_T, UB_T16 = 114752, 131136
UB_P16, UB_P16_STEP = 139360, 8224
# per-row columns (examples/flash_attention.py COLUMNS_CHUNKED): first byte, step
COLUMNS = (174688, 1056)
COLUMN_NAMES = [
    "m0_0",
    "m0_1",
    "m1_0",
    "m1_1",
    "alpha0_0",
    "alpha0_1",
    "alpha1_0",
    "alpha1_1",
    "l0",
    "l1",
    "mj",
    "lj",
    "lj16",
]

BEGIN = "// generated: tools/gen_flash_attention_pto.py writes from here"
END = "// end of generated text"


class Out:
    """Indented lines and fresh SSA names (``%t256_x12``)."""

    def __init__(self, prefix: str, indent: int):
        self.prefix, self.indent, self.lines, self.n = prefix, indent, [], 0

    def __call__(self, text: str = "") -> None:
        self.lines.append(" " * self.indent + text if text else "")

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"%{self.prefix}{stem}{self.n}"

    def name(self, stem: str) -> str:
        return f"%{self.prefix}{stem}"

    @contextlib.contextmanager
    def guard(self, cond: str | None):
        """``scf.if cond { ... }`` around the block (no guard when ``cond`` is None)."""
        if cond is None:
            yield
            return
        self(f"scf.if {cond} {{")
        self.indent += 2
        yield
        self.indent -= 2
        self("}")


def flag(kind: str, src: str, dst: str, eid: int, note: str = "") -> str:
    text = f"pto.{kind}[<PIPE_{src}>, <PIPE_{dst}>, <EVENT_ID{eid}>]"
    return text + (f"  // {note}" if note else "")


def _has(offset: int) -> str | None:
    """The guard for tile jt + offset inside the loop (None: always there)."""
    return None if offset == 0 else f"%hast{offset}"


# --------------------------------------------------------------------------------------
# cube


def cube(T: int, indent: int) -> list[str]:
    f = FORMS[T]
    c, vs, ahead = f["chunks"], f["v_sets"], f["ahead"]
    o = Out(f"t{T}_", indent)
    n = o.name
    l1k = f"!pto.tile_buf<mat, {HEAD}x{T}xf16, blayout=col_major, slayout=row_major>"
    l1v = f"!pto.tile_buf<mat, {T}x{HEAD}xf16, blayout=col_major, slayout=row_major>"
    pvk = f"!pto.partition_tensor_view<{HEAD}x{T}xf16>"
    pvv = f"!pto.partition_tensor_view<{T}x{HEAD}xf16>"
    o(f"// ---- key tile {T}: {c} chunks of 128 keys, two row passes of 64 query rows ----")
    p_bytes = f["p_slots"] * 16 * KIB
    o(
        f'{n("p_buf")} = pto.reserve_buffer {{name = "fa_p{T}", size = {p_bytes}, location = '
        f"#pto.address_space<mat>, auto = false, base = 0}} -> i32"
    )
    o(f'{n("s_buf")} = pto.import_reserved_buffer {{name = "fa_s{T}", peer_func = @fa_vec}} -> i32')
    o(f'{n("o_buf")} = pto.import_reserved_buffer {{name = "fa_o{T}", peer_func = @fa_vec}} -> i32')
    for pid, (d, buf) in enumerate([(1, "s_buf"), (2, "p_buf"), (1, "o_buf")]):
        kind = "c2v" if d == 1 else "v2c"
        o(
            f"pto.aic_initialize_pipe {{id = {pid}, dir_mask = {d}, slot_size = 16384}} "
            f"({kind}_consumer_buf = {n(buf)} : i32)"
        )
    # L1: the P FIFO, Q, the K^T tiles (two sets), the V tiles (v_sets)
    o(
        f"// L1: the P FIFO ({f['p_slots']} slots), Q, K^T tiles (two sets, one TLOAD each), "
        f"V tiles ({vs} set{'s' if vs > 1 else ''}); L0A: Q by pass, P ping/pong"
    )
    tile_bytes = HEAD * T * 2
    addr = p_bytes
    o(f"{n('aq')} = arith.constant {addr} : i64")
    o(f"{n('q_l1')} = pto.alloc_tile addr = {n('aq')} : !L1")
    addr += HEAD * HEAD * 2
    for t in range(2):
        o(f"{n(f'akt{t}')} = arith.constant {addr} : i64")
        o(f"{n(f'kt_l1_{t}')} = pto.alloc_tile addr = {n(f'akt{t}')} : {l1k}")
        addr += tile_bytes
    for t in range(vs):
        o(f"{n(f'av{t}')} = arith.constant {addr} : i64")
        o(f"{n(f'v_l1_{t}')} = pto.alloc_tile addr = {n(f'av{t}')} : {l1v}")
        addr += tile_bytes
    assert addr <= 512 * KIB, (T, addr)
    for i in range(8):
        o(f"{n(f'b{i}')} = arith.constant {i * 16 * KIB} : i64")
    for i, name in enumerate(["q_l0_0", "q_l0_1", "p_l0_0", "p_l0_1"]):
        o(f"{n(name)} = pto.alloc_tile addr = {n(f'b{i}')} : !L0AH")
    o("// L0B: two slots, each holding a K^T chunk (head x 128) or a V chunk (128 x head)")
    o(f"{n('l0b_0')} = pto.alloc_tile addr = {n('b0')} : !L0B")
    o(f"{n('l0b_1')} = pto.alloc_tile addr = {n('b2')} : !L0B")
    for i, name in enumerate(["s_acc_0", "s_acc_1", "o_acc_0", "o_acc_1"]):
        o(f"{n(name)} = pto.alloc_tile addr = {n(f'b{2 * i}')} : !ACCH")
    for off in range(1, T // CHUNK):
        o(f"{n(f'k{off * CHUNK}')} = arith.constant {off * CHUNK} : index")
    l1_ids = 2 + vs
    o("// flags: MTE1 -> MTE2 one per L1 tile (K^T sets 0, 1, then V), M -> MTE1 the two L0B")
    o("// slots (0, 1) and the two P L0A tiles (2, 3), FIX -> M the S (0, 1) and O (2, 3)")
    o('// accumulators: each primed "free" here and drained after the loop')
    prime = (
        [("MTE1", "MTE2", i) for i in range(l1_ids)]
        + [("M", "MTE1", i) for i in range(4)]
        + [("FIX", "M", i) for i in range(4)]
    )
    for s, d, i in prime:
        o(flag("set_flag", s, d, i))
    o(
        f"{n('vq')} = pto.partition_view %tq, offsets = [%q0, %c0], sizes = [%c128, %c128] : "
        "!TVH -> !PVH"
    )
    o(f"pto.tload ins({n('vq')} : !PVH) outs({n('q_l1')} : !L1)")
    o(flag("set_flag", "MTE2", "MTE1", 0))
    o(flag("wait_flag", "MTE2", "MTE1", 0))
    o(
        f"pto.textract ins({n('q_l1')}, %c0, %c0 : !L1, index, index) outs({n('q_l0_0')} : !L0AH)"
        "  // query rows 0..63: pass 0"
    )
    o(flag("set_flag", "MTE1", "M", 4))
    o(
        f"pto.textract ins({n('q_l1')}, %c64, %c0 : !L1, index, index) outs({n('q_l0_1')} : !L0AH)"
        "  // rows 64..127: pass 1"
    )
    o(flag("set_flag", "MTE1", "M", 5))

    ring = {"l0b": 0, "s": 0, "p": 0}
    first_mm = [True]

    def take(name):
        i = ring[name]
        ring[name] = (i + 1) % 2
        return i

    def tile_expr(off):
        """The key tile jt + off (in the loop) or off (before it) as an index value."""
        return {0: "%jt", 1: "%jt1", 2: "%jt2", 3: "%jt3"}[off] if in_loop[0] else f"%c{off}"

    in_loop = [False]

    def load(name, off, note):
        t = off % (2 if name == "kt" else vs)
        eid = t if name == "kt" else 2 + t
        o(f"// {note}")
        kb, key, vw = o.fresh("kb"), o.fresh("key"), o.fresh("vw")
        o(f"{kb} = arith.muli {tile_expr(off)}, %c{T} : index")
        o(f"{key} = arith.addi %k0, {kb} : index")
        if name == "kt":
            o(
                f"{vw} = pto.partition_view %tkt, offsets = [%c0, {key}], sizes = [%c128, %c{T}] "
                f": !TVH -> {pvk}"
            )
        else:
            o(
                f"{vw} = pto.partition_view %tv, offsets = [{key}, %c0], sizes = [%c{T}, %c128] "
                f": !TVH -> {pvv}"
            )
        o(flag("wait_flag", "MTE1", "MTE2", eid))
        dst = n(f"{name}_l1_{t}")
        o(
            f"pto.tload ins({vw} : {pvk if name == 'kt' else pvv}) outs({dst} : "
            f"{l1k if name == 'kt' else l1v})"
        )
        o(flag("set_flag", "MTE2", "MTE1", eid))

    def col(b):
        return "%c0" if b == 0 else n(f"k{b * CHUNK}")

    def qk(off, h, note):
        t = off % 2
        o(
            f"// S = Q K^T, pass {h} (tile {note}): K^T chunks of L1 set {t}, through the L0B "
            "slots to S accumulators 0 / 1"
        )
        for b in range(c):
            i, si = take("l0b"), take("s")
            if h == 0 and b == 0:
                o(flag("wait_flag", "MTE2", "MTE1", t))
            o(flag("wait_flag", "M", "MTE1", i))
            o(
                f"pto.textract ins({n(f'kt_l1_{t}')}, %c0, {col(b)} : {l1k}, index, index) "
                f"outs({n(f'l0b_{i}')} : !L0B)"
            )
            o(flag("set_flag", "MTE1", "M", i))
            if h == 1 and b == c - 1:
                o(flag("set_flag", "MTE1", "MTE2", t, "the K^T tile is free"))
            if first_mm[0]:
                o(flag("wait_flag", "MTE1", "M", 4, "Q rows of pass 0 in L0A"))
                o(flag("wait_flag", "MTE1", "M", 5, "Q rows of pass 1 in L0A"))
                first_mm[0] = False
            o(flag("wait_flag", "MTE1", "M", i))
            o(flag("wait_flag", "FIX", "M", si))
            o(
                f"pto.tmatmul ins({n(f'q_l0_{h}')}, {n(f'l0b_{i}')} : !L0AH, !L0B) "
                f"outs({n(f's_acc_{si}')} : !ACCH)"
            )
            o(flag("set_flag", "M", "FIX", si))
            o(flag("set_flag", "M", "MTE1", i))
            o(flag("wait_flag", "M", "FIX", si))
            o(f"pto.tpush_to_aiv({n(f's_acc_{si}')} : !ACCH) {{id = 0, split = 1}}")
            o(flag("set_flag", "FIX", "M", si))

    def pv(off, h, note):
        t = off % vs
        o(
            f"// O = P V, pass {h} (tile {note}): P chunks from the vector units, V chunks of L1 "
            f"set {t}"
        )
        for b in range(c):
            pi = take("p")
            p = o.fresh("p")
            o(f"{p} = pto.tpop_from_aiv {{id = 1, split = 1}} -> !L1PH")
            o(flag("wait_flag", "M", "MTE1", 2 + pi))
            o(
                f"pto.textract ins({p}, %c0, %c0 : !L1PH, index, index) "
                f"outs({n(f'p_l0_{pi}')} : !L0AH)"
            )
            o(flag("set_flag", "MTE1", "M", 2 + pi))
            o("pto.tfree_from_aiv {id = 1, split = 1}")
            i = take("l0b")
            if h == 0 and b == 0:
                o(flag("wait_flag", "MTE2", "MTE1", 2 + t))
            o(flag("wait_flag", "M", "MTE1", i))
            o(
                f"pto.textract ins({n(f'v_l1_{t}')}, {col(b)}, %c0 : {l1v}, index, index) "
                f"outs({n(f'l0b_{i}')} : !L0B)"
            )
            o(flag("set_flag", "MTE1", "M", i))
            if h == 1 and b == c - 1:
                o(flag("set_flag", "MTE1", "MTE2", 2 + t, "the V tile is free"))
            o(flag("wait_flag", "MTE1", "M", 2 + pi))
            o(flag("wait_flag", "MTE1", "M", i))
            acc = n(f"o_acc_{h}")
            if b == 0:
                o(flag("wait_flag", "FIX", "M", 2 + h, "O accumulator pushed out"))
                o(
                    f"pto.tmatmul ins({n(f'p_l0_{pi}')}, {n(f'l0b_{i}')} : !L0AH, !L0B) "
                    f"outs({acc} : !ACCH)"
                )
            else:
                o(
                    f"pto.tmatmul.acc ins({acc}, {n(f'p_l0_{pi}')}, {n(f'l0b_{i}')} : "
                    f"!ACCH, !L0AH, !L0B) outs({acc} : !ACCH)"
                )
            if b == c - 1:
                o(flag("set_flag", "M", "FIX", 2 + h))
            o(flag("set_flag", "M", "MTE1", i))
            o(flag("set_flag", "M", "MTE1", 2 + pi))
        o(flag("wait_flag", "M", "FIX", 2 + h))
        o(f"pto.tpush_to_aiv({n(f'o_acc_{h}')} : !ACCH) {{id = 2, split = 1}}")
        o(flag("set_flag", "FIX", "M", 2 + h))

    def loads_after(off, h):
        """The .py's loads after pv(j, h): the next tiles' K^T / V (MTE2 serves in order,
        so they go behind this pass's P pops)."""
        if vs == 2:
            todo = [("v", off + 1)] if h == 0 else [("kt", off + 2)]
        else:
            todo = [("kt", off + 2)] if h == 0 else [("v", off + 1)]
        for name, tile in todo:
            what = "K^T" if name == "kt" else "V"
            s = tile % (2 if name == "kt" else vs)
            with o.guard(_has(tile)):
                load(name, tile, f"{what} of tile jt + {tile} into L1 set {s}")

    # before the loop: tile 0's K^T and V, tile 1's K^T, the first passes' scores
    load("kt", 0, "K^T of tile 0 into L1 set 0")
    load("v", 0, "V of tile 0 into L1 set 0")
    with o.guard("%has_t1"):
        load("kt", 1, "K^T of tile 1 into L1 set 1: its scores come early")
    for p in range(ahead):
        qk(p // 2, p % 2, str(p // 2))
    o("// two key tiles per iteration (the L1 sets, rings and flag ids are static over two tiles)")
    o("scf.for %jt = %c0 to %tiles step %c2 {")
    o.indent += 2
    in_loop[0] = True
    for k in (1, 2, 3):
        o(f"%jt{k} = arith.addi %jt, %c{k} : index")
    for k in (1, 2, 3):
        o(f"%hast{k} = arith.cmpi slt, %jt{k}, %tiles : index")
    ahead_note = {1: "one pass ahead", 2: "two passes ahead"}[ahead]
    for slot in range(4):  # passes (jt, 0), (jt, 1), (jt1, 0), (jt1, 1)
        off, h = divmod(slot, 2)
        ao, ah = divmod(slot + ahead, 2)
        with o.guard(_has(ao)):
            qk(ao, ah, f"%jt{ao if ao else ''}, {ahead_note}")
        with o.guard(_has(off)):
            pv(off, h, f"%jt{off if off else ''}")
            loads_after(off, h)
    o.indent -= 2
    o("}")
    assert ring == {"l0b": 0, "s": 0, "p": 0}  # every iteration starts the rings at 0
    o("// drain the hand-back flags")
    for s, d, i in prime:
        o(flag("wait_flag", s, d, i))
    return o.lines


# --------------------------------------------------------------------------------------
# vector


class Vec:
    """The vector program of one form, with the builder's barrier rule: an op that waits
    on a PIPE_V token not yet waited on by PIPE_V is preceded by ``pto.barrier``."""

    def __init__(self, o: Out):
        self.o = o
        self.n = 0
        self.waited = set()

    def op(self, text: str, wait=None, note: str = "") -> int:
        if wait is not None and wait not in self.waited:
            self.waited.add(wait)
            self.o("pto.barrier <PIPE_V>")
        self.o(text + (f"  // {note}" if note else ""))
        self.n += 1
        return self.n


def vector(T: int, indent: int) -> list[str]:
    f = FORMS[T]
    c, nb = f["chunks"], f["p_ring"]
    o = Out(f"t{T}_", indent)
    n = o.name
    v = Vec(o)
    o(
        f"// ---- key tile {T}: {c} chunks of 128 keys, two row passes (32 rows of this unit "
        "each) ----"
    )
    s_bytes = f["s_slots"] * 16 * KIB
    o(
        f'{n("s_buf")} = pto.reserve_buffer {{name = "fa_s{T}", size = {s_bytes}, location = '
        f"#pto.address_space<vec>, auto = false, base = 0}} -> i32"
    )
    o(
        f'{n("o_buf")} = pto.reserve_buffer {{name = "fa_o{T}", size = 16384, location = '
        f"#pto.address_space<vec>, auto = false, base = {s_bytes}}} -> i32"
    )
    o(
        f'{n("p_buf")} = pto.import_reserved_buffer {{name = "fa_p{T}", '
        "peer_func = @fa_cube} -> i32"
    )
    for pid, (d, buf) in enumerate([(1, "s_buf"), (2, "p_buf"), (1, "o_buf")]):
        kind = "c2v" if d == 1 else "v2c"
        o(
            f"pto.aiv_initialize_pipe {{id = {pid}, dir_mask = {d}, slot_size = 16384}} "
            f"({kind}_consumer_buf = {n(buf)} : i32)"
        )
    o(
        f"// UB: the S FIFO ({f['s_slots']} slots of 32 x 128 f32) and the O FIFO (1 slot) first, "
        "then O per pass,"
    )
    o(f"// the chunks' element-wise max (f32) and sum (f16), {nb} P tiles (f16, a ring), and the")
    o("// per-row columns 32 bytes more than a column apart (the two sources of every flat update")
    o("// start in different banks), below the 8 KiB scratch at 184 KiB")
    assert s_bytes + 16 * KIB <= UB_ACC[0]
    tiles = [
        ("acc0", UB_ACC[0], "!SC"),
        ("acc1", UB_ACC[1], "!SC"),
        ("t", UB_T, "!SC"),
        ("t16", UB_T16, "!P16C"),
    ]
    tiles += [(f"p16_{i}", UB_P16 + i * UB_P16_STEP, "!P16C") for i in range(nb)]
    assert UB_P16 + nb * UB_P16_STEP <= COLUMNS[0]
    tiles += [
        (name, COLUMNS[0] + i * COLUMNS[1], "!COLC16" if name == "lj16" else "!COLC")
        for i, name in enumerate(COLUMN_NAMES)
    ]
    for name, addr, ty in tiles:
        o(f"{n('u' + name)} = arith.constant {addr} : i64")
        o(f"{n(name)} = pto.alloc_tile addr = {n('u' + name)} : {ty}")
    flat = [x for x in COLUMN_NAMES if x != "lj16"]
    for name in flat:
        o(f"{n(name + 'f')} = pto.treshape {n(name)} : !COLC -> !FLATC")
    for i in range(nb):
        o(flag("set_flag", "MTE3", "V", i, "P tiles free" if i == 0 else ""))
    for h in range(2):
        v.op(
            f"pto.texpands ins(%neg : f32) outs({n(f'm{h}_0f')} : !FLATC)",
            note="every lane defined (flat updates)",
        )
        for x in (f"alpha{h}_0f", f"alpha{h}_1f", f"l{h}f"):
            v.op(f"pto.texpands ins(%zero : f32) outs({n(x)} : !FLATC)")
        v.op(f"pto.texpands ins(%zero : f32) outs({n(f'acc{h}')} : !SC)")
    v.op(f"pto.texpands ins(%zero : f32) outs({n('mjf')} : !FLATC)")
    v.op(f"pto.texpands ins(%zero : f32) outs({n('ljf')} : !FLATC)")

    nx = [0]

    def softmax(off, h, note):
        par = off % 2  # the tile's parity: running max ping/pong
        old, new, a = f"m{h}_{par}", f"m{h}_{1 - par}", f"alpha{h}_{par}"
        ix = [(nx[0] + b) % nb for b in range(c)]
        nx[0] += c
        o(
            f"// online softmax of pass {h} (tile {note}): running max {old} -> {new}, P from "
            f"p16 [{', '.join(map(str, ix))}]"
        )
        s, e = [], None
        for b in range(c):
            x = o.fresh("s")
            s.append(x)
            o(f"{x} = pto.tpop_from_aic {{id = 0, split = 1}} -> !SC")
            e = v.op(f"pto.tmuls ins({x}, %scale : !SC, f32) outs({x} : !SC)")
            if b >= 1:
                src = s[0] if b == 1 else n("t")
                e = v.op(
                    f"pto.tmax ins({src}, {x} : !SC, !SC) outs({n('t')} : !SC)",
                    e,
                    "the chunks' element-wise max, as they arrive" if b == 1 else "",
                )
        e = v.op(
            f"pto.trowmax ins({n('t') if c > 1 else s[0]} : !SC) outs({n('mj')} : !COLC)",
            e,
            "one row reduction per key tile",
        )
        e = v.op(
            f"pto.tmax ins({n(old + 'f')}, {n('mjf')} : !FLATC, !FLATC) outs({n(new + 'f')} "
            ": !FLATC)",
            e,
            "per-row values, flat",
        )
        e = v.op(
            f"pto.tsub ins({n(old + 'f')}, {n(new + 'f')} : !FLATC, !FLATC) "
            f"outs({n(a + 'f')} : !FLATC)",
            e,
        )
        v.op(f"pto.texp ins({n(a + 'f')} : !FLATC) outs({n(a + 'f')} : !FLATC)", e)
        for b in range(c):
            p = n(f"p16_{ix[b]}")
            e = v.op(
                f"pto.trowexpandsub ins({s[b]}, {n(new)} : !SC, !COLC) outs({s[b]} : !SC)",
                e if b == 0 else None,
            )
            if e not in v.waited:
                v.waited.add(e)
                o("pto.barrier <PIPE_V>")
            o(flag("wait_flag", "MTE3", "V", ix[b], f"p16_{ix[b]} pushed out"))
            e = v.op(
                f"pto.tcvt ins({s[b]} : !SC) outs({p} : !P16C)",
                None,
                "S - m to f16: the S slot is free",
            )
            o("pto.tfree_from_aic {id = 0, split = 1}")
            e = v.op(f"pto.texp ins({p} : !P16C) outs({p} : !P16C)", e, "P = exp(S - m), in f16")
            o(flag("set_flag", "V", "MTE3", ix[b]))
            o(flag("wait_flag", "V", "MTE3", ix[b]))
            o(f"pto.tpush_to_aic({p} : !P16C) {{id = 1, split = 1}}")
            o(flag("set_flag", "MTE3", "V", ix[b]))
            if b >= 1:
                src = n(f"p16_{ix[0]}") if b == 1 else n("t16")
                e = v.op(
                    f"pto.tadd ins({src}, {p} : !P16C, !P16C) outs({n('t16')} : !P16C)",
                    e,
                    "the chunks' element-wise sum",
                )
        e = v.op(
            f"pto.trowsum ins({n('t16') if c > 1 else n(f'p16_{ix[0]}')} : !P16C) "
            f"outs({n('lj16')} : !COLC16)",
            e,
        )
        e = v.op(f"pto.tcvt ins({n('lj16')} : !COLC16) outs({n('lj')} : !COLC)", e)
        e = v.op(
            f"pto.tmul ins({n(f'l{h}f')}, {n(a + 'f')} : !FLATC, !FLATC) outs({n(f'l{h}f')} "
            ": !FLATC)",
            e,
        )
        v.op(
            f"pto.tadd ins({n(f'l{h}f')}, {n('ljf')} : !FLATC, !FLATC) outs({n(f'l{h}f')} "
            ": !FLATC)",
            e,
        )

    last = [None]

    def update(off, h, note):
        a = f"alpha{h}_{off % 2}"
        o(
            f"// O += O_j of pass {h} (tile {note}, one pass behind: the preload), the running "
            "sum rescaled first"
        )
        oj = o.fresh("oj")
        o(f"{oj} = pto.tpop_from_aic {{id = 2, split = 1}} -> !SC")
        acc = n(f"acc{h}")
        e = v.op(f"pto.trowexpandmul ins({acc}, {n(a)} : !SC, !COLC) outs({acc} : !SC)")
        last[0] = v.op(f"pto.tadd ins({acc}, {oj} : !SC, !SC) outs({acc} : !SC)", e)
        o("pto.tfree_from_aic {id = 2, split = 1}")

    softmax(0, 0, "0")
    o("// two key tiles per iteration (the running-max ping/pong is static over two tiles)")
    o("scf.for %jt = %c0 to %tiles step %c2 {")
    o.indent += 2
    for k in (1, 2):
        o(f"%jt{k} = arith.addi %jt, %c{k} : index")
    for k in (1, 2):
        o(f"%hast{k} = arith.cmpi slt, %jt{k}, %tiles : index")
    for slot in range(4):  # passes (jt, 0), (jt, 1), (jt1, 0), (jt1, 1)
        off, h = divmod(slot, 2)
        no, nh = divmod(slot + 1, 2)
        with o.guard(_has(no)):
            softmax(no, nh, f"%jt{no if no else ''}")
        with o.guard(_has(off)):
            update(off, h, f"%jt{off if off else ''}")
    o.indent -= 2
    o("}")
    assert (4 * c) % nb == 0  # each iteration starts the P ring where the last did
    o("// O / l to GM, pass by pass: rows q0 + 64 h + 32 s .. + 32 of AIV s")
    e = last[0]
    for h in range(2):
        e = v.op(
            f"pto.trowexpanddiv ins({n(f'acc{h}')}, {n(f'l{h}')} : !SC, !COLC) "
            f"outs({n(f'acc{h}')} : !SC)",
            e,
        )
        o(flag("set_flag", "V", "MTE3", nb + h))
        o(flag("wait_flag", "V", "MTE3", nb + h))
        row, row2, vo = o.fresh("row"), o.fresh("row"), o.fresh("vo")
        o(f"{row} = arith.addi %q0, %c{64 * h} : index")
        o(f"{row2} = arith.addi {row}, %half32 : index")
        pv32 = "!pto.partition_tensor_view<32x128xf32>"
        o(
            f"{vo} = pto.partition_view %to, offsets = [{row2}, %c0], sizes = [%c32, %c128] : "
            f"!pto.tensor_view<?x?xf32> -> {pv32}"
        )
        o(f"pto.tstore ins({n(f'acc{h}')} : !SC) outs({vo} : {pv32})")
    for i in range(nb):
        o(flag("wait_flag", "MTE3", "V", i, "drain" if i == 0 else ""))
    return o.lines


# --------------------------------------------------------------------------------------
# the file


def branches(func: str, indent: int) -> list[str]:
    """``scf.if %is256 { 256 form } else { 512 form }`` of ``func`` (cube or vector)."""
    gen = cube if func == "cube" else vector
    pad = " " * indent
    return (
        [
            pad + BEGIN + f" (the 256- and 512-key forms of @fa_{func}: edit the script, "
            "not this text)",
            pad + "scf.if %is256 {",
        ]
        + gen(256, indent + 2)
        + [pad + "} else {"]
        + gen(512, indent + 2)
        + [pad + "}", pad + END]
    )


def render(text: str) -> str:
    """``text`` (the .pto) with both generated regions rewritten."""
    lines = text.split("\n")
    out, i, done = [], 0, []
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(BEGIN):
            indent = len(line) - len(line.lstrip())
            j = next(k for k in range(i, len(lines)) if lines[k].strip() == END)
            func = "cube" if not done else "vector"
            out += branches(func, indent)
            done.append(func)
            i = j + 1
            continue
        out.append(line)
        i += 1
    if done != ["cube", "vector"]:
        raise SystemExit(f"{PTO}: expected two generated regions (cube, vector), found {done}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    args = ap.parse_args(argv)
    text = PTO.read_text()
    new = render(text)
    if args.check:
        if new != text:
            print(f"{PTO}: differs from tools/gen_flash_attention_pto.py's output; run it")
            return 1
        return 0
    PTO.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
