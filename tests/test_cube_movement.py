"""Data paths and cube ops: L1 / L0 movement, DN windows, TMATMUL_ACC and partial tiles.

Expected cycles are hand-derived from timing-model.md and the a2a3 machine.toml:

* a transfer = startup + floor(bytes / bytes_per_cycle), rounded to the nearest cycle,
  the figures read from the a2a3 machine.toml (tests/dma_formula.py; at this writing
  GM->UB 213.6 + B/143.45, GM->L1 213.6 + B/105.11, L1->GM 213.6 + B/18.57,
  L0C->GM 213.6 + B/40.63, L1->L0A 45.4 + B/255.96, L1->L0B 45.4 + B/127.98);
  bytes per CCE copy from §5.2 (layout-dependent, ``sim.timing.dma_geometry``; L0C->GM
  charges 2 bytes per element whatever the dtype);
* mad = slope * ceil(m/16) * ceil(k/k0) * ceil(n/16) + 6 (§6).
"""

from __future__ import annotations

import numpy as np
import pytest
from dma_formula import dma_cycles

import sim
from sim.base.errors import UserError
from sim.frontend import parse_text

A2 = "a2a3"
NZ = dict(blayout="col_major", slayout="row_major")  # L1 staging
ZZ = dict(blayout="row_major", slayout="row_major")  # L0A on A2/A3
ZN = dict(blayout="row_major", slayout="col_major")  # L0B
ACC = dict(blayout="col_major", slayout="row_major", fractal=1024)


def _ops(r):
    t = r.trace
    return t[t["kind"] == "op"].reset_index(drop=True)


def _cube_kernel(m, k, n, dt="f16", acc_dt="f32", valid_m=None):
    """GM A (m x k), B (k x n) -> L1 -> L0A/L0B -> mad -> GM C (m x n)."""
    kk = sim.Kernel("mm")
    a = kk.gm("a", dt, (m, k))
    b = kk.gm("b", dt, (k, n))
    c = kk.gm("c", acc_dt, (m, n))
    ma = kk.tile("mat", dt, m, k, **NZ)
    mb = kk.tile("mat", dt, k, n, **NZ)
    la = kk.tile("left", dt, m, k, valid=(valid_m or m, k), **ZZ)
    rb = kk.tile("right", dt, k, n, **ZN)
    acc = kk.tile("acc", acc_dt, m, n, **ACC)
    e1 = kk.TLOAD(ma, a)
    e2 = kk.TLOAD(mb, b)
    e3 = kk.TEXTRACT(la, ma, 0, 0, e1)
    e4 = kk.TMOV(rb, mb, e2)
    return kk, (a, b, c), (la, rb, acc), (e3, e4)


@pytest.mark.parametrize(
    "n, dt, acc_dt, cycles",
    [
        (128, "f16", "f32", 518),
        (64, "f32", "f32", 262),
        (128, "bf16", "f32", 518),
        (128, "i8", "i32", 262),
    ],
)
def test_tmatmul_cost_and_accumulation_dtype(n, dt, acc_dt, cycles):
    # 128^3 f16/bf16: k0 = 16 -> 8*8*8 = 512 + 6 (§6's example); 64^3 f32: k0 = 8 ->
    # 2 * (4*8*4) + 6; 128^3 i8: k0 = 32 -> 8*4*8 = 256 + 6
    kk, (a, b, c), (la, rb, acc), (e3, e4) = _cube_kernel(n, n, n, dt, acc_dt)
    e = kk.TMATMUL(acc, la, rb, e3, e4)
    kk.TSTORE(c, acc, e)
    r = sim.simulate(kk, A2)
    ops = _ops(r)
    assert ops.loc[ops["opcode"] == "TMATMUL", "duration_cycles"].item() == cycles
    A, B = r.output("a").reshape(n, n), r.output("b").reshape(n, n)
    want = A.astype(np.float64) @ B.astype(np.float64)
    got = r.output("c").reshape(n, n)
    if acc_dt == "i32":
        assert got.dtype == np.int32 and np.array_equal(got, want.astype(np.int32))
    else:
        # f32 accumulation of exact f16 products: one rounding at the end
        assert got.dtype == np.float32 and np.allclose(got, want.astype(np.float32), rtol=1e-6)


def test_tmatmul_acc_with_fewer_valid_rows_than_the_accumulator():
    """A's valid M (8) < the accumulator's 16 rows.
    The mad writes only the 8 x n corner; the other rows keep their first-step values."""
    kk, (a, b, c), (la, rb, acc), (e3, e4) = _cube_kernel(16, 32, 64)
    la8 = kk.tile("left", "f16", 16, 32, valid=(8, 32), **ZZ)
    e = kk.TMATMUL(acc, la, rb, e3, e4)
    e5 = kk.TEXTRACT(la8, kk_last_mat(kk), 0, 0, e)
    e = kk.TMATMUL_ACC(acc, acc, la8, rb, e5)
    kk.TSTORE(c, acc, e)
    r = sim.simulate(kk, A2)
    A, B = (
        r.output("a").reshape(16, 32).astype(np.float64),
        r.output("b").reshape(32, 64).astype(np.float64),
    )
    want = A @ B
    want[:8] += A[:8] @ B
    assert np.allclose(r.output("c").reshape(16, 64), want, rtol=1e-6)
    ops = _ops(r)
    # m = 8 -> ceil(8/16) = 1 row of fractals: 1 * 2 * 4 = 8 repeats + 6
    assert ops.loc[ops["opcode"] == "TMATMUL_ACC", "duration_cycles"].item() == 14


def kk_last_mat(kk):
    """The first Mat tile the helper declared (A's L1 copy)."""
    return next(st.tile for st in kk._stmts if hasattr(st, "tile") and st.tile.loc.value == "mat")


def test_tgemv_costs_m_1_and_uses_b_valid_rows_for_k():
    # §6: a GEMV is one mad with m = 1: 1x256x128 f16 -> 1 * 16 * 8 = 128 + 6 = 134
    kk = sim.Kernel("gemv")
    a = kk.gm("a", "f16", (16, 256))
    b = kk.gm("b", "f16", (256, 128))
    c = kk.gm("c", "f32", (16, 128))
    ma, mb = kk.tile("mat", "f16", 16, 256, **NZ), kk.tile("mat", "f16", 256, 128, **NZ)
    la, rb = kk.tile("left", "f16", 16, 256, **ZZ), kk.tile("right", "f16", 256, 128, **ZN)
    acc = kk.tile("acc", "f32", 16, 128, **ACC)
    e1, e2 = kk.TLOAD(ma, a), kk.TLOAD(mb, b)
    e3, e4 = kk.TEXTRACT(la, ma, 0, 0, e1), kk.TMOV(rb, mb, e2)
    e = kk.TGEMV(acc, la, rb, e3, e4)  # L0C starts zeroed: rows 1.. stay 0
    kk.TSTORE(c, acc, e)
    r = sim.simulate(kk, A2)
    ops = _ops(r)
    assert ops.loc[ops["opcode"] == "TGEMV", "duration_cycles"].item() == 134
    A, B = r.output("a").reshape(16, 256), r.output("b").reshape(256, 128)
    got = r.output("c").reshape(16, 128)
    assert np.allclose(got[0], A[0].astype(np.float64) @ B.astype(np.float64), rtol=1e-6)
    assert not got[1:].any()  # only row 0 is written


def test_tmatmul_bias_adds_the_bias_row():
    kk = sim.Kernel("bias")
    a, b = kk.gm("a", "f16", (16, 32)), kk.gm("b", "f16", (32, 32))
    bg, c = kk.gm("bias", "f32", (1, 32)), kk.gm("c", "f32", (16, 32))
    ma, mb = kk.tile("mat", "f16", 16, 32, **NZ), kk.tile("mat", "f16", 32, 32, **NZ)
    mbias = kk.tile("mat", "f32", 1, 32)
    la, rb = kk.tile("left", "f16", 16, 32, **ZZ), kk.tile("right", "f16", 32, 32, **ZN)
    bt = kk.tile("bias", "f32", 1, 32)
    acc = kk.tile("acc", "f32", 16, 32, **ACC)
    e1, e2, e0 = kk.TLOAD(ma, a), kk.TLOAD(mb, b), kk.TLOAD(mbias, bg)
    e3, e4, e5 = kk.TEXTRACT(la, ma, 0, 0, e1), kk.TMOV(rb, mb, e2), kk.TMOV(bt, mbias, e0)
    e = kk.TMATMUL_BIAS(acc, la, rb, bt, e3, e4, e5)
    kk.TSTORE(c, acc, e)
    r = sim.simulate(kk, A2)
    A, B = r.output("a").reshape(16, 32), r.output("b").reshape(32, 32)
    want = A.astype(np.float64) @ B.astype(np.float64) + r.output("bias").reshape(1, 32)
    assert np.allclose(r.output("c").reshape(16, 32), want, rtol=1e-6)


def test_l1_to_l0_charges_whole_fractals():
    """load_cbuf_to_ca/cb move one 512-B fractal per repeat (§5.2): a 17x20 f16 valid region
    of a Left tile rounds up to 2 x 2 fractals = 2048 B (the valid bytes alone would be
    680). Into L0B 128x64 f16 = 32 fractals = 16384 B."""
    kk = sim.Kernel("ex")
    m = kk.tile("mat", "f16", 128, 64, **NZ)
    la = kk.tile("left", "f16", 32, 32, valid=(17, 20), **ZZ)
    rb = kk.tile("right", "f16", 128, 64, **ZN)
    kk.TEXTRACT(la, m, 0, 0)
    kk.TMOV(rb, m)
    ops = _ops(sim.simulate(kk, A2, functional=False))
    assert ops["duration_cycles"].tolist() == [
        dma_cycles("L1_L0A", 2048),
        dma_cycles("L1_L0B", 16384),
    ]
    assert dma_cycles("L1_L0A", 2048) > dma_cycles("L1_L0A", 680)
    assert ops["bytes"].tolist() == [2048, 16384]


def test_perfsim_gemm_trace_transfers():
    """The reference's Perf-Sim GEMM trace (data/perfsim_trace_gemm_128x64x256.json):
    TMATMUL 128x64x256 518 cycles; TEXTRACT 128x64 f16 L1->L0A 65 there = its flat 64 + 1,
    here the same 16 KiB at the same rate plus the start-up the on-board GEMM's MTE1
    share calls for (machine.toml), so exactly the start-up - 1 above Perf-Sim's."""
    kk = sim.Kernel("ref")
    ma = kk.tile("mat", "f16", 128, 64, **NZ)
    la = kk.tile("left", "f16", 128, 64, **ZZ)
    rb = kk.tile("right", "f16", 64, 256, **ZN)
    acc = kk.tile("acc", "f32", 128, 256, **ACC)
    e = kk.TEXTRACT(la, ma, 0, 0)
    kk.TMATMUL(acc, la, rb, e)
    ops = _ops(sim.simulate(kk, A2, functional=False))
    assert ops["duration_cycles"].tolist() == [dma_cycles("L1_L0A", 16384), 518]
    assert dma_cycles("L1_L0A", 16384) - 65 == round(dma_cycles("L1_L0A", 0)) - 1


def _pto(body: str, args: str) -> str:
    return (
        f'module attributes {{pto.target_arch = "a2a3"}} {{\n'
        f"  func.func @k({args}) {{\n"
        f"    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        f"    %c2 = arith.constant 2 : index\n    %c4 = arith.constant 4 : index\n"
        f"    %c8 = arith.constant 8 : index\n    %c16 = arith.constant 16 : index\n"
        f"    %c32 = arith.constant 32 : index\n    %c64 = arith.constant 64 : index\n"
        f"{body}    return\n  }}\n}}\n"
    )


DN_BODY = """\
    %tx = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c1, %c64] {layout = #pto.layout<dn>} : !pto.tensor_view<?x?xf32>
    %ty = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c1, %c64] {layout = #pto.layout<dn>} : !pto.tensor_view<?x?xf32>
    %gx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c64, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<64x16xf32>
    %gy = pto.partition_view %ty, offsets = [%c0, %c0], sizes = [%c64, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<64x16xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 64x16xf32, blayout=col_major>
    pto.tload ins(%gx : !pto.partition_tensor_view<64x16xf32>) outs(%t : !pto.tile_buf<vec, 64x16xf32, blayout=col_major>)
    pto.tstore ins(%t : !pto.tile_buf<vec, 64x16xf32, blayout=col_major>) outs(%gy : !pto.partition_tensor_view<64x16xf32>)
"""


def test_dn_vector_tiles_load_and_store_on_both_targets():
    """DN (col-major) GM windows into col-major Vec tiles, as pto-isa allows."""
    text = _pto(DN_BODY, "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>")
    x = np.arange(64 * 16, dtype=np.float32)  # DN: element (r, c) at c*64 + r
    for target in ("a2a3", "a5"):
        r = sim.simulate(parse_text(text), target, inputs={"x": x})
        assert np.array_equal(r.output("y").reshape(-1), x)
    ops = _ops(sim.simulate(parse_text(text), "a2a3", inputs={"x": x}))
    # DN: nBurst = 16 cols, lenBurst = 64 * 4 B: 4096 B
    assert ops.loc[ops["opcode"] == "TLOAD", "duration_cycles"].item() == dma_cycles("GM_UB", 4096)
    assert ops.loc[ops["opcode"] == "TLOAD", "bytes"].item() == 4096


def test_tstore_acc_converts_to_the_gm_type_and_charges_two_bytes_per_element():
    """FIXPIPE writes f32 accumulators as f16: values rounded to f16. Either way
    copy_matrix_cc_to_gm is charged rows * cols * 2 bytes (§5.2, machine.toml
    charged_bytes_per_element): 64x64 -> 8192 B for f16 and f32 out alike; the trace
    reports the bytes moved (8 or 16 KiB)."""
    cycles, nbytes = {}, {}
    for out in ("f16", "f32"):
        kk, (a, b, c), (la, rb, acc), (e3, e4) = _cube_kernel(64, 64, 64, "f16", "f32")
        c16 = kk.gm("c16", out, (64, 64))
        e = kk.TMATMUL(acc, la, rb, e3, e4)
        kk.TSTORE(c16, acc, e)
        r = sim.simulate(kk, A2)
        ops = _ops(r)
        cycles[out] = ops.loc[ops["opcode"] == "TSTORE", "duration_cycles"].item()
        nbytes[out] = ops.loc[ops["opcode"] == "TSTORE", "bytes"].item()
        A, B = r.output("a").reshape(64, 64), r.output("b").reshape(64, 64)
        np_out = {"f16": np.float16, "f32": np.float32}[out]
        want = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32).astype(np_out)
        got = r.output("c16").reshape(64, 64)
        assert got.dtype == np_out and np.array_equal(got, want)
    assert cycles == {"f16": dma_cycles("L0C_GM", 8192), "f32": dma_cycles("L0C_GM", 8192)}
    assert nbytes == {"f16": 8192, "f32": 16384}  # the bytes moved


NZ_BODY = """\
    %tx = pto.make_tensor_view %x, shape = [%c1, %c2, %c2, %c16, %c16], strides = [%c1, %c512, %c256, %c16, %c1] {layout = #pto.layout<nz>} : !pto.tensor_view<?x?x?x?x?xf16>
    %gx = pto.partition_view %tx, offsets = [%c0, %c0, %c0, %c0, %c0], sizes = [%c1, %c2, %c2, %c16, %c16] : !pto.tensor_view<?x?x?x?x?xf16> -> !pto.partition_tensor_view<1x2x2x16x16xf16>
    %ty = pto.make_tensor_view %y, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf16>
    %gy = pto.partition_view %ty, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x32xf16>
    %m = pto.alloc_tile : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>
    pto.tload ins(%gx : !pto.partition_tensor_view<1x2x2x16x16xf16>) outs(%m : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>)
    pto.tstore ins(%m : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>) outs(%gy : !pto.partition_tensor_view<32x32xf16>)
"""


def test_nz_gm_window_loads_as_the_matrix_its_fractals_hold():
    """An NZ tensor (column fractals, row fractals, 16, 16) holds element (r, c) at
    [c // 16, r // 16, r % 16, c % 16]; loaded into an NZ Mat tile and stored ND, it comes
    out as the plain matrix."""
    text = _pto(
        NZ_BODY.replace("%c512", "%c512").replace("%c256", "%c256"),
        "%x: !pto.ptr<f16>, %y: !pto.ptr<f16>",
    )
    text = text.replace(
        "    %c64 = arith.constant 64 : index\n",
        "    %c64 = arith.constant 64 : index\n"
        "    %c256 = arith.constant 256 : index\n    %c512 = arith.constant 512 : index\n",
    )
    M = np.arange(32 * 32, dtype=np.float16).reshape(32, 32)
    nz = M.reshape(2, 16, 2, 16).transpose(2, 0, 1, 3).copy()  # [c1, r1, r0, c0]
    r = sim.simulate(parse_text(text), A2, inputs={"x": nz.reshape(-1)})
    assert np.array_equal(r.output("y").reshape(32, 32), M)
    ops = _ops(r)
    # NZ -> L1: copy_gm_to_cbuf, nBurst = 2 column fractals, lenBurst = 32 rows * 32 B = 2048 B
    assert ops.loc[ops["opcode"] == "TLOAD", "duration_cycles"].item() == dma_cycles("GM_L1", 2048)
    assert ops.loc[ops["opcode"] == "TLOAD", "bytes"].item() == 2048


def test_tstore_from_l1_rounds_bursts_to_32_byte_blocks():
    """copy_cbuf_to_gm lengths are 32-B blocks: an ND 4x16 f16 Mat tile with 12 valid cols
    (24 B rows) moves 4 x 32 = 128 B (96 B without the rounding)."""
    kk = sim.Kernel("l1gm")
    y = kk.gm("y", "f16", (4, 12))
    m = kk.tile("mat", "f16", 4, 16, valid=(4, 12))
    kk.TSTORE(y, m)
    ops = _ops(sim.simulate(kk, A2, functional=False))
    assert ops["bytes"].item() == 128
    assert ops["duration_cycles"].item() == dma_cycles("L1_GM", 128)


def test_ttrans_transposes_the_source_valid_region():
    kk = sim.Kernel("tr")
    x = kk.gm("x", "f16", (16, 32))
    y = kk.gm("y", "f16", (32, 16))
    s = kk.tile("vec", "f16", 16, 32)
    d = kk.tile("vec", "f16", 32, 16)
    tmp = kk.tile("vec", "f16", 32, 16)
    e = kk.TLOAD(s, x)
    e = kk.TTRANS(d, s, tmp, e)
    kk.TSTORE(y, d, e)
    r = sim.simulate(kk, A2)
    assert np.array_equal(r.output("y").reshape(32, 16), r.output("x").reshape(16, 32).T)
    ops = _ops(r)
    # one 16-row band, 32 f16 = 64 B = 2 blocks: scatter_vnchwconv 6 + 2*2 = 10; barrier 1;
    # vcopy over 32 * 16 * 2 = 1024 B = 4 repeats restarting after the barrier with its full
    # latency (TTRANS follows the mechanism, models/a2a3/fit_decisions.csv): 11 + 13 + 4
    assert ops.loc[ops["opcode"] == "TTRANS", "duration_cycles"].item() == 10 + 1 + 24 + 4


def test_row_major_only_rules_still_reject_boxed_vector_loads():
    kk = sim.Kernel("bad")
    x = kk.gm("x", "f16", (16, 16))
    t = kk.tile("vec", "f16", 16, 16, **NZ)
    kk.TLOAD(t, x)
    with pytest.raises(UserError, match=r"layout: expected nd or dn on a2a3, found nz"):
        sim.simulate(kk, A2)


def test_tmov_acc_to_mat_converts_and_charges_the_destination_bytes():
    """L0C -> L1 (FIXPIPE): f32 accumulator into an f16 Mat tile, values rounded to f16;
    64x64 x 2 B = 8192 B: 1 + floor(8192 / 74.29) = 111 (4 B per element would be 221)."""
    kk, (a, b, c), (la, rb, acc), (e3, e4) = _cube_kernel(64, 64, 64, "f16", "f32")
    m16 = kk.tile("mat", "f16", 64, 64, **NZ)
    y = kk.gm("y", "f16", (64, 64))
    e = kk.TMATMUL(acc, la, rb, e3, e4)
    e = kk.TMOV(m16, acc, e)
    kk.TSTORE(y, m16, e)
    r = sim.simulate(kk, A2)
    ops = _ops(r)
    assert (
        ops.loc[(ops["opcode"] == "TMOV") & (ops["pipe"] == "PIPE_FIX"), "duration_cycles"].item()
        == 111
    )
    A, B = r.output("a").reshape(64, 64), r.output("b").reshape(64, 64)
    want = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32).astype(np.float16)
    assert np.array_equal(r.output("y").reshape(64, 64), want)
