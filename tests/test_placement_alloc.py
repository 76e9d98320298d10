"""Auto placement: liveness-based reuse, reserved ranges, capacity, banks, double buffering.

Expected addresses are worked out by hand from the first-fit rule of
``sim.placement.alloc`` (UB: 196 608 B, 32-B alignment, reserved [188 416, 196 608)).
"""

from itertools import pairwise

import numpy as np
import pytest
from placement_kernels import gm_inputs, loop_program

import sim
from sim.isa.program import Alloc, Arith, For, Instr, Scalar
from sim.placement import plan_auto, to_auto
from sim.placement.ir import walk

KIB = 1024


def _k():
    k = sim.Kernel("k")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    z = k.gm("z", "f32", (16, 64))
    return k, x, y, z


def _addr(plan, name):
    return {t.name: s for t, s in plan.slots.items()}[name].addrs


def test_disjoint_live_ranges_share_an_address_and_stay_ordered():
    k, x, y, z = _k()
    t1 = k.tile("vec", "f32", 16, 64, name="t1")
    t2 = k.tile("vec", "f32", 16, 64, name="t2")
    k.TEXPANDS(t1, 1.0)
    k.TSTORE(y, t1)  # last use of t1
    k.TEXPANDS(t2, 2.0)  # t2 is live only after t1 died
    k.TSTORE(z, t2)
    plan = plan_auto(k)
    assert _addr(plan, "t1") == _addr(plan, "t2") == (0,)
    # sharing bytes is safe: the pass orders TEXPANDS(t2) after TSTORE(t1) (WAR MTE3 -> V)
    r = sim.simulate(plan.program, races=True)
    assert r.races == ()
    assert (r.output("y") == 1.0).all() and (r.output("z") == 2.0).all()


def test_overlapping_live_ranges_get_disjoint_bytes():
    k, x, y, z = _k()
    t1 = k.tile("vec", "f32", 16, 64, name="t1")
    t2 = k.tile("vec", "f32", 16, 64, name="t2")
    k.TEXPANDS(t1, 1.0)
    k.TEXPANDS(t2, 2.0)
    k.TSTORE(y, t1)
    k.TSTORE(z, t2)
    plan = plan_auto(k)
    (a1,), (a2,) = _addr(plan, "t1"), _addr(plan, "t2")
    assert (a1, a2) == (0, 4096)  # 16x64 f32 = 4 KiB each, first fit
    r = sim.simulate(plan.program, races=True)
    assert r.races == () and (r.output("z") == 2.0).all()


def test_reserved_scratch_is_avoided_and_capacity_overflow_is_an_error():
    # 176 KiB + 8 KiB = 184 KiB: fits exactly below the TMP_UB_OFFSET scratch at 184 KiB
    k = sim.Kernel("fill")
    big = k.tile("vec", "f32", 64, 704, name="big")  # 64*704*4 = 176 KiB
    small = k.tile("vec", "f32", 32, 64, name="small")  # 8 KiB
    k.TEXPANDS(big, 1.0)
    k.TEXPANDS(small, 1.0)
    k.TADDS(big, big, 1.0)  # both live together
    plan = plan_auto(k)
    assert _addr(plan, "big") == (0,)
    assert _addr(plan, "small") == (176 * KIB,)  # ends at 184 KiB = 188 416
    assert 176 * KIB + 8 * KIB == 188_416
    # 12 KiB more would fit in the 192 KiB buffer only by using the reserved scratch
    k2 = sim.Kernel("overflow")
    big = k2.tile("vec", "f32", 64, 704, name="big")
    more = k2.tile("vec", "f32", 48, 64, name="more")  # 12 KiB
    k2.TEXPANDS(big, 1.0)
    k2.TEXPANDS(more, 1.0)
    k2.TADDS(big, big, 1.0)
    with pytest.raises(sim.UserError) as e:
        to_auto(k2)
    msg = str(e.value)
    assert "%more (12288 B) does not fit in UB" in msg and "%big [0x0, 0x2c000)" in msg
    assert f"{64 * 704 * 4} B are held by the tiles live at the same time" in msg


def test_bank_stagger_for_the_two_sources_of_a_binary_op():
    # a (4 KiB) at 0 is in bank 0; b would start at 4096, also bank 0 (4096/32 % 16 = 0),
    # so the allocator moves it one 32-B block up: 4128, bank 1
    k, x, y, z = _k()
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    c = k.tile("vec", "f32", 16, 64, name="c")
    k.TLOAD(a, x)
    k.TLOAD(b, y)
    k.TADD(c, a, b)
    k.TSTORE(z, c)
    plan = plan_auto(k)
    assert _addr(plan, "a") == (0,) and _addr(plan, "b") == (4128,)
    r = sim.simulate(plan.program, inputs=k.inputs, detail="cce")
    assert not r.trace["cce"].str.contains("ub_bank_conflict").any()


def test_loop_body_tiles_are_double_buffered_by_iteration_parity():
    prog = loop_program(8)
    plan = plan_auto(prog)
    assert sorted(plan.double_buffered) == ["a", "b", "r"]
    slots = {t.name: s for t, s in plan.slots.items()}
    ranges = sorted((a, a + s.nbytes) for s in slots.values() for a in s.addrs)
    assert len(ranges) == 6 and all(e <= s2 for (_, e), (s2, _) in pairwise(ranges))
    # the alloc_tile takes an address computed from ((i - 0) / 1) % 2
    loop = next(st for st in plan.program.main.body if isinstance(st, For))
    allocs = [st for st in loop.body if isinstance(st, Alloc)]
    assert all(isinstance(st.addr, Scalar) for st in allocs)
    assert any(isinstance(st, Arith) and st.op == "arith.remsi" for st in loop.body)
    inputs = gm_inputs(8 * 32)
    r = sim.simulate(plan.program, inputs=inputs, races=True)
    assert r.races == ()
    want = np.maximum(inputs["pa"] - inputs["pb"], 0) * np.float32(0.25)
    assert np.array_equal(r.output("po"), want)
    # double buffering lets iteration i+1's loads run under iteration i's vector work
    single = plan_auto(prog, double_buffer=False)
    assert single.double_buffered == ()
    r1 = sim.simulate(single.program, inputs=inputs, races=True)
    assert r1.races == () and np.array_equal(r1.output("po"), want)
    assert r.total_cycles < r1.total_cycles
    # occupancy follows the copies: iteration i's first access (TLOAD a / b, TSUB r)
    # switches a tile to copy i % 2; all six copies are in use at once
    from sim.placement.metrics import occupancy, peak_bytes

    double = {t.name: (*s.addrs, *plan.first_access[t.name]) for t, s in plan.slots.items()}
    occ = occupancy(r.trace, plan.program, {}, double)
    assert sorted(zip(occ["tile"], occ["start_byte"], strict=True)) == sorted(
        (n, a) for n, s in slots.items() for a in s.addrs
    )
    assert peak_bytes(occ) == {"UB": 6 * 8192}


def test_a_value_carried_across_iterations_is_not_double_buffered():
    plan = plan_auto(loop_program(4, carried=True))
    slots = {t.name: s for t, s in plan.slots.items()}
    assert not slots["acc"].double  # first access reads it: carried
    assert slots["a"].double
    r = sim.simulate(plan.program, inputs=gm_inputs(4 * 32), races=True)
    assert r.races == ()


def test_to_auto_strips_manual_addresses_flags_and_tassign():
    k, x, y, z = _k()
    a = k.tile("vec", "f32", 16, 64, name="a", addr=0x1000)
    e = k.TLOAD(a, x)
    k.TASSIGN(a, 0x2000)
    k.set_flag("PIPE_MTE2", "PIPE_V", 5)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 5)
    k.TADDS(a, a, 1.0, e)
    k.TSTORE(y, a)
    prog = to_auto(k)
    stmts = list(walk(prog.main.body))
    assert not any(getattr(s, "opcode", "") == "TASSIGN" for s in stmts)
    assert not any(getattr(s, "event", None) == 5 for s in stmts)
    assert [s.addr.value for s in stmts if isinstance(s, Alloc)] == [0]


def test_both_copies_of_a_double_buffered_tile_are_held_over_the_whole_loop():
    """Positions number the statements in pre-order: the loop is at its index in the flat
    function body, its body's statement j at loop + 1 + j. A double-buffered tile is live
    over the whole loop; with double buffering off, a fresh tile lives from its first access
    to its last."""
    prog = loop_program(8)
    top = prog.main.body
    at = next(i for i, st in enumerate(top) if isinstance(st, For))
    loop = top[at]
    span = (at, at + len(loop.body))
    slots = {t.name: s for t, s in plan_auto(prog).slots.items()}
    assert {n for n, s in slots.items() if s.double} == {"a", "b", "r"}
    assert {slots[n].live for n in "abr"} == {span}
    single = {t.name: s for t, s in plan_auto(prog, double_buffer=False).slots.items()}

    def uses(name):
        return [
            at + 1 + j
            for j, st in enumerate(loop.body)
            if isinstance(st, Instr)
            and name in {getattr(t, "name", None) for t in (*st.outs, *st.ins)}
        ]

    for n in "abr":
        assert single[n].live == (min(uses(n)), max(uses(n)))


def test_bytes_held_count_shared_bytes_once():
    from sim.placement.alloc import _union_bytes

    assert _union_bytes([(0, 10), (5, 20), (30, 40), (30, 35)]) == 20 + 10
    assert _union_bytes([(8, 16), (0, 4)]) == 12
    assert _union_bytes([]) == 0


@pytest.mark.parametrize("seed", range(6))
def test_the_frontier_keeps_each_bytes_latest_access_per_pipe(seed):
    """``_Frontier`` against a byte-by-byte model: after every ``add`` its segments are
    sorted and disjoint, each byte's map is the per-pipe maximum of every map added over
    it, and ``unordered`` returns exactly the bytes some pipe of which is past the bound."""
    from sim.placement.alloc import _Frontier

    rng = np.random.default_rng(seed)
    size, pipes = 48, ("V", "MTE2", "MTE3")
    front = _Frontier()
    model: list[dict] = [{} for _ in range(size)]
    for _ in range(12):
        lo = int(rng.integers(0, size - 1))
        hi = int(rng.integers(lo + 1, size + 1))
        last = {p: int(rng.integers(1, 9)) for p in pipes if rng.random() < 0.6} or {"V": 1}
        front.add(lo, hi, last)
        for b in range(lo, hi):
            for p, k in last.items():
                model[b][p] = max(model[b].get(p, 0), k)
        segs = front.segs
        assert all(s < e for s, e, _ in segs)
        assert all(e1 <= s2 for (_, e1, _), (s2, _, _) in pairwise(segs))
        seen = [None] * size
        for s, e, m in segs:
            for b in range(s, e):
                seen[b] = m
        assert [m if m is not None else {} for m in seen] == model
        bound = {p: int(rng.integers(0, 9)) for p in pipes}
        qlo = int(rng.integers(0, size - 1))
        qhi = int(rng.integers(qlo + 1, size + 1))
        got = {
            b for s, e in front.unordered(qlo, qhi, bound) for b in range(max(s, qlo), min(e, qhi))
        }
        want = {b for b in range(qlo, qhi) if any(k > bound.get(p, 0) for p, k in model[b].items())}
        assert got == want


def test_tiles_are_placed_in_order_of_first_access_not_declaration():
    """Declared a, b, c; live b [0, 4], c [1, 2], a [3, 5]. In order of live-range start, b
    takes 0, c (live with b) the next 4 KiB, a (live with b, not with c) reuses c's bytes
    (off b's bank); in declaration order a would take 0 and c would come back to it."""
    k, x, y, z = _k()
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    c = k.tile("vec", "f32", 16, 64, name="c")
    k.TEXPANDS(b, 1.0)
    k.TEXPANDS(c, 2.0)
    k.TSTORE(z, c)
    k.TEXPANDS(a, 3.0)
    k.TADD(a, a, b)
    k.TSTORE(y, a)
    plan = plan_auto(k)
    assert _addr(plan, "b") == (0,) and _addr(plan, "c") == (4096,)
    (addr_a,) = _addr(plan, "a")
    assert 4096 <= addr_a < 8192
