"""Race freedom shown from a run's dispatch logs, without running the race detector.

The detector (``sim.engine.races``, ``sim.engine.xraces``) follows every access in event
time; on a hand-synchronised kernel it costs more than the run it checks. Yet for a kernel
without races its answer — no finding — follows from the order the program's
synchronisation imposes, and that order does not depend on timing: the k-th set of a flag
``(src, dst, id)`` is consumed by its k-th wait, a pipe runs its items in program order, an
item joins what the dispatcher knew when it issued it, ``pipe_barrier(PIPE_ALL)`` lets the
dispatcher know everything issued before it. So a run with the race check first runs on the
fast timed path keeping, per unit, the items it dispatched in order, and ``race_free``
tries to show with array operations over those logs that the detector would report nothing:

* **Knowledge.** For every unit, the vector clock (one component per pipe) of every set
  and wait, as a fixed point over arrays: along a pipe (a running maximum), from the
  dispatcher's clock at issue, from a set to the wait that consumes it, from every pipe to
  the dispatcher at a barrier or a wait that holds it. Knowledge that travels through
  another unit (cube<->vector FIFOs, cross-core flags) is left out: that can only make
  the proof fail where the detector would have found an order, never the reverse.
* **Accesses.** Bytes of a buffer (or of a GM array, within a unit) are grouped into
  clusters of overlapping ranges, and every two accesses of a cluster are taken to
  overlap. For an access ``b`` and another pipe ``p`` of its cluster, the accesses of
  ``p`` that ``b`` does not know of are that pipe's newest; the oldest of them that
  conflicts with ``b`` (``b`` writes, or it does) must know of ``b`` — later ones know
  at least as much.
* **GM across units**: no byte one unit writes is touched by another (exact for two row
  windows of one pitch, as the detector tells them apart; otherwise by their hulls).
* **Flags**: every set is waited, and the wait of each set comes before the next set of
  the same flag (the detector reports a set made while the previous one is pending).

``race_free`` is True only when all of this holds; then the detector would report
nothing. Otherwise the caller runs again with the detector, whose findings are the run's:
a result never rests on a proof that did not go through.
"""

from __future__ import annotations

import gc
from itertools import chain
from operator import attrgetter

import numpy as np

from sim.engine.access import GmAccess
from sim.engine.items import BARRIER, OP, SET, WAIT

__all__ = ["race_free"]

_FIELDS = attrgetter("kind", "pipe", "flag", "accesses")
# what an item is to the proof
(_NONE, _ACCESS, _SET, _WAIT, _DWAIT, _BARRIER_ALL) = range(6)
_MAX_ROUNDS = 64            # fixed-point rounds before the proof gives up
_MAX_GM_PAIRS = 1 << 26     # pairs of GM windows compared across units before it gives up
_CHUNK = 1 << 18            # pairs compared at once (bounds the memory it takes)
_SHIFT = 40                 # key = group << _SHIFT | position


def race_free(logs) -> bool:
    """Would the race detector report nothing on the run whose units dispatched ``logs``
    (one list of ``Issued`` items per unit, in dispatch order)? False when it cannot be
    shown (see the module doc), not only when there is a race."""
    if not any(logs):
        return True
    # the proof makes many short-lived containers while the run's objects are alive: a
    # collection would rescan those for nothing
    was = gc.isenabled()
    gc.disable()
    try:
        return _Proof(logs).holds()
    finally:
        if was:
            gc.enable()


def _running_max(values: np.ndarray, base: np.ndarray) -> None:
    """Running maximum down the rows of ``values`` in place, where each row carries its
    segment's ``base`` (segments in increasing order, each base above every value of the
    segments before): the maximum never crosses into the next segment."""
    np.maximum.accumulate(values, axis=0, out=values)


class _Proof:
    def __init__(self, logs):
        self.logs = logs

    def holds(self) -> bool:
        return self._items() and self._events() and self._knowledge() and \
            self._flags() and self._accesses()

    # --- the items --------------------------------------------------------------------

    def _items(self) -> bool:
        """Codes of every dispatched item and the role of each distinct one."""
        logs = self.logs
        lens = np.array([len(x) for x in logs], np.int64)
        n = int(lens.sum())
        distinct = list(dict.fromkeys(chain.from_iterable(logs)))
        code = dict(zip(distinct, range(len(distinct))))
        self.codes = np.fromiter(map(code.__getitem__, chain.from_iterable(logs)), np.int64, n)
        self.unit = np.repeat(np.arange(len(logs), dtype=np.int64), lens)
        self.n = n
        kinds, pipes, flags, accesses = zip(*map(_FIELDS, distinct))
        if "PIPE_ALL" in pipes and any(k != BARRIER for k, p in zip(kinds, pipes)
                                       if p == "PIPE_ALL"):
            return False
        names = sorted(set(pipes) - {"PIPE_ALL"})
        col = {p: i for i, p in enumerate(names)}
        col["PIPE_ALL"] = -1
        self.cols = len(names)
        kind = np.array([{OP: 1, SET: 2, WAIT: 3}.get(k, 0) for k in kinds], np.int8)
        ucol = np.array([col[p] for p in pipes], np.int64)
        local = np.array([type(f) is tuple for f in flags], bool)
        touches = np.fromiter(map(bool, accesses), bool, len(accesses))
        scalar = ucol == col.get("PIPE_S", -2)
        if (touches & (scalar | (kind != 1))).any():
            return False            # the scalar unit's own accesses: the detector decides
        role = np.zeros(len(distinct), np.int8)
        role[touches] = _ACCESS
        role[(kind == 2) & local] = _SET
        role[(kind == 3) & local] = _WAIT
        role[(kind == 3) & local & scalar] = _DWAIT
        role[ucol < 0] = _BARRIER_ALL
        keys = {f: i for i, f in enumerate(dict.fromkeys(f for f in flags if type(f) is tuple))}
        ukey = np.array([keys.get(f, -1) if type(f) is tuple else -1 for f in flags], np.int64)
        # FIFO pop flags: set and waited once per pop, never checked for a pending set
        self.tpop = np.array([i for f, i in keys.items() if f[2] == "tpop"], np.int64)
        self.role, self.ucol, self.ukey, self.nkeys = role, ucol, ukey, max(len(keys), 1)
        self.distinct_accesses = [(i, accesses[i]) for i in np.flatnonzero(touches).tolist()]
        return True

    def _events(self) -> bool:
        """Pipe events (accesses, sets, waits) by (unit, pipe), each pipe's in program
        order and numbered along it; dispatcher events by unit in program order."""
        codes = self.codes
        self.ev_role_all = role = self.role[codes]
        cols = self.cols
        on_pipe = np.flatnonzero((role >= _ACCESS) & (role <= _WAIT))
        gp = self.unit[on_pipe] * cols + self.ucol[codes[on_pipe]]
        order = np.argsort((gp << _SHIFT) | on_pipe)
        self.ev = on_pipe[order]
        self.ev_gp = gp[order]
        self.ev_key = (self.ev_gp << _SHIFT) | self.ev
        starts = np.searchsorted(self.ev_gp, self.ev_gp, "left")
        self.own = np.arange(len(self.ev), dtype=np.int64) - starts + 1
        ev_role = role[self.ev]
        self.ev_access = ev_role == _ACCESS
        sync = np.flatnonzero(~self.ev_access)    # the rows of the clock matrix
        self.s_ev, self.s_pos, self.s_gp = sync, self.ev[sync], self.ev_gp[sync]
        self.s_key = self.ev_key[sync]
        self.d_pos = np.flatnonzero((role == _DWAIT) | (role == _BARRIER_ALL))
        self.d_unit = self.unit[self.d_pos]
        self.d_role = role[self.d_pos]
        return True

    def _epoch(self, pos: np.ndarray) -> np.ndarray:
        """Row of the dispatcher clocks (0: nothing learnt yet) an item at ``pos`` joins."""
        if not len(self.d_pos):
            return np.zeros(len(pos), np.int64)
        i = np.searchsorted(self.d_pos, pos, "left") - 1
        ok = (i >= 0) & (self.d_unit[np.maximum(i, 0)] == self.unit[pos])
        return np.where(ok, i + 1, 0)

    def _last_sync(self, key: np.ndarray, gp: np.ndarray) -> tuple:
        """(row, found) of the last sync event of pipe ``gp`` before ``key``."""
        if not len(self.s_key):
            z = np.zeros(len(key), np.int64)
            return z, z.astype(bool)
        last = np.searchsorted(self.s_key, key, "left") - 1
        found = (last >= 0) & (self.s_gp[np.maximum(last, 0)] == gp)
        return np.maximum(last, 0), found

    # --- knowledge --------------------------------------------------------------------

    def _match(self) -> bool:
        """The set each wait consumes (k-th set to k-th wait of a flag, per unit)."""
        codes, role = self.codes, self.ev_role_all
        sets = np.flatnonzero(role == _SET)
        waits = np.flatnonzero((role == _WAIT) | (role == _DWAIT))
        gs = self.unit[sets] * self.nkeys + self.ukey[codes[sets]]
        gw = self.unit[waits] * self.nkeys + self.ukey[codes[waits]]
        os_, ow = np.argsort((gs << _SHIFT) | sets), np.argsort((gw << _SHIFT) | waits)
        sets, waits, gs, gw = sets[os_], waits[ow], gs[os_], gw[ow]
        if len(sets) != len(waits) or not np.array_equal(gs, gw):
            return False            # a set never waited (or a wait the run never passed)
        self.m_set, self.m_wait, self.m_gkey = sets, waits, gs
        return True

    def _knowledge(self) -> bool:
        """Vector clocks of the sync events (rows of K, columns the unit's pipes) and of
        the dispatcher after each of its events (rows of KD, row 0 before any)."""
        if not self._match():
            return False
        cols = self.cols
        ns, nd = len(self.s_pos), len(self.d_pos)
        s_row = np.full(self.n, -1, np.int64)
        s_row[self.s_pos] = np.arange(ns)
        # values carry their segment's base (module _running_max): a pipe's rows, the
        # dispatcher's rows of a unit
        big = len(self.ev) + 1
        s_base = (self.s_gp * big)[:, None]
        d_seg = np.concatenate([[0], self.d_unit + 1])
        d_base = (d_seg * big)[:, None]
        K = np.zeros((ns, cols), np.int64)
        K[np.arange(ns), self.s_gp % cols] = self.own[self.s_ev]
        K += s_base
        s_epoch = self._epoch(self.s_pos)
        on_pipe = s_row[self.m_wait] >= 0
        w_rows, w_sets = s_row[self.m_wait[on_pipe]], s_row[self.m_set[on_pipe]]
        w_delta = (s_base[w_rows] - s_base[w_sets])
        d_index = np.searchsorted(self.d_pos, self.m_wait[~on_pipe]) + 1
        d_sets = s_row[self.m_set[~on_pipe]]
        d_delta = d_base[d_index] - s_base[d_sets]
        # a barrier: every pipe of its unit as it was before it
        bars = np.flatnonzero(self.d_role == _BARRIER_ALL)
        b_d = np.repeat(bars, cols) + 1
        b_gp = np.repeat(self.d_unit[bars] * cols, cols) + np.tile(np.arange(cols), len(bars))
        probe = (b_gp << _SHIFT) | self.d_pos[b_d - 1]
        b_last, b_ok = self._last_sync(probe, b_gp)
        b_own = np.searchsorted(self.ev_key, probe) - np.searchsorted(self.ev_key, b_gp << _SHIFT)
        b_col = b_gp % cols
        b_delta = d_base[b_d] - (s_base[b_last] if ns else 0)
        e_delta = s_base - d_base[s_epoch]
        KD = np.zeros((nd + 1, cols), np.int64) + d_base
        self.rounds = 0
        for self.rounds in range(1, _MAX_ROUNDS + 1):
            KD2 = KD.copy()
            if len(d_sets):
                KD2[d_index] = np.maximum(KD2[d_index], K[d_sets] + d_delta)
            if len(b_d):
                got = np.where(b_ok[:, None], K[b_last] + b_delta, d_base[b_d]) if ns \
                    else np.broadcast_to(d_base[b_d], (len(b_d), cols)).copy()
                i = np.arange(len(b_d))
                got[i, b_col] = np.maximum(got[i, b_col], b_own + d_base[b_d, 0])
                np.maximum.at(KD2, b_d, got)
            _running_max(KD2, d_base)
            K2 = np.maximum(K, KD2[s_epoch] + e_delta)
            if len(w_rows):
                K2[w_rows] = np.maximum(K2[w_rows], K2[w_sets] + w_delta)
            _running_max(K2, s_base)
            if np.array_equal(K2, K) and np.array_equal(KD2, KD):
                break
            K, KD = K2, KD2
        self.K, self.KD = K - s_base, KD - d_base
        self.s_row = s_row
        return True

    def _flags(self) -> bool:
        """No set of a flag while its previous set is still pending."""
        g = self.m_gkey
        if len(g) < 2:
            return True
        nxt = np.flatnonzero(g[1:] == g[:-1]) + 1           # sets with a previous one
        if len(self.tpop):
            nxt = nxt[~np.isin(self.ukey[self.codes[self.m_set[nxt]]], self.tpop)]
        prev_wait, this_set = self.m_wait[nxt - 1], self.m_set[nxt]
        w_row = self.s_row[prev_wait]
        on_pipe = w_row >= 0
        # a wait on a pipe: the set knows of it; a wait of the dispatcher: the set was
        # issued after it
        if not np.all(prev_wait[~on_pipe] < this_set[~on_pipe]):
            return False
        w = w_row[on_pipe]
        col = self.s_gp[w] % self.cols
        own = self.own[self.s_ev[w]]
        return bool(np.all(self.K[self.s_row[this_set[on_pipe]], col] >= own))

    # --- accesses ---------------------------------------------------------------------

    def _accesses(self) -> bool:
        items = self.distinct_accesses
        if not items:
            return True
        # the distinct accesses (by identity: an equal copy only joins their cluster)
        per_item = [acc for _, acc in items]
        count = np.fromiter(map(len, per_item), np.int64, len(per_item))
        flat = list(chain.from_iterable(per_item))
        ids = np.fromiter(map(id, flat), np.int64, len(flat))
        uids, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        distinct = [flat[i] for i in first.tolist()]
        na = len(distinct)
        offset = np.zeros(len(self.role), np.int64)
        nacc = np.zeros(len(self.role), np.int64)
        at = np.array([i for i, _ in items], np.int64)
        offset[at] = np.cumsum(count) - count
        nacc[at] = count
        # one row per access of every dispatched op, in event order
        ev_acc = np.flatnonzero(self.ev_access)
        codes = self.codes[self.ev[ev_acc]]
        per = nacc[codes]
        row_ev = np.repeat(ev_acc, per)
        within = np.arange(len(row_ev)) - np.repeat(np.cumsum(per) - per, per)
        row_acc = inv.reshape(-1)[np.repeat(offset[codes], per) + within]
        row_pos = self.ev[row_ev]
        row_unit = self.unit[row_pos]
        # the accesses' bytes
        space_of = [a.space for a in distinct]
        spaces = {s: i for i, s in enumerate(dict.fromkeys(space_of))}
        a_space = np.array([spaces[s] for s in space_of], np.int64)
        a_start = np.array([a.start for a in distinct], np.int64)
        a_end = np.array([a.end for a in distinct], np.int64)
        a_write = np.array([a.write for a in distinct], bool)
        a_gm = np.array([s.startswith("GM:") for s in spaces], bool)[a_space]
        nu = len(self.logs)
        # the distinct accesses each unit made, and their clusters per (unit, space)
        pair = np.unique(row_unit * na + row_acc)
        p_unit, p_acc = pair // na, pair % na
        if nu > 1 and a_gm[p_acc].any() and not _gm_across(p_unit, p_acc, distinct, a_space,
                                                             a_write, a_gm):
            return False
        group = p_unit * len(spaces) + a_space[p_acc]
        order = np.lexsort((a_start[p_acc], group))
        g, s, e = group[order], a_start[p_acc][order], a_end[p_acc][order]
        reach = (e + g * (int(a_end.max()) + 1))[:, None]
        _running_max(reach, None)
        reach = reach[:, 0] - g * (int(a_end.max()) + 1)
        new = np.ones(len(order), bool)
        new[1:] = (g[1:] != g[:-1]) | (s[1:] >= reach[:-1])
        cluster = np.empty(len(order), np.int64)
        cluster[order] = np.cumsum(new) - 1
        row_cluster = cluster[np.searchsorted(pair, row_unit * na + row_acc)]
        return self._ordered(row_ev, row_pos, row_cluster, a_write[row_acc])

    def _clock(self, rows_ev, rows_pos, col) -> np.ndarray:
        """Column ``col`` (one per row) of the vector clocks of pipe events."""
        gp = self.ev_gp[rows_ev]
        last, found = self._last_sync((gp << _SHIFT) | rows_pos, gp)
        k = np.where(found, self.K[last, col], 0) if len(self.K) else 0
        k = np.maximum(k, self.KD[self._epoch(rows_pos), col])
        mine = gp % self.cols == col
        return np.where(mine, self.own[rows_ev], k)

    def _ordered(self, row_ev, row_pos, cluster, write) -> bool:
        """Is every conflicting pair of accesses of two pipes in one cluster ordered? For an
        access and another pipe of its cluster, the first access of that pipe it does not
        know of (among those it conflicts with) must know of it."""
        cols = self.cols
        col = self.ev_gp[row_ev] % cols
        present = np.zeros((int(cluster.max()) + 1, cols), bool)
        present[cluster, col] = True
        shared = present.sum(axis=1) > 1
        keep = np.flatnonzero(shared[cluster])
        if not len(keep):
            return True
        row_ev, row_pos, cluster, write, col = (row_ev[keep], row_pos[keep], cluster[keep],
                                                write[keep], col[keep])
        own = self.own[row_ev]
        lane = cluster * cols + col
        order = np.argsort((lane << 32) | own)
        key_all = ((lane << 32) | own)[order]
        w_order = order[write[order]]
        key_w = key_all[write[order]]
        for p in range(cols):
            # accesses of other pipes in the clusters pipe p touches
            b = np.flatnonzero(present[cluster, p] & (col != p))
            if not len(b):
                continue
            knows = self._clock(row_ev[b], row_pos[b], np.full(len(b), p))
            wb = write[b]
            for keys, rows, sel in ((key_all, order, wb), (key_w, w_order, ~wb)):
                if not len(keys) or not sel.any():
                    continue
                q = b[sel]
                want = cluster[q] * cols + p
                at = np.searchsorted(keys, (want << 32) | knows[sel], "right")
                found = at < len(keys)
                at = np.minimum(at, len(keys) - 1)
                found &= (keys[at] >> 32) == want
                a, q = rows[at[found]], q[found]
                if len(a) and np.any(self._clock(row_ev[a], row_pos[a], col[q]) < own[q]):
                    return False
        return True


def _gm_across(p_unit, p_acc, distinct, a_space, a_write, a_gm) -> bool:
    """No GM byte one unit writes is touched by another (the proof has no order between
    units)."""
    gm = a_gm[p_acc]
    p_unit, p_acc = p_unit[gm], p_acc[gm]
    for space in np.unique(a_space[p_acc]):
        mine = a_space[p_acc] == space
        u, acc = p_unit[mine], p_acc[mine]
        if not a_write[acc].any() or len(np.unique(u)) < 2:
            continue
        w = a_write[acc]
        wu, wa = u[w], acc[w]
        if len(wa) * len(acc) > _MAX_GM_PAIRS:
            return False
        A = _windows([distinct[i] for i in wa.tolist()])
        B = _windows([distinct[i] for i in acc.tolist()])
        step = max(1, _CHUNK // len(B))
        for i in range(0, len(A), step):
            if (_overlap(A[i:i + step], B) & (wu[i:i + step, None] != u[None, :])).any():
                return False
    return True


def _windows(accesses) -> np.ndarray:
    """start, end, rows, width, pitch of GM accesses (pitch 0: compare hulls)."""
    out = np.zeros((len(accesses), 5), np.int64)
    for i, a in enumerate(accesses):
        if type(a) is GmAccess and a.pitch:
            out[i] = (a.start, a.end, a.rows, a.width, a.pitch)
        else:
            out[i] = (a.start, a.end, 1, 0, 0)
    return out


def _overlap(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``sim.engine.xraces._overlap`` of every window of ``A`` with every one of ``B``."""
    a, b = A[:, None, :], B[None, :, :]
    hull = (a[..., 0] < b[..., 1]) & (b[..., 0] < a[..., 1])
    pa, pb = a[..., 4], b[..., 4]
    same = (pa == pb) & (pa > 0)
    p = np.where(same, pa, 1)
    ra, ca = a[..., 0] // p, a[..., 0] % p
    rb, cb = b[..., 0] // p, b[..., 0] % p
    exact = same & (ca + a[..., 3] <= p) & (cb + b[..., 3] <= p)
    rect = (ra < rb + b[..., 2]) & (rb < ra + a[..., 2]) & (ca < cb + b[..., 3]) & \
        (cb < ca + a[..., 3])
    return hull & np.where(exact, rect, True)
