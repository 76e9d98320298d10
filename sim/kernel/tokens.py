"""The builder's bookkeeping for RecordEvent tokens: what each pipe surely waits for, and
the pending spans of each event id of a pipe pair.

``Kernel`` (``sim.kernel.builder``) draws an event id for every token waited on across
pipes: the lowest id of the pair's pool of ``_POOL`` (8) not pending over the token's
span whose last wait the producer's pipe has surely passed. ``_PipeClocks`` answers the
second question (a vector clock per pipe, advanced by the waits the kernel emits),
``_IdPool`` / ``_Intervals`` the first (per id, its pending statement intervals, queried in
O(log n)).
"""

from __future__ import annotations

import bisect

__all__ = ["_PipeClocks", "_IdPool", "_Intervals", "_POOL"]


class _PipeClocks:
    """What each pipe of a section surely waits for: ``passed(section, pipe)`` maps pipes
    to the latest statement index they have passed whenever ``pipe`` passes its next
    statement (a vector clock advanced by the waits the kernel emits; key ``"*"``: every
    pipe, after a ``pipe_barrier(PIPE_ALL)``). A snapshot is shared until the pipe learns
    more, so tokens cost no copy each."""

    __slots__ = ("known", "floor", "snaps", "joined")

    def __init__(self):
        self.known: dict[tuple, dict] = {}
        self.floor: dict = {}
        self.snaps: dict[tuple, dict] = {}
        self.joined: dict[tuple, dict] = {}  # (section, pipe) -> the snapshot it last joined

    def passed(self, section, pipe) -> dict:
        key = (section, pipe)
        snap = self.snaps.get(key)
        if snap is None:
            snap = dict(self.known.get(key, ()))
            snap["*"] = max(snap.get("*", -1), self.floor.get(section, -1))
            self.snaps[key] = snap
        return snap

    def join(self, section, pipe, other: dict, own: tuple | None = None) -> None:
        """``pipe`` waited for a set that knew ``other``, issued on pipe ``own[0]`` after
        statement ``own[1]``."""
        key = (section, pipe)
        mine = self.known.get(key)
        if mine is None:
            mine = self.known[key] = {}
        learnt = False
        if self.joined.get(key) is not other:  # a snapshot never changes: joined once is enough
            self.joined[key] = other
            for p, i in other.items():
                if mine.get(p, -1) < i:
                    mine[p] = i
                    learnt = True
        if own is not None and mine.get(own[0], -1) < own[1]:
            mine[own[0]] = own[1]
            learnt = True
        if learnt:  # else the pipe's snapshot still holds
            self.snaps.pop(key, None)

    def drain(self, section, index) -> None:
        """``pipe_barrier(PIPE_ALL)`` at ``index``: every pipe has passed what precedes it."""
        self.floor[section] = index
        for key in [k for k in self.snaps if k[0] == section]:
            del self.snaps[key]


class _IdPool:
    """The event ids of one (src, dst) pipe pair: the statement intervals over which each
    is pending, the statement of its latest wait, the hand-written sets not yet waited
    for, and the flag statements each (id, source line) takes."""

    __slots__ = ("busy", "last", "open", "flags")

    def __init__(self):
        self.busy: list = [_Intervals() for _ in range(_POOL)]
        self.last: list = [None] * _POOL
        self.open: dict[int, int] = {}
        self.flags: dict[tuple, tuple] = {}

    def waited(self, eid: int, here: int, start: int | None) -> None:
        """A wait of ``eid`` at statement ``here``, for a hand-written set at ``start``
        (None: none open). Ids outside the pool are the user's own: nothing to track."""
        if 0 <= eid < _POOL:
            self.last[eid] = here
            if start is not None:
                self.busy[eid].add(start, here)


_POOL = 8  # event ids per pipe pair


class _Intervals:
    """The statement intervals over which one event id is pending, for O(log n) queries.

    The builder only adds an interval that overlaps none of an id's others, except for
    hand-written set/wait pairs (which may overlap anything), so the intervals are kept
    sorted by start together with the running maximum of their ends: ``[start, end]`` is
    free when every interval starting at or before ``end`` ended before ``start``.
    """

    __slots__ = ("starts", "reach")

    def __init__(self):
        self.starts: list[int] = []
        self.reach: list[int] = []  # reach[i] = the largest end among intervals 0..i

    def free(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, end)
        return i == 0 or self.reach[i - 1] < start

    def add(self, start: int, end: int) -> None:
        starts, reach = self.starts, self.reach
        if not starts or starts[-1] <= start:  # in program order: at the end
            last = reach[-1] if reach else end
            starts.append(start)
            reach.append(end if end > last else last)
            return
        i = bisect.bisect_right(self.starts, start)
        top = max(end, self.reach[i - 1]) if i else end
        self.starts.insert(i, start)  # at the end but for tokens waited on out of order
        self.reach.insert(i, top)
        j = i + 1
        while j < len(self.reach) and self.reach[j] < top:  # stops at once unless overlapping
            self.reach[j] = top
            j += 1
