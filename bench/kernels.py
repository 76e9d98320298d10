"""Benchmark kernels of any length, built through the Python builder with RecordEvent tokens.

* ``vector``: a double-buffered vector kernel on 32x64 f32 tiles. Per chunk: TLOAD, four
  vector ops, TSTORE; tokens carry load -> compute (MTE2 -> V), compute -> store
  (V -> MTE3) and the write-after-read hand-backs that free a buffer set for its next load
  (V -> MTE2) and a result tile for its next compute (MTE3 -> V): 8 sync statements per 6
  instructions, as a real double-buffered loop has.
* ``auto``: the ``vector`` stream without its tokens, as compiler output comes (no set /
  wait flag): a default run simulates it in auto mode, the simulator inserting the
  synchronisation and placing the tiles first (``sim.engine.mode``).
* ``cube``: the same vector stream interleaved with a double-buffered cube stream per chunk
  (TLOAD A/B to L1, TEXTRACT / TMOV to L0A / L0B, TMATMUL into L0C, TSTORE from L0C), the
  two streams independent, as the two sections of a mixed kernel issue on one unit.

* ``chip``: the whole chip — ``CORES`` cores, each an AIC running the cube stream and two
  AIVs each running a vector stream (a quarter of a core's instructions on the cube, the
  rest split between the vector units), every unit on its own GM rows by block and
  sub-block index, all units in one SimPy environment with the shared GM bandwidth and
  L2 model (the engine's event path).

All read and write a small GM window over and over, so memory is the engine's, not the
data's. ``build(name, n)`` returns a kernel of exactly ``n`` PTO instructions (``chip``:
``n`` rounded down to whole units, executed over all of them).
"""

from __future__ import annotations

import numpy as np

import sim

__all__ = ["KERNELS", "build", "warmup"]

ROWS, COLS, CHUNKS = 32, 64, 8
_VEC_OPS = ("TADD", "TMULS", "TMAX", "TSUB")


class _VectorStream:
    """One double-buffered vector chunk per ``step``: TLOAD, 4 vector ops, TSTORE."""

    per_step = 2 + len(_VEC_OPS)

    def __init__(
        self,
        k: sim.Kernel,
        rows: int = ROWS,
        prefix: str = "",
        units: int = 1,
        unit=0,
        tokens: bool = True,
    ):
        """``units`` streams share the GM tensors, ``unit`` (an int or a run-time Index)
        picks this one's rows; without ``tokens`` it issues no RecordEvent sync."""
        rng = np.random.default_rng(1)
        self.k, self.rows = k, rows
        # the rows of each chunk, computed once (each Index sum is a scalar statement)
        self.starts = [unit * (CHUNKS * rows) + j * rows for j in range(CHUNKS)]
        total = units * CHUNKS * rows
        self.x = k.gm(f"{prefix}x", "f32", (total, COLS), rng.uniform(-2, 2, (total, COLS)))
        self.y = k.gm(f"{prefix}y", "f32", (total, COLS))
        self.sets = [
            [k.tile("vec", "f32", rows, COLS, name=f"{prefix}{n}{s}") for n in "abc"]
            for s in range(2)
        ]
        self.tokens = tokens
        self.inputs_free = [None, None]  # V done reading set s (WAR for its next TLOAD)
        self.result_free = [None, None]  # store done reading set s's result (WAR for V)
        self.i = 0

    def step(self, budget: int) -> int:
        k, s, i = self.k, self.i % 2, self.i
        a, b, c = self.sets[s]
        r = self.starts[i % CHUNKS]
        rows = slice(r, r + self.rows)
        free = [self.inputs_free[s]] if self.inputs_free[s] and self.tokens else []
        e = k.TLOAD(a, self.x[rows, :], *free)
        n = 1
        last_read = e
        for j, op in enumerate(_VEC_OPS[: max(0, min(len(_VEC_OPS), budget - 2))]):
            waits = (
                [e] + ([self.result_free[s]] if self.result_free[s] else [])
                if j == 0 and self.tokens
                else []
            )
            args = {"TADD": (c, a, a), "TMULS": (b, c, 0.5), "TMAX": (c, b, a), "TSUB": (c, c, b)}[
                op
            ]
            last_read = k.instr(op, *args, *waits)
            n += 1
        self.inputs_free[s] = last_read
        if n < budget:
            self.result_free[s] = k.TSTORE(self.y[rows, :], c, *[last_read] if self.tokens else [])
            n += 1
        self.i += 1
        return n


class _CubeStream:
    """One double-buffered matmul step per ``step``: TLOAD x2, TEXTRACT, TMOV, TMATMUL, TSTORE."""

    per_step = 6

    def __init__(self, k: sim.Kernel, units: int = 1, unit=0):
        """``units`` streams read the same A and B and write their own rows of C, ``unit``
        (an int or a run-time Index) picks this one's."""
        rng = np.random.default_rng(2)
        self.k = k
        self.a = k.gm("ga", "f16", (64, 32), rng.uniform(-1, 1, (64, 32)))
        self.b = k.gm("gb", "f16", (32, 64), rng.uniform(-1, 1, (32, 64)))
        c = k.gm("gc", "f32", (units * 64, 64))
        r = unit * 64
        self.c = c[r : r + 64, :]
        lay = dict(blayout="col_major", slayout="row_major")
        self.sets = [
            dict(
                mA=k.tile("mat", "f16", 64, 32, name=f"mA{s}", **lay),
                mB=k.tile("mat", "f16", 32, 64, name=f"mB{s}", **lay),
                lA=k.tile("left", "f16", 64, 32, name=f"lA{s}", slayout="row_major"),
                rB=k.tile("right", "f16", 32, 64, name=f"rB{s}", slayout="col_major"),
                acc=k.tile("acc", "f32", 64, 64, name=f"acc{s}", fractal=1024, **lay),
            )
            for s in range(2)
        ]
        self.l1_free = [None, None]  # MTE1 done reading L1 set s
        self.l0_free = [None, None]  # cube done reading L0 set s
        self.acc_free = [None, None]  # fixpipe store done reading L0C set s
        self.i = 0

    def step(self, budget: int) -> int:
        k, s = self.k, self.i % 2
        t = self.sets[s]
        issued = []
        free = [self.l1_free[s]] if self.l1_free[s] else []
        issued.append(k.TLOAD(t["mA"], self.a, *free))
        issued.append(k.TLOAD(t["mB"], self.b))
        free = [self.l0_free[s]] if self.l0_free[s] else []
        issued.append(k.TEXTRACT(t["lA"], t["mA"], 0, 0, issued[0], issued[1], *free))
        issued.append(k.TMOV(t["rB"], t["mB"]))
        self.l1_free[s] = issued[-1]
        free = [self.acc_free[s]] if self.acc_free[s] else []
        issued.append(k.TMATMUL(t["acc"], t["lA"], t["rB"], issued[-1], *free))
        self.l0_free[s] = issued[-1]
        if budget >= 6:
            self.acc_free[s] = k.TSTORE(self.c, t["acc"], issued[-1])
            issued.append(self.acc_free[s])
        self.i += 1
        return len(issued)


def _vector(n: int) -> sim.Kernel:
    k = sim.Kernel("bench_vector")
    v = _VectorStream(k)
    issued = 0
    while issued < n:
        issued += v.step(n - issued)
    return k


def _auto(n: int) -> sim.Kernel:
    k = sim.Kernel("bench_auto")
    v = _VectorStream(k, tokens=False)
    issued = 0
    while issued < n:
        issued += v.step(n - issued)
    return k


def _cube(n: int) -> sim.Kernel:
    k = sim.Kernel("bench_cube")
    v, c = _VectorStream(k), _CubeStream(k)
    issued = 0
    while issued < n:
        if n - issued >= c.per_step:
            issued += c.step(n - issued)
        if issued < n:
            issued += v.step(n - issued)
    return k


def _chip(n: int) -> sim.Kernel:
    """Mixed kernel on ``CORES`` cores: per core, the AIC runs the cube stream and each AIV
    a vector stream, every unit on its own GM rows (block / sub-block index)."""
    k = sim.Kernel("bench_chip", block_dim=CORES)
    per_core = n // CORES
    n_cube = _CubeStream.per_step * (per_core // 24)  # a quarter, whole steps
    n_vec = (per_core - n_cube) // 2
    with k.cube():
        c = _CubeStream(k, units=CORES, unit=k.block_idx)
        issued = 0
        while issued < n_cube:
            issued += c.step(n_cube - issued)
    with k.vector():
        v = _VectorStream(k, units=2 * CORES, unit=k.block_idx * 2 + k.subblock_idx)
        issued = 0
        while issued < n_vec:
            issued += v.step(n_vec - issued)
    return k


CORES = 8  # the chip kernel's block_dim (a 910B has 24 cores; 8 keep 10^3 meaningful)

KERNELS = {"vector": _vector, "auto": _auto, "cube": _cube, "chip": _chip}


def build(name: str, n: int) -> sim.Kernel:
    return KERNELS[name](n)


def warmup() -> sim.Kernel:
    """A few vector instructions on other tiles and shapes than every benchmark kernel's: a
    run of it loads what a first run loads (pandas, SimPy, the functional units) without
    filling the per-process caches (lowering, verifier verdicts, trace dtypes) for the
    instructions a measured run issues."""
    k = sim.Kernel("bench_warmup")
    v = _VectorStream(k, rows=16, prefix="warm_")
    issued = 0
    while issued < 12:
        issued += v.step(12 - issued)
    return k
