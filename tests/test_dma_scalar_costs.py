"""Data movement and scalar-unit work are not free.

Hand-derived from timing-model.md §5.1 / §5.3 and the [dma] / [scalar] / [scalar_loops]
tables of the bundled machine descriptions (the evidence and ASSUMPTIONs are stated
there). A transfer = startup_cycles + floor(bytes / bytes_per_cycle) of its path, the
figures read from machine.toml by tests/dma_formula.py (at this writing GM->UB 213.6 +
B/143.45, UB->GM 213.6 + B/109.38, L1->L0A 45.4 + B/255.96); each op's cost is rounded
to the nearest cycle.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dma_formula import dma_cycles, path_figures

import sim
from sim.target import load_target
from sim.timing.dma import startup_cycles, stream_cycles, transfer_cycles

DATA = Path(__file__).parent / "data" / "compiler_output"


def _ops(r):
    t = r.trace
    return t[t["kind"] == "op"].set_index("opcode")


def test_a_32_byte_tload_is_not_free():
    """A kernel as a compiler writes it: a 1x8 f32 row (32 B) in and out."""
    r = sim.simulate(sim.parse_file(DATA / "small_dma_scalar.pto"), "a2a3")
    ops = _ops(r)
    # 32 bytes stream in 0 cycles: the transfers cost their start-ups
    load, store = dma_cycles("GM_UB", 32), dma_cycles("UB_GM", 32)
    assert load == round(path_figures("GM_UB")[0]) > 0
    assert ops.loc["TLOAD", "duration_cycles"] == load
    assert ops.loc["TSTORE", "duration_cycles"] == store
    assert ops.loc["TLOAD", "bytes"] == ops.loc["TSTORE", "bytes"] == 32
    # no sync in the kernel: auto mode orders load_scalar (4) -> TLOAD -> TMULS -> TSTORE
    assert r.mode == "auto"
    assert r.total_cycles == 4 + load + ops.loc["TMULS", "duration_cycles"] + store


def test_load_scalar_costs_scalar_cycles():
    r = sim.simulate(sim.parse_file(DATA / "small_dma_scalar.pto"), "a2a3")
    t = r.trace
    ls = t[t["opcode"] == "load_scalar"]
    assert len(ls) == 1 and ls["pipe"].iloc[0] == "PIPE_S"
    assert ls["duration_cycles"].iloc[0] == 4  # [scalar] load_scalar_cycles (ASSUMPTION)
    assert r.pipes["PIPE_S"]["busy_cycles"] == 4


def test_store_scalar_and_tgetval_cost_their_figures():
    k_text = """
module attributes {pto.target_arch = "a2a3"} {
  func.func @k(%p: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %t = pto.alloc_tile : !pto.tile_buf<vec, 8x8xf32>
    %v = pto.tgetval ins(%t, %c3 : !pto.tile_buf<vec, 8x8xf32>, index) outs : f32
    pto.store_scalar %v, %p[%c0] : !pto.ptr<f32>, f32
    return
  }
}
"""
    r = sim.simulate(sim.parse_text(k_text, "k.pto"), "a2a3", functional=False)
    t = r.trace.set_index("opcode")
    assert t.loc["tgetval", "duration_cycles"] == 4  # UB load-to-use
    assert t.loc["store_scalar", "duration_cycles"] == 2  # posted store
    assert r.total_cycles == 4 + 2


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_every_data_path_has_a_positive_start_up(target):
    tgt = load_target(target)
    for name, path in tgt.dma_paths.items():
        assert path.startup_cycles > 0, name
        assert transfer_cycles(path, "flat", 0) == path.startup_cycles


@pytest.mark.parametrize("path", ["GM_UB", "GM_L1", "UB_GM", "L0C_GM", "L1_L0A", "L1_L0B"])
@pytest.mark.parametrize("nbytes", [0, 32, 1000, 16384, 65536, 131072])
def test_transfer_formula_reads_the_machine_figures(path, nbytes):
    start, bpc = path_figures(path)
    want = start + (nbytes // bpc)
    assert transfer_cycles(load_target("a2a3").dma(path), "flat", nbytes) == pytest.approx(want)


def test_transfer_formula_flat_and_fitted():
    tgt = load_target("a2a3")
    gm_ub = tgt.dma("GM_UB")
    # 16 KiB: the GM->UB fit of §5.3 taken whole, 213.6 + floor(16384 / 143.45) = 213.6 + 114
    assert transfer_cycles(gm_ub, "flat", 16384) == pytest.approx(213.6 + 114)
    # fitted (§5.3): (30643 + 16384) / 143.45 = 327.8; the K term alone is the start-up
    peak = 247.16 * 2**30 / 1.85e9
    assert transfer_cycles(gm_ub, "fitted", 16384) == pytest.approx((30643 + 16384) / peak)
    assert startup_cycles(gm_ub, "fitted") == pytest.approx(30643 / peak)
    assert startup_cycles(gm_ub, "fitted") == pytest.approx(213.6, abs=0.1)
    # a path without a fit keeps the flat form under "fitted"
    l0a = tgt.dma("L1_L0A")
    assert stream_cycles(l0a, "fitted", 32768) == 32768 // (441 * 2**30 / 1.85e9)


def test_tmov_on_chip_pays_its_start_up():
    # TMOV L1 (Mat) -> L0A (Left) 16x16 f16 = 512 B: the start-up + floor(512 / 255.96) = 2
    k = sim.Kernel("mov")
    a = k.tile("mat", "f16", 16, 16)
    b = k.tile("left", "f16", 16, 16)
    k.TMOV(b, a)
    r = sim.simulate(k, "a2a3", functional=False)
    assert _ops(r).loc["TMOV", "duration_cycles"] == dma_cycles("L1_L0A", 512)
    assert dma_cycles("L1_L0A", 512) == round(path_figures("L1_L0A")[0] + 2)


def test_a5_scalar_loops_are_timed():
    """Integer TDIVS falls back to the A2/A3 lowering on a5: a scalar division per element
    (24 cycles, [scalar_loops] of models/a5) between four 1-cycle flags."""
    r = sim.simulate_op("TDIVS", "i32", (16, 64), target="a5")
    assert r.total_cycles == 16 * 64 * 24 + 4 == 24580
