"""Race detection: unordered cross-pipe accesses to the same bytes, pending and unmatched sets."""

import sim


def _kernel(name="k"):
    k = sim.Kernel(name)
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    return k, x, y


def _kinds(r):
    return sorted(f.kind for f in r.races)


def test_missing_flags_give_raw_races_in_program_order():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    k.TLOAD(a, x)  # MTE2 writes a
    k.TADD(b, a, a)  # V reads a: no flag -> RAW
    k.TSTORE(y, b)  # MTE3 reads b written by V: RAW
    r = sim.simulate(k, races=True, sync="manual")  # as written
    assert _kinds(r) == ["RAW", "RAW"]
    msgs = " | ".join(f.message for f in r.races)
    assert (
        "PIPE_MTE2 #0 TLOAD" in msgs and "PIPE_V #1 TADD" in msgs and "PIPE_MTE3 #2 TSTORE" in msgs
    )
    first = next(f for f in r.races if "TLOAD" in f.first)
    assert first.space == "UB" and first.first_range == (0, 16 * 64 * 4)


def test_synchronised_chain_is_clean():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    b = k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(a, x)
    e = k.TADD(b, a, a, e)
    k.TSTORE(y, b, e)
    assert sim.simulate(k, races=True).races == ()


def test_war_on_reused_input_buffer():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    e = k.TLOAD(a, x[0:16, :])
    k.TADD(b, a, a, e)  # V reads a
    k.TLOAD(a, x[0:16, :])  # MTE2 overwrites a with no V -> MTE2 flag: WAR
    r = sim.simulate(k, races=True)
    assert [f.kind for f in r.races] == ["WAR"]
    assert "PIPE_V #3 TADD" in r.races[0].first or "TADD" in r.races[0].first
    assert "TLOAD" in r.races[0].second


def test_full_barrier_orders_everything():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    b = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.pipe_barrier("PIPE_ALL")
    k.TADD(b, a, a)
    k.pipe_barrier("PIPE_ALL")
    k.TSTORE(y, b)
    assert sim.simulate(k, races=True).races == ()


def test_overlapping_tiles_are_named_with_both_ranges():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64, name="a", addr=0x0)  # [0x0, 0x1000)
    b = k.tile("vec", "f32", 16, 64, name="b", addr=0x800)  # [0x800, 0x1800): overlaps a
    k.TLOAD(a, x)
    k.TEXPANDS(b, 1.0)  # V writes b while MTE2 writes a: WAW on the overlap
    r = sim.simulate(k, races=True, sync="manual")  # as written
    assert [f.kind for f in r.races] == ["WAW"]
    m = r.races[0].message
    assert "%a [0x0, 0x1000)" in m and "%b [0x800, 0x1800)" in m


def test_same_pipe_accesses_never_race():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    k.TEXPANDS(a, 1.0)
    k.TADDS(a, a, 1.0)
    k.TMULS(a, a, 2.0)
    assert sim.simulate(k, races=True).races == ()


def test_event_set_again_while_pending_and_unmatched_set():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 3)
    k.set_flag("PIPE_MTE2", "PIPE_V", 3)  # the first set is still pending
    k.wait_flag("PIPE_MTE2", "PIPE_V", 3)
    k.TADDS(a, a, 1.0)
    r = sim.simulate(k, races=True)
    kinds = _kinds(r)
    assert kinds == ["pending_set", "unmatched_set"]
    assert "PIPE_MTE2->PIPE_V#3" in r.races[0].message


def test_gm_round_trip_needs_ordering():
    # TSTORE (MTE3) then TLOAD (MTE2) of the same GM window with no flag: RAW through GM
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    b = k.tile("vec", "f32", 16, 64)
    e = k.TEXPANDS(a, 2.0)
    k.TSTORE(y, a, e)
    k.TLOAD(b, y)
    r = sim.simulate(k, races=True)
    assert [(f.kind, f.space) for f in r.races] == [("RAW", "GM:y")]


def test_race_checking_does_not_change_timing():
    k, x, y = _kernel()
    a = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.TADDS(a, a, 1.0)
    plain, checked = sim.simulate(k), sim.simulate(k, races=True)
    assert plain.total_cycles == checked.total_cycles
    assert plain.trace.equals(checked.trace)


TGETVAL = """
module {
  func.func @k(%pa: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %ta = pto.make_tensor_view %pa, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %va = pto.partition_view %ta, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    pto.tload ins(%va : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    SYNC
    %v = pto.tgetval ins(%t, %c5 : !pto.tile_buf<vec, 16x64xf32>, index) outs : f32
    return
  }
}
"""


def test_scalar_read_of_a_loading_tile_races_unless_synchronised():
    racy = sim.parse_text(TGETVAL.replace("SYNC", ""), "racy.pto")
    r = sim.simulate(racy, races=True)
    assert [(f.kind, f.space) for f in r.races] == [("RAW", "UB")]
    assert "PIPE_MTE2" in r.races[0].message and "PIPE_S" in r.races[0].message
    synced = TGETVAL.replace(
        "SYNC",
        'pto.set_flag["PIPE_MTE2", "PIPE_S", "EVENT_ID0"]\n'
        '    pto.wait_flag["PIPE_MTE2", "PIPE_S", "EVENT_ID0"]',
    )
    assert sim.simulate(sim.parse_text(synced, "ok.pto"), races=True).races == ()
