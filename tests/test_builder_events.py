"""Event-id allocation of the builder: the interval index agrees with a plain scan, and
RecordEvent tokens get the lowest id free over their whole pending span."""

from hypothesis import given, settings, strategies as st

import sim
from sim.builder import _Intervals
from sim.isa.program import SetFlag, WaitFlag


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20), st.booleans()), max_size=40),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=20))
def test_intervals_agree_with_a_scan(adds, queries):
    index, plain = _Intervals(), []
    for s, length, force in adds:
        e = s + length
        free = all(b < s or a > e for a, b in plain)
        assert index.free(s, e) == free
        if free or force:           # forced adds overlap, as hand-written set/wait pairs may
            index.add(s, e)
            plain.append((s, e))
    for s, length in queries:
        e = s + length
        assert index.free(s, e) == all(b < s or a > e for a, b in plain)


def test_tokens_take_the_lowest_free_id_and_reuse_it_after_the_wait():
    k = sim.Kernel("ids")
    a, b = k.tile("vec", "f32", 8, 64), k.tile("vec", "f32", 8, 64)
    x = k.gm("x", "f32", (8, 64))
    loads = [k.TLOAD(a, x) for _ in range(3)]          # three tokens pending at once
    for e in loads:
        k.TADD(b, a, a, e)
    k.TADD(b, a, a, k.TLOAD(a, x))                     # all waited on: id 0 is free again
    body = k.program().main.body
    sets = [s.event for s in body if isinstance(s, SetFlag)]
    waits = [s.event for s in body if isinstance(s, WaitFlag)]
    assert sets == [0, 1, 2, 0] and waits == [0, 1, 2, 0]
