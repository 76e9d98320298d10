"""The static check of hand placements answered from the builder's note.

``sim.placement.bounds.static_problems`` walks every statement for ``alloc_tile addr=`` and
``TASSIGN``; a builder kernel repeats a few distinct statements 10^5 times, so the builder
notes the distinct placing statements as it records them (``sim.isa.known``) and the check
reads the note instead. Each case here checks the note's answer against the walk's (the
same program rebuilt as a new object, which carries no note): identical problems, in the
same order and number, over kernels with good and bad addresses (capacity, alignment, the
reserved scratch), by ``addr=`` and by ``TASSIGN``, repeated or not.
"""

from __future__ import annotations

import attrs
import pytest

import sim
from sim.isa.known import HAND_PLACEMENTS, known
from sim.placement.bounds import static_problems
from sim.target import load_target

UB = 196_608


def _kernel(addrs, assigns, repeats):
    """A vector kernel: tiles at ``addrs`` (None: placed by the simulator), ``TASSIGN``
    of each tile of ``assigns`` (tile index, address), the whole body ``repeats`` times."""
    k = sim.Kernel("k")
    x = k.gm("x", "f32", (16, 64))
    tiles = [k.tile("vec", "f32", 16, 64, name=f"t{i}", addr=a) for i, a in enumerate(addrs)]
    for _ in range(repeats):
        for i, a in assigns:
            k.TASSIGN(tiles[i], a)
        for t in tiles:
            e = k.TLOAD(t, x)
            k.TSTORE(x, t, e)
    return k


CASES = [
    ([0, 4096, None], [], 1),  # fine
    ([0, 4096], [(1, 8192)], 50),  # fine, TASSIGN repeated
    ([UB - 2048, 0], [], 3),  # past the end of UB
    ([0x10, 0], [], 2),  # not 32-B aligned
    ([188_416], [], 1),  # the A2/A3 scratch
    ([0, None], [(1, 0x44)], 20),  # TASSIGN misaligned, 20 times
    ([0, None], [(1, 4096), (1, UB)], 5),  # one TASSIGN good, one outside
]


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("addrs,assigns,repeats", CASES)
def test_the_note_gives_what_the_walk_gives(target, addrs, assigns, repeats):
    tgt = load_target(target)
    prog = _kernel(addrs, assigns, repeats).program()
    assert known(prog, HAND_PLACEMENTS) is not None
    copy = attrs.evolve(prog)  # the same statements, no note: the walk
    assert copy is not prog and known(copy, HAND_PLACEMENTS) is None
    walked = static_problems(copy, tgt)
    assert static_problems(prog, tgt) == walked
    ub = tgt.buffer("UB")
    lo = min([r[1] for r in ub.reserved] + [ub.capacity_bytes])

    def bad(a):  # 4 KiB tiles: off the alignment, past UB or into its scratch
        return a % ub.alignment_bytes or a + 4096 > lo

    n_assigned = sum(1 for i, a in assigns if bad(a))
    if any(a is not None and bad(a) for a in addrs) or n_assigned:
        assert walked  # a broken rule is found both ways
        # every repetition of a bad TASSIGN counts: the run's "(and N more)" is unchanged
        assert len(walked) >= n_assigned * repeats
    else:
        assert not walked


def test_the_note_is_of_the_program_object_the_builder_made():
    k = _kernel([0], [], 1)
    p1 = k.program()
    k.tile("vec", "f32", 16, 64, name="late", addr=UB)  # added after: a new program
    p2 = k.program()
    assert p2 is not p1
    assert len(known(p2, HAND_PLACEMENTS)) == 2 and len(known(p1, HAND_PLACEMENTS)) == 1
    assert static_problems(p2, load_target("a2a3"))[0][1] == "late"
    assert not static_problems(p1, load_target("a2a3"))


def test_a_run_still_refuses_a_bad_tassign_with_the_count():
    k = _kernel([0, None], [(1, 0x44)], 4)
    with pytest.raises(sim.SimulationError, match=r"TASSIGN places tile %t1 .* \(and 3 more"):
        sim.simulate(k, "a2a3", functional=False)
