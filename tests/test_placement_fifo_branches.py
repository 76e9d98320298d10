"""Auto placement of FIFO buffers reserved in exclusive ``scf.if`` branches.

A ``reserve_buffer`` holds its bytes over the region it is reserved in
(``sim.placement.alloc.fifo_spans``): the branch of an ``scf.if``, or the outermost loop
around it, else the whole function. The kernels here are a cube entry pushing one
``rows x cols`` f32 accumulator to its vector peer in one of two branches (chosen by the
scalar argument ``%mode``); each branch of the vector function reserves its own FIFO
buffer of one slot (``rows x cols x 4`` bytes, the two branches' at different bases) and
computes ``r = x * s + u`` in two tiles of half a slot (``s`` = 2 in the then branch, 3 in
the else branch). With a slot of 64-92 KiB the two FIFO buffers and one branch's tiles
(three slots) exceed the 184 KiB of UB below the scratch, while one branch's buffer and
tiles (two slots) fit: auto placement only succeeds when a branch's tiles take the other
branch's FIFO bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.isa.program import For, If, PipeOp, walk
from sim.placement import plan_auto
from sim.placement.alloc import fifo_spans


def _kernel(rows: int, cols: int) -> str:
    at = f"!pto.tile_buf<acc, {rows}x{cols}xf32>"
    vt = f"!pto.tile_buf<vec, {rows // 2}x{cols}xf32>"
    slot = rows * cols * 4
    half = slot // 2

    def cube(name):
        return f"""      %buf_{name} = pto.import_reserved_buffer {{name = "{name}", peer_func = @k_aiv}} -> i32
      pto.aic_initialize_pipe {{id = 0, dir_mask = 1, slot_size = {slot}}} (c2v_consumer_buf = %buf_{name} : i32)
      %t_{name} = pto.alloc_tile addr = %z : {at}
      pto.tpush_to_aiv(%t_{name} : {at}) {{split = 1}}
"""

    def vec(name, base, s, ax, ar):  # hand addresses: the manual form's, auto drops them
        return f"""      %buf_{name} = pto.reserve_buffer {{name = "{name}", size = {slot}, location = #pto.address_space<vec>, auto = false, base = {base}}} -> i32
      pto.aiv_initialize_pipe {{id = 0, dir_mask = 1, slot_size = {slot}}} (c2v_consumer_buf = %buf_{name} : i32)
      %u_{name} = pto.tpop_from_aic {{split = 1}} -> {vt}
      %ax_{name} = arith.constant {ax} : i64
      %ar_{name} = arith.constant {ar} : i64
      %x_{name} = pto.alloc_tile addr = %ax_{name} : {vt}
      pto.tload ins(%px : !PV) outs(%x_{name} : {vt})
      %r_{name} = pto.alloc_tile addr = %ar_{name} : {vt}
      pto.tmuls ins(%x_{name}, %s{s} : {vt}, f32) outs(%r_{name} : {vt})
      pto.tadd ins(%r_{name}, %u_{name} : {vt}, {vt}) outs(%r_{name} : {vt})
      pto.tfree_from_aic {{split = 1}}
      pto.tstore ins(%r_{name} : {vt}) outs(%po : !PV)
"""

    return f"""!PV = !pto.partition_tensor_view<{rows // 2}x{cols}xf32>
!TV = !pto.tensor_view<?x?xf32>
module {{
  func.func @k_aic(%x: !pto.ptr<f32>, %o: !pto.ptr<f32>, %mode: index) attributes {{pto.entry, pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %z = arith.constant 0 : i64
    %is0 = arith.cmpi eq, %mode, %c0 : index
    scf.if %is0 {{
{cube("fa")}    }} else {{
{cube("fb")}    }}
    return
  }}
  func.func @k_aiv(%x: !pto.ptr<f32>, %o: !pto.ptr<f32>, %mode: index) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cr = arith.constant {rows // 2} : index
    %cc = arith.constant {cols} : index
    %s0 = arith.constant 2.0 : f32
    %s1 = arith.constant 3.0 : f32
    %sb = pto.get_subblock_idx
    %sbi = arith.index_cast %sb : i64 to index
    %row = arith.muli %sbi, %cr : index
    %tx = pto.make_tensor_view %x, shape = [{rows}, %cc], strides = [%cc, %c1] : !TV
    %to = pto.make_tensor_view %o, shape = [{rows}, %cc], strides = [%cc, %c1] : !TV
    %px = pto.partition_view %tx, offsets = [%row, %c0], sizes = [%cr, %cc] : !TV -> !PV
    %po = pto.partition_view %to, offsets = [%row, %c0], sizes = [%cr, %cc] : !TV -> !PV
    %is0 = arith.cmpi eq, %mode, %c0 : index
    scf.if %is0 {{
{vec("fa", 0, 0, slot, slot + half)}    }} else {{
{vec("fb", slot, 1, 0, half)}    }}
    return
  }}
}}
"""


SHAPES = [(128, 128), (64, 256), (128, 160)]  # slots of 64, 64 and 80 KiB


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_tiles_of_one_branch_take_the_other_branchs_fifo_bytes(rows, cols):
    prog = sim.parse_text(_kernel(rows, cols), "branches.pto")
    plan = plan_auto(prog, "a2a3")
    slot = rows * cols * 4
    fifo = {"fa": (0, slot), "fb": (slot, 2 * slot)}
    ub = {t.name: s for t, s in plan.slots.items() if s.buffer == "UB"}
    assert set(ub) == {"x_fa", "r_fa", "x_fb", "r_fb"}
    for name, s in ub.items():
        own, other = fifo[name[-2:]], fifo["fb" if name.endswith("fa") else "fa"]
        for a in s.addrs:
            end = a + s.nbytes
            assert end <= own[0] or own[1] <= a, name  # never its own branch's FIFO
    # the two tiles of a branch (a full slot) cannot both sit outside both FIFO buffers
    # (UB minus two slots < one slot): some tile of each branch shares the other's bytes
    for b in ("fa", "fb"):
        other = fifo["fb" if b == "fa" else "fa"]
        assert any(
            a < other[1] and other[0] < a + s.nbytes
            for n, s in ub.items()
            if n.endswith(b)
            for a in s.addrs
        ), b


@pytest.mark.parametrize("rows,cols", SHAPES)
@pytest.mark.parametrize("mode,scale", [(0, 2.0), (1, 3.0)])
def test_the_auto_program_runs_race_free_and_right_in_either_branch(rows, cols, mode, scale):
    prog = sim.parse_text(_kernel(rows, cols), "branches.pto")
    r = sim.simulate(
        plan_auto(prog, "a2a3").program, "a2a3", inputs={"mode": mode}, races=True, sync="manual"
    )
    assert r.races_checked and not r.races, r.races[:1]
    x = r.output("x").reshape(rows, cols)
    # the pushed accumulator is never written: zeros, so r = x * s exactly in f32
    assert np.array_equal(r.output("o").reshape(rows, cols), (x * np.float32(scale)))


def test_compare_runs_both_sides_to_the_same_output():
    from sim.studies import run_comparison

    prog = sim.parse_text(_kernel(128, 128), "branches.pto")
    c = run_comparison(prog, "a2a3", inputs={"mode": 1})
    assert c.auto.metrics()["races"] == 0
    assert np.array_equal(c.manual.result.output("o"), c.auto.result.output("o"))


def test_a_fifo_buffer_is_held_over_its_branch_or_its_outermost_loop():
    text = """module {
  func.func @k(%n: index) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %top = pto.reserve_buffer {name = "top", size = 1024, location = #pto.address_space<vec>, auto = true} -> i32
    %p = arith.cmpi eq, %n, %c0 : index
    scf.if %p {
      %inb = pto.reserve_buffer {name = "inb", size = 1024, location = #pto.address_space<vec>, auto = true} -> i32
      scf.for %i = %c0 to %n step %c1 {
        %inl = pto.reserve_buffer {name = "inl", size = 1024, location = #pto.address_space<vec>, auto = true} -> i32
      }
    } else {
      scf.for %j = %c0 to %n step %c1 {
        scf.if %p {
          %inloop = pto.reserve_buffer {name = "inloop", size = 1024, location = #pto.address_space<vec>, auto = true} -> i32
        }
      }
    }
    return
  }
}
"""
    fn = sim.parse_text(text, "spans.pto").main
    pos = {}
    for i, st in enumerate(walk(fn.body)):
        pos[id(st)] = i
    spans = {
        dict(st.attrs)["name"]: fifo_spans(fn)[id(st)]
        for st in walk(fn.body)
        if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer"
    }
    last = len(list(walk(fn.body))) - 1
    branch = next(st for st in fn.body if isinstance(st, If))
    then = [pos[id(s)] for s in walk(branch.then_body)]
    loops = [st for st in walk(fn.body) if isinstance(st, For)]
    inner_loop = (pos[id(loops[0])], max(pos[id(s)] for s in walk(loops[0].body)))
    outer_loop = (pos[id(loops[1])], max(pos[id(s)] for s in walk(loops[1].body)))
    assert spans == {
        "top": (0, last),
        "inb": (min(then), max(then)),
        "inl": inner_loop,
        "inloop": outer_loop,
    }


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_auto_fifo_buffers_of_exclusive_branches_take_the_same_bytes(rows, cols):
    """With ``auto = true`` the plan places each branch's FIFO buffer at the lowest address
    free of the buffers held at the same time: the other branch's is not, so both start at
    0; the program then runs race-free and right in either branch."""
    slot = rows * cols * 4
    text = _kernel(rows, cols)
    for base in (0, slot):
        text = text.replace(f"auto = false, base = {base}}}", "auto = true}")
    plan = plan_auto(sim.parse_text(text, "auto_fifo.pto"), "a2a3")
    bases = {
        dict(st.attrs)["name"]: dict(st.attrs)["base"]
        for f in plan.program.functions
        for st in walk(f.body)
        if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer"
    }
    assert bases == {"fa": 0, "fb": 0}
    for mode, scale in ((0, 2.0), (1, 3.0)):
        r = sim.simulate(plan.program, "a2a3", inputs={"mode": mode}, races=True, sync="manual")
        assert not r.races
        x = r.output("x").reshape(rows, cols)
        assert np.array_equal(r.output("o").reshape(rows, cols), x * np.float32(scale))
