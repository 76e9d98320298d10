"""Race detection: accesses to the same bytes from different pipes with no ordering.

Pipes run concurrently and the hardware has no interlock on buffer addresses, so two
instructions on different pipes that touch overlapping bytes (at least one writing) must
be ordered by the program: by a ``set_flag``/``wait_flag`` chain, a
``pipe_barrier(PIPE_ALL)`` or a wait that holds the scalar dispatcher. Ordering is tracked
with vector clocks, one per pipe plus one for the dispatcher: an item's clock is its
pipe's clock joined with the dispatcher's at the time it was issued; a ``set_flag``
carries its pipe's clock to the matching ``wait_flag`` (k-th set to k-th wait of the same
``(src, dst, id)``, as the hardware counters do).

Findings: unordered conflicting accesses (RAW / WAR / WAW, naming both instructions, both
tiles and the byte ranges; an access is checked against the latest access of each other
pipe to those bytes — an older one on the same pipe that it covers is dropped, since
whatever races with the older one races with it too), an event id set again while a previous set of it is still
pending, and sets never waited at the end of the run.
"""

from __future__ import annotations

from collections import deque

import attrs

from sim.base.vclock import join

__all__ = ["Access", "Race", "RaceDetector", "conflict"]


@attrs.frozen
class Access:
    """Bytes ``[start, end)`` of ``space`` (a buffer name, or ``GM:<arg>``) an op touches."""

    space: str
    start: int
    end: int
    write: bool
    name: str = ""            # the tile or GM view, for messages


@attrs.frozen
class Race:
    kind: str                 # RAW | WAR | WAW | pending_set | unmatched_set
    message: str
    first: str = ""
    second: str = ""
    space: str = ""
    first_range: tuple = ()
    second_range: tuple = ()


def conflict(a: Access, b: Access) -> tuple[str, str]:
    """(RAW / WAR / WAW, the bytes) of two conflicting accesses, ``a`` the earlier."""
    kind = "WAW" if a.write and b.write else ("RAW" if a.write else "WAR")
    what = (f"{a.name} [{a.start:#x}, {a.end:#x})" if a.name == b.name
            else f"{a.name} [{a.start:#x}, {a.end:#x}) and {b.name} [{b.start:#x}, {b.end:#x})")
    return kind, what


class _Record:
    __slots__ = ("pipe", "clock", "access", "label", "seq")

    def __init__(self, pipe, clock, access, label, seq):
        self.pipe, self.clock, self.access, self.label, self.seq = pipe, clock, access, label, seq


class RaceDetector:
    """Fed by the engine as items run; ``findings`` lists what it saw."""

    def __init__(self):
        self.clocks: dict[str, dict] = {}        # pipe -> vector clock
        self.dispatch: dict = {}                 # the dispatcher's vector clock
        self.flags: dict[tuple, deque] = {}      # flag -> clocks of pending sets (FIFO)
        self.setters: dict[tuple, deque] = {}    # flag -> labels of pending sets
        self.shadow: dict[str, list] = {}        # space -> recent access records
        self._prune_at: dict[str, int] = {}      # space -> list length that triggers a prune
        self.findings: list[Race] = []
        self._seen: set = set()

    def _clock(self, pipe) -> dict:
        c = self.clocks.get(pipe)
        if c is None:
            c = self.clocks[pipe] = {}
        return c

    # --- ordering events ----------------------------------------------------------------

    def issued(self, item) -> dict:
        """The dispatcher's clock for an item entering a pipe queue: shared, not copied
        (the clock is replaced, never changed in place, when the dispatcher learns more)."""
        return self.dispatch

    def start(self, pipe: str, dispatch_clock: dict) -> dict:
        c = join(self._clock(pipe), dispatch_clock)
        c[pipe] = c.get(pipe, 0) + 1
        self.clocks[pipe] = c
        return c

    def set_flag(self, pipe: str, key: tuple, label: str, dispatch_clock: dict) -> None:
        c = self.start(pipe, dispatch_clock)
        if type(key) is not tuple:
            return      # a chip-level flag (XKey): its wait runs on another unit's detector
        pending = self.setters.setdefault(key, deque())
        # a FIFO pop's own MTE2 -> reader flag (sim.engine.xunit, id "tpop") is a counter
        # that user ids cannot reach, set and waited once per pop in program order: two
        # pops in flight (an S and an O pop of flash attention) are not a race
        if pending and key[2] != "tpop":
            src, dst, eid = key
            self._report(Race("pending_set",
                              f"event {src}->{dst}#{eid} set again by {label} while the set by "
                              f"{pending[-1]} is still pending (not yet waited)", pending[-1], label))
        self.flags.setdefault(key, deque()).append(dict(c))
        pending.append(label)

    def wait_flag(self, pipe: str, key: tuple, dispatch_clock: dict, on_dispatcher=False) -> None:
        if type(key) is not tuple:      # a chip-level flag: set on another unit
            if not on_dispatcher:
                self.start(pipe, dispatch_clock)
            return
        q = self.flags.get(key)
        got = q.popleft() if q else {}
        if self.setters.get(key):
            self.setters[key].popleft()
        if on_dispatcher:
            self.dispatch = join(self.dispatch, got)
        else:
            c = self.start(pipe, dispatch_clock)
            self.clocks[pipe] = join(c, got)

    def barrier_all(self) -> None:
        for c in self.clocks.values():
            self.dispatch = join(self.dispatch, c)

    # --- accesses -----------------------------------------------------------------------

    def op(self, pipe: str, label: str, accesses, dispatch_clock: dict, seq: int = 0) -> None:
        c = self.start(pipe, dispatch_clock)
        for a in accesses:
            recs = self.shadow.setdefault(a.space, [])
            kept = []
            for r in recs:
                b = r.access
                if r.pipe == pipe:
                    # an earlier access of this queue that this one covers adds nothing: a
                    # later op unordered with it is unordered with this one too
                    if not (a.start <= b.start and b.end <= a.end and (a.write or not b.write)):
                        kept.append(r)
                    continue          # same queue: ordered
                kept.append(r)
                if b.end <= a.start or a.end <= b.start or not (a.write or b.write):
                    continue
                if r.clock <= c.get(r.pipe, 0):
                    continue          # ordered: r happens before this op
                self._race(r, _Record(pipe, c[pipe], a, label, seq))
            kept.append(_Record(pipe, c[pipe], a, label, seq))
            self.shadow[a.space] = recs = kept
            if len(recs) > self._prune_at.get(a.space, 64):
                self._prune(a.space)

    def _prune(self, space: str) -> None:
        """Drop records every pipe has already seen: they can never race again. The next
        prune waits until the list doubles, so a list that cannot shrink (unordered pipes)
        is not rescanned on every access (amortised O(1) per record)."""
        recs = self.shadow[space]
        clocks = list(self.clocks.values())
        kept = [r for r in recs if not all(c.get(r.pipe, 0) >= r.clock for c in clocks)][-256:]
        self.shadow[space] = kept
        self._prune_at[space] = max(64, 2 * len(kept))

    def _race(self, x: _Record, y: _Record) -> None:
        """Report an unordered pair, named in program order (RAW: the earlier one writes)."""
        first, second = (x, y) if x.seq <= y.seq else (y, x)
        a, b = first.access, second.access
        kind, what = conflict(a, b)
        msg = (f"{kind} race in {a.space}: {first.pipe} {first.label} and {second.pipe} "
               f"{second.label} touch {what} with no flag or barrier ordering them")
        self._report(Race(kind, msg, first.label, second.label, a.space, (a.start, a.end),
                          (b.start, b.end)))

    def _report(self, race: Race) -> None:
        key = (race.kind, race.first, race.second)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(race)

    def finish(self) -> list[Race]:
        for (src, dst, eid), pending in self.setters.items():
            for label in pending:
                self._report(Race("unmatched_set", f"event {src}->{dst}#{eid} set by {label} is "
                                                   f"never waited", label))
        return self.findings
