"""What ``ptosim check`` can prove about a kernel's cross-core synchronisation (FFTS flags
and SYNCALL, ``sim.engine.ffts``) without running it.

* a constant flag id of ``pto.sync.set`` / ``pto.sync.wait`` outside the 4-bit range
  0..15 (the run rejects it too);
* a ``sync.set`` / ``sync.wait`` inside ``pto.section.cube`` / ``pto.section.vector`` on
  a pipe that unit kind does not have (``[units.*] pipes`` of the target), or
  ``ffts_mode = 1`` (the vector units of a core) in a cube section (the run rejects both);
* flag ids 11-14 in ``sync.set`` / ``sync.wait`` of a program that also runs
  ``pto.syncall``: SYNCALL reserves them (programming-model.md §7.3), so the kernel's own
  flags would corrupt the barrier's counters on hardware (the run keeps them apart, so
  only ``check`` can say so);
* a ``sync.wait`` that no ``sync.set`` of the program can satisfy: no set of the same
  ffts_mode and constant flag id on a side that signals the waiter (mode 0: the same unit
  kind, mode 1: the vector units, mode 2: the other kind; a set outside sections runs on
  every unit that has its pipe). A program that sets a mode's flags with run-time ids may
  set any id of that mode, so its waits on that mode are not judged. When such a wait is
  reached its pipe waits forever: the run reports it as a deadlock.
"""

from __future__ import annotations

from sim.frontend.static_sync import _const_event, _fail
from sim.isa.program import For, If, Program, Section, SyncAll, SyncSet, SyncWait

__all__ = ["check_cross_core"]

_RESERVED = range(11, 15)       # SYNC_AIC_FLAG .. SYNC_AIV_ONLY_ALL
_DEFAULT_MODE = 2               # sim.engine.ffts.DEFAULT_MODE (frontend stays engine-free)


def _sided(body, side=None):
    """(statement, enclosing section kind or None) for every statement, nested too."""
    for st in body:
        yield st, side
        if isinstance(st, Section):
            yield from _sided(st.body, st.kind)
        elif isinstance(st, For):
            yield from _sided(st.body, side)
        elif isinstance(st, If):
            yield from _sided(st.then_body, side)
            yield from _sided(st.else_body, side)


def _text(st, flag) -> str:
    kind = "sync.set" if isinstance(st, SyncSet) else "sync.wait"
    mode = _DEFAULT_MODE if st.mode is None else st.mode
    return f"{kind} #pto.pipe<{st.pipe}>, {flag} (ffts_mode {mode})"


def check_cross_core(program: Program, target) -> None:
    """Raise a located VerifyDiagnostic at the first provable cross-core sync error."""
    sided = [(st, side) for f in program.functions for st, side in _sided(f.body)]
    flags = [(st, side) for st, side in sided if isinstance(st, (SyncSet, SyncWait))]
    syncall = any(isinstance(st, SyncAll) for st, _ in sided)
    pipes = {"cube": set(target.units.get("AIC", {}).get("pipes", ())),
             "vector": set(target.units.get("AIV", {}).get("pipes", ()))}
    sets, dynamic = set(), set()
    for st, side in flags:
        flag = _const_event(st.flag)
        mode = _DEFAULT_MODE if st.mode is None else st.mode
        what = _text(st, "%" + st.flag.name if flag is None else flag)
        if flag is not None and not 0 <= flag < 16:
            _fail(st, f"{what}: flag id: expected 0..15 (4-bit FFTS ids), found {flag}")
        if side is not None and pipes[side] and st.pipe not in pipes[side]:
            _fail(st, f"{what}: pto.section.{side} runs on units without {st.pipe}; expected "
                      f"one of {', '.join(sorted(pipes[side]))}")
        if side == "cube" and mode == 1:
            _fail(st, f"{what}: ffts_mode 1 synchronises the vector units of a core, found "
                      f"in pto.section.cube (use ffts_mode 2 between cube and vector)")
        if syncall and flag in _RESERVED:
            _fail(st, f"{what}: flag ids 11-14 are reserved by pto.syncall, which this "
                      f"program also runs; expected another id")
        if isinstance(st, SyncSet):
            if flag is None:
                dynamic.add(mode)
            else:
                sets.add((mode, flag, side))
    for st, side in flags:
        flag = _const_event(st.flag)
        mode = _DEFAULT_MODE if st.mode is None else st.mode
        if not isinstance(st, SyncWait) or flag is None or mode in dynamic:
            continue
        if not any((mode, flag, s) in sets for s in _signalling_sides(mode, side)):
            _fail(st, f"deadlock: {_text(st, flag)} is never set: no sync.set of flag {flag} "
                      f"with ffts_mode {mode} can reach it, so {st.pipe} waits forever when "
                      f"it gets here")


def _signalling_sides(mode, side) -> tuple:
    """Section kinds (None: outside sections) whose sets can reach a waiter on ``side``."""
    if side is None:
        return (None, "cube", "vector")
    if mode == 0:
        return (None, side)
    if mode == 1:
        return (None, "vector")
    return (None, "vector" if side == "cube" else "cube")
