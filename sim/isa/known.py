"""What the producer of a ``Program`` knows about it, kept beside it so no one walks it.

A kernel built through the builder is fully unrolled: 10^5 instructions are 10^5
statements, and a question about the whole program ("which statements place a tile by
hand?") asked with a walk costs a tenth of a microsecond per statement, per question. The
builder sees every distinct statement once as it records it, and answers such a question
for free. It notes the answer here, for the one ``Program`` object it built (by identity:
a program rewritten by a pass is a new object and knows nothing; hashing a program would
walk it), for as long as that object lives. A reader that finds no note walks as before.

Keys in use: ``HAND_PLACEMENTS`` — the distinct statements that place a tile by hand
(``alloc_tile addr=``, ``TASSIGN``), in the order first issued (``sim.placement.bounds``).
The same store keeps what a reader works out once per program (``kept``: the engine's
whole-program facts, a launch's layout and placement, ``sim.engine.scan``).
"""

from __future__ import annotations

import weakref

__all__ = ["HAND_PLACEMENTS", "note", "known", "kept"]

HAND_PLACEMENTS = "hand placements"

_notes: dict[int, dict] = {}  # id(program) -> {key: value}, while the program lives


def _mine(program) -> dict:
    """What is kept for ``program``, a new entry dropped when the program goes."""
    mine = _notes.get(id(program))
    if mine is None:
        mine = _notes[id(program)] = {}
        weakref.finalize(program, _notes.pop, id(program), None)
    return mine


def note(program, key, value) -> None:
    """Keep ``value`` as what is known of ``program`` under ``key``."""
    _mine(program)[key] = value


def known(program, key, default=None):
    """What was noted of ``program`` under ``key``, else ``default``."""
    mine = _notes.get(id(program))
    return default if mine is None else mine.get(key, default)


def kept(program, key, compute):
    """``compute()`` for ``program``, kept under ``key`` for as long as the program lives
    (by identity: hashing a program would walk it again). For what depends only on the
    program and ``key``: the engine's facts, and a launch's layout, unit programs and
    placement (``sim.engine.chip``), so the runs of one program work them out once."""
    mine = _mine(program)
    value = mine.get(key, _notes)
    if value is _notes:
        value = mine[key] = compute()
    return value
