"""The vector-stream cost rules of ``sim.timing.plan`` on hand-built item lists.

One made-up cost row per CCE instruction (head, slope per repeat, tail, F-op or not) and a
count-mode floor of 16 cycles; every expected figure below is worked out by hand from the
rules of timing-model.md §2.2-2.3 as the module states them:

* a vector item costs ``slope * repeats``; ``+ head + tail`` when it opens the stream
  (cold); ``+ floor`` when it is an F-op issued with a partial mask;
* after a barrier (an item with ``breaks_stream``) on a busy pipe the next vector item
  *restarts*: under the ``"latency"`` rule like a cold start, under ``"tail"`` it pays
  ``max(tail, floor)`` instead of ``head + tail (+ floor)``; on an idle pipe a barrier
  changes nothing;
* a ``copy`` item streams like a vector item and adds its bandwidth cycles; cfg, flag,
  scalar-loop and other items cost their fixed cycles.

``linear_terms`` must give the cold cost as ``const + sum(coef * parameter)`` with the same
rules.
"""

from __future__ import annotations

import pytest

from sim.target.model import CceCost
from sim.timing.plan import Item, evaluate, linear_terms, timeline

FLOOR = 16.0
COSTS = {
    "vadd": CceCost("vadd", head_cycles=10, slope_cycles_per_repeat=2, tail_cycles=20, floor=True),
    "vexp": CceCost("vexp", head_cycles=4, slope_cycles_per_repeat=3, tail_cycles=8, floor=False),
    "vsmall": CceCost(
        "vsmall", head_cycles=1, slope_cycles_per_repeat=1, tail_cycles=5, floor=True
    ),
    "copy_ubuf_to_ubuf": CceCost(
        "copy_ubuf_to_ubuf", head_cycles=6, slope_cycles_per_repeat=0, tail_cycles=7, floor=False
    ),
}
costs = COSTS.__getitem__
BAR = Item("bar", "pipe_barrier(PIPE_V)", cycles=1, breaks_stream=True)
CFG = Item("cfg", cycles=2)


def _cycles(items, state="cold", restart="latency"):
    steps, end = timeline(items, costs, FLOOR, state, restart)
    return [t for _, t in steps], end


def test_cold_warm_and_the_count_mode_floor():
    v = Item("v", "vadd", repeats=3)
    vm = Item("v", "vadd", repeats=3, masked=True)
    e = Item("v", "vexp", repeats=2, masked=True)  # not an F-op: no floor
    # cold: 2*3 + 10 + 20; then warm: 2*3 (+16 masked); vexp warm 3*2, masked but no floor
    assert _cycles([v, vm, e]) == ([36, 22, 6], "warm")
    assert _cycles([vm], "warm") == ([22], "warm")
    assert _cycles([e], "cold") == ([18], "warm")


def test_a_barrier_restarts_a_busy_pipe_by_the_targets_rule():
    v = Item("v", "vadd", repeats=4)
    vm = Item("v", "vadd", repeats=4, masked=True)
    # latency rule: 8 + 30, bar 1, restart like cold 8 + 30
    assert _cycles([v, BAR, v], restart="latency") == ([38, 1, 38], "warm")
    # ... and with the floor: 8 + 30 + 16
    assert _cycles([v, BAR, vm], restart="latency") == ([38, 1, 54], "warm")
    # tail rule: 8 + max(20, 0); masked F-op: 8 + max(20, 16)
    assert _cycles([v, BAR, v], restart="tail") == ([38, 1, 28], "warm")
    assert _cycles([v, BAR, vm], restart="tail") == ([38, 1, 28], "warm")
    # a floor above the tail wins: vsmall 1*4 + max(5, 16)
    s = Item("v", "vsmall", repeats=4, masked=True)
    assert _cycles([v, BAR, s], restart="tail") == ([38, 1, 20], "warm")
    # unmasked vsmall after the barrier: 4 + max(5, 0)
    assert _cycles([v, BAR, Item("v", "vsmall", repeats=4)], restart="tail")[0][2] == 9


def test_a_barrier_on_an_idle_pipe_leaves_it_cold_and_a_trailing_one_ends_in_restart():
    v = Item("v", "vadd", repeats=1)
    assert _cycles([BAR, v], "cold") == ([1, 32], "warm")
    assert _cycles([v, BAR]) == ([32, 1], "restart")
    # a restart state entered from outside: the next op's first item restarts
    assert _cycles([v], "restart", restart="tail") == ([22], "warm")
    assert _cycles([v], "restart", restart="latency") == ([32], "warm")
    # a non-barrier item keeps the state: cfg between two vector items
    assert _cycles([v, CFG, v]) == ([32, 2, 2], "warm")
    assert _cycles([BAR], "restart") == ([1], "restart")


def test_a_copy_streams_and_adds_its_bandwidth_cycles():
    copy = Item("copy", "copy_ubuf_to_ubuf", cycles=5, bytes=4096)
    v = Item("v", "vadd", repeats=2)
    # cold copy: 0 + 6 + 7 + 5 = 18; then vadd warm 4
    assert _cycles([copy, v]) == ([18, 4], "warm")
    # behind vector work: only its 5; after a barrier under "tail": max(7, 0) + 5
    assert _cycles([v, copy]) == ([34, 5], "warm")
    assert _cycles([v, BAR, copy], restart="tail") == ([34, 1, 12], "warm")


def test_fixed_cost_items():
    sloop = Item("sloop", "row_fold", repeats=100, cycles=250)
    flag = Item("flag", "set_flag", cycles=1)
    assert _cycles([sloop, flag, CFG]) == ([250, 1, 2], "cold")


@pytest.mark.parametrize("restart", ["latency", "tail"])
def test_evaluate_gives_the_three_entry_states(restart):
    v = Item("v", "vadd", repeats=4, masked=True)
    items = [CFG, v, BAR, Item("v", "vexp", repeats=1)]
    cold, warm, again, closed = evaluate(items, costs, FLOOR, restart)
    # cfg 2; vadd cold 8+30+16 / warm 8+16 / restart (latency 54, tail 8+max(20,16)=28);
    # bar 1; vexp restarts: latency 3 + 12, tail 3 + max(8, 0)
    vexp = 15 if restart == "latency" else 11
    assert cold == 2 + 54 + 1 + vexp
    assert warm == 2 + 24 + 1 + vexp
    assert again == 2 + (54 if restart == "latency" else 28) + 1 + vexp
    assert closed is False
    assert evaluate([v, BAR], costs, FLOOR, restart)[3] is True


@pytest.mark.parametrize("restart", ["latency", "tail"])
def test_linear_terms_by_hand(restart):
    v = Item("v", "vadd", repeats=4, masked=True)
    e = Item("v", "vexp", repeats=2)
    s = Item("v", "vsmall", repeats=3, masked=True)
    copy = Item("copy", "copy_ubuf_to_ubuf", cycles=5)
    items = [CFG, v, v, BAR, e, BAR, s, copy]
    const, coef = linear_terms(items, costs, FLOOR, restart)
    # constants: cfg 2, two masked vadd floors 32, two bars 2, the copy's 5
    # slopes: vadd 8 repeats, vexp 2, vsmall 3, copy 0
    assert coef[("slope", "vadd")] == 8
    assert coef[("slope", "vexp")] == 2
    assert coef[("slope", "vsmall")] == 3
    assert coef[("slope", "copy_ubuf_to_ubuf")] == 0
    assert coef[("latency", "vadd")] == 1  # the cold start only
    if restart == "latency":
        # vexp and vsmall restart with their full latency; vsmall's floor is a constant
        assert coef[("latency", "vexp")] == 1 and coef[("latency", "vsmall")] == 1
        assert const == 2 + 32 + 2 + 16 + 5
    else:
        # vexp pays its tail: 8 / 12 of its latency; vsmall's floor 16 > tail 5: constant
        assert coef[("latency", "vexp")] == pytest.approx(8 / 12)
        assert ("latency", "vsmall") not in coef
        assert const == 2 + 32 + 2 + 16 + 5
    assert ("latency", "copy_ubuf_to_ubuf") not in coef  # warm behind vsmall
    # the same number as evaluate's cold cost
    value = const + sum(
        c
        * (
            COSTS[n].slope_cycles_per_repeat
            if kind == "slope"
            else COSTS[n].head_cycles + COSTS[n].tail_cycles
        )
        for (kind, n), c in coef.items()
    )
    assert value == pytest.approx(evaluate(items, costs, FLOOR, restart)[0])


def test_linear_terms_of_a_restart_whose_tail_equals_the_floor():
    """tail == floor: the restart pays the tail share of the latency (the tie goes to it)."""
    tie = {
        "vt": CceCost("vt", head_cycles=4, slope_cycles_per_repeat=1, tail_cycles=16, floor=True)
    }
    v = Item("v", "vt", repeats=2, masked=True)
    const, coef = linear_terms([v, BAR, v], tie.__getitem__, FLOOR, "tail")
    assert coef[("latency", "vt")] == pytest.approx(1 + 16 / 20)
    assert const == 16 + 1


def test_item_text_in_the_trace():
    assert Item("v", "vdiv", repeats=1, masked=True).describe() == "vdiv(rep=1, masked)"
    assert Item("v", "vadd", repeats=32).describe() == "vadd(rep=32)"
    assert Item("dma", "GM_UB", bytes=8192).describe() == "GM_UB(8192 B)"
    assert Item("copy", "copy_ubuf_to_ubuf", bytes=256).describe() == "copy_ubuf_to_ubuf(256 B)"
    assert Item("sloop", "row_fold", repeats=100).describe() == "scalar_loop[row_fold](n=100)"
    assert Item("cube", "mad", repeats=4).describe() == "mad(rep=4)"
    assert Item("cfg", cycles=4).describe() == "cfg x4"
    assert Item("bank", repeats=16, cycles=16).describe() == "ub_bank_conflict(+16 over 16 rep)"
    assert Item("bar", "pipe_barrier(PIPE_V)").describe() == "pipe_barrier(PIPE_V)"
    assert Item("flag").describe() == "flag"
    assert Item("cube").describe() == "(rep=0)"  # defaults: no name, no repeats


def test_the_trace_names_the_stream_state_each_op_entered():
    """The ``stream`` column of a run: the first vector op opens the stream (cold), the next
    streams behind it (warm), and the op after TROWSUM (whose plan ends with a barrier)
    restarts it."""
    import sim

    k = sim.Kernel("stream")
    a, b, c = (k.tile("vec", "f32", 16, 64) for _ in range(3))
    k.TEXPANDS(a, 1.0)
    k.TEXPANDS(b, 2.0)
    k.TROWSUM(c, a)
    k.TADDS(b, b, 1.0)
    k.TSTORE(k.gm("y", "f32", (16, 64)), b)
    t = sim.simulate(k).trace
    ops = t[t.kind == "op"]
    stream = dict(zip(ops.index, ops.stream, strict=True))
    first, second = ops.index[:2]
    assert ops.opcode[first] == ops.opcode[second] == "TEXPANDS"
    assert (stream[first], stream[second]) == ("cold", "warm")
    assert ops[ops.opcode == "TADDS"].stream.tolist() == ["restart"]
    assert set(ops.stream) <= {"cold", "warm", "restart", ""}
