"""SSA values are scoped per function activation (manual mode runs ``func.call`` as a call,
not inlined): a callee that defines a GM view, a scalar or a tile under a name its caller
also uses leaves the caller's binding alone, and a pointer moved by ``pto.addptr`` keeps
its offset inside the callee it is passed to. Checked on the data against numpy."""

import numpy as np
import pytest

import sim

TILE = "!pto.tile_buf<vec, 8x64xf32>"
PART = "!pto.partition_tensor_view<8x64xf32>"
VIEW = "!pto.tensor_view<?x?xf32>"
ROW_MAJOR = "strides = [%c64, %c1]"
WINDOW = "sizes = [%c8, %c64]"
ROWS = 32  # rows of the output tensor: four 8-row windows


def _consts(addr: int) -> str:
    return (
        "    %c0 = arith.constant 0 : index\n"
        "    %c1 = arith.constant 1 : index\n"
        "    %c8 = arith.constant 8 : index\n"
        f"    %c{ROWS} = arith.constant {ROWS} : index\n"
        "    %c64 = arith.constant 64 : index\n"
        f"    %addr = arith.constant {addr} : i64\n"
    )


def _scale_into(row: str, factor: float, call: str = "", extent: str = f"%c{ROWS}") -> str:
    """The body every function shares, under the same names: %t <- pa * %s, stored to the
    8-row window of po at ``row``; ``call`` runs between defining %vo / %s / %t and using
    them."""
    return (
        f"    %s = arith.constant {factor} : f32\n"
        f"    %ta = pto.make_tensor_view %pa, shape = [%c8, %c64], {ROW_MAJOR} : {VIEW}\n"
        f"    %to = pto.make_tensor_view %po, shape = [{extent}, %c64], {ROW_MAJOR} : {VIEW}\n"
        f"    %va = pto.partition_view %ta, offsets = [%c0, %c0], {WINDOW} : {VIEW} -> {PART}\n"
        f"    %vo = pto.partition_view %to, offsets = [{row}, %c0], {WINDOW} : {VIEW} -> {PART}\n"
        f"    %t = pto.alloc_tile addr = %addr : {TILE}\n"
        f"    pto.tload ins(%va : {PART}) outs(%t : {TILE})\n"
        '    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]\n'
        '    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]\n'
        + call
        + f"    pto.tmuls ins(%t, %s : {TILE}, f32) outs(%t : {TILE})\n"
        '    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]\n'
        '    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]\n'
        f"    pto.tstore ins(%t : {TILE}) outs(%vo : {PART})\n"
        '    pto.set_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]\n'
        '    pto.wait_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]\n'
        "    return\n"
    )


PTRS = "%pa: !pto.ptr<f32>, %po: !pto.ptr<f32>"
CALL_F = "    func.call @f(%pa, %po) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"


def _run(text: str, a: np.ndarray, by_hand: bool = True) -> np.ndarray:
    if not by_hand:  # every tile placed by the simulator
        text = text.replace("pto.alloc_tile addr = %addr :", "pto.alloc_tile :")
    r = sim.simulate(
        sim.parse_text(text, "scope.pto"),
        "a2a3",
        inputs={"pa": a, "po": np.zeros((ROWS, 64), np.float32)},
        sync="manual",
    )
    return r.output("po").reshape(ROWS, 64)


@pytest.fixture
def a() -> np.ndarray:
    return np.random.default_rng(7).uniform(-4, 4, (8, 64)).astype(np.float32)


@pytest.mark.parametrize("by_hand", [True, False], ids=["addressed", "placed"])
def test_callee_names_leave_the_callers_view_scalar_and_tile(a, by_hand):
    # the callee's %t lies elsewhere in UB (by its address, or where the simulator places
    # it), its %vo on rows 8..15, its %s is 5
    text = (
        "module {\n"
        f"  func.func private @f({PTRS}) {{\n" + _consts(4096) + _scale_into("%c8", 5.0) + "  }\n"
        f"  func.func @k({PTRS}) {{\n" + _consts(0) + _scale_into("%c0", 2.0, CALL_F) + "  }\n}\n"
    )
    out = _run(text, a, by_hand)
    np.testing.assert_array_equal(out[0:8], a * np.float32(2))  # the caller's own
    np.testing.assert_array_equal(out[8:16], a * np.float32(5))  # the callee's
    assert not out[16:].any()


@pytest.mark.parametrize("by_hand", [True, False], ids=["addressed", "placed"])
def test_nested_and_repeated_activations_keep_their_own_bindings(a, by_hand):
    # @k calls @f twice (rows 8 and 16), each @f calls @g (rows 24); all use the same
    # names for their view, scalar and tile, each function's tile at its own address
    call_g = "    func.call @g(%pa, %po) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"
    call_f = (
        "    func.call @f(%pa, %po, %c8) : (!pto.ptr<f32>, !pto.ptr<f32>, index) -> ()\n"
        "    %c16 = arith.constant 16 : index\n"
        "    func.call @f(%pa, %po, %c16) : (!pto.ptr<f32>, !pto.ptr<f32>, index) -> ()\n"
    )
    text = (
        "module {\n"
        f"  func.func private @g({PTRS}) {{\n"
        + _consts(8192)
        + "    %c24 = arith.constant 24 : index\n"
        + _scale_into("%c24", 5.0)
        + "  }\n"
        f"  func.func private @f({PTRS}, %row: index) {{\n"
        + _consts(4096)
        + _scale_into("%row", 3.0, call_g)
        + "  }\n"
        f"  func.func @k({PTRS}) {{\n" + _consts(0) + _scale_into("%c0", 2.0, call_f) + "  }\n}\n"
    )
    out = _run(text, a, by_hand)
    np.testing.assert_array_equal(out[0:8], a * np.float32(2))
    np.testing.assert_array_equal(out[8:16], a * np.float32(3))
    np.testing.assert_array_equal(out[16:24], a * np.float32(3))
    np.testing.assert_array_equal(out[24:32], a * np.float32(5))


def test_a_moved_pointer_keeps_its_offset_in_the_callee(a):
    # @k passes po + 8 rows; @f's window at its row 0 is po's row 8
    text = (
        "module {\n"
        f"  func.func private @f({PTRS}) {{\n"
        + _consts(4096)
        + _scale_into("%c0", 3.0, extent="%c8")
        + "  }\n"
        f"  func.func @k({PTRS}) {{\n"
        + _consts(0)
        + "    %c512 = arith.constant 512 : index\n"
        + "    %q = pto.addptr %po, %c512 : !pto.ptr<f32> -> !pto.ptr<f32>\n"
        + "    func.call @f(%pa, %q) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"
        + "    return\n  }\n}\n"
    )
    out = _run(text, a)
    assert not out[0:8].any()
    np.testing.assert_array_equal(out[8:16], a * np.float32(3))
    assert not out[16:].any()


def test_callees_sharing_a_tile_name_fit_where_one_place_each_would_not(a):
    # @f and @g each allocate a 64 KiB %big under one name and type, @k none: the first
    # callee keeps the name's place and the second gets one apart (128 KiB of UB's 184 free);
    # a third place for the name alone would not fit beside them
    big = "    %big = pto.alloc_tile : !pto.tile_buf<vec, 64x256xf32>\n"
    call_fg = (
        "    func.call @f(%pa, %po) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"
        "    func.call @g(%pa, %po) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"
    )
    text = (
        "module {\n"
        f"  func.func private @f({PTRS}) {{\n"
        + _consts(0)
        + big
        + _scale_into("%c8", 3.0)
        + "  }\n"
        f"  func.func private @g({PTRS}) {{\n"
        + _consts(0)
        + big
        + "    %c24 = arith.constant 24 : index\n"
        + _scale_into("%c24", 5.0)
        + "  }\n"
        f"  func.func @k({PTRS}) {{\n" + _consts(0) + _scale_into("%c0", 2.0, call_fg) + "  }\n}\n"
    )
    out = _run(text, a, by_hand=False)
    np.testing.assert_array_equal(out[0:8], a * np.float32(2))
    np.testing.assert_array_equal(out[8:16], a * np.float32(3))
    assert not out[16:24].any()
    np.testing.assert_array_equal(out[24:32], a * np.float32(5))
