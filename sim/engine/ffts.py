"""Cross-core flags (FFTS) and the all-core barrier (SYNCALL) on the chip.

The units of a chip signal each other through the FFTS (programming-model.md §7.3): a
set is ``ffts_cross_core_sync(srcPipe, msg)`` carrying a 4-bit flag id (16 channels), a
wait is ``wait_flag_dev(id)``. In PTO IR they are ``pto.sync.set #pto.pipe<P>, id
{ffts_mode = m}`` / ``pto.sync.wait``; the set fires when earlier work on ``P`` is done
(like ``set_flag``). The wait holds ``P`` and, ASSUMPTION, instruction issue with it: as
for the cube<->vector FIFOs (``sim.engine.xunit``), ``wait_flag_dev`` stalls the scalar
unit, so nothing after the wait — on ``P`` or any other pipe — is issued before the flag
is set. This is also what keeps the functional result right: a unit executes an
instruction when it issues it, so the load after a wait must not be issued before the
other unit's store it waits for. Latency: ``[sync] cross_core_flag_cycles``
(timing-model.md §7: 0 in Perf-Sim, [silent] on hardware).

Who a set reaches and what a wait needs — ``ffts_mode``. ASSUMPTION: the reference is
silent on the modes; these are the public Ascend C ``CrossCoreSetFlag`` semantics:

* mode 0 — all units of the same type (every AIV, or every AIC) of the launch: a set
  reaches each of them, and a wait passes once *every* unit of that type has set the flag;
* mode 1 — the vector units of one core: a set reaches both AIVs of its core, a wait
  passes once both have set it (an AIC may not use mode 1);
* mode 2 (also the default when the text gives no ``ffts_mode`` — ASSUMPTION) — cube <->
  vector within one core: the AIC's set releases one wait on each AIV of its core; an
  AIV's set goes to the AIC, whose wait needs the sets of both AIVs.

A5's ``pto.set_intra_block <P>, id`` / ``pto.wait_intra_block`` (programming-model.md
§7.3: the cube records ``id`` and ``id+16``, one per vector sub-block, each AIV waits on
``id``): the cube's ids 0..15 address AIV0 and 16..31 AIV1, in both directions; a vector
unit's ids are 0..15. ASSUMPTION for the vector -> cube direction (the reference shows
only the cube's record): AIV s's ``set_intra_block(id)`` is the cube's ``id + 16 s``, so
the cube waits on ``id`` and ``id + 16`` to hear both vector units.

A wait consumes one set from each unit it needs. Each flag counts in 4 bits: a 16th set
from one unit that nobody has consumed yet is an error naming the core, unit and flag
(the hardware counter would wrap), never a silent overflow.

**SYNCALL** (``pto.syncall ... mode = soft|hard, core_type = aiv_only|aic_only|mix``): an
all-core barrier over the participating units (the AIVs, the AICs or all units) of every
launched core. ASSUMPTION (the reference gives no sequence): each unit first drains its
pipes (``pipe_barrier(PIPE_ALL)``: what it wrote before the barrier is visible after it),
then arrives and waits on its scalar unit until every participant has arrived.
``hard`` arrives through the FFTS (the reserved flags 11-14, programming-model.md §7.3:
SYNC_AIC_FLAG=11, SYNC_AIV_FLAG=12, SYNC_AIC_AIV_FLAG=13, SYNC_AIV_ONLY_ALL=14, kept
apart from user flags here). ``soft`` arrives through GM: the unit writes one 32-byte
flag block to GM (PIPE_MTE3, UB->GM) and arrives when the write is done; once released
it reads the flags back (one 32-byte GM->UB read on PIPE_MTE2) before it goes on. Both
transfers cost what their DMA path costs and go through the chip's shared GM model.

``pto.set_ffts %addr`` sets the FFTS base address: recorded as a zero-length PIPE_S row
(kernel-level calls cost 0, timing-model.md §2.6).

A wait that no set can satisfy any more — a flag nobody sets, a SYNCALL some unit never
reaches — leaves the chip's event queue empty with units unfinished: the chip reports a
``DeadlockError`` naming core, unit, pipe and flag, and which units' sets are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sim.base.errors import SimulationError, UserError
from sim.engine.items import BARRIER, OP, SCALAR, SET, WAIT, Issued
from sim.engine.xunit import XKey
from sim.isa.program import SetFfts, SyncAll, SyncSet, SyncWait
from sim.timing import Shape, lower

if TYPE_CHECKING:
    from sim.engine.units import UnitSpec
    from sim.target.model import Target

__all__ = ["FftsSet", "FftsWait", "FftsChannels", "CrossCore", "DEFAULT_MODE", "FLAG_IDS"]

DEFAULT_MODE = 2  # ASSUMPTION: AIC <-> AIV of one core when no ffts_mode is given
FLAG_IDS = 16  # 4-bit flag ids (programming-model.md §7.3)
PENDING_LIMIT = 15  # a 4-bit counter holds 15 sets
_SYNCALL_FLAG = {
    "aic_only": "11 SYNC_AIC_FLAG",
    "aiv_only": "14 SYNC_AIV_ONLY_ALL",
    "mix": "11-13 SYNC_AIC_FLAG/SYNC_AIV_FLAG/SYNC_AIC_AIV_FLAG",
}


class FftsWait(XKey):
    """A receiving channel: ``(what, receiver, setters)``; ``receiver`` and each setter
    are ``(core, unit)``. A wait passes when every setter has a pending set."""

    __slots__ = ()


class FftsSet(XKey):
    """A set: ``(what, setter, channels)`` — one pending set from ``setter`` on each
    ``FftsWait`` channel."""

    __slots__ = ()


def _unit(u) -> str:
    return f"core {u[0]} {u[1]}"


class _Channel:
    __slots__ = ("pending", "waiter")

    def __init__(self, setters):
        self.pending = dict.fromkeys(setters, 0)
        self.waiter = None


class FftsChannels:
    """The FFTS counters of a chip (routed to by ``CrossFlags`` for Ffts keys)."""

    def __init__(self, env, ideal: bool = False):
        self.env = env
        self.ideal = ideal  # ideal sync: waits never block, so nothing is consumed
        self.channels: dict = {}

    def _channel(self, key) -> _Channel:
        ch = self.channels.get(key)
        if ch is None:
            ch = self.channels[key] = _Channel(key[2])
        return ch

    def fire(self, key: FftsSet) -> None:
        what, setter, targets = key
        for target in targets:
            ch = self._channel(target)
            n = ch.pending[setter] + 1
            if n > PENDING_LIMIT and not self.ideal:
                raise SimulationError(
                    f"{_unit(setter)}: {what}: a 16th pending set toward {_unit(target[1])}, "
                    f"which has consumed none of the previous 15 (the FFTS flag counter is 4 "
                    f"bits: at most {PENDING_LIMIT} sets may wait unconsumed)"
                )
            ch.pending[setter] = n
            if ch.waiter is not None and all(ch.pending.values()):
                ev, ch.waiter = ch.waiter, None
                ev.succeed()

    def wait_event(self, key: FftsWait):
        # one waiter per channel: every wait holds its unit's dispatcher
        ch = self._channel(key)
        if all(ch.pending.values()):
            return None
        ch.waiter = self.env.event()
        return ch.waiter

    def take(self, key: FftsWait) -> None:
        pending = self.channels[key].pending
        for s in pending:
            pending[s] -= 1

    def missing(self, key: FftsWait) -> list[str]:
        """The units whose set a blocked wait still needs."""
        ch = self.channels.get(key)
        setters = key[2] if ch is None else [s for s, n in ch.pending.items() if n <= 0]
        return [_unit(s) for s in setters]


class CrossCore:
    """Mixin of ``Interpreter``: ``pto.sync.set`` / ``sync.wait`` / ``syncall`` /
    ``set_ffts`` of one unit's stream. Needs ``self.spec``, ``self.chip`` (its
    ``units``: every launched (core, unit)) and ``self.target``."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    # ``chip`` is None on a unit run alone (checked where that matters).
    spec: UnitSpec
    chip: Any  # sim.engine.chipstate.ChipState (which imports this module)
    target: Target
    values: dict[str, Any]
    seq: int
    track_accesses: bool
    _sync_items: dict
    scalar: Callable[[Any], Any]

    def _cross_core_handlers(self) -> dict:
        return {
            SyncSet: self._ffts_flag,
            SyncWait: self._ffts_flag,
            SyncAll: self._syncall,
            SetFfts: self._set_ffts,
        }

    def _me(self) -> tuple:
        return (self.spec.core, self.spec.unit)

    def _where_x(self, st, name) -> str:
        return f"{name} ({st.loc})" if st.loc else name

    # --- sync.set / sync.wait --------------------------------------------------------------

    def _ffts_flag(self, st) -> Issued:
        flag = st.flag if isinstance(st.flag, int) else int(self.scalar(st.flag))
        key = (id(st), flag)
        item = self._sync_items.get(key)
        if item is None:
            item = self._sync_items[key] = self._ffts_item(st, flag)
        self.seq += 1
        return item.copy() if self.track_accesses else item

    def _ffts_item(self, st, flag: int) -> Issued:
        set_ = type(st) is SyncSet
        name = "sync.set" if set_ else "sync.wait"
        where = self._where_x(st, name)
        if self.chip is None:
            raise UserError(f"{where}: cross-core flags run on a chip (sim.simulate)")
        pipes = self._unit_pipes()
        if st.pipe not in pipes:
            raise UserError(
                f"{where}: {st.pipe} is not a pipe of core {self.spec.core} "
                f"{self.spec.unit} ({', '.join(sorted(pipes))})"
            )
        if st.intra:
            return self._intra_item(st, flag, set_)
        if not 0 <= flag < FLAG_IDS:
            raise UserError(
                f"{where}: flag id: expected 0..{FLAG_IDS - 1} (4-bit FFTS ids), found {flag}"
            )
        mode = DEFAULT_MODE if st.mode is None else st.mode
        what = f"FFTS flag {flag} (ffts_mode {mode})"
        me = self._me()
        if set_:
            targets = tuple(
                FftsWait((what, r, self._setters(mode, r, where)))
                for r in self._receivers(mode, me, where)
            )
            return Issued(
                SET,
                st.pipe,
                name,
                flag=FftsSet((what, me, targets)),
                text=f"{what} {self.spec.unit}->",
                source=str(st.loc or ""),
            )
        setters = self._setters(mode, me, where)
        return Issued(
            WAIT,
            "PIPE_S",
            name,
            flag=FftsWait((what, me, setters)),
            text=f"{what} for {st.pipe}",
            source=str(st.loc or ""),
        )

    def _intra_item(self, st, flag: int, set_: bool) -> Issued:
        """A5 ``set_intra_block`` / ``wait_intra_block`` (see the module doc): the cube's
        ids 0..15 talk to AIV0, 16..31 to AIV1; a vector unit's ids are 0..15."""
        name = "set_intra_block" if set_ else "wait_intra_block"
        where = self._where_x(st, name)
        core, unit = self._me()
        aic = unit == "AIC"
        top = 2 * FLAG_IDS if aic else FLAG_IDS
        if not 0 <= flag < top:
            raise UserError(
                f"{where}: flag id on core {core} {unit}: expected 0..{top - 1} "
                f"(the cube addresses AIV0 with 0..15, AIV1 with 16..31), found "
                f"{flag}"
            )
        if aic:
            aiv, ch = f"AIV{flag // FLAG_IDS}", flag % FLAG_IDS
            what = (
                f"intra-block flag {ch} AIC->{aiv}"
                if set_
                else f"intra-block flag {flag} {aiv}->AIC"
            )
            peer = (core, aiv)
        else:
            sub = self.spec.subblock_idx
            what = (
                f"intra-block flag {flag + FLAG_IDS * sub} {unit}->AIC"
                if set_
                else f"intra-block flag {flag} AIC->{unit}"
            )
            peer = (core, "AIC")
        if peer not in self.chip.of_core(core):
            raise UserError(
                f"{where}: core {core} {unit} signals core {peer[0]} {peer[1]}, "
                f"which the launch does not have (a kernel with pto.section.cube "
                f"and pto.section.vector)"
            )
        me, src = (core, unit), str(st.loc or "")
        if set_:
            target = FftsWait((what, peer, (me,)))
            return Issued(
                SET, st.pipe, name, flag=FftsSet((what, me, (target,))), text=what, source=src
            )
        return Issued(
            WAIT,
            "PIPE_S",
            name,
            flag=FftsWait((what, me, (peer,))),
            text=f"{what} for {st.pipe}",
            source=src,
        )

    def _unit_pipes(self) -> frozenset:
        from sim.engine.units import BOTH
        from sim.isa.opcodes import PIPES

        if self.spec.kind == BOTH:
            return frozenset(PIPES)
        kind = "AIC" if self.spec.unit == "AIC" else "AIV"
        return frozenset(self.target.units.get(kind, {}).get("pipes", PIPES))

    def _receivers(self, mode, me, where) -> tuple:
        """The units a set by ``me`` in ``mode`` reaches."""
        core, unit = me
        units = self.chip.units
        aic = unit == "AIC"
        if mode == 0:
            found = tuple(u for u in units if (u[1] == "AIC") == aic)
        elif mode == 1:
            if aic:
                raise UserError(
                    f"{where}: ffts_mode 1 synchronises the vector units of a "
                    f"core; core {core} AIC is a cube unit (use mode 2)"
                )
            found = tuple(u for u in self.chip.of_core(core) if u[1] != "AIC")
        else:
            found = tuple(u for u in self.chip.of_core(core) if (u[1] == "AIC") != aic)
        if not found:
            raise UserError(
                f"{where}: ffts_mode {mode} on core {core} {unit}: the launch has "
                f"no unit to signal (mode 2 needs both the cube and the vector "
                f"units of the core: a kernel with pto.section.cube / "
                f"pto.section.vector)"
            )
        return found

    def _setters(self, mode, receiver, where) -> tuple:
        """The units whose sets a wait on ``receiver`` needs in ``mode``."""
        if mode == 1 and receiver[1] == "AIC":
            raise UserError(
                f"{where}: ffts_mode 1 synchronises the vector units of a core; "
                f"core {receiver[0]} AIC is a cube unit (use mode 2)"
            )
        return self._receivers(mode, receiver, where)

    # --- syncall / set_ffts ----------------------------------------------------------------

    def _participants(self, core_type) -> tuple:
        units = self.chip.units
        if core_type == "mix":
            return units
        aic = core_type == "aic_only"
        return tuple(u for u in units if (u[1] == "AIC") == aic)

    def _syncall(self, st: SyncAll):
        # keyed apart from id(st): the walk hands a sync item found under id(st) straight
        # to the pipes, and this is a tuple of them
        key = ("syncall", id(st))
        items = self._sync_items.get(key)
        if items is None:
            items = self._sync_items[key] = self._syncall_items(st)
        self.seq += len(items)
        for item in items:
            yield item.copy() if self.track_accesses else item

    def _syncall_items(self, st: SyncAll) -> tuple:
        where = self._where_x(st, "syncall")
        if self.chip is None:
            raise UserError(f"{where}: an all-core barrier runs on a chip (sim.simulate)")
        me = self._me()
        who = self._participants(st.core_type)
        if me not in who:
            raise UserError(
                f"{where}: core_type {st.core_type} does not include core "
                f"{me[0]} {me[1]}, which reaches it"
            )
        what = (
            f"syncall {st.mode} {st.core_type} (FFTS flag {_SYNCALL_FLAG[st.core_type]}, "
            f"{len(who)} units)"
        )
        channels = tuple(FftsWait((what, u, who)) for u in who)
        arrive, wait = FftsSet((what, me, channels)), FftsWait((what, me, who))
        src = str(st.loc or "")
        drain = Issued(BARRIER, "PIPE_ALL", "syncall", text="PIPE_ALL", source=src)
        if st.mode == "hard":
            return (
                drain,
                Issued(SET, "PIPE_S", "syncall", flag=arrive, text=what, source=src),
                Issued(WAIT, "PIPE_S", "syncall", flag=wait, text=what, source=src),
            )
        local = ("PIPE_MTE2", "PIPE_S", "syncall")
        return (
            drain,
            self._flag_block("UB_GM", "PIPE_MTE3", src),
            Issued(SET, "PIPE_MTE3", "syncall", flag=arrive, text=what, source=src),
            Issued(WAIT, "PIPE_S", "syncall", flag=wait, text=what, source=src),
            self._flag_block("GM_UB", "PIPE_MTE2", src),
            Issued(
                SET,
                "PIPE_MTE2",
                "syncall",
                flag=local,
                text="PIPE_MTE2->PIPE_S#syncall",
                source=src,
            ),
            Issued(
                WAIT, "PIPE_S", "syncall", flag=local, text="PIPE_MTE2->PIPE_S#syncall", source=src
            ),
        )

    def _flag_block(self, path, pipe, src) -> Issued:
        """A soft barrier's 32-byte flag block moved over ``path`` (through the GM model)."""
        plan = lower(Shape("SYNCALL", "i32", 1, 8, 8, 1, 8, path=path), pipe, self.target)
        return Issued(
            OP,
            pipe,
            "SYNCALL",
            plan.cold_cycles,
            plan.warm_cycles,
            plan.breaks_stream,
            None,
            plan,
            f"flag block ({path})",
            src,
        )

    def _set_ffts(self, st: SetFfts) -> Issued:
        value = st.value
        name = getattr(value, "name", None)
        text = f"%{name}" if name is not None else str(value)
        shown = self.values.get(name, text) if name is not None else text
        self.seq += 1
        c = int(self.target.sync.get("kernel_sync_cycles", 0))
        return Issued(
            SCALAR,
            "PIPE_S",
            "set_ffts",
            c,
            c,
            text=f"FFTS base <- {shown}",
            source=str(st.loc or ""),
        )
