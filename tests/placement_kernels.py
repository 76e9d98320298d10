"""Kernels shared by the tests/test_placement_*.py files."""

from __future__ import annotations

import numpy as np

import sim
from sim.isa.program import (
    Alloc,
    Arith,
    Const,
    For,
    Function,
    GmPtr,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    Program,
    Scalar,
    TensorView,
)
from sim.isa.tile import Tile, TileType

CHUNKS, ROWS, COLS = 8, 32, 64

# pto-as-syntax.md §8 Example 3's layout: six 8 KiB tiles back to back from 0
EXAMPLE3_ADDRS = {
    ("a", 0): 0x0000,
    ("b", 0): 0x2000,
    ("r", 0): 0x4000,
    ("a", 1): 0x6000,
    ("b", 1): 0x8000,
    ("r", 1): 0xA000,
}


def relu_sub(placed: bool = False) -> sim.Kernel:
    """examples/relu_sub.py, optionally with the tiles placed by hand (Example 3 layout)."""
    rng = np.random.default_rng(7)
    k = sim.Kernel("relu_sub")
    a = k.gm("a", "f32", (CHUNKS * ROWS, COLS), rng.standard_normal((CHUNKS * ROWS, COLS)))
    b = k.gm("b", "f32", (CHUNKS * ROWS, COLS), rng.standard_normal((CHUNKS * ROWS, COLS)))
    out = k.gm("out", "f32", (CHUNKS * ROWS, COLS))
    sets = [
        {
            n: k.tile(
                "vec",
                "f32",
                ROWS,
                COLS,
                name=f"{n}{s}",
                addr=EXAMPLE3_ADDRS[(n, s)] if placed else None,
            )
            for n in "abr"
        }
        for s in range(2)
    ]
    inputs_free, result_free = [None, None], [None, None]
    for i in range(CHUNKS):
        s = sets[i % 2]
        rows = slice(i * ROWS, (i + 1) * ROWS)
        wait_in = [inputs_free[i % 2]] if inputs_free[i % 2] else []
        la = k.TLOAD(s["a"], a[rows, :], *wait_in)
        lb = k.TLOAD(s["b"], b[rows, :])
        wait_out = [result_free[i % 2]] if result_free[i % 2] else []
        d = k.TSUB(s["r"], s["a"], s["b"], la, lb, *wait_out)
        inputs_free[i % 2] = d
        r = k.TRELU(s["r"], s["r"], d)
        r = k.TMULS(s["r"], s["r"], 0.25, r)
        result_free[i % 2] = k.TSTORE(out[rows, :], s["r"], r)
    return k


def loop_program(n: int = 8, rows: int = ROWS, cols: int = COLS, carried: bool = False) -> Program:
    """``out = relu(a - b) / 4`` chunk by chunk in an scf.for whose body allocates its
    tiles (the level-2 form a compiler double-buffers). ``carried=True`` adds a tile
    allocated in the body whose first access reads it (a value carried across iterations)."""
    pa, pb, po = GmPtr("pa", "f32"), GmPtr("pb", "f32"), GmPtr("po", "f32")
    shape, strides = (Const(n * rows), Const(cols)), (Const(cols), Const(1))
    tv = {x: TensorView(f"t{x}", "f32", (n * rows, cols)) for x in "abo"}
    pv = {x: PartView(f"v{x}", "f32", (rows, cols)) for x in "abo"}
    i, row = Scalar("i"), Scalar("row")
    T = TileType("vec", "f32", rows, cols)
    a, b, r, acc = Tile("a", T), Tile("b", T), Tile("r", T), Tile("acc", T)
    body = [
        Arith(row, "arith.muli", (i, Const(rows))),
        *[PartitionView(pv[x], tv[x], (row, Const(0)), (Const(rows), Const(cols))) for x in "abo"],
        Alloc(a),
        Alloc(b),
        Alloc(r),
        Instr("TLOAD", (a,), (pv["a"],)),
        Instr("TLOAD", (b,), (pv["b"],)),
        Instr("TSUB", (r,), (a, b)),
        Instr("TRELU", (r,), (r,)),
        Instr("TMULS", (r,), (r, Const(0.25, "f32"))),
        Instr("TSTORE", (pv["o"],), (r,)),
    ]
    if carried:
        body[4:4] = [Alloc(acc)]
        body += [Instr("TADDS", (acc,), (acc, Const(1.0, "f32")))]
    fbody = (
        *[
            MakeTensorView(tv[x], p, shape, strides)
            for x, p in zip("abo", (pa, pb, po), strict=True)
        ],
        For(i, Const(0), Const(n), Const(1), tuple(body)),
    )
    return Program((Function("loop", (pa, pb, po), fbody),), "loop")


def manual_loop_program(k_iters: int = 4) -> Program:
    """pto-as-syntax.md §8 Example 3 as IR: ping/pong tiles placed by hand outside an
    scf.for whose body handles two chunks, with primed / drained flags."""
    from sim.isa.program import Barrier, SetFlag, WaitFlag

    pa, pb, po = GmPtr("pa", "f32"), GmPtr("pb", "f32"), GmPtr("po", "f32")
    n = 2 * k_iters
    shape, strides = (Const(n * ROWS), Const(COLS)), (Const(COLS), Const(1))
    tv = {x: TensorView(f"t{x}", "f32", (n * ROWS, COLS)) for x in "abo"}
    T = TileType("vec", "f32", ROWS, COLS)
    t = {(x, s): Tile(f"{x}{s}", T) for x in "abr" for s in (0, 1)}
    i, base, row1 = Scalar("i"), Scalar("base"), Scalar("row1")
    pv = {(x, s): PartView(f"p{x}{s}", "f32", (ROWS, COLS)) for x in "abo" for s in (0, 1)}
    body = [
        Arith(base, "arith.muli", (i, Const(2 * ROWS))),
        Arith(row1, "arith.addi", (base, Const(ROWS))),
    ]
    for s, off in ((0, base), (1, row1)):
        body += [
            PartitionView(pv[(x, s)], tv[x], (off, Const(0)), (Const(ROWS), Const(COLS)))
            for x in "abo"
        ]
    for s in (0, 1):
        body += [
            WaitFlag("PIPE_V", "PIPE_MTE2", s),
            Instr("TLOAD", (t[("a", s)],), (pv[("a", s)],)),
            Instr("TLOAD", (t[("b", s)],), (pv[("b", s)],)),
            SetFlag("PIPE_MTE2", "PIPE_V", s),
        ]
    for s in (0, 1):
        body += [
            WaitFlag("PIPE_MTE2", "PIPE_V", s),
            WaitFlag("PIPE_MTE3", "PIPE_V", 2 + s),
            Instr("TSUB", (t[("r", s)],), (t[("a", s)], t[("b", s)])),
            Barrier("PIPE_V"),
            Instr("TRELU", (t[("r", s)],), (t[("r", s)],)),
            SetFlag("PIPE_V", "PIPE_MTE2", s),
            SetFlag("PIPE_V", "PIPE_MTE3", s),
            WaitFlag("PIPE_V", "PIPE_MTE3", s),
            Instr("TSTORE", (pv[("o", s)],), (t[("r", s)],)),
            SetFlag("PIPE_MTE3", "PIPE_V", 2 + s),
        ]
    addrs = [0x0000, 0x2000, 0x4000, 0x6000, 0x8000, 0xA000]
    tiles = [t[("a", 0)], t[("b", 0)], t[("r", 0)], t[("a", 1)], t[("b", 1)], t[("r", 1)]]
    prime = [
        SetFlag("PIPE_V", "PIPE_MTE2", 0),
        SetFlag("PIPE_V", "PIPE_MTE2", 1),
        SetFlag("PIPE_MTE3", "PIPE_V", 2),
        SetFlag("PIPE_MTE3", "PIPE_V", 3),
    ]
    drain = [WaitFlag(s.src, s.dst, s.event) for s in prime]
    fbody = (
        *[
            MakeTensorView(tv[x], p, shape, strides)
            for x, p in zip("abo", (pa, pb, po), strict=True)
        ],
        *[Alloc(tile, Const(a, "i64")) for tile, a in zip(tiles, addrs, strict=True)],
        *prime,
        For(i, Const(0), Const(k_iters), Const(1), tuple(body)),
        *drain,
    )
    return Program((Function("relu_sub_db", (pa, pb, po), fbody),), "relu_sub_db")


def gm_inputs(n_rows: int, cols: int = COLS, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "pa": rng.standard_normal(n_rows * cols).astype(np.float32),
        "pb": rng.standard_normal(n_rows * cols).astype(np.float32),
    }
