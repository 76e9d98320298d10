"""The race check across ranks (``sim.engine.rankraces``) looks only at the accesses of the
granules an access's elements span (and at the wide ones): it names the same findings, in
the same order, as a scan of every earlier access of every other unit does. Random
accesses (row windows of one stride and of others, narrow and wide, reads, writes, atomic
adds) by units of several ranks and chips, with signals released and acquired between
them."""

from __future__ import annotations

import random

import pytest

from sim.engine.rankraces import RankRaces, _end, _meet


class _Scan(RankRaces):
    """The check by a scan of every earlier access: chips in the order of their first
    access to the argument, their units likewise, each unit's accesses in its order."""

    def __init__(self, limit: int):
        super().__init__(limit)
        self.log: list = []

    def access(self, unit, rank, name, window, write, what, atomic=False):
        clock = self._clock(unit)
        clock[unit] += 1
        kind = "atomic" if atomic else write
        first, end = window[0], _end(window)
        chips: dict = {}
        for r, nm, chip, u, n, win, w, other in self.log:
            if (r, nm) == (rank, name):
                chips.setdefault(chip, {}).setdefault(u, []).append((n, win, w, other))
        for chip, units in chips.items():
            if chip == unit[:2] and unit[0] == rank:
                continue
            for u, events in units.items():
                for n, win, w, other in events:
                    if u == unit or n <= clock.get(u, 0):
                        continue
                    if not (write or w) or (kind == "atomic" and w == "atomic"):
                        continue
                    if _meet(win, window):
                        a, b = max(win[0], first), min(_end(win), end)
                        self._found(rank, name, a, b, (u, w, other), (unit, write, what))
        self.log.append((rank, name, unit[:2], unit, clock[unit], window, kind, what))


def _window(rng: random.Random) -> tuple:
    stride = rng.choice([256, 256, 256, 512, 64])
    rows = rng.choice([1, 2, 8, 16, 64, 200])
    cols = rng.choice([16, 64, 128, 256])
    first = rng.randrange(0, 1 << 16)
    return first, rows, cols, stride


@pytest.mark.parametrize("seed", range(40))
def test_the_granule_index_names_what_a_scan_of_every_access_names(seed):
    rng = random.Random(seed)
    units = [(r, c, b, "AIV0") for r in range(3) for c in (0, 1) for b in range(2)]
    fast, scan = RankRaces(limit=10**6), _Scan(limit=10**6)
    for step in range(rng.randrange(20, 120)):
        u = rng.choice(units)
        op = rng.random()
        if op < 0.1:
            words = [(rng.randrange(3), "sig", rng.randrange(4))]
            for c in (fast, scan):
                c.release(u, words)
        elif op < 0.2:
            words = [(rng.randrange(3), "sig", rng.randrange(4))]
            for c in (fast, scan):
                c.acquire(u, words)
        else:
            args = (
                u,
                rng.randrange(3),
                rng.choice(["out", "out", "buf"]),
                _window(rng),
                rng.random() < 0.5,
                f"op{step}",
                rng.random() < 0.2,
            )
            for c in (fast, scan):
                c.access(*args)
    assert fast.findings == scan.findings
    if seed == 0:
        assert fast.findings  # the property is not idle


def test_an_access_in_several_granules_is_named_once():
    """A window spanning three granules met by a later one spanning them all: one finding."""
    c = RankRaces()
    a, b = (0, 0, 0, "AIV0"), (1, 0, 0, "AIV0")
    c.access(a, 0, "out", (0, 12, 256, 256), True, "TSTORE")  # 3 Ki elements
    c.access(b, 0, "out", (0, 1, 3072, 3072), False, "TGET")
    assert len(c.findings) == 1 and "%out[0:3072]" in c.findings[0]
