"""End-to-end functional results through sim.simulate(Kernel): TLOAD -> op -> TSTORE.

GM outputs are compared with references computed independently in numpy / plain Python
(per-element ``math.fmod`` for the remainder ops). Covers partial and dynamic valid
regions, aliasing tiles placed at one address, TASSIGN rebinding and in-place ops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sim
from sim.base.errors import SimulationError

R, C = 16, 64
RNG = np.random.default_rng(20240611)
A = RNG.uniform(-8, 8, (R, C)).astype(np.float32)
# divisors bounded away from zero, both signs
B = (RNG.uniform(0.5, 8, (R, C)) * RNG.choice([-1.0, 1.0], (R, C))).astype(np.float32)
SENTINEL = np.float32(-12345.5)


def rem_ref(a, b):
    """Floor remainder (sign of the divisor), per element in float64, one rounding to f32."""
    out = np.empty_like(a)
    for i, (x, y) in enumerate(zip(a.flat, b.flat, strict=True)):
        r = math.fmod(float(x), float(y))
        if r != 0 and (r < 0) != (y < 0):
            r += float(y)
        out.flat[i] = r
    return out


def fmod_ref(a, b):
    out = np.empty_like(a)
    for i, (x, y) in enumerate(zip(a.flat, b.flat, strict=True)):
        out.flat[i] = math.fmod(float(x), float(y))
    return out


def run_binary(op, a_data, b_data, dt="f32", tmp=False):
    k = sim.Kernel(op.lower())
    ga, gb = k.gm("a", dt, (R, C), a_data), k.gm("b", dt, (R, C), b_data)
    gc = k.gm("c", dt, (R, C))
    a, b, c = (k.tile("vec", dt, R, C) for _ in range(3))
    extra = [k.tile("vec", dt, R, C + 16)] if tmp else []
    e1, e2 = k.TLOAD(a, ga), k.TLOAD(b, gb)
    e = k.instr(op, c, a, b, *extra, e1, e2)
    k.TSTORE(gc, c, e)
    return sim.simulate(k).output("c").reshape(R, C)


@pytest.mark.parametrize(
    "op, ref",
    [
        ("TADD", lambda a, b: a + b),
        ("TSUB", lambda a, b: a - b),
        ("TMUL", lambda a, b: a * b),
        ("TDIV", lambda a, b: a / b),
        ("TMAX", np.maximum),
        ("TMIN", np.minimum),
        ("TFMOD", fmod_ref),
    ],
)
def test_binary_f32(op, ref):
    np.testing.assert_array_equal(run_binary(op, A, B), ref(A, B))


def test_trem_f32_with_tmp():
    out = run_binary("TREM", A, B, tmp=True)
    np.testing.assert_array_equal(out, rem_ref(A, B))
    # spot-check the sign convention by hand: -7 rem 3 = 2, 7 rem -3 = -2
    a = np.full((R, C), -7, np.float32)
    a[1] = 7
    b = np.full((R, C), 3, np.float32)
    b[1] = -3
    out = run_binary("TREM", a, b, tmp=True)
    assert out[0, 0] == 2 and out[1, 0] == -2
    assert run_binary("TFMOD", a, b)[0, 0] == -1


def test_tadd_i32_wraps():
    a = RNG.integers(-1000, 1000, (R, C)).astype(np.int32)
    a[0, 0] = np.iinfo(np.int32).max
    b = RNG.integers(-1000, 1000, (R, C)).astype(np.int32)
    b[0, 0] = 1
    out = run_binary("TADD", a, b, dt="i32")
    expect = ((a.astype(np.int64) + b + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(out, expect)


def run_unary(build_op, a_data=A, dt="f32", out_dt=None):
    k = sim.Kernel("unary")
    ga = k.gm("a", dt, (R, C), a_data)
    gc = k.gm("c", out_dt or dt, (R, C))
    a, c = k.tile("vec", dt, R, C), k.tile("vec", out_dt or dt, R, C)
    e = build_op(k, c, a, k.TLOAD(a, ga))
    k.TSTORE(gc, c, e)
    return sim.simulate(k).output("c").reshape(R, C)


def test_trelu():
    np.testing.assert_array_equal(
        run_unary(lambda k, c, a, e: k.TRELU(c, a, e)), np.where(A > 0, A, np.float32(0))
    )


def test_tadds_tmuls():
    np.testing.assert_array_equal(
        run_unary(lambda k, c, a, e: k.TADDS(c, a, 1.5, e)), A + np.float32(1.5)
    )
    np.testing.assert_array_equal(
        run_unary(lambda k, c, a, e: k.TMULS(c, a, -3.0, e)), A * np.float32(-3.0)
    )


def test_tdivs_tile_scalar_form():
    np.testing.assert_array_equal(
        run_unary(lambda k, c, a, e: k.TDIVS(c, a, 3.0, e)), A / np.float32(3.0)
    )


def test_tdivs_scalar_tile_form():
    np.testing.assert_array_equal(
        run_unary(lambda k, c, a, e: k.TDIVS(c, 3.0, a, e)), np.float32(3.0) / A
    )


def test_tdivs_inplace_is_multiply_by_f32_reciprocal():
    """A2/A3 in-place float TDIVS is ``vmuls(src, 1/s)`` (timing-model.md §4, semantics
    quirk tdivs_inplace_reciprocal): with s = 3 the result is A * f32(1/3), which is not
    A / 3 in the last bit for some elements."""
    k = sim.Kernel("divs_inplace")
    ga, gc = k.gm("a", "f32", (R, C), A), k.gm("c", "f32", (R, C))
    a = k.tile("vec", "f32", R, C)
    e = k.TDIVS(a, a, 3.0, k.TLOAD(a, ga))
    k.TSTORE(gc, a, e)
    out = sim.simulate(k).output("c").reshape(R, C)
    expect = A * (np.float32(1) / np.float32(3))
    np.testing.assert_array_equal(out, expect)
    assert not np.array_equal(expect, A / np.float32(3))  # the test can tell them apart


def test_tcvt_f32_to_f16_rint():
    out = run_unary(lambda k, c, a, e: k.TCVT(c, a, e, rmode="RINT"), out_dt="f16")
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, A.astype(np.float16))  # numpy casts round-to-nearest-even


def test_tcvt_f32_to_i32_trunc_and_floor():
    a = np.array([[2.5, -2.5, 3.7, -3.7] * (C // 4)] * R, np.float32)
    trunc = run_unary(lambda k, c, x, e: k.TCVT(c, x, e, rmode="TRUNC"), a, out_dt="i32")
    np.testing.assert_array_equal(trunc[0, :4], [2, -2, 3, -3])
    floor = run_unary(lambda k, c, x, e: k.TCVT(c, x, e, rmode="FLOOR"), a, out_dt="i32")
    np.testing.assert_array_equal(floor[0, :4], [2, -3, 3, -4])
    rint = run_unary(lambda k, c, x, e: k.TCVT(c, x, e, rmode="RINT"), a, out_dt="i32")
    np.testing.assert_array_equal(rint[0, :4], [2, -2, 4, -4])


# --- valid regions ----------------------------------------------------------------------------


def test_partial_valid_region_writes_only_the_window():
    """Tiles 16x64 with valid 8x48; TLOAD/TSTORE through the matching 8x48 GM window. The
    destination GM is preloaded with a sentinel: only the window changes. A full-valid tile
    aliasing the destination tile shows that the op wrote only the tile's valid region."""
    k = sim.Kernel("partial")
    ga, gb = k.gm("a", "f32", (R, C), A), k.gm("b", "f32", (R, C), B)
    gc = k.gm("c", "f32", (R, C), np.full((R, C), SENTINEL))
    gfull = k.gm("full", "f32", (R, C))
    gsent = k.gm("sent", "f32", (R, C), np.full((R, C), SENTINEL))
    a = k.tile("vec", "f32", R, C, valid=(8, 48))
    b = k.tile("vec", "f32", R, C, valid=(8, 48))
    c = k.tile("vec", "f32", R, C, valid=(8, 48), addr=0x10000)
    c_all = k.tile("vec", "f32", R, C, addr=0x10000)  # same bytes, whole tile valid
    e0 = k.TLOAD(c_all, gsent)  # fill all of c with the sentinel
    e1, e2 = k.TLOAD(a, ga[0:8, 0:48]), k.TLOAD(b, gb[0:8, 0:48])
    e = k.TADD(c, a, b, e0, e1, e2)
    k.TSTORE(gc[0:8, 0:48], c, e)
    k.TSTORE(gfull, c_all, e)
    r = sim.simulate(k)

    expect_window = A[:8, :48] + B[:8, :48]
    out = r.output("c").reshape(R, C)
    np.testing.assert_array_equal(out[:8, :48], expect_window)
    mask = np.ones((R, C), bool)
    mask[:8, :48] = False
    assert (out[mask] == SENTINEL).all()

    whole = r.output("full").reshape(R, C)
    np.testing.assert_array_equal(whole[:8, :48], expect_window)
    assert (whole[mask] == SENTINEL).all()  # outside the valid region untouched


def test_gm_window_must_match_the_valid_region():
    k = sim.Kernel("mismatch")
    ga = k.gm("a", "f32", (R, C), A)
    a = k.tile("vec", "f32", R, C, valid=(8, 48))
    k.TLOAD(a, ga[0:8, 0:32])
    with pytest.raises(SimulationError, match="8x32.*8x48"):
        sim.simulate(k)


def test_dynamic_valid_region_set_at_run_time():
    """valid=(None, None) + set_valid; the region changes between two uses of the same
    tiles, so anything cached per instruction must follow it."""
    k = sim.Kernel("dynamic")
    ga = k.gm("a", "f32", (R, C), A)
    gc = k.gm("c", "f32", (R, C), np.full((R, C), SENTINEL))
    a = k.tile("vec", "f32", R, C, valid=(None, None))
    c = k.tile("vec", "f32", R, C, valid=(None, None))
    stored = None
    for r0, r1, c0, c1 in ((2, 6, 8, 40), (8, 16, 0, 64)):
        if stored is not None:
            k.wait_flag("PIPE_MTE3", "PIPE_S", 0)  # the previous store is done with c
        k.set_valid(a, r1 - r0, c1 - c0)
        k.set_valid(c, r1 - r0, c1 - c0)
        e = k.TLOAD(a, ga[r0:r1, c0:c1])
        e = k.TRELU(c, a, e)
        stored = k.TSTORE(gc[r0:r1, c0:c1], c, e)
        k.set_flag("PIPE_MTE3", "PIPE_S", 0)
    k.wait_flag("PIPE_MTE3", "PIPE_S", 0)
    r = sim.simulate(k)
    expect = np.full((R, C), SENTINEL)
    expect[2:6, 8:40] = np.maximum(A[2:6, 8:40], 0)
    expect[8:16, :] = np.maximum(A[8:16, :], 0)
    np.testing.assert_array_equal(r.output("c").reshape(R, C), expect)

    t = r.trace
    loads = t[(t["kind"] == "op") & (t["opcode"] == "TLOAD")].sort_values("id")
    assert list(loads["bytes"]) == [4 * 32 * 4, 8 * 64 * 4]
    relus = t[(t["kind"] == "op") & (t["opcode"] == "TRELU")].sort_values("id")
    # 4x32 of a 16x64 tile: rows not contiguous -> row-repeat path, one masked vrelu of 4
    # repeats + 2 cfg: 2 + 23 + 4 = 29.  8x64 (full rows): flat, 8 repeats: 23 + 8 = 31.
    # Both open a stream (the vector pipe idled while the TLOAD ran).
    assert list(relus["duration_cycles"]) == [2 + 23 + 4, 23 + 8]


# --- aliasing, TASSIGN, in place --------------------------------------------------------------


def test_tiles_at_the_same_address_share_data():
    k = sim.Kernel("alias")
    ga = k.gm("a", "f32", (R, C), A)
    gc = k.gm("c", "f32", (R, C))
    gi = k.gm("bits", "i32", (R, C))
    t1 = k.tile("vec", "f32", R, C, addr=0x4000)
    t2 = k.tile("vec", "f32", R, C, addr=0x4000)
    t3 = k.tile("vec", "i32", R, C, addr=0x4000)  # same bytes, other type
    e = k.TLOAD(t1, ga)
    k.TSTORE(gc, t2, e)
    k.TSTORE(gi, t3, e)
    r = sim.simulate(k)
    np.testing.assert_array_equal(r.output("c").reshape(R, C), A)
    np.testing.assert_array_equal(r.output("bits").reshape(R, C), A.view(np.int32))


def test_write_through_one_alias_is_seen_by_the_other():
    k = sim.Kernel("alias2")
    ga = k.gm("a", "f32", (R, C), A)
    gc = k.gm("c", "f32", (R, C))
    t1 = k.tile("vec", "f32", R, C, addr=0x8000)
    t2 = k.tile("vec", "f32", R, C, addr=0x8000)
    e = k.TLOAD(t1, ga)
    e = k.TADDS(t1, t1, 1.0, e)  # modify through t1
    e = k.TMULS(t2, t2, 2.0, e)  # then through t2
    k.TSTORE(gc, t1, e)
    np.testing.assert_array_equal(
        sim.simulate(k).output("c").reshape(R, C), (A + np.float32(1)) * np.float32(2)
    )


def test_tassign_rebinds_a_tile():
    k = sim.Kernel("tassign")
    ga, gb = k.gm("a", "f32", (R, C), A), k.gm("b", "f32", (R, C), B)
    gc1, gc2 = k.gm("c1", "f32", (R, C)), k.gm("c2", "f32", (R, C))
    t = k.tile("vec", "f32", R, C, addr=0x0)
    u = k.tile("vec", "f32", R, C, addr=0x4000)
    k.TLOAD(t, ga)
    k.TLOAD(u, gb)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(gc1, t)  # t at 0x0: A
    k.pipe_barrier("PIPE_ALL")
    k.TASSIGN(t, 0x4000)  # t now views u's bytes
    k.TSTORE(gc2, t)
    r = sim.simulate(k)
    np.testing.assert_array_equal(r.output("c1").reshape(R, C), A)
    np.testing.assert_array_equal(r.output("c2").reshape(R, C), B)
    row = r.trace[r.trace["opcode"] == "TASSIGN"].iloc[0]
    # TASSIGN runs on the scalar pipe and costs 1 cycle (machine.toml tassign_cycles)
    assert (row["pipe"], row["kind"], row["duration_cycles"]) == ("PIPE_S", "scalar", 1)


def test_tassign_to_misaligned_address_is_rejected():
    k = sim.Kernel("tassign_bad")
    t = k.tile("vec", "f32", R, C, addr=0x0)
    k.TASSIGN(t, 0x4004)  # UB alignment is 32 B
    for sync in ("manual", "auto", None):  # auto mode drops the TASSIGN, not the rule
        with pytest.raises(SimulationError, match="multiple of 32"):
            sim.simulate(k, sync=sync)


@pytest.mark.parametrize(
    "op, ref",
    [
        ("TADD", lambda a, b: a + b),
        ("TMAX", np.maximum),
        ("TMUL", lambda a, b: a * b),
    ],
)
def test_inplace_binary(op, ref):
    k = sim.Kernel("inplace")
    ga, gb, gc = k.gm("a", "f32", (R, C), A), k.gm("b", "f32", (R, C), B), k.gm("c", "f32", (R, C))
    a, b = k.tile("vec", "f32", R, C), k.tile("vec", "f32", R, C)
    e1, e2 = k.TLOAD(a, ga), k.TLOAD(b, gb)
    e = k.instr(op, a, a, b, e1, e2)  # dst == src0
    k.TSTORE(gc, a, e)
    np.testing.assert_array_equal(sim.simulate(k).output("c").reshape(R, C), ref(A, B))


def test_inplace_unary_chain():
    k = sim.Kernel("chain_inplace")
    ga, gc = k.gm("a", "f32", (R, C), A), k.gm("c", "f32", (R, C))
    a = k.tile("vec", "f32", R, C)
    e = k.TLOAD(a, ga)
    e = k.TSUBS(a, a, 1.0, e)
    e = k.TRELU(a, a, e)
    e = k.TADD(a, a, a, e)  # all three operands alias
    k.TSTORE(gc, a, e)
    expect = np.maximum(A - np.float32(1), 0)
    np.testing.assert_array_equal(sim.simulate(k).output("c").reshape(R, C), expect + expect)


def test_input_array_of_the_caller_is_not_modified():
    data = A.copy()
    k = sim.Kernel("noalias")
    ga = k.gm("a", "f32", (R, C), data)
    a = k.tile("vec", "f32", R, C)
    e = k.TMULS(a, a, 0.0, k.TLOAD(a, ga))
    k.TSTORE(ga, a, e)  # overwrite the input in GM
    r = sim.simulate(k)
    assert (r.output("a") == 0).all()
    np.testing.assert_array_equal(data, A)  # caller's array untouched


def test_empty_valid_region_is_a_no_op():
    # PTO IR files declare v_row=0 (set later); an op over an empty region computes nothing
    k = sim.Kernel("empty")
    a = k.tile("vec", "f32", 16, 64, valid=(0, 64))
    b = k.tile("vec", "f32", 16, 64, valid=(0, 64))
    k.TEXPANDS(a, 5.0)
    k.TADD(b, a, a)
    r = sim.simulate(k)
    ops = r.trace[r.trace["kind"] == "op"]
    assert list(ops["duration_cycles"]) == [0, 0]
