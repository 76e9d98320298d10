"""pto.get_tensor_view_dim (pto-as-syntax.md §5): parsed, printed back, and evaluated."""

import numpy as np

import sim

TEXT = """
module {
  func.func @scale_rows(%pa: !pto.ptr<f32>, %pc: !pto.ptr<f32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %s = arith.constant 3.0 : f32
    %ta = pto.make_tensor_view %pa, shape = [%n, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %tc = pto.make_tensor_view %pc, shape = [%n, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %rows = pto.get_tensor_view_dim %ta, %c0 : !pto.tensor_view<?x?xf32> -> index
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    scf.for %i = %c0 to %rows step %c16 {
      %va = pto.partition_view %ta, offsets = [%i, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
      %vc = pto.partition_view %tc, offsets = [%i, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
      pto.tload ins(%va : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
      pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
      pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
      pto.tmuls ins(%t, %s : !pto.tile_buf<vec, 16x64xf32>, f32) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
      pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
      pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
      pto.tstore ins(%t : !pto.tile_buf<vec, 16x64xf32>) outs(%vc : !pto.partition_tensor_view<16x64xf32>)
      pto.set_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]
      pto.wait_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]
    }
    return
  }
}
"""


def test_round_trip():
    p = sim.parse_text(TEXT, "tvdim.pto")
    assert sim.parse_text(sim.print_program(p), "again.pto") == p


def test_loop_bound_from_the_view_dim():
    a = np.arange(48 * 64, dtype=np.float32).reshape(48, 64)
    r = sim.simulate(sim.parse_text(TEXT, "tvdim.pto"), inputs={"pa": a, "n": 48})
    np.testing.assert_array_equal(r.output("pc")[: 48 * 64].reshape(48, 64), a * 3)
    assert (r.trace["opcode"] == "TMULS").sum() == 3  # 48 rows / 16 per iteration
