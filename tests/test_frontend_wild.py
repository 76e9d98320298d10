"""Spellings real compilers emit (pto-ir-in-the-wild.md §2-§4) that pto-sim once rejected
or crashed on: each ``tests/data/wild/*.pto`` is a small kernel written from one of them.
Every one must check, print back to an equal program and simulate; the numerics are
compared with numpy where the construct moves data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.base.errors import SimulationError, UserError
from sim.engine.run import simulate
from sim.frontend import check_program, parse_file, parse_text, print_program
from sim.target import load_target

WILD = Path(__file__).resolve().parent / "data" / "wild"
FILES = sorted(WILD.glob("*.pto"))
ARGS = {"alloc_one_valid_dense.pto": {"n": 8}, "if_yield_view.pto": {"flag": 1}}


def _target(program):
    from sim.frontend import resolve_target

    return resolve_target(program, None, where="test")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_wild_kernel_checks_round_trips_and_runs_timing_only(path):
    program = parse_file(path)
    check_program(program, load_target(_target(program)))
    assert parse_text(print_program(program), "printed.pto") == program
    r = simulate(program, _target(program), inputs=ARGS.get(path.name), functional=False)
    assert r.total_cycles > 0


def test_alloc_tile_takes_valid_row_or_valid_col_alone_and_dense_splats():
    program = parse_file(WILD / "alloc_one_valid_dense.pto")
    x = np.arange(16 * 64, dtype=np.float32)
    r = simulate(program, "a2a3", inputs={"n": 8, "px": x})
    # %y: valid_col given alone (64), v_row from the type (16), filled with dense<0.0>
    assert np.array_equal(r.gm["py"], np.zeros(16 * 64, np.float32))


def test_dense_constant_of_a_shaped_type_is_unsupported_with_a_location():
    text = (
        (WILD / "alloc_one_valid_dense.pto")
        .read_text()
        .replace("dense<0.0> : f32", "dense<[1, 2]> : tensor<2xi32>")
    )
    with pytest.raises(UserError, match=r"x\.pto:7:\d+: error: unsupported"):
        parse_text(text, "x.pto")


def test_5d_partition_views_load_and_store_their_outer_dims_as_tile_rows():
    program = parse_file(WILD / "view_5d.pto")
    x = np.random.default_rng(3).uniform(-4, 4, 2 * 16 * 64).astype(np.float16)
    r = simulate(program, "a5", inputs={"px": x})
    assert np.array_equal(r.gm["py"], np.abs(x))


def test_4d_window_with_a_strided_outer_dim():
    # a 2x3x4x8 tensor; the window [1:2, 0:3, 1:3, 0:8] is 3 outer x 2 rows x 8 cols
    text = """
module {
  func.func @k(%p: !pto.ptr<f32>, %q: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c96 = arith.constant 96 : index
    %t = pto.make_tensor_view %p, shape = [%c2, %c3, %c4, %c8], strides = [%c96, %c32, %c8, %c1] : !pto.tensor_view<?x?x?x?xf32>
    %u = pto.make_tensor_view %q, shape = [%c2, %c3, %c4, %c8], strides = [%c96, %c32, %c8, %c1] : !pto.tensor_view<?x?x?x?xf32>
    %v = pto.partition_view %t, offsets = [%c1, %c0, %c1, %c0], sizes = [%c1, %c3, %c2, %c8] : !pto.tensor_view<?x?x?x?xf32> -> !pto.partition_tensor_view<1x3x2x8xf32>
    %w = pto.partition_view %u, offsets = [%c0, %c0, %c2, %c0], sizes = [%c1, %c3, %c2, %c8] : !pto.tensor_view<?x?x?x?xf32> -> !pto.partition_tensor_view<1x3x2x8xf32>
    %x = pto.alloc_tile : !pto.tile_buf<vec, 6x8xf32>
    pto.tload ins(%v : !pto.partition_tensor_view<1x3x2x8xf32>) outs(%x : !pto.tile_buf<vec, 6x8xf32>)
    pto.tstore ins(%x : !pto.tile_buf<vec, 6x8xf32>) outs(%w : !pto.partition_tensor_view<1x3x2x8xf32>)
    return
  }
}
"""
    x = np.arange(192, dtype=np.float32)
    r = simulate(parse_text(text, "k.pto"), "a2a3", inputs={"p": x, "q": np.zeros(192, np.float32)})
    src, dst = x.reshape(2, 3, 4, 8), r.gm["q"].reshape(2, 3, 4, 8)
    assert np.array_equal(dst[0, :, 2:4, :], src[1, :, 1:3, :])
    assert dst[1].sum() == 0 and dst[0, :, :2, :].sum() == 0


def test_scf_if_yields_a_tensor_view_and_calls_pass_views():
    program = parse_file(WILD / "if_yield_view.pto")
    # rows 16..31 of the view the branch picks are loaded, then stored back by the callee
    # through the partition view it receives: only the chosen tensor is touched
    r = simulate(program, "a2a3", inputs={"flag": 1})
    assert r.gm["px"][1024:].any() and not r.gm["py"].any()
    r = simulate(program, "a2a3", inputs={"flag": 0})
    assert r.gm["py"][1024:].any() and not r.gm["px"].any()


def test_view_typed_kernel_arguments_are_dense_gm_tensors():
    program = parse_file(WILD / "view_args.pto")
    x = np.random.default_rng(0).uniform(-1, 1, 2048).astype(np.float32)
    r = simulate(program, "a2a3", inputs={"src": x})
    assert np.allclose(r.gm["dst"], np.exp(x))


def test_view_argument_with_dynamic_dims_is_a_clear_error():
    text = (
        (WILD / "view_args.pto")
        .read_text()
        .replace(
            "%dst: !pto.partition_tensor_view<1x1x2x16x64xf32>) attributes",
            "%dst: !pto.partition_tensor_view<1x1x2x16x64xf32>, %z: !pto.tensor_view<?x64xf32>) attributes",
        )
    )
    with pytest.raises(UserError, match=r"%z is a \?x64 GM view with dynamic dims"):
        simulate(parse_text(text, "k.pto"), "a2a3", functional=False)


def test_tsel_reads_a_signed_i8_mask_as_bits():
    program = parse_file(WILD / "tsel_i8_mask.pto")
    r = simulate(program, "a2a3")
    a, b, c = (r.gm[k][:1024].reshape(16, 64) for k in ("pa", "pb", "pc"))
    m = r.gm["pm"][:128].reshape(16, 8)
    assert m.dtype == np.int8 and (m < 0).any()
    bits = np.unpackbits(m.view(np.uint8), axis=1, bitorder="little").astype(bool)
    assert np.array_equal(c, np.where(bits, a, b))


def test_hif8_is_timed_and_its_arithmetic_refused_functionally():
    program = parse_file(WILD / "hif8.pto")
    assert "!pto.hif8" in print_program(program)
    assert simulate(program, "a5", functional=False).total_cycles > 0
    with pytest.raises(SimulationError, match="hif8 values.*--timing-only"):
        simulate(program, "a5")


def test_gm_arguments_get_memory_only_for_the_windows_touched():
    # a 1.5 GiB tensor of which one 16x64 window is read and written
    text = """
module {
  func.func @k(%p: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c1f = arith.constant 1.0 : f32
    %rows = arith.constant 393216 : index
    %cols = arith.constant 1024 : index
    %t = pto.make_tensor_view %p, shape = [%rows, %cols], strides = [%cols, %c1] : !pto.tensor_view<?x?xf32>
    %v = pto.partition_view %t, offsets = [%c16, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %x = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    pto.tload ins(%v : !pto.partition_tensor_view<16x64xf32>) outs(%x : !pto.tile_buf<vec, 16x64xf32>)
    pto.tadds ins(%x, %c1f : !pto.tile_buf<vec, 16x64xf32>, f32) outs(%x : !pto.tile_buf<vec, 16x64xf32>)
    pto.tstore ins(%x : !pto.tile_buf<vec, 16x64xf32>) outs(%v : !pto.partition_tensor_view<16x64xf32>)
    return
  }
}
"""
    import resource

    program = parse_text(text, "k.pto")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    r = simulate(program, "a2a3")
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    p = r.gm["p"]
    assert p.size == 393216 * 1024  # outputs span the whole tensor
    assert grown < 256 * 1024  # ... but only touched pages are memory
    window = p[16 * 1024 : 32 * 1024].reshape(16, 1024)[:, :64]
    again = simulate(program, "a2a3", seed=0).gm["p"][16 * 1024 : 32 * 1024]
    assert np.array_equal(window, again.reshape(16, 1024)[:, :64])  # deterministic
    assert window.any() and not p[-1024:].any()  # the window's page filled, far ones not


def test_multi_tile_buffers_are_stacked_tiles_and_get_picks_one():
    program = parse_file(WILD / "multi_tile.pto")
    printed = print_program(program)
    assert "%a = pto.multi_tile_get %m[%i] : !pto.tile_buf<vec, 32x16xf16>" in printed
    x = (np.arange(512) / 8).astype(np.float16)
    r = simulate(program, "a2a3", inputs={"px": x})
    assert np.array_equal(r.gm["py"], x + np.float16(1))


def test_multi_tile_get_outside_the_buffers_is_an_error():
    program = parse_text(
        (WILD / "multi_tile.pto")
        .read_text()
        .replace("%a = pto.multi_tile_get %m[%i]", "%a = pto.multi_tile_get %m[%c2]"),
        "k.pto",
    )
    with pytest.raises(SimulationError, match="buffer 2 of a multi-tile of 2"):
        simulate(program, "a2a3")


def test_memref_alloc_of_an_on_chip_memref_is_a_tile():
    program = parse_file(WILD / "memref_alloc.pto")
    x = np.random.default_rng(2).uniform(-3, 3, 256).astype(np.float32)
    assert np.array_equal(simulate(program, "a2a3", inputs={"px": x}).gm["py"], np.abs(x))
    gm = (
        (WILD / "memref_alloc.pto")
        .read_text()
        .replace(
            "%0 = memref.alloc() : memref<16x16xf32, #pto.address_space<vec>>",
            "%0 = memref.alloc() : memref<16x16xf32, #pto.address_space<gm>>",
        )
    )
    with pytest.raises(UserError, match=r"k\.pto:11:\d+: error: unsupported type 'memref<...>'"):
        parse_text(gm, "k.pto")


def test_talloc_to_aiv_is_parsed_checked_and_printed():
    path = WILD.parent / "talloc_to_aiv.pto"
    program = parse_file(path)
    check_program(program, load_target("a2a3"))
    printed = print_program(program)
    assert "%t = pto.talloc_to_aiv {split = 1} -> !pto.tile_buf<acc, 16x16xf32>" in printed
    assert parse_text(printed, "p.pto") == program
