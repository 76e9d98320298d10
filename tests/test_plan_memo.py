"""Plans are kept per process (``sim.engine.execute._PLANS``).

An instruction's plan depends on its form (``sim.engine.execute._form``: opcode,
attributes, tile types — not the operands' names), the target, its tiles' addresses and
valid regions, and — what ``Interpreter._plan_facts`` adds — the geometry of a transfer's
GM window and where placement put a binary op's sources. For each part a pair of kernels
whose instructions are alike but for that part runs one after the other: each must cost
what it costs alone.
"""

from __future__ import annotations

import pytest

import sim
from sim.engine import execute
from sim.frontend.parse import parse_text


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch):
    monkeypatch.setattr(execute, "_PLANS", {})


def _cycles(program, target="a2a3", **opts) -> list:
    ops = sim.simulate(program, target, functional=False, **opts).trace
    ops = ops[ops["kind"] == "op"]
    return list(zip(ops["opcode"], ops["duration_cycles"], strict=True))


def _alone_then_together(make_a, make_b, target="a2a3"):
    alone = []
    for make in (make_a, make_b):
        execute._PLANS.clear()
        alone.append(_cycles(make(), target))
    assert alone[0] != alone[1], "the pair must differ in cost"
    for first, second, want in ((make_a, make_b, alone[1]), (make_b, make_a, alone[0])):
        execute._PLANS.clear()
        _cycles(first(), target)
        assert _cycles(second(), target) == want


_VIEW = """\
module attributes {{pto.target_arch = "a2a3"}} {{
  func.func @k(%x: !pto.ptr<f16>, %y: !pto.ptr<f16>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %tx = pto.make_tensor_view %x, shape = [%c64, %c8], strides = [%c1, %c64] {{layout = #pto.layout<{gm}>}} : !pto.tensor_view<?x?xf16>
    %ty = pto.make_tensor_view %y, shape = [%c64, %c8], strides = [%c1, %c64] {{layout = #pto.layout<{gm}>}} : !pto.tensor_view<?x?xf16>
    %gx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c64, %c8] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<64x8xf16>
    %gy = pto.partition_view %ty, offsets = [%c0, %c0], sizes = [%c64, %c8] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<64x8xf16>
    %t = pto.alloc_tile : !pto.tile_buf<mat, 64x8xf16, blayout=col_major>
    pto.tload ins(%gx : !pto.partition_tensor_view<64x8xf16>) outs(%t : !pto.tile_buf<mat, 64x8xf16, blayout=col_major>)
    pto.tstore ins(%t : !pto.tile_buf<mat, 64x8xf16, blayout=col_major>) outs(%gy : !pto.partition_tensor_view<64x8xf16>)
    return
  }}
}}
"""


def test_the_gm_window_layout_is_part_of_a_kept_plan():
    """GM <-> L1 bursts round up to 32-byte blocks: 64 rows of 16 bytes (nd) charge twice
    the bytes of 8 columns of 128 (dn), loading and storing."""
    _alone_then_together(
        lambda: parse_text(_VIEW.format(gm="dn")), lambda: parse_text(_VIEW.format(gm="nd"))
    )


def _binary(hand_placed: bool):
    """TADD of two 16x64 f32 tiles 4096 bytes apart (one UB bank), placed by hand or by
    the engine (which pays no bank conflict for tiles it placed itself)."""
    k = sim.Kernel("bank")
    ga, gb, gc = (k.gm(n, "f32", (16, 64)) for n in "abc")
    a, b, c = (
        k.tile("vec", "f32", 16, 64, name=n, addr=i * 4096 if hand_placed else None)
        for i, n in enumerate("abc")
    )
    e = k.TADD(c, a, b, k.TLOAD(a, ga), k.TLOAD(b, gb))
    k.TSTORE(gc, c, e)
    return k


def test_where_placement_put_the_sources_is_part_of_a_kept_plan():
    _alone_then_together(lambda: _binary(True), lambda: _binary(False))


def test_the_tile_state_is_part_of_a_kept_plan():
    def kernel(rows):
        k = sim.Kernel("state")
        ga, gc = k.gm("a", "f32", (16, 64)), k.gm("c", "f32", (16, 64))
        a, c = (k.tile("vec", "f32", 16, 64, name=n, valid=(None, None)) for n in "ac")
        for t in (a, c):
            k.set_valid(t, rows, 64)
        e = k.TEXP(c, a, k.TLOAD(a, ga))
        k.TSTORE(gc, c, e)
        return k

    _alone_then_together(lambda: kernel(16), lambda: kernel(4))


def test_the_target_is_part_of_a_kept_plan():
    def kernel():
        k = sim.Kernel("target")
        ga, gc = k.gm("a", "f32", (16, 64)), k.gm("c", "f32", (16, 64))
        a, c = (k.tile("vec", "f32", 16, 64, name=n) for n in "ac")
        k.TSTORE(gc, c, k.TEXP(c, a, k.TLOAD(a, ga)))
        return k

    alone = []
    for target in ("a2a3", "a5"):
        execute._PLANS.clear()
        alone.append(_cycles(kernel(), target))
    assert alone[0] != alone[1]
    execute._PLANS.clear()
    assert [_cycles(kernel(), t) for t in ("a2a3", "a5")] == alone


def _unary(op, dtype="f32", names="ac", **attrs):
    """``op`` of two tiles at fixed addresses (whatever their size)."""
    k = sim.Kernel("unary")
    ga, gc = k.gm("ga", dtype, (16, 64)), k.gm("gc", dtype, (16, 64))
    a, c = (k.tile("vec", dtype, 16, 64, name=n, addr=i * 8192) for i, n in enumerate(names))
    k.TSTORE(gc, c, k.instr(op, c, a, k.TLOAD(a, ga), **attrs))
    return k


def _compare(mode, names="am"):
    k = sim.Kernel("compare")
    ga, gm = k.gm("ga", "f32", (16, 64)), k.gm("gm", "u8", (16, 64))
    a, m = k.tile("vec", "f32", 16, 64, name=names[0]), k.tile("vec", "u8", 16, 64, name=names[1])
    k.TSTORE(gm, m, k.instr("TCMPS", m, a, 1.0, k.TLOAD(a, ga), cmpMode=mode))
    return k


@pytest.mark.parametrize(
    "part, make_a, make_b",
    [
        ("opcode", lambda: _unary("TEXP"), lambda: _unary("TABS", names="xy")),
        ("tile type", lambda: _unary("TEXP"), lambda: _unary("TEXP", "f16", names="xy")),
        ("attributes", lambda: _compare("eq"), lambda: _compare("ne", names="xn")),
    ],
)
def test_a_part_of_the_form_is_part_of_a_kept_plan(part, make_a, make_b):
    _alone_then_together(make_a, make_b)


def test_alike_instructions_on_other_tiles_share_the_plan(monkeypatch):
    _cycles(_unary("TEXP"))
    monkeypatch.setattr(execute.Interpreter, "_shape", None)  # must not be called again
    assert _cycles(_unary("TEXP", names="xy")) == _cycles(_unary("TEXP"))


def _nd_loads(outer_sizes, loop: bool) -> str:
    """TLOADs of 3-D windows of one tensor into one 32x64 tile, ``outer`` x (32 / outer)
    x 64 each: one statement executed in an scf.for over the sizes (``loop``), or one
    statement per size. The tile's state never changes; the window's outer extent does."""
    head = """module {
  func.func @k(%x: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c2048 = arith.constant 2048 : index
    %tv = pto.make_tensor_view %x, shape = [%c4, %c32, %c64], strides = [%c2048, %c64, %c1] : !pto.tensor_view<?x?x?xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 32x64xf32>
"""

    def load(b, indent="    ", n=""):
        return (
            f"{indent}%r{n} = arith.divsi %c32, {b} : index\n"
            f"{indent}%pv{n} = pto.partition_view %tv, offsets = [%c0, %c0, %c0], sizes = [{b}, %r{n}, %c64] : !pto.tensor_view<?x?x?xf32> -> !pto.partition_tensor_view<?x?x64xf32>\n"
            f"{indent}pto.tload ins(%pv{n} : !pto.partition_tensor_view<?x?x64xf32>) outs(%t : !pto.tile_buf<vec, 32x64xf32>)\n"
        )

    consts = "".join(f"    %o{i} = arith.constant {b} : index\n" for i, b in enumerate(outer_sizes))
    if loop:  # %b = 1, 2, 4, ...: the outer sizes are the powers of two
        assert list(outer_sizes) == [2**i for i in range(len(outer_sizes))]
        body = (
            f"    %cn = arith.constant {len(outer_sizes)} : index\n"
            "    scf.for %i = %c0 to %cn step %c1 {\n"
            "      %b = arith.shli %c1, %i : index\n" + load("%b", "      ") + "    }\n"
        )
    else:
        body = consts + "".join(load(f"%o{i}", n=str(i)) for i in range(len(outer_sizes)))
    return head + body + "    return\n  }\n}\n"


def test_a_transfer_of_an_n_d_view_is_planned_for_its_outer_extent_each_time():
    """One TLOAD statement whose 3-D window changes its outer extent (1, 2, 4 copies) while
    its tile stays as it was costs at each execution what a statement of that window costs
    alone: the cached plan of its tile state is not reused across outer extents."""
    sizes = [1, 2, 4]
    straight = _cycles(parse_text(_nd_loads(sizes, loop=False), "straight.pto"))
    assert len(set(straight)) == 3  # the three windows cost differently
    execute._PLANS.clear()
    assert _cycles(parse_text(_nd_loads(sizes, loop=True), "loop.pto")) == straight


# --- plans kept with the program, for its units and runs -----------------------------------


def _recip_kernel(in_place: bool) -> sim.Kernel:
    """TLOAD, TRECIP (in place: a verifier warning on a2a3), TSTORE."""
    k = sim.Kernel("recip", block_dim=2)
    x, y = k.gm("x", "f32", (32, 64)), k.gm("y", "f32", (32, 64))
    a, d = k.tile("vec", "f32", 16, 64, name="a"), k.tile("vec", "f32", 16, 64, name="d")
    r = k.block_idx * 16
    rows = slice(r, r + 16)
    k.TLOAD(a, x[rows, :])
    k.TRECIP(a if in_place else d, a)
    k.TSTORE(y[rows, :], a if in_place else d)
    return k


def test_a_warning_is_given_by_every_run_of_a_program():
    """A clean plan is kept for the program's other units and runs; one whose verdict
    warns is not, so each run gives the warning again."""
    program = _recip_kernel(in_place=True).program()
    # as written: an auto-mode run simulates a prepared copy of the program
    first = sim.simulate(program, functional=False, sync="manual").warnings
    assert any("same tile (%a): TRECIP" in w for w in first)
    assert sim.simulate(program, functional=False, sync="manual").warnings == first
    clean = _recip_kernel(in_place=False).program()
    assert sim.simulate(clean, functional=False, sync="manual").warnings == ()


def test_a_program_simulated_on_two_targets_gets_each_targets_plans():
    k = _recip_kernel(in_place=False)
    program = k.program()
    alone = {}
    for target in ("a5", "a2a3"):
        execute._PLANS.clear()
        alone[target] = _cycles(_recip_kernel(in_place=False).program(), target)
    assert alone["a5"] != alone["a2a3"]
    for target in ("a2a3", "a5", "a2a3"):
        execute._PLANS.clear()
        assert _cycles(program, target, sync="manual") == alone[target]
