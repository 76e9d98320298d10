"""What ``ptosim check`` can prove about a kernel's level-3 synchronisation without running it.

A ``wait_flag(src, dst, id)`` blocks pipe ``dst`` until a ``set_flag`` with the same
triple fires; each pipe pair has a pool of event ids (``[sync] event_ids_per_pipe_pair``
of the target, EVENT_ID0..7 on both targets), and the run rejects an id outside it. Two
facts hold whatever values the scalars take at run time, so ``check`` reports them as
``run`` would, at the statement:

* an event id written as a constant outside the pool (``EVENT_ID9``);
* a ``wait_flag`` whose constant triple no ``set_flag`` anywhere in the program (every
  function, both branches) can set: when it is reached its pipe waits forever, which the
  run reports as a deadlock. A program that sets events with run-time ids
  (``set_flag_dyn`` with an SSA id) may set any id of its pipe pair, so its waits on that
  pair are not judged.
"""

from __future__ import annotations

from typing import NoReturn

from sim.frontend.diagnostics import VerifyDiagnostic
from sim.isa.program import Const, Program, SetFlag, WaitFlag, walk

__all__ = ["check_sync"]


def _const_event(ev) -> int | None:
    if isinstance(ev, bool):
        return None
    if isinstance(ev, int):
        return ev
    if isinstance(ev, Const) and isinstance(ev.value, int) and not isinstance(ev.value, bool):
        return ev.value
    return None


def _fail(st, message: str) -> NoReturn:
    loc = st.loc
    if loc is None:
        from sim.base.errors import VerifyError

        raise VerifyError(message)
    raise VerifyDiagnostic(loc.file, loc.line, loc.col or 1, message)


def check_sync(program: Program, target) -> None:
    """Raise a located VerifyDiagnostic at the first provable synchronisation error."""
    pool = int(target.sync.get("event_ids_per_pipe_pair", 8))
    flags = [
        st for f in program.functions for st in walk(f.body) if isinstance(st, (SetFlag, WaitFlag))
    ]
    sets, dynamic = set(), set()
    for st in flags:
        ev = _const_event(st.event)
        kind = "set_flag" if isinstance(st, SetFlag) else "wait_flag"
        if ev is not None and not 0 <= ev < pool:
            _fail(
                st,
                f"{kind} [{st.src}, {st.dst}, EVENT_ID{ev}]: event id: expected "
                f"EVENT_ID0..EVENT_ID{pool - 1} (the {target.name} pool of "
                f"{pool} per pipe pair), found {ev}",
            )
        if isinstance(st, SetFlag):
            if ev is None:
                dynamic.add((st.src, st.dst))
            else:
                sets.add((st.src, st.dst, ev))
    for st in flags:
        ev = _const_event(st.event)
        if (
            isinstance(st, WaitFlag)
            and ev is not None
            and (st.src, st.dst) not in dynamic
            and (st.src, st.dst, ev) not in sets
        ):
            _fail(
                st,
                f"deadlock: wait_flag [{st.src}, {st.dst}, EVENT_ID{ev}] is never set: "
                f"no set_flag [{st.src}, {st.dst}, EVENT_ID{ev}] in the program, so "
                f"{st.dst} waits forever when it gets here",
            )
