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
whatever races with the older one races with it too), an event id set again while a previous set of
it is still pending, and sets never waited at the end of the run.
"""

from __future__ import annotations

from collections import deque
from itertools import count
from typing import Any

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
    name: str = ""  # the tile or GM view, for messages


@attrs.frozen
class Race:
    kind: str  # RAW | WAR | WAW | pending_set | unmatched_set
    message: str
    first: str = ""
    second: str = ""
    space: str = ""
    first_range: tuple = ()
    second_range: tuple = ()


def conflict(a: Access, b: Access) -> tuple[str, str]:
    """(RAW / WAR / WAW, the bytes) of two conflicting accesses, ``a`` the earlier."""
    kind = "WAW" if a.write and b.write else ("RAW" if a.write else "WAR")
    what = (
        f"{a.name} [{a.start:#x}, {a.end:#x})"
        if a.name == b.name
        else f"{a.name} [{a.start:#x}, {a.end:#x}) and {b.name} [{b.start:#x}, {b.end:#x})"
    )
    return kind, what


# A record of the shadow is a tuple: the pipe's clock at the access, the Access, the
# record's number in the detector (the order of a space's records across pipes), the pipe,
# and the item with its sequence number (the label is made only for a finding).
_CLOCK, _ACCESS, _N, _PIPE, _ITEM, _SEQ = range(6)
_MAX_SHAPES = 1 << 15  # lane shapes kept before the memo starts again
_NOTHING: dict = {}  # the clock of a wait with no set (never changed)
# the shadow of a space whose accesses a subclass checks elsewhere: a sentinel stored where
# a space's lanes (a dict) go, hence Any
ROUTED: Any = object()


def _label(r) -> str:
    return r[_ITEM].label(r[_SEQ])


class RaceDetector:
    """Fed by the engine as items run; ``findings`` lists what it saw.

    The cost per item is flat and small where the program orders its pipes (the common
    case), so a run checks its races at little cost:

    * **Clocks in place.** A pipe's clock is one dict changed in place: an item joins the
      dispatcher's clock only when that clock changed since the pipe last joined it (the
      dispatcher replaces its clock, never changes it in place, when it learns more).
    * **Records per pipe.** A space's records are kept per pipe, oldest first. A pipe's
      clock only grows, so the records of another pipe an access is not ordered after are
      that pipe's newest ones: an access looks at those (in a double-buffered loop, the
      other pipe's work on the other buffer) and stops at the first it is ordered after.
      A lane's clocks grow with its records, so that is one comparison: with the newest
      record the access conflicts with, which depends on the lane's shape (below) alone
      and is worked out once per shape and access. Only when it is unordered are the
      space's records scanned (in insertion order, as findings are named).
    * **Covered records.** The records an access covers are of its own pipe only, and
      which they are depends on the accesses of that pipe's records alone (their shape):
      worked out once per shape and access, then the record goes in by index (a loop
      cycles through a few shapes). Not for GM arrays: a loop walking one makes a new
      window at every step, so their lanes are filtered as they go.
    """

    # lane shapes memoised (False: every lane filtered as a GM array's is, the plain
    # scan the memos must agree with; tests compare the two)
    memo = True

    def __init__(self):
        self.clocks: dict[str, dict] = {}  # pipe -> vector clock (changed in place)
        self._joined: dict[str, dict] = {}  # pipe -> dispatcher clock it last joined
        # the dispatcher's vector clock: an item entering a pipe queue keeps it, shared, as
        # it is replaced, never changed in place, when the dispatcher learns more
        self.dispatch: dict = {}
        self.flags: dict[tuple, deque] = {}  # flag -> (clock, item, seq) of pending sets
        # space -> pipe -> its lane: [shape number, its records, oldest first, the shape's
        # transitions, its conflicts] (all but the records None on a GM array: no memo)
        self.shadow: dict[str, dict] = {}
        self._shapes: list = []  # shape number -> its accesses
        self._shape_ids: dict = {}  # ids of a shape's accesses -> its number
        self._trans_of: list = []  # shape number -> id(access) -> _transition
        # shape number -> id(access) -> index of the newest record the access conflicts
        # with (-1: none)
        self._meets_of: list = []
        # space -> [records kept, the record count that triggers a prune]
        self._count: dict[str, list] = {}
        self._made = count(1)  # numbers the records
        self.findings: list[Race] = []
        self._seen: set = set()

    # --- ordering events ----------------------------------------------------------------

    def start(self, pipe: str, dispatch_clock: dict) -> dict:
        """The clock of ``pipe`` at its next item, issued under ``dispatch_clock``: the
        pipe's own clock, changed in place."""
        c = self.clocks.get(pipe)
        if c is None:
            c = self.clocks[pipe] = {}
        if self._joined.get(pipe) is not dispatch_clock:
            for k, v in dispatch_clock.items():
                if c.get(k, 0) < v:
                    c[k] = v
            self._joined[pipe] = dispatch_clock
        c[pipe] = c.get(pipe, 0) + 1
        return c

    def set_flag(self, pipe: str, key: tuple, item, seq: int, dispatch_clock: dict) -> None:
        c = self.clocks.get(pipe)  # start(), inline: hot
        if c is None or self._joined.get(pipe) is not dispatch_clock:
            c = self.start(pipe, dispatch_clock)
        else:
            c[pipe] += 1
        if type(key) is not tuple:
            return self._cross_set(key, c)
        q = self.flags.get(key)
        if q is None:
            q = self.flags[key] = deque()
        # a FIFO pop's own MTE2 -> reader flag (sim.engine.xunit, id "tpop") is a counter
        # that user ids cannot reach, set and waited once per pop in program order: two
        # pops in flight (an S and an O pop of flash attention) are not a race
        elif q and key[2] != "tpop":
            src, dst, eid = key
            _, was, at = q[-1]
            before, label = was.label(at), item.label(seq)
            self._report(
                Race(
                    "pending_set",
                    f"event {src}->{dst}#{eid} set again by {label} while the set by "
                    f"{before} is still pending (not yet waited)",
                    before,
                    label,
                )
            )
        q.append((c.copy(), item, seq))

    def wait_flag(self, pipe: str, key: tuple, dispatch_clock: dict, on_dispatcher=False) -> None:
        if type(key) is not tuple:
            return self._cross_wait(pipe, key, dispatch_clock, on_dispatcher)
        q = self.flags.get(key)
        self._join(pipe, q.popleft()[0] if q else _NOTHING, dispatch_clock, on_dispatcher)

    # a chip-level flag (XKey): set and waited on by different units (sim.engine.xraces)

    def _cross_set(self, key, clock: dict) -> None:
        """A set of a chip-level flag at ``clock``: its wait runs on another unit."""

    def _cross_wait(self, pipe, key, dispatch_clock: dict, on_dispatcher: bool) -> None:
        """A wait on a chip-level flag: its set ran on another unit."""
        if not on_dispatcher:
            self.start(pipe, dispatch_clock)

    def _space(self, space: str):
        """The lanes of a space met for the first time (``ROUTED``: a subclass checks its
        accesses elsewhere, ``_routed``)."""
        sp: dict = {}
        self.shadow[space] = sp
        self._count[space] = [0, 64]
        return sp

    def _routed(self, pipe, clock, access, item, seq) -> None:
        raise NotImplementedError

    def _join(self, pipe, got: dict, dispatch_clock: dict, on_dispatcher: bool) -> None:
        """A wait on ``pipe`` (or the dispatcher) learns the clock ``got`` of its set."""
        if on_dispatcher:
            self.dispatch = join(self.dispatch, got)
            return
        c = self.clocks.get(pipe)  # start(), inline: hot
        if c is None or self._joined.get(pipe) is not dispatch_clock:
            c = self.start(pipe, dispatch_clock)
        else:
            c[pipe] += 1
        for k, v in got.items():
            if c.get(k, 0) < v:
                c[k] = v

    def barrier_all(self) -> None:
        for c in self.clocks.values():
            self.dispatch = join(self.dispatch, c)

    # --- accesses -----------------------------------------------------------------------

    def op(self, pipe: str, item, seq: int, accesses, dispatch_clock: dict) -> None:
        c = self.clocks.get(pipe)  # start(), inline: hot
        if c is None or self._joined.get(pipe) is not dispatch_clock:
            c = self.start(pipe, dispatch_clock)
            mine = c[pipe]
        else:
            mine = c[pipe] = c[pipe] + 1
        if not accesses:
            return
        shadow = self.shadow
        made = self._made
        for a in accesses:
            sp = shadow.get(a.space)
            if sp is None:
                sp = self._space(a.space)
            if sp is ROUTED:
                self._routed(pipe, c, a, item, seq)
                continue
            lane = None
            for q, other in sp.items():
                if q == pipe:
                    lane = other
                    continue
                # the records of q unordered with this op are its newest ones: most often
                # the newest is ordered already (one comparison)
                recs = other[1]
                seen = c.get(q, 0)
                if recs and recs[-1][0] > seen:
                    meets = other[3]
                    if meets is None:
                        if not _meets(recs, seen, a):
                            continue
                    else:
                        # the newest record of q's that a conflicts with depends on q's
                        # shape alone; the records after it are unordered too
                        i = meets.get(id(a))
                        if i is None:
                            i = meets[id(a)] = _newest_conflict(self._shapes[other[0]], a)
                        if i < 0 or recs[i][0] <= seen:
                            continue
                    self._check(sp, pipe, c, a, item, seq)
                    lane = sp.get(pipe)
                    break
            rec = (mine, a, next(made), pipe, item, seq)
            if lane is None:
                space = a.space
                shape = None if not self.memo or space.startswith("GM:") else self._shape((a,))
                sp[pipe] = (
                    [None, [rec], None, None]
                    if shape is None
                    else [shape, [rec], self._trans_of[shape], self._meets_of[shape]]
                )
                k = 0
            elif lane[0] is None:
                # a GM array's windows are new objects as a loop walks it: no memo
                recs = lane[1]
                before = len(recs)
                if before:
                    s, e, w = a.start, a.end, a.write
                    recs[:] = [
                        r
                        for r in recs
                        if not (s <= r[1].start and r[1].end <= e and (w or not r[1].write))
                    ]
                recs.append(rec)
                k = before + 1 - len(recs)
            else:
                # an earlier access of this queue that this one covers adds nothing: a
                # later op unordered with it is unordered with this one too (which records
                # go depends on the lane's accesses alone: worked out once per shape)
                t = lane[2].get(id(a))
                if t is None:
                    t = self._transition(lane, a)
                recs = lane[1]
                drops = t[1]
                for i in drops:
                    del recs[i]
                recs.append(rec)
                lane[0], lane[2], lane[3] = t[0], t[2], t[3]
                k = len(drops)
            if k != 1:  # the count of the space's records changed
                n = self._count[a.space]
                n[0] += 1 - k
                if n[0] > n[1]:
                    self._prune(a.space)

    def _shape(self, accesses) -> int:
        """The number of a lane's shape: the accesses of its records, in order."""
        key = tuple(map(id, accesses))
        n = self._shape_ids.get(key)
        if n is None:  # the shape keeps its accesses, so their ids stay theirs
            n = self._shape_ids[key] = len(self._shapes)
            self._shapes.append(tuple(accesses))
            self._trans_of.append({})
            self._meets_of.append({})
        return n

    def _transition(self, lane, a) -> tuple:
        """(shape after, indices of the records dropped, last first, the shape after's
        transitions) of ``a`` recorded on a lane: the lane's records that ``a`` covers go."""
        if len(self._shapes) > _MAX_SHAPES:
            self._forget()
        have = self._shapes[lane[0]]
        s, e, w = a.start, a.end, a.write
        drop = [i for i, b in enumerate(have) if s <= b.start and b.end <= e and (w or not b.write)]
        after = self._shape(tuple(b for i, b in enumerate(have) if i not in drop) + (a,))
        t = self._trans_of[lane[0]][id(a)] = (
            after,
            tuple(reversed(drop)),
            self._trans_of[after],
            self._meets_of[after],
        )
        return t

    def _reshape(self, lane) -> None:
        """Number a memoised lane's shape again from its records (after the memo or the
        records changed wholesale), with that shape's transitions and conflicts."""
        n = lane[0] = self._shape(tuple(r[_ACCESS] for r in lane[1]))
        lane[2], lane[3] = self._trans_of[n], self._meets_of[n]

    def _forget(self) -> None:
        """Start the shape memo again (an irregular program with ever new lane shapes)."""
        self._trans_of.clear()
        self._meets_of.clear()
        self._shape_ids.clear()
        self._shapes.clear()
        for sp in self.shadow.values():
            for lane in sp.values() if sp is not ROUTED else ():
                if lane[0] is not None:
                    self._reshape(lane)

    def _check(self, sp: dict, pipe: str, c: dict, a, item, seq) -> None:
        """Report the records of other pipes that ``a`` conflicts with unordered, in the
        order they were recorded."""
        recs = sorted((r for q, lane in sp.items() if q != pipe for r in lane[1]), key=_order)
        for r in recs:
            b = r[_ACCESS]
            if b.end <= a.start or a.end <= b.start or not (a.write or b.write):
                continue
            if r[_CLOCK] <= c.get(r[_PIPE], 0):
                continue  # ordered: r happens before this op
            self._race(r, (c[pipe], a, 0, pipe, item, seq))

    def _prune(self, space: str) -> None:
        """Drop records every pipe has already seen: they can never race again. The next
        prune waits until the list doubles, so a list that cannot shrink (unordered pipes)
        is not rescanned on every access (amortised O(1) per record)."""
        sp = self.shadow[space]
        recs = sorted((r for lane in sp.values() for r in lane[1]), key=_order)
        clocks = list(self.clocks.values())
        kept = [r for r in recs if not all(c.get(r[_PIPE], 0) >= r[_CLOCK] for c in clocks)][-256:]
        for lane in sp.values():
            lane[1].clear()
        for r in kept:
            sp[r[_PIPE]][1].append(r)
        for lane in sp.values():
            if lane[0] is not None:
                self._reshape(lane)
        self._count[space] = [len(kept), max(64, 2 * len(kept))]

    def _race(self, x: tuple, y: tuple) -> None:
        """Report an unordered pair, named in program order (RAW: the earlier one writes)."""
        first, second = (x, y) if x[_SEQ] <= y[_SEQ] else (y, x)
        a, b = first[_ACCESS], second[_ACCESS]
        kind, what = conflict(a, b)
        one, two = _label(first), _label(second)
        msg = (
            f"{kind} race in {a.space}: {first[_PIPE]} {one} and {second[_PIPE]} "
            f"{two} touch {what} with no flag or barrier ordering them"
        )
        self._report(Race(kind, msg, one, two, a.space, (a.start, a.end), (b.start, b.end)))

    def _report(self, race: Race) -> None:
        key = (race.kind, race.first, race.second)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(race)

    def finish(self) -> list[Race]:
        for (src, dst, eid), pending in self.flags.items():
            for _, item, seq in pending:
                label = item.label(seq)
                self._report(
                    Race(
                        "unmatched_set",
                        f"event {src}->{dst}#{eid} set by {label} is never waited",
                        label,
                    )
                )
        return self.findings


def _order(r: tuple) -> int:
    return r[_N]


def _newest_conflict(have: tuple, a) -> int:
    """The index of the newest of a lane's accesses ``have`` that ``a`` conflicts with, -1
    when none does."""
    s, e, w = a.start, a.end, a.write
    for i in range(len(have) - 1, -1, -1):
        b = have[i]
        if b.start < e and s < b.end and (w or b.write):
            return i
    return -1


def _meets(recs: list, seen: int, a) -> bool:
    """Does ``a`` conflict with one of a lane's newest records, those past ``seen`` (the
    clock the accessing pipe has of the lane's pipe), before meeting an ordered one?"""
    s, e, w = a.start, a.end, a.write
    for r in reversed(recs):
        if r[0] <= seen:
            return False
        b = r[1]
        if b.start < e and s < b.end and (w or b.write):
            return True
    return False
