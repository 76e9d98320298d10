"""Races across ranks: GM accesses no signal orders (``simulate(..., ranks=N, races=True)``).

A remote write (a ``TPUT`` landing in a peer's window, a ``TGET`` or an SDMA copy writing
locally what a peer holds, a collective) races an access of the same bytes by another unit
when nothing orders the two. What orders units of different ranks is a signal: a ``TNOTIFY``
releases everything its unit did before it, a ``TWAIT`` (or a ``TTEST`` that answers true)
acquires every release of the words it read. Each unit keeps a vector clock; every access is
an event of its unit; an event happens before another when the other's unit had acquired the
first unit's clock at or past it.

Accesses followed: the communication instructions (both sides) and the ranks' TLOAD /
TSTORE windows (issue order, which the unit's own synchronisation makes its program order).
Two accesses of one chip's own units are left to the chip's race check (the flags, FIFOs and
cross-core barriers that order them are not followed here): a pair is checked when one of
them is made by a unit of another rank than the memory's, or by a kernel launched beside
(another stream of the rank: they meet only through GM signals, as ranks do). Windows are
compared row by row when they share a row stride (the tiles of one array); ASSUMPTION: other
shapes by their span of elements (a window may then be found to meet one it interleaves
with).
"""

from __future__ import annotations

from bisect import bisect_right

from sim.base.vclock import join

__all__ = ["RankRaces"]

_KEEP = 1 << 14  # accesses kept per unit and GM argument of a rank (the oldest go first)


def _end(w: tuple) -> int:
    base, rows, cols, stride = w
    return base + (rows - 1) * stride + cols


def _meet(a: tuple, b: tuple) -> bool:
    """Whether two windows (first element, rows, cols, row stride) share an element: exact
    for two windows of one row stride whose rows fit it (the tiles of one array), else
    their spans."""
    if a[0] >= _end(b) or b[0] >= _end(a):
        return False
    sa, sb = a[3], b[3]
    if a[1] == 1 or b[1] == 1 or sa != sb or a[2] > sa or b[2] > sb:
        return True
    ra, ca = divmod(a[0], sa)
    rb, cb = divmod(b[0], sb)
    if ca + a[2] > sa or cb + b[2] > sb:
        return True  # a row wraps: the span
    return ra < rb + b[1] and rb < ra + a[1] and ca < cb + b[2] and cb < ca + a[2]


class RankRaces:
    """The vector clocks, releases and accesses of a run with ranks; ``findings``."""

    def __init__(self, limit: int = 50):
        self.clocks: dict = {}  # unit -> its vector clock
        self.released: dict = {}  # (rank, GM argument, element) -> joined clocks
        # (rank, GM argument) -> chip (rank, id) -> [first element, end, {unit: ([count,
        # ...], [(window, kind, what), ...])}]: a chip's span of elements skips it whole
        # where an access lies outside it; each unit's accesses in its own order, so that
        # those a signal ordered before an access (count <= what the accessing unit's clock
        # holds of it) are skipped by one search
        self.accesses: dict = {}
        self.findings: list[str] = []
        self._seen: set = set()
        self.limit = limit

    def _clock(self, unit) -> dict:
        c = self.clocks.get(unit)
        if c is None:
            c = self.clocks[unit] = {unit: 0}
        return c

    def access(
        self,
        unit,
        rank: int,
        name: str,
        window: tuple,
        write: bool,
        what: str,
        atomic: bool = False,
    ):
        """Unit ``unit`` (``(rank, chip, block, unit name)``) reads or writes ``window``
        ((first element, rows, cols, row stride)) of GM argument ``name`` on rank ``rank``;
        ``atomic``: an atomic-add write (two of them never race: the hardware adds both)."""
        clock = self._clock(unit)
        clock[unit] += 1
        by_chip = self.accesses.setdefault((rank, name), {})
        kind = "atomic" if atomic else write
        mine = unit[:2]
        first, end = window[0], _end(window)
        for chip, (lo, hi, by_unit) in by_chip.items():
            if (chip == mine and unit[0] == rank) or first >= hi or lo >= end:
                continue  # one chip's own units (the chip's race check), or apart
            for u, (counts, events) in by_unit.items():
                if u == unit:
                    continue
                # the accesses of u a signal ordered before this one come first
                for win, w, other in events[bisect_right(counts, clock.get(u, 0)) :]:
                    if not (write or w) or (kind == "atomic" and w == "atomic"):
                        continue
                    if _meet(win, window):
                        a, b = max(win[0], first), min(_end(win), end)
                        self._found(rank, name, a, b, (u, w, other), (unit, write, what))
        group = by_chip.get(mine)
        if group is None:
            group = by_chip[mine] = [first, end, {}]
        else:
            group[0], group[1] = min(group[0], first), max(group[1], end)
        counts, events = group[2].setdefault(unit, ([], []))
        counts.append(clock[unit])
        events.append((window, kind, what))
        if len(counts) > _KEEP:
            del counts[: len(counts) - _KEEP], events[: len(events) - _KEEP]

    def release(self, unit, words) -> None:
        """A ``TNOTIFY`` of ``unit`` on ``words`` ((rank, name, element) each)."""
        clock = dict(self._clock(unit))
        for w in words:
            self.released[w] = join(self.released.get(w, {}), clock)

    def acquire(self, unit, words) -> None:
        """A ``TWAIT`` (or a true ``TTEST``) of ``unit`` read ``words``."""
        clock = self._clock(unit)
        for w in words:
            got = self.released.get(w)
            if got:
                clock.update(join(clock, got))

    def _found(self, rank, name, lo, hi, first, second) -> None:
        key = (rank, name, first[0], first[2], second[0], second[2])
        if key in self._seen or len(self.findings) >= self.limit:
            return
        self._seen.add(key)

        def who(e):
            (r, _, block, unit), write, what = e
            return f"rank {r} block {block} {unit} {what} {'writes' if write else 'reads'}"

        self.findings.append(
            f"race on rank {rank} %{name}[{lo}:{hi}]: {who(first)}, then {who(second)}, "
            f"and no signal orders them (TNOTIFY after the first, TWAIT before the second)"
        )
