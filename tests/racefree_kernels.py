"""Kernels for the race-freedom tests (``tests/test_racefree.py``): single-unit kernels
synchronised by construction and the one-line edits that break them, kernels with one
fault, column blocks and GM windows stored by several unordered cores, one-line edits of a
``.pto`` file's synchronisation."""

from __future__ import annotations

import contextlib
from collections import deque

import pytest

import sim
import sim.engine.chip as chip_module

# A synchronised kernel as a list of statements: ("TLOAD", tile, gm), ("TSTORE", gm, tile),
# ("TADD", dst, a, b), ("TEXP", dst, a), ("set", src, dst, id), ("wait", src, dst, id),
# ("barrier",). Tiles 0-3 are UB tiles, GM arrays "x" and "y".
PIPE = {"TLOAD": "PIPE_MTE2", "TSTORE": "PIPE_MTE3", "TADD": "PIPE_V", "TEXP": "PIPE_V"}
OPS = list(PIPE)


def _join(c: dict, d: dict) -> None:
    for k, v in d.items():
        if c.get(k, 0) < v:
            c[k] = v


def random_plan(rng, ops, lo: int, hi: int) -> list:
    """``lo`` to ``hi - 1`` random plan steps (name, a, b, c, how, eid) for ``synced``."""
    n = rng.randrange(lo, hi)
    return [
        (rng.choice(ops), *(rng.randrange(4) for _ in range(3)), rng.randrange(7), rng.randrange(4))
        for _ in range(n)
    ]


class _Synced:
    """Emits statements with the sync each needs, from vector clocks kept as the
    programming model orders pipes (k-th set to k-th wait; the scalar unit's waits and
    PIPE_ALL barriers order what is issued after them)."""

    def __init__(self, alias: bool):
        self.alias = alias
        self.out: list = []
        self.clk = {p: {} for p in ("PIPE_MTE2", "PIPE_V", "PIPE_MTE3", "PIPE_S")}
        self.d: dict = {}  # the dispatcher's clock
        self.pending: dict = {}  # flag -> clocks of its sets
        self.last_wait: dict = {}  # flag -> (pipe, own count)
        self.last: dict = {}  # resource -> pipe -> (write, read)

    def _item(self, pipe: str) -> dict:
        c = self.clk[pipe]
        _join(c, self.d)
        c[pipe] = c.get(pipe, 0) + 1
        return c

    def _knows(self, p: str, q: str) -> int:
        return max(self.clk[p].get(q, 0), self.d.get(q, 0))

    def _free(self, key) -> bool:
        """Can ``key`` be set again: no set pending, its last wait known to the setter."""
        if self.pending.get(key):
            return False
        w = self.last_wait.get(key)
        return w is None or w[0] == "PIPE_S" or self._knows(key[0], w[0]) >= w[1]

    def sync(self, q: str, p: str, how: int, eid: int) -> None:
        """Order everything ``q`` did before everything ``p`` does next: a flag (how 0-3),
        a barrier (4), a wait of the scalar unit (5), that and a set of the scalar unit (6)."""
        if how == 4:
            self.barrier()
            return
        if how == 6:
            self.sync(q, p, 5, eid)
            q = "PIPE_S"
        dst = "PIPE_S" if how == 5 else p
        key = next((k for k in ((q, dst, (eid + i) % 4) for i in range(4)) if self._free(k)), None)
        if key is None:
            self.barrier()
            return
        self.out += [("set", *key), ("wait", *key)]
        self.pending.setdefault(key, deque()).append(dict(self._item(q)))
        got = self.pending[key].popleft()
        if dst == "PIPE_S":
            self.d = {**self.d}
            _join(self.d, got)
            self.last_wait[key] = ("PIPE_S", 0)
        else:
            c = self._item(p)
            _join(c, got)
            self.last_wait[key] = (p, c[p])

    def barrier(self) -> None:
        self.out.append(("barrier",))
        self.d = {**self.d}
        for c in self.clk.values():
            _join(self.d, c)

    def op(self, stmt: tuple, how: int, eid: int) -> None:
        name = stmt[0]
        p = PIPE[name]
        # aliased tiles 2i and 2i + 1 share bytes: one resource
        res_of = (lambda x: x // 2 if type(x) is int else x) if self.alias else (lambda x: x)
        writes = {res_of(stmt[1])}
        reads = set(map(res_of, stmt[2:]))
        for res in sorted(writes | reads, key=str):
            for q, (w, r) in sorted(self.last.get(res, {}).items()):
                if q != p and self._knows(p, q) < (max(w, r) if res in writes else w):
                    self.sync(q, p, how, eid)
        own = self._item(p)[p]
        for res in writes | reads:
            w, r = self.last.setdefault(res, {}).get(p, (0, 0))
            self.last[res][p] = (own, r) if res in writes else (w, own)
        self.out.append(stmt)

    def statement(self, name: str, a: int, b: int, c: int) -> tuple:
        """The statement of a plan step on tiles ``a``, ``b``, ``c`` (GM array x or y by
        ``c``'s parity)."""
        gm = "xy"[c % 2]
        return {
            "TLOAD": (name, a, gm),
            "TSTORE": (name, gm, a),
            "TADD": (name, a, b, c),
            "TEXP": (name, a, b),
        }[name]

    def run(self, plan) -> list:
        """The statements of ``plan`` steps (name, a, b, c, how, eid), synchronised."""
        for name, a, b, c, how, eid in plan:
            self.op(self.statement(name, a, b, c), how, eid)
        return self.out


def synced(plan, alias=False) -> list:
    return _Synced(alias).run(plan)


def pipeline(n: int, barrier_every: int = 0) -> list:
    """Load, compute, store of ``n`` tiles through two input and two output buffers:
    ping-pong event ids, both directions of every hand-off, a barrier every few steps."""
    out = [("set", "PIPE_V", "PIPE_MTE2", b) for b in (0, 1)]
    out += [("set", "PIPE_MTE3", "PIPE_V", b) for b in (0, 1)]
    for i in range(n):
        b = i % 2
        out += [
            ("wait", "PIPE_V", "PIPE_MTE2", b),
            ("TLOAD", b, "x"),
            ("set", "PIPE_MTE2", "PIPE_V", b),
            ("wait", "PIPE_MTE2", "PIPE_V", b),
            ("wait", "PIPE_MTE3", "PIPE_V", b),
            ("TEXP", 2 + b, b),
            ("set", "PIPE_V", "PIPE_MTE2", b),
            ("set", "PIPE_V", "PIPE_MTE3", b),
            ("wait", "PIPE_V", "PIPE_MTE3", b),
            ("TSTORE", "y", 2 + b),
            ("set", "PIPE_MTE3", "PIPE_V", b),
        ]
        if barrier_every and i % barrier_every == barrier_every - 1:
            out.append(("barrier",))
    out += [("wait", "PIPE_V", "PIPE_MTE2", b) for b in (0, 1)]
    return out + [("wait", "PIPE_MTE3", "PIPE_V", b) for b in (0, 1)]


def make_kernel(stmts, dtype="f32", rows=16, cols=64, alias=False):
    """The kernel of ``stmts``; ``alias``: tiles 0 and 1 (2 and 3) overlap by half."""
    k = sim.Kernel("synced")
    gm = {n: k.gm(n, dtype, (rows, cols)) for n in "xy"}
    size = rows * cols * int(dtype[1:]) // 8
    at = [0, size // 2, 2 * size, 5 * size // 2] if alias else [None] * 4
    t = [k.tile("vec", dtype, rows, cols, addr=a) for a in at]
    for s in stmts:
        if s[0] == "TLOAD":
            k.TLOAD(t[s[1]], gm[s[2]])
        elif s[0] == "TSTORE":
            k.TSTORE(gm[s[1]], t[s[2]])
        elif s[0] in ("TADD", "TEXP"):
            k.instr(s[0], *(t[i] for i in s[1:]))
        elif s[0] == "set":
            k.set_flag(*s[1:])
        elif s[0] == "wait":
            k.wait_flag(*s[1:])
        else:
            k.pipe_barrier("PIPE_ALL")
    return k


MUTATIONS = ["drop", "drop_pair", "sink", "hoist", "double"]


def mutate(stmts: list, kind: str, at: int) -> list:
    """One sync edit: drop a sync, drop a set with its wait, move a wait past the next
    statement or before the previous one, set a flag twice."""
    syncs = [i for i, s in enumerate(stmts) if s[0] in ("set", "wait", "barrier")]
    if not syncs:
        return stmts
    i = syncs[at % len(syncs)]
    s, out = stmts[i], list(stmts)
    if kind == "drop":
        del out[i]
    elif kind == "drop_pair" and s[0] == "set" and ("wait", *s[1:]) in out[i:]:
        del out[out.index(("wait", *s[1:]), i)]
        del out[i]
    elif kind == "sink" and i + 1 < len(out):
        out[i], out[i + 1] = out[i + 1], out[i]
    elif kind == "hoist" and i > 0:
        out[i - 1], out[i] = out[i], out[i - 1]
    elif kind == "double" and s[0] == "set":
        out.insert(i, s)
    return out


def racy(kind: str, n: int):
    """A manual kernel over ``n`` tiles with one fault: a RAW race (a load read before its
    flag), a set made twice before its wait, a set never waited."""
    k = sim.Kernel(kind)
    x, y = k.gm("x", "f32", (16, 64)), k.gm("y", "f32", (16, 64))
    ts = [k.tile("vec", "f32", 16, 64) for _ in range(n + 1)]
    for i in range(n):
        k.TLOAD(ts[i], x)
        k.set_flag("PIPE_MTE2", "PIPE_V", 0)
        if kind == "pending" and i == n - 1:
            k.set_flag("PIPE_MTE2", "PIPE_V", 0)
        if kind != "raw" or i < n - 1:
            k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
        if kind == "pending" and i == n - 1:
            k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
        if kind == "raw" and i == n - 1:
            k.TEXP(ts[n], ts[i])  # reads the tile the load writes, no wait
            k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
        else:
            k.TEXP(ts[n], ts[i])
        k.pipe_barrier("PIPE_ALL")
    if kind == "unmatched":
        k.set_flag("PIPE_V", "PIPE_MTE3", 1)
    k.TSTORE(y, ts[n])
    return k


def column_blocks(width: int, step: int, cores: int):
    """``cores`` cores store 16 x ``width`` blocks of one 16 x 64 matrix, ``step`` apart."""
    k = sim.Kernel("blocks", block_dim=cores)
    y = k.gm("y", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, width)
    k.TEXPANDS(t, 1.0)
    k.TSTORE(y.view(16, width, 0, k.block_idx * step), t)
    return k


def sync_lines(text: str, every: int) -> list[int]:
    lines = [
        i
        for i, s in enumerate(text.splitlines())
        if any(w in s for w in ("pto.set_flag", "pto.wait_flag", "pto.barrier"))
    ]
    return lines[::every]


def edit(text: str, at: int, kind: str) -> str:
    lines = text.splitlines()
    if kind == "drop":
        del lines[at]
    else:
        j = at + 1 if kind == "sink" else at - 1
        lines[at], lines[j] = lines[j], lines[at]
    return "\n".join(lines) + "\n"


def windows(cores: int, store: tuple, load: tuple):
    """Every core loads a window of ``y`` and stores another (auto mode orders its own
    pipes, nothing orders the cores): ``(rows, cols, row, col, row step, col step)``, the
    steps per block index."""
    k = sim.Kernel("windows", block_dim=cores)
    y = k.gm("y", "f32", (32, 64))
    views = []
    for rows, cols, r0, c0, dr, dc in (load, store):
        views.append(
            (
                k.tile("vec", "f32", rows, cols),
                y.view(rows, cols, r0 + k.block_idx * dr, c0 + k.block_idx * dc),
            )
        )
    (u, lv), (t, sv) = views
    k.TLOAD(u, lv)
    k.TEXPANDS(t, 1.0)
    k.TSTORE(sv, t)
    return k


def fit(cores: int, window: tuple) -> tuple:
    """``window`` with its steps and offsets cut down until every core's is inside ``y``."""
    rows, cols, r0, c0, dr, dc = window
    while rows + dr * (cores - 1) > 32:
        dr //= 2
    while cols + dc * (cores - 1) > 64:
        dc -= 8
    return (
        rows,
        cols,
        min(r0, 32 - rows - dr * (cores - 1)),
        min(c0, 64 - cols - dc * (cores - 1)),
        dr,
        dc,
    )


def two_ways(program, **kw):
    """(the proof's verdicts, simulate(races=True) as it runs, simulate with the proof
    forced to fail: the detector's run)."""
    kw.setdefault("races", True)
    real, verdicts = chip_module.Chip.race_free, []

    def spy(chip):
        verdicts.append(real(chip))
        return verdicts[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chip_module.Chip, "race_free", spy)
        proof = sim.simulate(program, **kw)
        mp.setattr(chip_module.Chip, "race_free", lambda chip: False)
        forced = sim.simulate(program, **kw)
    return verdicts, proof, forced


@contextlib.contextmanager
def chip_runs():
    """A list of (GM summarised, detector on) of every chip the block's runs make (the
    proof's run summarises GM and runs no detector; a detector's run does)."""
    runs: list = []
    init = chip_module.Chip.__init__

    def counted(chip, *args, **kw):
        runs.append((kw.get("gm_summary", False), kw.get("races", False)))
        init(chip, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chip_module.Chip, "__init__", counted)
        yield runs
