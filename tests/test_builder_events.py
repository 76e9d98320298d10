"""Event-id allocation of the builder: the interval index agrees with a plain scan, and
RecordEvent tokens get the lowest id free over their whole pending span."""

from hypothesis import given, settings
from hypothesis import strategies as st

import sim
from sim.isa.program import SetFlag, WaitFlag
from sim.kernel.builder import _Intervals


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20), st.booleans()), max_size=40),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=20),
)
def test_intervals_agree_with_a_scan(adds, queries):
    index, plain = _Intervals(), []
    for s, length, force in adds:
        e = s + length
        free = all(b < s or a > e for a, b in plain)
        assert index.free(s, e) == free
        if free or force:  # forced adds overlap, as hand-written set/wait pairs may
            index.add(s, e)
            plain.append((s, e))
    for s, length in queries:
        e = s + length
        assert index.free(s, e) == all(b < s or a > e for a, b in plain)


def test_tokens_take_the_lowest_free_id_and_reuse_it_once_the_producer_waited_for_the_wait():
    """An id is reused only when the new set surely fires after the old wait: program order
    is not enough (MTE2 runs ahead of PIPE_V), the producer's pipe must have waited for the
    consumer's pipe to pass that wait."""
    k = sim.Kernel("ids")
    a, b = k.tile("vec", "f32", 8, 64), k.tile("vec", "f32", 8, 64)
    x = k.gm("x", "f32", (8, 64))
    loads = [k.TLOAD(a, x) for _ in range(3)]  # three tokens pending at once
    for e in loads:
        last = k.TADD(b, a, a, e)
    k.TADD(b, a, a, k.TLOAD(a, x))  # waits 0-2 come first in the program, but MTE2 never
    #                                    waited for PIPE_V: a fresh id
    k.TADD(b, a, a, k.TLOAD(a, x, last))  # this load waits for the TADD after wait 0-2
    body = k.program().main.body
    sets = [(s.src, s.event) for s in body if isinstance(s, SetFlag)]
    waits = [(s.src, s.event) for s in body if isinstance(s, WaitFlag)]
    mte2 = [e for p, e in sets if p == "PIPE_MTE2"]
    assert mte2 == [0, 1, 2, 3, 0]
    assert [e for p, e in waits if p == "PIPE_MTE2"] == mte2


def test_a_full_barrier_lets_every_id_be_reused():
    k = sim.Kernel("ids")
    a, b = k.tile("vec", "f32", 8, 64), k.tile("vec", "f32", 8, 64)
    x = k.gm("x", "f32", (8, 64))
    k.TADD(b, a, a, k.TLOAD(a, x))
    k.pipe_barrier("PIPE_ALL")
    k.TADD(b, a, a, k.TLOAD(a, x))
    sets = [s.event for s in k.program().main.body if isinstance(s, SetFlag)]
    assert sets == [0, 0]
