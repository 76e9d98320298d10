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
"""

from __future__ import annotations

import weakref

__all__ = ["HAND_PLACEMENTS", "note", "known"]

HAND_PLACEMENTS = "hand placements"

_notes: dict[int, dict] = {}       # id(program) -> {key: value}, while the program lives


def note(program, key: str, value) -> None:
    """Keep ``value`` as what is known of ``program`` under ``key``."""
    mine = _notes.get(id(program))
    if mine is None:
        mine = _notes[id(program)] = {}
        weakref.finalize(program, _notes.pop, id(program), None)
    mine[key] = value


def known(program, key: str, default=None):
    """What was noted of ``program`` under ``key``, else ``default``."""
    mine = _notes.get(id(program))
    return default if mine is None else mine.get(key, default)
