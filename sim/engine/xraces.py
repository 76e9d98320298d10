"""Races across the units of a chip: GM bytes two units (or cores) touch with no ordering.

Each unit's ``RaceDetector`` (``sim.engine.races``) orders its own pipes with vector
clocks. On a chip the units also order each other, through chip-level flags: a FIFO's
full / free slots (``sim.engine.xunit``), cross-core FFTS flags and SYNCALL arrivals
(``sim.engine.ffts``). ``UnitRaces`` is the unit's detector extended to them:

* **Clocks across units.** A clock keeps the unit's own pipes under their names
  (``PIPE_V``) and other units' pipes under global names (``"1/AIV0/PIPE_V"``). A set of a
  chip-level flag hands its clock, in global names, to ``ChipRaces``; the wait that
  consumes that set joins it, translated to the waiter's names. FIFO-like keys match the
  k-th set to the k-th wait beyond the slots the counter started with; an FFTS wait joins
  one set from each unit it needs (the set it consumes from each).
* **GM accesses** of every unit go to one shadow per GM array (``ChipRaces``): an access
  is checked against the latest accesses of every other (unit, pipe) to overlapping bytes
  and reported when neither is ordered before the other. Buffers (UB, L1, L0*) are private
  to a unit and stay in its own detector. The shadow is kept in 64 KiB granules of each
  array, reads and writes apart (a read only meets writes), so an access looks only at
  the records near its bytes; an access that covers an older one of the same (unit, pipe)
  replaces it. Two windows of one pitch (row blocks of a matrix) overlap only where their
  rows and columns both do, so the column blocks two cores write are not a race; other
  windows compare by their hulls. An access goes into its granules' lists only when a
  later access meets that list (what a list holds depends on its records alone), so the
  reads of an input no unit writes cost one append each.

The findings have the per-unit detector's kinds (RAW / WAR / WAW) and name both units:
``RAW race in GM:w: core 0 AIC PIPE_FIX #12 TSTORE (k.py:30) and core 0 AIV0 PIPE_MTE2 #3
TLOAD (k.py:35) touch ... with no flag, FIFO or syncall ordering them``.
"""

from __future__ import annotations

from collections import deque
from itertools import chain

import attrs

from sim.base.vclock import join
from sim.engine.access import GmAccess
from sim.engine.ffts import FftsSet, FftsWait
from sim.engine.races import ROUTED, Race, RaceDetector, conflict

__all__ = ["ChipRaces", "UnitRaces"]

_GRAIN = 16  # log2 of the granule size in bytes
_KEEP = 64  # records kept per granule list (the newest)
_FLUSH = 1 << 16  # pending records of a kind that are put in the granules at once


class _XRecord:
    """A GM access in the chip's shadow; its label (``core 0 AIC PIPE_MTE2 #3 TLOAD
    (k.pto:9:5)``) is made only for a finding."""

    __slots__ = ("gname", "clock", "access", "unit", "pipe", "item", "seq")

    def __init__(self, gname, clock, access, unit, pipe, item, seq):
        self.gname, self.clock, self.access = gname, clock, access
        self.unit, self.pipe, self.item, self.seq = unit, pipe, item, seq

    @property
    def label(self) -> str:
        return f"{self.unit} {self.pipe} {self.item.label(self.seq)}"


def _overlap(a, b) -> bool:
    """Do two GM accesses share a byte? Exact for two row windows of the same pitch (a
    column block of a matrix), else their hulls."""
    if b.end <= a.start or a.end <= b.start:
        return False
    if type(a) is not GmAccess or type(b) is not GmAccess or a.pitch != b.pitch or not a.pitch:
        return True
    p = a.pitch
    ra, ca = divmod(a.start, p)
    rb, cb = divmod(b.start, p)
    if ca + a.width > p or cb + b.width > p:  # a run crosses a row: use the hulls
        return True
    return ra < rb + b.rows and rb < ra + a.rows and ca < cb + b.width and cb < ca + a.width


class ChipRaces:
    """What the unit detectors of a chip share: chip-level flag clocks and the GM shadow."""

    def __init__(self):
        self.pending: dict = {}  # flag (FFTS: (channel, setter)) -> global clocks, FIFO
        self.credits: dict = {}  # FIFO key -> slots its counter started with
        self.gm: dict = {}  # space -> {granule: ([writes], [reads])}
        # space -> (writes, reads) not in the granules yet: (unit, pipe, clock, access,
        # item, seq) each
        self._pending: dict = {}
        self.findings: list[Race] = []
        self._seen: set = set()

    # --- flags ---------------------------------------------------------------------------

    def set(self, key, clock: dict) -> None:
        if type(key) is FftsSet:
            _, setter, targets = key
            for t in targets:
                self.pending.setdefault((t, setter), deque()).append(clock)
        else:
            self.pending.setdefault(key, deque()).append(clock)

    def wait(self, key) -> dict:
        """The global clock a wait on ``key`` joins."""
        if type(key) is FftsWait:
            out: dict = {}
            for s in key[2]:
                q = self.pending.get((key, s))
                if q:
                    out = join(out, q.popleft())
            return out
        credit = self.credits.get(key, 0)
        if credit:  # a slot the counter started with: no set behind it
            self.credits[key] = credit - 1
            return {}
        q = self.pending.get(key)
        return q.popleft() if q else {}

    def added(self, key, n: int) -> None:
        self.credits[key] = self.credits.get(key, 0) + n

    # --- GM ------------------------------------------------------------------------------

    def access(self, unit, pipe: str, clock: dict, access, item, seq: int) -> None:
        """Check one GM access of ``unit`` (a ``UnitRaces``) on ``pipe`` at ``clock``."""
        space = access.space
        granules = self.gm.get(space)
        if granules is None:
            granules = self.gm[space] = {}
            self._pending[space] = ([], [])
        writes, reads = self._pending[space]
        # the lists this access meets (writes; reads too when it writes) get their records
        if writes:
            self._flush(granules, writes, 0)
        if access.write:
            if reads:
                self._flush(granules, reads, 1)
            kinds: tuple[int, ...] = (0, 1)
            mine = writes
        else:
            kinds, mine = (0,), reads
        if granules:
            self._check(granules, unit, pipe, clock, access, item, seq, kinds)
        # recorded when a later access meets its list (an access that nothing of the other
        # kind meets, a read of an input no unit writes, costs one append)
        mine.append((unit, pipe, clock[pipe], access, item, seq))
        if len(mine) >= _FLUSH:
            self._flush(granules, mine, 0 if access.write else 1)

    def _check(self, granules, unit, pipe, clock, access, item, seq, kinds) -> None:
        me = unit.prefix
        gname = me + pipe
        g0, g1 = access.start >> _GRAIN, (access.end - 1) >> _GRAIN
        # the distinct records of the granules (an access spans many: its record is in
        # each), in the order the granules, kinds and lists give them
        lists = [
            ls[k] for ls in map(granules.get, range(g0, g1 + 1)) if ls is not None for k in kinds
        ]
        n = len(me)
        for r in dict.fromkeys(chain.from_iterable(lists)):
            if r.gname == gname or not _overlap(access, r.access):
                continue  # same queue: ordered
            key = r.gname[n:] if r.gname.startswith(me) else r.gname
            if r.clock <= clock.get(key, 0):
                continue  # ordered: r happens before this access
            self._race(r, _XRecord(gname, clock[pipe], access, unit.name, pipe, item, seq))

    @staticmethod
    def _flush(granules, pending: list, k: int) -> None:
        """Put pending accesses of kind ``k`` (0 writes, 1 reads) into their granules'
        lists as records, in the order they were made (what the lists hold depends on the
        records alone: an older record of the same queue that a newer one covers goes, and
        only the newest ``_KEEP`` stay)."""
        for unit, pipe, clock, access, item, seq in pending:
            gname = unit.prefix + pipe
            rec = _XRecord(gname, clock, access, unit.name, pipe, item, seq)
            start, end = access.start, access.end
            for g in range(start >> _GRAIN, ((end - 1) >> _GRAIN) + 1):
                lists = granules.get(g)
                if lists is None:
                    lists = granules[g] = ([], [])
                recs = lists[k]
                if recs:
                    # an older access of this queue that this one covers adds nothing
                    recs[:] = [
                        r
                        for r in recs
                        if not (
                            r.gname == gname and start <= r.access.start and r.access.end <= end
                        )
                    ][-_KEEP:]
                recs.append(rec)
        pending.clear()

    def _race(self, first: _XRecord, second: _XRecord) -> None:
        a, b = first.access, second.access
        kind, what = conflict(a, b)
        msg = (
            f"{kind} race in {a.space}: {first.label} and {second.label} touch {what} with "
            f"no flag, FIFO or syncall ordering them"
        )
        key = (kind, first.label, second.label)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(
                Race(
                    kind,
                    msg,
                    first.label,
                    second.label,
                    a.space,
                    (a.start, a.end),
                    (b.start, b.end),
                )
            )


class UnitRaces(RaceDetector):
    """The race detector of one unit of a chip (see the module doc)."""

    def __init__(self, chip: ChipRaces, core: int, unit: str):
        super().__init__()
        self.chip = chip
        self.prefix = f"{core}/{unit}/"
        self.name = f"core {core} {unit}"
        # a clock's names in the chip's (global) and in this unit's (local) spelling:
        # made once per name, not at every chip-level set and wait
        self._global_names: dict = {}
        self._local_names: dict = {}

    def _report(self, race: Race) -> None:
        """A finding within the unit (its buffers, its own flags) names the unit."""
        super()._report(
            attrs.evolve(
                race,
                message=f"{self.name}: {race.message}",
                first=f"{self.name} {race.first}",
                second=f"{self.name} {race.second}" if race.second else "",
            )
        )

    def _global(self, clock: dict) -> dict:
        names = self._global_names
        try:
            return {names[k]: v for k, v in clock.items()}
        except KeyError:  # a name met for the first time
            p = self.prefix
            for k in clock:
                names[k] = k if "/" in k else p + k
            return {names[k]: v for k, v in clock.items()}

    def _local(self, clock: dict) -> dict:
        names = self._local_names
        try:
            return {names[k]: v for k, v in clock.items()}
        except KeyError:  # a name met for the first time
            p, n = self.prefix, len(self.prefix)
            for k in clock:
                names[k] = k[n:] if k.startswith(p) else k
            return {names[k]: v for k, v in clock.items()}

    def _cross_set(self, key, clock: dict) -> None:
        self.chip.set(key, self._global(clock))

    def _cross_wait(self, pipe, key, dispatch_clock, on_dispatcher) -> None:
        self._join(pipe, self._local(self.chip.wait(key)), dispatch_clock, on_dispatcher)

    def _space(self, space: str):
        """GM arrays are the chip's (its shadow), buffers the unit's."""
        if space.startswith("GM:"):
            self.shadow[space] = ROUTED
            return ROUTED
        return super()._space(space)

    def _routed(self, pipe, clock, access, item, seq) -> None:
        self.chip.access(self, pipe, clock, access, item, seq)
