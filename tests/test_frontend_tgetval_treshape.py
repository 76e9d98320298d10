"""pto.tgetval and pto.treshape (pto-ir-in-the-wild.md §2.4): parsed, printed back, simulated.

* ``%v = pto.tgetval ins(%t, %i : TB, index) outs : T`` reads element ``%i`` of tile ``%t``
  into a scalar (ASSUMPTION: ``%i`` is the flat element offset in the tile's storage,
  row-major ``r * cols + c`` for a row-major tile, over the whole capacity); it runs on the
  scalar pipe like ``pto.load_scalar``.
* ``%r = pto.treshape %t : A -> B`` is a tile of type ``B`` over the same bytes as ``%t``
  (same buffer, same total size; ASSUMPTION: the valid region is the one ``B`` declares).
"""

import numpy as np
import pytest

import sim
from sim.base.errors import SimulationError
from sim.frontend import ParseError
from sim.isa.program import Reshape, Scalar, ScalarOp

TB = "!pto.tile_buf<vec, 16x64xf32>"
PV = "!pto.partition_tensor_view<16x64xf32>"
TV = "!pto.tensor_view<?x?xf32>"

HEAD = """module {{
  func.func @k(%pa: !pto.ptr<f32>, %pc: !pto.ptr<f32>, %n: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %ta = pto.make_tensor_view %pa, shape = [%c16, %c64], strides = [%c64, %c1] : {TV}
    %va = pto.partition_view %ta, offsets = [%c0, %c0], sizes = [%c16, %c64] : {TV} -> {PV}
    %t = pto.alloc_tile : {TB}
    pto.tload ins(%va : {PV}) outs(%t : {TB})
{body}
    return
  }}
}}
"""

GETVAL = """\
    %tc = pto.make_tensor_view %pc, shape = [%c16, %c64], strides = [%c64, %c1] : {TV}
    %vc = pto.partition_view %tc, offsets = [%c0, %c0], sizes = [%c16, %c64] : {TV} -> {PV}
    pto.set_flag["PIPE_MTE2", "PIPE_S", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_S", "EVENT_ID0"]
    %v = pto.tgetval ins(%t, %n : {TB}, index) outs : f32
    %w = pto.tgetval ins(%t, %c1 : {TB},
                         index)
      outs : f32
    %s = arith.addf %v, %w : f32
    pto.set_flag["PIPE_S", "PIPE_V", "EVENT_ID0"]
    pto.wait_flag["PIPE_S", "PIPE_V", "EVENT_ID0"]
    pto.tmuls ins(%t, %s : {TB}, f32) outs(%t : {TB})
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.tstore ins(%t : {TB}) outs(%vc : {PV})"""

R32 = "!pto.tile_buf<vec, 32x32xf32>"
R32V = "!pto.tile_buf<vec, 32x32xf32, valid=32x16>"
PV32 = "!pto.partition_tensor_view<32x32xf32>"
PV16 = "!pto.partition_tensor_view<32x16xf32>"
RESHAPE = """\
    %tc = pto.make_tensor_view %pc, shape = [%c32, %c64], strides = [%c64, %c1] : {TV}
    %vc = pto.partition_view %tc, offsets = [%c0, %c0], sizes = [%c32, %c32] : {TV} -> {PV32}
    %vd = pto.partition_view %tc, offsets = [%c0, %c32], sizes = [%c32, %c16] : {TV} -> {PV16}
    %r = pto.treshape %t : {TB} -> {R32}
    %h = pto.treshape %r : {R32} -> {R32V}
    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
    %three = arith.constant 3.0 : f32
    pto.tadds ins(%r, %three : {R32}, f32) outs(%r : {R32})
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.tstore ins(%r : {R32}) outs(%vc : {PV32})
    pto.tstore ins(%h : {R32V}) outs(%vd : {PV16})"""


NAMES = dict(TB=TB, PV=PV, TV=TV, R32=R32, R32V=R32V, PV32=PV32, PV16=PV16)
GETVAL, RESHAPE = GETVAL.format(**NAMES), RESHAPE.format(**NAMES)


def kernel(body: str) -> str:
    return HEAD.format(body=body, **NAMES)


def round_trip(text: str):
    p = sim.parse_text(text, "k.pto")
    printed = sim.print_program(p)
    q = sim.parse_text(printed, "printed.pto")
    assert q == p, printed
    assert sim.print_program(q) == printed
    return p, printed


A = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 7


# --- tgetval ------------------------------------------------------------------------------


def test_tgetval_parses_to_a_scalar_op_and_round_trips():
    p, printed = round_trip(kernel(GETVAL))
    ops = [st for st in p.main.body if isinstance(st, ScalarOp)]
    t = next(st.tile for st in p.main.body if hasattr(st, "tile"))
    assert ops[0] == ScalarOp((Scalar("v", "f32"),), "pto.tgetval", (t, Scalar("n")))
    assert ops[1] == ScalarOp((Scalar("w", "f32"),), "pto.tgetval", (t, Scalar("c1")))
    assert f"%v = pto.tgetval ins(%t, %n : {TB}, index) outs : f32" in printed


def test_tgetval_attributes_and_literal_index_round_trip():
    body = f"    %v = pto.tgetval ins(%t, 5 {{foo = 1 : i32}} : {TB}, index) outs : f32 {{bar}}"
    p, printed = round_trip(kernel(body))
    op = [st for st in p.main.body if isinstance(st, ScalarOp)][0]
    assert op.operands[1].value == 5 and set(dict(op.attrs)) == {"foo", "bar"}


def test_tgetval_simulated():
    p = sim.parse_text(kernel(GETVAL), "k.pto")
    r = sim.simulate(p, inputs={"pa": A, "n": 70})
    expect = A * np.float32(A.reshape(-1)[70] + A.reshape(-1)[1])
    np.testing.assert_allclose(r.output("pc")[: A.size].reshape(16, 64), expect, rtol=1e-6)
    rows = r.trace[r.trace["opcode"] == "tgetval"]
    assert len(rows) == 2 and set(rows["pipe"]) == {"PIPE_S"}
    assert (rows["end_cycle"] > rows["start_cycle"]).all()


def test_tgetval_index_outside_the_tile():
    p = sim.parse_text(kernel(GETVAL), "k.pto")
    with pytest.raises(SimulationError, match=r"pto.tgetval \(k.pto:\d+:\d+\): index 1024 outside"):
        sim.simulate(p, inputs={"pa": A, "n": 1024})


@pytest.mark.parametrize(
    "body, what",
    [
        (f"    %v = pto.tgetval ins(%t, %n : {TB}, index) outs(%t : {TB})", "expected 'outs : T'"),
        (f"    %v = pto.tgetval ins(%t, %n : {TB}, index)", "expected 'outs : T'"),
        (f"    %v = pto.tgetval ins(%t, %n : {TB}, index) outs : f32 -> f32", "unexpected '-> T'"),
        (f"    %v = pto.tgetval ins(%t, %n : {TB}, index) outs : {TB}", "scalar result type"),
        (
            f"    %v = pto.tgetval ins(%n, %t : index, {TB}) outs : f32",
            "expected ins(%tile, %index",
        ),
        (f"    pto.tgetval ins(%t, %n : {TB}, index) outs : f32", "has 1 result"),
        (f"    %v = pto.tgetval ins(%t, %n : {TB}, f32) outs : f32", "type mismatch"),
    ],
)
def test_tgetval_errors(body, what):
    with pytest.raises(ParseError) as e:
        sim.parse_text(kernel(body), "k.pto")
    assert what in e.value.message and str(e.value).startswith("k.pto:")


# --- treshape -----------------------------------------------------------------------------


def test_treshape_parses_and_round_trips():
    p, printed = round_trip(kernel(RESHAPE))
    rs = [st for st in p.main.body if isinstance(st, Reshape)]
    assert [(st.source.name, st.result.name) for st in rs] == [("t", "r"), ("r", "h")]
    assert rs[0].result.type.rows == 32 and rs[1].result.type.valid_cols == 16
    assert f"%r = pto.treshape %t : {TB} -> {R32}" in printed


def test_treshape_simulated():
    p = sim.parse_text(kernel(RESHAPE), "k.pto")
    r = sim.simulate(p, inputs={"pa": A, "n": 0})
    out = r.output("pc")[: 32 * 64].reshape(32, 64)
    np.testing.assert_allclose(out[:, :32], A.reshape(32, 32) + 3, rtol=1e-6)
    # %h: the same bytes, valid 32x16 as its type declares
    np.testing.assert_allclose(out[:, 32:48], A.reshape(32, 32)[:, :16] + 3, rtol=1e-6)


@pytest.mark.parametrize(
    "body, what",
    [
        (
            f"    %r = pto.treshape %t : {TB} -> !pto.tile_buf<vec, 16x64xf16>",
            "the result type has 2048 bytes, the source 4096; expected the same total size",
        ),
        (f"    %r = pto.treshape %t : {TB} -> !pto.tile_buf<mat, 16x64xf32>", "source's buffer"),
        (f"    %r = pto.treshape %t : {TB} -> index", "expected a !pto.tile_buf result type"),
        (f"    %r = pto.treshape %t : {R32} -> {TB}", "type mismatch"),
        ("    %r = pto.treshape %n : index -> index", "a tile is expected"),
    ],
)
def test_treshape_errors(body, what):
    with pytest.raises(ParseError) as e:
        sim.parse_text(kernel(body), "k.pto")
    assert what in e.value.message and str(e.value).startswith("k.pto:")


def test_treshape_size_error_points_at_the_result_type():
    text = kernel(f"    %r = pto.treshape %t : {TB} -> !pto.tile_buf<vec, 16x64xf16>")
    with pytest.raises(ParseError) as e:
        sim.parse_text(text, "k.pto")
    line = text.splitlines()[e.value.line - 1]
    assert line[e.value.col - 1 :].startswith("!pto.tile_buf<vec, 16x64xf16>")
