"""What a run needs to know about a whole program before it starts, in one pass.

Before the first instruction issues, the launch asks questions of the whole program: does
it have ``pto.section`` regions (a mixed kernel), which tiles need an address
(``alloc_tile`` without one, FIFO slots of ``talloc_*``) and which FIFO buffers are
reserved. A kernel built through the builder is fully unrolled — 10^6 instructions are
10^6 statements — so asking each question with its own walk costs more than a tenth of
the run. ``scan`` walks every function once, looking only at the kinds of statement those
questions are about, and keeps the answer for as long as the program lives (by identity:
hashing a program would walk it again). Which buffers the tile instructions touch (a
cube-only or a vector kernel) is asked by ``sim.engine.units`` with a walk that stops at
the first vector tile.
"""

from __future__ import annotations

import attrs

from sim.isa.known import kept
from sim.isa.program import Alloc, For, If, PipeOp, Section
from sim.isa.tile import Tile

__all__ = ["Facts", "kept", "scan"]

_TALLOC = ("pto.talloc_to_aiv", "pto.talloc_to_aic")
_READ = frozenset((Alloc, For, Section, If, PipeOp))  # the kinds scan reads


@attrs.frozen
class Facts:
    """The whole-program facts of ``scan``."""

    sections: bool  # a pto.section.cube / .vector anywhere
    allocs: tuple  # Alloc statements, in text order, function by function
    reserves: tuple  # pto.reserve_buffer statements, in text order
    tallocs: tuple  # tiles taken by talloc_to_aiv / talloc_to_aic, in text order


def scan(program_or_body) -> Facts:
    """The facts of a ``Program`` (every function; cached while it lives) or of one body."""
    functions = getattr(program_or_body, "functions", None)
    if functions is None:
        return _scan((program_or_body,))
    return kept(program_or_body, Facts, lambda: _scan(tuple(f.body for f in functions)))


def _scan(bodies) -> Facts:
    allocs: list = []
    reserves: list = []
    tallocs: list = []
    sections = False

    def visit(body):
        nonlocal sections
        for st in body:
            t = type(st)
            if t not in _READ:  # instructions, flags, views, scalar code: most statements
                continue
            if t is Alloc:
                allocs.append(st)
            elif t is For:
                visit(st.body)
            elif t is Section:
                sections = True
                visit(st.body)
            elif t is If:
                visit(st.then_body)
                visit(st.else_body)
            elif st.op == "pto.reserve_buffer":
                reserves.append(st)
            elif st.op in _TALLOC:
                tallocs.extend(r for r in st.results if isinstance(r, Tile))

    for body in bodies:
        visit(body)
    return Facts(sections, tuple(allocs), tuple(reserves), tuple(tallocs))
