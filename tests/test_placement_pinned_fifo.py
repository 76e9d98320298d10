"""Auto placement around hand-placed tiles and FIFO buffers (``sim.placement.alloc``).

* A tile whose ``alloc_tile`` has a constant address keeps it in a run that keeps hand
  addresses (``plan_auto(keep_addresses=True)``, the default run of a kernel without
  sync): it is never moved, never given a second copy in a loop, and the tiles placed by
  the simulator fit around it — whatever their order in the program.
* A FIFO buffer reserved inside nested loops holds its bytes over the *outermost* loop
  (the peer may fill it in any iteration of any enclosing loop): a tile live anywhere in
  that loop is kept off its bytes, a tile live only after the loop may take them. A tile
  live at the very first or last position of the FIFO's region overlaps it.

Expected addresses follow from the first-fit rule by hand (UB: 32-B alignment, a 4 KiB
tile is 16 x 64 f32).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import sim
from sim.isa.program import Alloc, Const, For, Function, If, Instr, PipeOp, Scalar, walk
from sim.isa.tile import Tile, TileType
from sim.placement import plan_auto
from sim.placement.alloc import allocate, fifo_spans, held_during
from sim.target import load_target

KIB = 1024
T4 = TileType("vec", "f32", 16, 64)  # 4 KiB


def _ranges(slots) -> list[tuple]:
    """(name, start, end, live) of every copy of every placed tile."""
    return [(t.name, a, a + s.nbytes, s.live) for t, s in slots.items() for a in s.addrs]


def _assert_live_tiles_apart(slots) -> None:
    for (n1, s1, e1, l1), (n2, s2, e2, l2) in itertools.combinations(_ranges(slots), 2):
        if n1 != n2 and l1[0] <= l2[1] and l2[0] <= l1[1]:
            assert e1 <= s2 or e2 <= s1, f"{n1} [{s1:#x}, {e1:#x}) overlaps {n2} [{s2:#x}, {e2:#x})"


# ---- hand-placed (pinned) tiles among auto-placed ones --------------------------------------


def _straight(pin_addr: int) -> sim.Kernel:
    """Three 4 KiB tiles live at once; the hand-placed one (``p``) is declared and first
    used last, so a placement in program order would put an auto tile on its bytes."""
    k = sim.Kernel("pinned")
    outs = {n: k.gm(n, "f32", (16, 64)) for n in ("y1", "y2", "yp")}
    t1 = k.tile("vec", "f32", 16, 64, name="t1")
    t2 = k.tile("vec", "f32", 16, 64, name="t2")
    p = k.tile("vec", "f32", 16, 64, name="p", addr=pin_addr)
    k.TEXPANDS(t1, 1.0)
    k.TEXPANDS(t2, 2.0)
    k.TEXPANDS(p, 4.0)
    k.TSTORE(outs["y1"], t1)
    k.TSTORE(outs["y2"], t2)
    k.TSTORE(outs["yp"], p)
    return k


def test_a_pinned_tile_keeps_its_address_and_auto_tiles_fit_around_it():
    plan = plan_auto(_straight(0x1000), keep_addresses=True)
    addrs = {t.name: s.addrs for t, s in plan.slots.items()}
    assert addrs["p"] == (0x1000,)
    # t1 takes the gap below p exactly, t2 the first address above it
    assert addrs["t1"] == (0,)
    assert addrs["t2"] == (0x2000,)
    _assert_live_tiles_apart(plan.slots)


@pytest.mark.parametrize("pin_addr", [0, 0x2000, 0x2FE0])
def test_auto_tiles_never_take_a_pinned_tiles_bytes(pin_addr):
    plan = plan_auto(_straight(pin_addr), keep_addresses=True)
    assert {t.name: s.addrs for t, s in plan.slots.items()}["p"] == (pin_addr,)
    _assert_live_tiles_apart(plan.slots)
    r = sim.simulate(_straight(pin_addr), races=True)
    assert r.mode == "auto" and r.races == ()
    for name, v in (("y1", 1.0), ("y2", 2.0), ("yp", 4.0)):
        assert (r.output(name) == v).all(), name


def _loop_with_pinned(n: int, pin: dict) -> Function:
    """``for i: a = 1 + i-th fill; b = ...; r = a - b`` with fresh tiles per iteration (each
    first written in the body); the tiles named in ``pin`` have constant addresses."""
    i = Scalar("i")
    a, b, r = Tile("a", T4), Tile("b", T4), Tile("r", T4)
    body = [Alloc(t, Const(pin[t.name], "i64") if t.name in pin else None) for t in (a, b, r)]
    body += [
        Instr("TEXPANDS", (a,), (Const(5.0, "f32"),)),
        Instr("TEXPANDS", (b,), (Const(2.0, "f32"),)),
        Instr("TSUB", (r,), (a, b)),
        Instr("TADDS", (r,), (r, Const(1.0, "f32"))),
    ]
    return Function("loop", (), (For(i, Const(0), Const(n), Const(1), tuple(body)),))


def test_a_pinned_tile_in_a_loop_body_is_never_double_buffered():
    fn = _loop_with_pinned(4, {"b": 0x2000})
    slots = allocate(fn, load_target("a2a3"), pinned={Tile("b", T4): 0x2000})
    by = {t.name: s for t, s in slots.items()}
    assert by["b"].addrs == (0x2000,) and not by["b"].double and by["b"].loop is None
    # the others are fresh per iteration: two copies each, none on b's bytes
    assert by["a"].double and by["r"].double
    _assert_live_tiles_apart(slots)
    # without the pin, b is double-buffered like the others
    free = {t.name: s for t, s in allocate(fn, load_target("a2a3")).items()}
    assert free["b"].double


def test_a_pinned_loop_tile_through_plan_auto():
    from sim.isa.program import Program

    prog = Program((_loop_with_pinned(4, {"a": 0}),), "loop")
    plan = plan_auto(prog, keep_addresses=True)
    assert "a" not in plan.double_buffered
    assert sorted(plan.double_buffered) == ["b", "r"]
    assert {t.name: s.addrs for t, s in plan.slots.items()}["a"] == (0,)
    _assert_live_tiles_apart(plan.slots)


# ---- FIFO buffers in nested loops ------------------------------------------------------------


def _reserve(name: str, size: int = KIB) -> PipeOp:
    return PipeOp(
        (Scalar(f"buf_{name}"),),
        "pto.reserve_buffer",
        (),
        {"name": name, "size": size, "location": "vec", "auto": True},
    )


def _positions(fn) -> dict:
    return {id(st): i for i, st in enumerate(walk(fn.body))}


def _span_of(fn, st) -> tuple:
    pos = _positions(fn)
    inner = list(walk(st.body if isinstance(st, For) else ()))
    return (pos[id(st)], max(pos[id(s)] for s in inner))


def test_a_fifo_in_nested_loops_is_held_over_the_outermost():
    i, j, k = Scalar("i"), Scalar("j"), Scalar("k")
    f2, f3, fb = _reserve("two"), _reserve("three"), _reserve("branch")
    x = Tile("x", T4)

    def fill(v: float) -> Instr:  # distinct statements: positions are keyed by identity
        return Instr("TEXPANDS", (x,), (Const(v, "f32"),))

    innermost = For(k, Const(0), Const(2), Const(1), (f3, fill(1.0)))
    middle = For(j, Const(0), Const(2), Const(1), (f2, innermost, fill(2.0)))
    outer = For(i, Const(0), Const(2), Const(1), (fill(3.0), middle, fill(4.0)))
    branchy = For(
        i,
        Const(0),
        Const(2),
        Const(1),
        (If(Scalar("c"), (For(j, Const(0), Const(2), Const(1), (fb,)),), ()),),
    )
    fn = Function("k", (), (Alloc(x), fill(5.0), outer, branchy, fill(6.0)))
    spans = fifo_spans(fn)
    assert spans[id(f2)] == _span_of(fn, outer)
    assert spans[id(f3)] == _span_of(fn, outer)
    # a loop inside a branch inside a loop: still the outermost loop
    assert spans[id(fb)] == _span_of(fn, branchy)


def _fifo_kernel():
    """A 1 KiB FIFO reserved two loops deep; ``mid`` is used in the outer loop's body
    after the inner loop (never in it), ``late`` only after the outer loop."""
    i, j = Scalar("i"), Scalar("j")
    fifo = _reserve("f")
    mid, late, inner = Tile("mid", T4), Tile("late", T4), Tile("inner", T4)
    one = Const(1.0, "f32")
    inner_loop = For(j, Const(0), Const(2), Const(1), (fifo, Instr("TEXPANDS", (inner,), (one,))))
    outer = For(
        i,
        Const(0),
        Const(2),
        Const(1),
        (inner_loop, Instr("TEXPANDS", (mid,), (one,)), Instr("TADDS", (mid,), (mid, one))),
    )
    body = (
        Alloc(mid),
        Alloc(late),
        Alloc(inner),
        outer,
        Instr("TEXPANDS", (late,), (one,)),
        Instr("TADDS", (late,), (late, one)),
    )
    return Function("k", (), body), fifo


def test_tiles_keep_off_a_nested_fifo_over_the_whole_outer_loop():
    fn, fifo = _fifo_kernel()
    span = fifo_spans(fn)[id(fifo)]
    slots = allocate(fn, load_target("a2a3"), reserved={"UB": [(0, KIB, span)]})
    by = {t.name: s for t, s in slots.items()}
    # inside the inner loop and in the outer loop's body after it: off the FIFO's bytes
    assert by["inner"].addrs[0] >= KIB
    assert by["mid"].addrs[0] >= KIB
    # only after the outer loop: the FIFO is no longer held, its bytes are free again
    assert by["late"].addrs == (0,)


def test_fifo_overlap_is_inclusive_at_both_ends():
    held = {"UB": [(0, 100, (5, 10)), (200, 300)]}
    whole = (200, 300)
    for live in ((10, 12), (0, 5), (5, 5), (10, 10), (7, 8), (0, 20)):
        assert held_during(held, "UB", live) == [(0, 100), whole], live
    for live in ((11, 12), (0, 4), (4, 4), (11, 11)):
        assert held_during(held, "UB", live) == [whole], live
    assert held_during(held, "L1", (0, 20)) == []


def test_a_tile_at_the_fifos_last_position_keeps_off_it():
    """An allocation that is never used is live at its own position only: the last
    statement of the loop holding the FIFO overlaps the FIFO's region, the statement
    right after the loop does not."""
    i = Scalar("i")
    fifo = _reserve("f")
    edge, past, before = Tile("edge", T4), Tile("past", T4), Tile("before", T4)
    loop = For(i, Const(0), Const(2), Const(1), (fifo, Alloc(edge)))
    fn = Function("k", (), (Alloc(before), loop, Alloc(past)))
    span = fifo_spans(fn)[id(fifo)]
    pos = _positions(fn)
    assert span == (pos[id(loop)], pos[id(loop)] + 2)
    by = {
        t.name: s
        for t, s in allocate(fn, load_target("a2a3"), reserved={"UB": [(0, KIB, span)]}).items()
    }
    assert by["edge"].live == (span[1], span[1]) and by["edge"].addrs[0] >= KIB
    assert by["past"].addrs == (0,) and by["before"].addrs == (0,)


@pytest.mark.parametrize("pinned_first", [True, False])
def test_a_pinned_tile_and_its_binary_partner_stay_in_different_banks(pinned_first):
    """t1 + p (or p + t1) with p pinned at 0: the auto tile skips the addresses in p's UB
    bank, whichever source of the TADD it is."""
    k = sim.Kernel("partners")
    y = k.gm("y", "f32", (16, 64))
    t1 = k.tile("vec", "f32", 16, 64, name="t1")
    p = k.tile("vec", "f32", 16, 64, name="p", addr=0)
    k.TEXPANDS(t1, 1.0)
    k.TEXPANDS(p, 2.0)
    k.TSUB(t1, *((p, t1) if pinned_first else (t1, p)))
    k.TSTORE(y, t1)
    plan = plan_auto(k, keep_addresses=True)
    addrs = {t.name: s.addrs for t, s in plan.slots.items()}
    assert addrs == {"p": (0,), "t1": (0x1000 + 32,)}
    r = sim.simulate(k)
    want = 1.0 if pinned_first else -1.0
    np.testing.assert_array_equal(r.output("y"), np.full(16 * 64, want, np.float32))


def test_tassign_names_an_address_and_is_no_access():
    """A TASSIGN between t1's accesses does not make t2 live there: t2's first access comes
    after t1's last, so the two share bytes."""
    t1, t2 = Tile("t1", T4), Tile("t2", T4)
    one = Const(1.0, "f32")
    body = (
        Alloc(t1),
        Alloc(t2),
        Instr("TEXPANDS", (t1,), (one,)),
        Instr("TASSIGN", (t2,), (Const(0x4000, "i64"),)),
        Instr("TADDS", (t1,), (t1, one)),
        Instr("TEXPANDS", (t2,), (one,)),
        Instr("TADDS", (t2,), (t2, one)),
    )
    slots = allocate(Function("k", (), body), load_target("a2a3"))
    by = {t.name: s for t, s in slots.items()}
    assert by["t1"].live == (2, 4) and by["t2"].live == (5, 6)
    assert by["t1"].addrs == by["t2"].addrs == (0,)


def test_a_fifo_inside_a_section_is_held_as_outside_it():
    """A ``pto.section`` adds no region: a FIFO reserved in a section at the top is held
    for the whole function, one in a loop inside a section over that loop (positions count
    the section's statements in pre-order)."""
    from sim.isa.program import Section

    i = Scalar("i")
    top, looped = _reserve("top"), _reserve("looped")
    x = Tile("x", T4)
    fill = Instr("TEXPANDS", (x,), (Const(1.0, "f32"),))
    loop = For(i, Const(0), Const(2), Const(1), (looped,))
    fn = Function("k", (), (Alloc(x), Section("vector", (top, loop)), fill))
    spans = fifo_spans(fn)
    last = len(list(walk(fn.body))) - 1
    assert spans[id(top)] == (0, last)
    assert spans[id(looped)] == _span_of(fn, loop)
