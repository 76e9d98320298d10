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

Cost: an access is compared only with the accesses listed in the granules of elements it
spans (granules of about the first window's size of each GM argument; a window spanning many
is listed apart and compared with every access), and reads made while nothing has written
the argument wait in a plain list (an input no unit writes costs one append per read). The
findings are those of a scan of every earlier access, in its order
(``tests/test_rankraces_index.py``).
"""

from __future__ import annotations

from bisect import bisect_right

from sim.base.vclock import join

__all__ = ["RankRaces"]

_KEEP = 1 << 14  # accesses kept per unit, GM argument of a rank and granule (the oldest go)
_MIN_SHIFT = 10  # granules of 1 Ki elements at least
_SPREAD = 8  # granules an access is listed in at most; a wider one is listed as wide


class _Group:
    """The accesses of one chip to one GM argument of a rank: the span of their elements
    (``lo``, ``hi``: an access outside it skips the chip whole), the order of the units'
    first accesses (findings are named in it), per granule and in ``wide`` (those spanning
    more than ``_SPREAD`` granules) each unit's accesses in its own order, as (clock counts,
    (window, kind, label)): those a signal ordered before an access (count <= what the
    accessing unit's clock holds of it) are skipped by one search."""

    __slots__ = ("lo", "hi", "order", "granules", "wide")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self.order: dict = {}
        self.granules: dict = {}
        self.wide: dict = {}


def _by_unit_and_count(hit: tuple) -> tuple:
    return hit[0], hit[1]


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
        # (rank, GM argument) -> [granule shift, chip (rank, id) -> _Group, the reads made
        # while nothing was written yet (None once something is)]: an access is compared
        # only with the accesses of the granules its elements span (and the wide ones), so
        # one that meets a few of a rank's thousand tiles looks at those
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
        clock = self.clocks.get(unit)
        if clock is None:
            clock = self._clock(unit)
        clock[unit] += 1
        table = self.accesses.get((rank, name))
        if table is None:  # granules of about the first window's span
            first, end = window[0], _end(window)
            table = self.accesses[(rank, name)] = [
                max((end - first).bit_length(), _MIN_SHIFT + 1) - 1,
                {},
                [],
            ]
        pending = table[2]
        if pending is not None:
            # nothing written yet: a read meets nothing, and waits in a plain list (the
            # reads of an input no unit writes cost one append each)
            if not (write or atomic):
                pending.append((unit, clock[unit], window, what))
                return
            table[2] = None
            for u, n, win, other in pending:
                self._record(table, u, n, win, False, other)
        kind = "atomic" if atomic else write
        self._check(table, clock, unit, rank, name, window, write, kind, what)
        self._record(table, unit, clock[unit], window, kind, what)

    def _check(self, table, clock, unit, rank, name, window, write, kind, what) -> None:
        """Find the accesses of other units that ``window`` meets and no signal ordered
        before it (see ``access``)."""
        shift, by_chip, _ = table
        first, end = window[0], _end(window)
        g0, g1 = first >> shift, (end - 1) >> shift
        mine = unit[:2]
        for chip, group in by_chip.items():
            if (chip == mine and unit[0] == rank) or first >= group.hi or group.lo >= end:
                continue  # one chip's own units (the chip's race check), or apart
            grans = group.granules
            if g1 - g0 < _SPREAD:
                lists = [grans[g] for g in range(g0, g1 + 1) if g in grans]
            else:
                lists = [ls for g, ls in grans.items() if g0 <= g <= g1]
            lists.append(group.wide)
            hits = None
            for by_unit in lists:
                for u, (counts, events) in by_unit.items():
                    if u == unit:
                        continue
                    # the accesses of u a signal ordered before this one come first
                    at = bisect_right(counts, clock.get(u, 0))
                    for j, (win, w, other) in enumerate(events[at:], at):
                        if not (write or w) or (kind == "atomic" and w == "atomic"):
                            continue
                        if _meet(win, window):
                            if hits is None:
                                hits = []
                            hits.append((group.order[u], counts[j], u, win, w, other))
            if hits:
                # in the order of the units' first accesses, each unit's in its own order
                # (an access listed in two granules is found twice: named once, _found)
                for _, _, u, win, w, other in sorted(hits, key=_by_unit_and_count):
                    a, b = max(win[0], first), min(_end(win), end)
                    self._found(rank, name, a, b, (u, w, other), (unit, write, what))

    @staticmethod
    def _record(table, unit, n: int, window: tuple, kind, what: str) -> None:
        """List access number ``n`` of ``unit`` in its chip's group: in each granule its
        elements span, or as wide."""
        shift, by_chip, _ = table
        first, end = window[0], _end(window)
        g0, g1 = first >> shift, (end - 1) >> shift
        mine = unit[:2]
        group = by_chip.get(mine)
        if group is None:
            group = by_chip[mine] = _Group(first, end)
        else:
            if first < group.lo:
                group.lo = first
            if end > group.hi:
                group.hi = end
        if unit not in group.order:
            group.order[unit] = len(group.order)
        if g1 - g0 < _SPREAD:
            grans = group.granules
            targets = [grans.setdefault(g, {}) for g in range(g0, g1 + 1)]
        else:
            targets = [group.wide]
        for by_unit in targets:
            lists = by_unit.get(unit)
            if lists is None:
                lists = by_unit[unit] = ([], [])
            counts, events = lists
            counts.append(n)
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
