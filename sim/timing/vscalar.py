"""Vector-class ops that leave the vector pipe for a loop on the scalar unit.

programming-model.md §6.3 / instructions.md §3.2, §3.4: integer TDIVS (and TRECIP, which
is TDIVS(dst, 1, src)) and TSHL/TSHR run element by element on PIPE_S, bracketed by a
V->S hand-off (``set_flag/wait_flag(PIPE_V, PIPE_S)``; the wait drains V and ends the
vector stream, §2.3) and an S->V hand-off. The reference costs only the four flag calls
(§2.6: 4 cycles for integer TDIVS, "known to be unrealistic"); the loop itself has no
cost model **[silent]**. Here it is an ``sloop`` item whose per-element figure comes from
the target's ``[scalar_loops]`` table (ASSUMPTION figures, reasoning in machine.toml).
The loop runs while V waits, so its cycles count toward the op's PIPE_V duration: the
two pipes are serialised, as §6.3 says a timing model should do.
"""

from __future__ import annotations

from sim.timing.plan import Item
from sim.timing.vpath import s_to_v, scalar_loop, v_to_s

__all__ = ["handoff", "int_divide", "shift"]


def handoff(key: str, elements: int) -> list[Item]:
    """V->S flags, a scalar loop over ``elements`` (figure ``key``), S->V flags."""
    return v_to_s() + [scalar_loop(key, elements)] + s_to_v()


def int_divide(s) -> list[Item]:
    """§4 "TDIVS i32/i16" row: one scalar C division per element of the domain."""
    return handoff("int_div", s.valid_rows * s.valid_cols)


def shift(s) -> list[Item]:
    """TSHL / TSHR (§3.2): per-element shift by ``src1[i, j]`` on the scalar unit."""
    return handoff("shift", s.valid_rows * s.valid_cols)
