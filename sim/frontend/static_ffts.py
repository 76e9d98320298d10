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
  every unit that has its pipe); likewise a ``wait_intra_block`` no ``set_intra_block``
  of the other kind can reach (a vector unit's ``id`` hears the cube's ``id`` / ``id+16``,
  the cube's ``id`` a vector unit's ``id % 16``); intra-block ids are 0..31 on the cube,
  0..15 on a vector unit. A program that sets a mode's flags with run-time ids may
  set any id of that mode, so its waits on that mode are not judged. When such a wait is
  reached its pipe waits forever: the run reports it as a deadlock.
"""

from __future__ import annotations

from sim.frontend.static_sync import _const_event, _fail
from sim.isa.program import For, If, Program, Section, SyncAll, SyncSet, SyncWait

__all__ = ["check_cross_core"]

_RESERVED = range(11, 15)  # SYNC_AIC_FLAG .. SYNC_AIV_ONLY_ALL
_DEFAULT_MODE = 2  # sim.engine.ffts.DEFAULT_MODE (frontend stays engine-free)


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
    set_ = isinstance(st, SyncSet)
    if st.intra:
        return f"{'set' if set_ else 'wait'}_intra_block #pto.pipe<{st.pipe}>, {flag}"
    mode = _DEFAULT_MODE if st.mode is None else st.mode
    return f"{'sync.set' if set_ else 'sync.wait'} #pto.pipe<{st.pipe}>, {flag} (ffts_mode {mode})"


def check_cross_core(program: Program, target) -> None:
    """Raise a located VerifyDiagnostic at the first provable cross-core sync error."""
    sided = [(st, side) for f in program.functions for st, side in _sided(f.body)]
    flags = [(st, side) for st, side in sided if isinstance(st, (SyncSet, SyncWait))]
    syncall = any(isinstance(st, SyncAll) for st, _ in sided)
    pipes = {
        "cube": set(target.units.get("AIC", {}).get("pipes", ())),
        "vector": set(target.units.get("AIV", {}).get("pipes", ())),
    }
    sets, dynamic = set(), set()
    for st, side in flags:
        flag = _const_event(st.flag)
        mode: int | str = _DEFAULT_MODE if st.mode is None else st.mode
        # a flag id that is no constant is a scalar: shown by its name
        what = _text(st, f"%{getattr(st.flag, 'name', st.flag)}" if flag is None else flag)
        top = 32 if st.intra and side != "vector" else 16
        if flag is not None and not 0 <= flag < top:
            _fail(
                st,
                f"{what}: flag id: expected 0..{top - 1} "
                f"({'intra-block ids' if st.intra else '4-bit FFTS ids'}), found {flag}",
            )
        if side is not None and pipes[side] and st.pipe not in pipes[side]:
            _fail(
                st,
                f"{what}: pto.section.{side} runs on units without {st.pipe}; expected "
                f"one of {', '.join(sorted(pipes[side]))}",
            )
        if st.intra:
            mode = "intra"
        elif side == "cube" and mode == 1:
            _fail(
                st,
                f"{what}: ffts_mode 1 synchronises the vector units of a core, found "
                f"in pto.section.cube (use ffts_mode 2 between cube and vector)",
            )
        if syncall and flag in _RESERVED and not st.intra:
            _fail(
                st,
                f"{what}: flag ids 11-14 are reserved by pto.syncall, which this "
                f"program also runs; expected another id",
            )
        if isinstance(st, SyncSet):
            if flag is None:
                dynamic.add(mode)
            else:
                sets.add((mode, flag, side))
    for st, side in flags:
        flag = _const_event(st.flag)
        mode = "intra" if st.intra else (_DEFAULT_MODE if st.mode is None else st.mode)
        if not isinstance(st, SyncWait) or flag is None or mode in dynamic:
            continue
        ids = _intra_ids(flag, side) if st.intra else (flag,)
        if not any((mode, f, s) in sets for s in _signalling_sides(mode, side) for f in ids):
            setter = (
                "no set_intra_block of the other unit kind"
                if st.intra
                else f"no sync.set of flag {flag} with ffts_mode {mode}"
            )
            _fail(
                st,
                f"deadlock: {_text(st, flag)} is never set: {setter} can reach it, so "
                f"{st.pipe} waits forever when it gets here",
            )


def _intra_ids(flag, side) -> tuple:
    """The ids of the sets an intra-block wait of ``flag`` can hear: on a vector unit the
    cube's ``flag`` (to AIV0) or ``flag + 16`` (AIV1); on the cube the vector units'
    ``flag % 16``; outside sections any of them."""
    if side == "vector":
        return (flag, flag + 16)
    if side == "cube":
        return (flag % 16,)
    return (flag, flag % 16, flag + 16)


def _signalling_sides(mode, side) -> tuple:
    """Section kinds (None: outside sections) whose sets can reach a waiter on ``side``."""
    if side is None:
        return (None, "cube", "vector")
    if mode == 0:
        return (None, side)
    if mode == "intra":
        return (None, "vector" if side == "cube" else "cube")
    if mode == 1:
        return (None, "vector")
    return (None, "vector" if side == "cube" else "cube")
