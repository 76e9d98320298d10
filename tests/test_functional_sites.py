"""The functional call site's caches never serve stale operands (``sim.engine.operands``).

An instruction's views are bound once and reused while its tiles keep their address and
valid region and its GM view and array stay the same. Each test runs one instruction (or
an equal one, which shares its site) twice with that state changed in between — a
TASSIGN of its destination or of a source, a set_validshape, ping-pong tiles swapped by
a loop's iter_args, a GM array grown by a larger tensor view — and checks the GM result
against numpy: a site kept across the change computes on the old bytes and fails.

Also: ``compute_into``, which skips the widened copies, gives the bits of ``compute``
on every layout (NaN payloads included), and the numpy error state is set for the run
only.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import sim
from sim.frontend import parse_text
from sim.functional import FnContext
from sim.functional.arith import compute, compute_into
from sim.isa.dtypes import dtype

R, C = 16, 64
RNG = np.random.default_rng(7)
A = RNG.uniform(-8, 8, (R, C)).astype(np.float32)
B = RNG.uniform(-8, 8, (R, C)).astype(np.float32)
ONE = np.float32(1)


def test_tassign_of_the_destination_between_two_runs_of_one_instruction():
    k = sim.Kernel("dst_moves")
    ga = k.gm("a", "f32", (R, C), A)
    g1, g2 = k.gm("c1", "f32", (R, C)), k.gm("c2", "f32", (R, C))
    a = k.tile("vec", "f32", R, C, addr=0x8000)
    t = k.tile("vec", "f32", R, C, addr=0x0)
    u = k.tile("vec", "f32", R, C, addr=0x4000)  # the bytes t moves to
    k.TLOAD(a, ga)
    k.pipe_barrier("PIPE_ALL")
    k.TADDS(t, a, 1.0)
    k.pipe_barrier("PIPE_ALL")
    k.TMULS(a, a, 2.0)  # new data for the second run
    k.TASSIGN(t, 0x4000)
    k.pipe_barrier("PIPE_ALL")
    k.TADDS(t, a, 1.0)  # equal to the first: one site
    k.pipe_barrier("PIPE_ALL")
    k.TASSIGN(t, 0x0)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(g1, t)  # the first result, left at 0x0
    k.TSTORE(g2, u)  # the second, written at 0x4000
    r = sim.simulate(k, sync="manual")
    np.testing.assert_array_equal(r.output("c1").reshape(R, C), A + ONE)
    np.testing.assert_array_equal(r.output("c2").reshape(R, C), A * np.float32(2) + ONE)


def test_tassign_of_a_source_between_two_runs_of_one_instruction():
    k = sim.Kernel("src_moves")
    ga, gb = k.gm("a", "f32", (R, C), A), k.gm("b", "f32", (R, C), B)
    g1, g2 = k.gm("c1", "f32", (R, C)), k.gm("c2", "f32", (R, C))
    a = k.tile("vec", "f32", R, C, addr=0x0)
    b = k.tile("vec", "f32", R, C, addr=0x4000)
    c = k.tile("vec", "f32", R, C, addr=0x8000)
    k.TLOAD(a, ga)
    k.TLOAD(b, gb)
    k.pipe_barrier("PIPE_ALL")
    k.TADDS(c, a, 1.0)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(g1, c)
    k.pipe_barrier("PIPE_ALL")
    k.TASSIGN(a, 0x4000)  # a now reads b's bytes
    k.pipe_barrier("PIPE_ALL")
    k.TADDS(c, a, 1.0)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(g2, c)
    r = sim.simulate(k, sync="manual")
    np.testing.assert_array_equal(r.output("c1").reshape(R, C), A + ONE)
    np.testing.assert_array_equal(r.output("c2").reshape(R, C), B + ONE)


def test_valid_region_change_between_two_runs_of_one_instruction():
    """16x64, then 8x32: the second run reads and writes only the smaller window, so the
    rest of the destination keeps the first run's result."""
    k = sim.Kernel("shrinks")
    ga, gb = k.gm("a", "f32", (R, C), A), k.gm("b", "f32", (R, C), B)
    gc = k.gm("c", "f32", (R, C))
    a = k.tile("vec", "f32", R, C, valid=(None, None))
    c = k.tile("vec", "f32", R, C, valid=(None, None))
    for t in (a, c):
        k.set_valid(t, R, C)
    k.TLOAD(a, ga)
    k.TADDS(c, a, 1.0)
    k.TLOAD(a, gb)  # all of a changes
    for t in (a, c):
        k.set_valid(t, 8, 32)
    k.TADDS(c, a, 1.0)  # equal to the first: one site
    k.set_valid(c, R, C)
    k.TSTORE(gc, c)
    expect = A + ONE
    expect[:8, :32] = B[:8, :32] + ONE
    np.testing.assert_array_equal(sim.simulate(k).output("c").reshape(R, C), expect)


_TILE = "!pto.tile_buf<vec, 8x64xf32>"
_VIEW = "!pto.partition_tensor_view<8x64xf32>"
_TV = "!pto.tensor_view<?x?xf32>"

PING_PONG = f"""
module {{
  func.func @ping_pong(%px: !pto.ptr<f32>, %py: !pto.ptr<f32>, %pz: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.000000e+00 : f32
    %a0 = arith.constant 0 : i64
    %a1 = arith.constant 16384 : i64
    %tx = pto.make_tensor_view %px, shape = [%c32, %c64], strides = [%c64, %c1] : {_TV}
    %ty = pto.make_tensor_view %py, shape = [%c32, %c64], strides = [%c64, %c1] : {_TV}
    %tz = pto.make_tensor_view %pz, shape = [%c16, %c64], strides = [%c64, %c1] : {_TV}
    %t0 = pto.alloc_tile addr = %a0 : {_TILE}
    %t1 = pto.alloc_tile addr = %a1 : {_TILE}
    %end:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%cur = %t0, %other = %t1) -> ({_TILE}, {_TILE}) {{
      %row = arith.muli %i, %c8 : index
      %vx = pto.partition_view %tx, offsets = [%row, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
      %vy = pto.partition_view %ty, offsets = [%row, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
      pto.tload ins(%vx : {_VIEW}) outs(%cur : {_TILE})
      pto.tadds ins(%cur, %one : {_TILE}, f32) outs(%cur : {_TILE})
      pto.tstore ins(%cur : {_TILE}) outs(%vy : {_VIEW})
      scf.yield %other, %cur : {_TILE}, {_TILE}
    }}
    %z0 = pto.partition_view %tz, offsets = [%c0, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
    %z1 = pto.partition_view %tz, offsets = [%c8, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
    pto.tstore ins(%t0 : {_TILE}) outs(%z0 : {_VIEW})
    pto.tstore ins(%t1 : {_TILE}) outs(%z1 : {_VIEW})
    return
  }}
}}
"""


def test_ping_pong_tiles_swapped_by_loop_iter_args():
    """Chunk i goes through %cur, which is %t0 on even and %t1 on odd iterations: the
    same three instructions run on alternating addresses. Afterwards %t0 holds chunk 2
    and %t1 chunk 3."""
    x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    r = sim.simulate(parse_text(PING_PONG), inputs={"px": x})
    np.testing.assert_array_equal(r.output("py").reshape(32, 64), x + ONE)
    z = r.output("pz").reshape(16, 64)
    np.testing.assert_array_equal(z[:8], x[16:24] + ONE)
    np.testing.assert_array_equal(z[8:], x[24:32] + ONE)


GROWN = f"""
module {{
  func.func @grown(%px: !pto.ptr<f32>, %py: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %tx = pto.make_tensor_view %px, shape = [%c16, %c64], strides = [%c64, %c1] : {_TV}
    %ty = pto.make_tensor_view %py, shape = [%c8, %c64], strides = [%c64, %c1] : {_TV}
    %vy = pto.partition_view %ty, offsets = [%c0, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
    %t = pto.alloc_tile : {_TILE}
    scf.for %i = %c0 to %c2 step %c1 {{
      %row = arith.muli %i, %c8 : index
      %vx = pto.partition_view %tx, offsets = [%row, %c0], sizes = [%c8, %c64] : {_TV} -> {_VIEW}
      pto.tload ins(%vx : {_VIEW}) outs(%t : {_TILE})
      pto.tstore ins(%t : {_TILE}) outs(%vy : {_VIEW})
      %end = arith.addi %row, %c8 : index
      %rows = arith.muli %end, %c16 : index
      %big = pto.make_tensor_view %py, shape = [%rows, %c64], strides = [%c64, %c1] : {_TV}
    }}
    return
  }}
}}
"""


def test_store_after_its_gm_array_grew():
    """%py has no input, so its array is as large as the views declared so far: 8 rows
    for the first store, then 128 (the first iteration's tensor view), then 256. The
    store's partition view is the same in both iterations, but the second store must
    land in the array grown after the first."""
    x = RNG.uniform(-8, 8, (R, C)).astype(np.float32)
    r = sim.simulate(parse_text(GROWN), inputs={"px": x})
    y = r.output("py")
    assert y.size == 256 * 64  # it did grow
    np.testing.assert_array_equal(y.reshape(-1, 64)[:8], x[8:16])


# --- compute_into: the bits of compute, whatever the layout ----------------------------------

_NANS = np.array([0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFD00001], np.uint32).view(np.float32)
_SPECIAL = np.concatenate([_NANS, np.float32([0.0, -0.0, np.inf, -np.inf, 1.5, -2.25, 3e38])])


def _operand(rng, buf, layout, shape):
    """A view of ``buf`` of ``shape``: contiguous at an offset, cut from wider rows, or
    the buffer's head itself (so it may alias the destination)."""
    r, c = shape
    if layout == "cut":
        return buf[: r * (c + 3)].reshape(r, c + 3)[:, 1 : c + 1]
    off = int(rng.integers(0, 8)) if layout == "offset" else 0
    return buf[off : off + r * c].reshape(r, c)


@pytest.mark.parametrize("dt", ["f32", "i64", "u64", "i32", "f16"])
@pytest.mark.parametrize(
    "fn",
    [
        np.add,
        np.subtract,
        np.multiply,
        np.divide,
        np.maximum,
        np.minimum,
        np.sqrt,
        np.negative,
        np.absolute,
    ],
)
def test_compute_into_gives_the_bits_of_compute(dt, fn):
    d = dtype(dt)
    if fn in (np.divide, np.sqrt) and not d.is_float:
        pytest.skip("integer division and sqrt go through their own units")
    rng = np.random.default_rng(zlib.crc32(f"{dt} {fn.__name__}".encode()))
    for _ in range(60):
        shape = (int(rng.integers(1, 6)), int(rng.integers(1, 40)))
        if d.is_float:
            with np.errstate(over="ignore"):  # 3e38 is inf in f16
                bufs = [rng.choice(_SPECIAL, 512).astype(d.np_type) for _ in range(3)]
        else:
            bufs = [
                rng.integers(
                    np.iinfo(d.np_type).min,
                    np.iinfo(d.np_type).max,
                    512,
                    dtype=d.np_type,
                    endpoint=True,
                )
                for _ in range(3)
            ]
        layouts = rng.choice(["head", "offset", "cut"], 3)
        dst = _operand(rng, bufs[2], layouts[2], shape)
        ops = [_operand(rng, bufs[i], layouts[i], shape) for i in range(fn.nin)]
        if fn.nin == 2 and rng.random() < 0.3:  # a scalar operand
            ops[1] = bufs[1][:1].reshape(())
        if rng.random() < 0.3:  # in place: dst is the first operand
            dst = ops[0]
        with np.errstate(all="ignore"):
            want = compute(d, fn, *[np.array(o) for o in ops])
            apart = dst.flags.c_contiguous and not any(
                o.shape and np.may_share_memory(o, dst) for o in ops
            )
            compute_into(
                FnContext(op="T", where="here", dtype=d, dst=dst, dst_apart=apart), fn, *ops
            )
        assert want.tobytes() == np.ascontiguousarray(dst).tobytes(), (fn.__name__, layouts)


# --- numpy error state ------------------------------------------------------------------------


def test_error_state_is_set_for_the_run_only():
    k = sim.Kernel("overflow")
    ga, gc = k.gm("a", "f32", (R, C), np.full((R, C), 3e38, np.float32)), k.gm("c", "f32", (R, C))
    a, c = k.tile("vec", "f32", R, C), k.tile("vec", "f32", R, C)
    k.TLOAD(a, ga)
    k.TADD(c, a, a)  # overflows to inf: data, not an error
    k.TSUB(c, c, c)  # inf - inf: NaN
    k.TSTORE(gc, c)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = sim.simulate(k)
    assert np.isnan(r.output("c")).all()
    assert np.geterr() == before
