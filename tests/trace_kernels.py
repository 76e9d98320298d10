"""Small kernels whose timelines can be worked out by hand (shared by the trace tests).

* ``add2``: TLOAD a, TLOAD b (PIPE_MTE2), TADD c = a + b (PIPE_V, waits on both loads),
  TSTORE c (PIPE_MTE3, waits on the add). Three flags: MTE2->V #0 and #1, V->MTE3 #0.
  Every step waits for the previous one, so the total is load + load + add + store.
* ``barriers``: TLOAD; pipe_barrier(PIPE_ALL); TADDS; pipe_barrier(PIPE_ALL); TSTORE — no
  flags, the barriers alone serialise the three pipes.
* ``scalar_wait``: TLOAD; set_flag / wait_flag MTE2 -> S (the scalar unit holds dispatch
  until the load is done); TADDS; pipe_barrier(PIPE_V); TMULS.
"""

from __future__ import annotations

from pathlib import Path

import sim

DATA = Path(__file__).resolve().parent / "data"
PERFSIM_TRACE = DATA / "perfsim_trace_gemm_128x64x256.json"
PERFSIM_SUMMARY = DATA / "perfsim_pipeline_summary_gemm_128x64x256.csv"


def add2() -> sim.Kernel:
    k = sim.Kernel("add2")
    x, y, z = (k.gm(n, "f32", (32, 64)) for n in "xyz")
    a, b, c = (k.tile("vec", "f32", 32, 64) for _ in range(3))
    ea = k.TLOAD(a, x)
    eb = k.TLOAD(b, y)
    ec = k.TADD(c, a, b, ea, eb)
    k.TSTORE(z, c, ec)
    return k


def barriers() -> sim.Kernel:
    k = sim.Kernel("barriers")
    x, z = k.gm("x", "f32", (32, 64)), k.gm("z", "f32", (32, 64))
    a, c = k.tile("vec", "f32", 32, 64), k.tile("vec", "f32", 32, 64)
    k.TLOAD(a, x)
    k.pipe_barrier("PIPE_ALL")
    k.TADDS(c, a, 1.0)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(z, c)
    return k


def scalar_wait() -> sim.Kernel:
    k = sim.Kernel("scalar_wait")
    x = k.gm("x", "f32", (32, 64))
    a, c = k.tile("vec", "f32", 32, 64), k.tile("vec", "f32", 32, 64)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_S", 0)
    k.wait_flag("PIPE_MTE2", "PIPE_S", 0)
    k.TADDS(c, a, 1.0)
    k.pipe_barrier("PIPE_V")
    k.TMULS(c, c, 2.0)
    return k


def op_rows(trace):
    """The instruction rows in program order."""
    return trace[trace["kind"] == "op"].sort_values("id").reset_index(drop=True)
