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
  the same flag (the detector reports a set made while the previous one is pending):
  ordered by the synchronisation, or else by the run's cycles — the set fired at a later
  cycle than the wait was taken (at the same cycle the detector's order is the event
  loop's, which the logs do not keep: not shown).
* **The scalar unit's own accesses** (``load_scalar``, ``store_scalar``, ``tgetval``):
  accesses of pipe PIPE_S, and events of the dispatcher, which learns their clock (the
  detector's dispatcher takes PIPE_S's clock after each, so what it issues later is ordered
  after them). A word no unit writes (a communication context) is never in conflict. The
  words communication instructions write (``TNOTIFY`` signals, queue counts) carry no byte
  ranges for the detector (the check across ranks follows them): none for the proof
  either. A unit whose GM accesses were only summarised (one unit alone) has its scalar
  GM accesses checked against that summary. A ``PIPE_ALL`` item other than a barrier, and
  a set, wait or barrier with accesses, are left to the detector.

``race_free`` is True only when all of this holds; then the detector would report
nothing. Otherwise the caller runs again with the detector, whose findings are the run's:
a result never rests on a proof that did not go through.
"""

from __future__ import annotations

import gc
from itertools import chain, repeat
from operator import attrgetter, is_

import numpy as np

from sim.engine.items import BARRIER, OP, SET, WAIT
from sim.engine.racefree_dispatch import SHIFT as _SHIFT
from sim.engine.racefree_dispatch import Dispatcher
from sim.engine.racefree_gm import gm_across

__all__ = ["race_free"]

_FIELDS = attrgetter("kind", "pipe", "flag", "accesses")
# what an item is to the proof
(_NONE, _ACCESS, _SET, _WAIT, _DWAIT, _BARRIER_ALL) = range(6)
_SCALAR_ACCESS = 6  # a dispatcher event: the scalar unit's own access (``_Proof._events``)
# fixed-point rounds at most: a clock stopped short knows less, so the proof may fail but
# never passes wrongly
_MAX_ROUNDS = 64
_FIRST_ROUNDS = 2  # ... and before the first checks
_CHUNK = 1 << 18  # pairs compared at once (bounds the memory it takes)
_BATCH_ITEMS = 1 << 16  # dispatched items of the units proven together, at most (memory)


def race_free(logs, sync_ends=None, summaries=None) -> bool:
    """Would the race detector report nothing on the run whose units dispatched ``logs``
    (one list of ``Issued`` items per unit, in dispatch order)? False when it cannot be
    shown (see the module doc), not only when there is a race. ``sync_ends``: per unit,
    the (sequence number, end cycle) rows of its sync rows (``Recorder.sync_ends``):
    a set the synchronisation does not order after the previous set's wait is still
    shown not pending when it fired at a later cycle than that wait was taken.
    ``summaries``: per unit, None, or the GM summary its pipes' GM accesses were kept
    in instead of its log (``sim.engine.access.instr_accesses``: GM array -> [the pipes
    that touch it, whether one writes]); its scalar unit's own GM accesses are in the log
    and are shown apart from those (``_Proof._summarised``)."""
    # the proof makes many short-lived containers while the run's objects are alive: a
    # collection would rescan those for nothing
    was = gc.isenabled()
    gc.disable()
    try:
        gm = []
        for units in _batches(logs):
            proof = _Proof(
                [logs[i] for i in units],
                None if sync_ends is None else [sync_ends[i] for i in units],
                None if summaries is None else [summaries[i] for i in units],
            )
            if not proof.holds():
                return False
            gm += proof.gm
        return len(gm) < 2 or gm_across(gm)
    finally:
        if was:
            gc.enable()


def _batches(logs):
    """The units with a log, many to a proof: a proof's array calls cost the same few
    hundred microseconds on a unit of 200 items as on one of 2 000, and a chip's 72
    units would pay them 72 times. A batch's units share the proof's arrays, not their
    verdicts (see ``_Proof``)."""
    batch: list = []
    items = 0
    for i, log in enumerate(logs):
        if not log:
            continue
        if batch and items + len(log) > _BATCH_ITEMS:
            yield batch
            batch, items = [], 0
        batch.append(i)
        items += len(log)
    if batch:
        yield batch


class _Proof:
    """The proof for one unit, or for a batch of units proven together (see the module
    doc); ``gm``: per unit, the GM accesses it made.

    A batch's units are one log, one unit after the other, each unit's flags and buffers
    its own (a flag's number and an access's cluster are per unit); a pipe's events are
    numbered along the whole log. A unit's events may then know of an earlier unit's
    (down a pipe, through the dispatcher's clock), all numbered below its own, and a
    unit's events are never known to an earlier unit's (no flag is shared, and a barrier
    learns what was dispatched before it). Every check compares a unit's events with its
    own: an access with the first access of another pipe in its cluster that it does not
    know of, a set with the wait of its flag. Knowing of events numbered below all of
    the unit's own decides none of them, so the verdict is each unit's own."""

    def __init__(self, logs, sync_ends=None, summaries=None):
        self.logs = logs
        self.sync_ends = sync_ends
        self.summaries = summaries
        self.gm: list[list] = [[] for _ in logs]
        self._rows = None  # _access_rows, once

    def holds(self) -> bool:
        if not (self._items() and self._events() and self._knowledge()):
            return False
        # most kernels order what they touch within a hop or two: the checks run on the
        # clocks of a few rounds first, and on the fixed point only when those fail
        settled = self._rounds(_FIRST_ROUNDS)
        if self._flags() and self._accesses():
            return True
        if settled:
            return False
        self._rounds(_MAX_ROUNDS)
        return self._flags() and self._accesses()

    # --- the items --------------------------------------------------------------------

    def _items(self) -> bool:
        """Codes of every dispatched item and the role of each distinct one (an item two
        units dispatched is distinct in each: a chip's units of a kind share sync items)."""
        parts: list = []
        distinct: list = []
        per_unit: list = []
        starts = [0]
        for log in self.logs:
            mine = list(dict.fromkeys(log))
            code = dict(zip(mine, range(len(distinct), len(distinct) + len(mine)), strict=True))
            parts.append(np.fromiter(map(code.__getitem__, log), np.int32, len(log)))
            distinct += mine
            per_unit.append(len(mine))
            starts.append(starts[-1] + len(log))
        self.codes = parts[0] if len(parts) == 1 else np.concatenate(parts)
        self.n, self.starts = len(self.codes), starts
        m = len(distinct)
        unit = np.repeat(np.arange(len(self.logs)), per_unit)
        kinds, pipes, flags, accesses = zip(*map(_FIELDS, distinct), strict=True)
        if "PIPE_ALL" in pipes and any(
            k != BARRIER for k, p in zip(kinds, pipes, strict=True) if p == "PIPE_ALL"
        ):
            return False
        names = sorted(set(pipes) - {"PIPE_ALL"})
        col = {p: i for i, p in enumerate(names)}
        col["PIPE_ALL"] = -1
        self.cols = len(names)
        kind_code = {OP: 1, SET: 2, WAIT: 3, BARRIER: 4}
        kind = np.fromiter(map(kind_code.get, kinds, repeat(0)), np.int8, m)
        ucol = np.fromiter(map(col.__getitem__, pipes), np.int8, m)
        local = np.fromiter(map(is_, map(type, flags), repeat(tuple)), bool, m)
        touches = np.fromiter(map(bool, accesses), bool, m)
        scalar = ucol == col.get("PIPE_S", -2)
        # the scalar unit's own accesses (load_scalar, store_scalar, tgetval): the machine
        # hands the detector each (any kind but a set, a wait or a barrier) as an access
        # of PIPE_S at the dispatcher's clock, which then becomes the dispatcher's
        # (sim.engine.machine): here an access of the PIPE_S pipe and an event of the
        # dispatcher that learns its clock (_events, Dispatcher)
        self.sacc = touches & scalar & (kind <= 1)
        if (touches & ~self.sacc & (scalar | (kind != 1))).any():
            return False  # a set, a wait or a barrier that touches bytes: the detector's
        self.scol = col.get("PIPE_S", -1)
        role = np.zeros(len(distinct), np.int8)
        role[touches] = _ACCESS
        role[(kind == 2) & local] = _SET
        role[(kind == 3) & local] = _WAIT
        role[(kind == 3) & local & scalar] = _DWAIT
        role[ucol < 0] = _BARRIER_ALL
        # every flag numbered per unit (a chip-level one too: its items have no role,
        # their number is never read)
        owned = list(zip(unit.tolist(), flags, strict=True))
        keys = {key: i for i, key in enumerate(dict.fromkeys(owned))}
        ukey = np.fromiter(map(keys.__getitem__, owned), np.int32, m)
        # FIFO pop flags: set and waited once per pop, never checked for a pending set
        self.tpop = np.array(
            [i for (_, f), i in keys.items() if type(f) is tuple and f[2] == "tpop"], np.int64
        )
        self.role, self.ucol, self.ukey, self.unit = role, ucol, ukey, unit
        self.distinct_accesses = [(i, accesses[i]) for i in np.flatnonzero(touches).tolist()]
        return self._summarised(accesses, unit)

    def _summarised(self, accesses, unit) -> bool:
        """A unit whose pipes' GM accesses were kept only as a summary (one unit alone,
        ``race_free``) lists its scalar unit's GM accesses alone: those must meet nothing
        the summary holds (no array the scalar unit writes touched by a pipe, none it
        reads written by one); among themselves they are one pipe's, in program order."""
        if self.summaries is None or not any(s is not None for s in self.summaries):
            return True
        for i in np.flatnonzero(self.sacc).tolist():
            summary = self.summaries[unit[i]]
            if summary is None:
                continue
            for a in accesses[i]:
                if a.space.startswith("GM:"):
                    seen = summary.get(a.space[3:])
                    if seen is not None and (a.write or seen[1]):
                        return False
        return True

    def _events(self) -> bool:
        """Pipe events (accesses, sets, waits) by pipe, each pipe's in program order and
        numbered along it; the dispatcher's events in program order. (Positions and
        numbers in 32 bits, pipes in 8: a long run's arrays are its memory.)"""
        codes = self.codes
        self.role_at = role = self.role[codes]
        on_pipe = np.flatnonzero((role >= _ACCESS) & (role <= _WAIT)).astype(np.int32)
        col = self.ucol[codes[on_pipe]]
        order = _stable_order(col)
        self.ev = ev = on_pipe[order]
        self.ev_col = ev_col = col[order]
        del on_pipe, col, order
        n = len(ev)
        first = (
            np.flatnonzero(np.concatenate(([True], ev_col[1:] != ev_col[:-1])))
            if n
            else np.zeros(0, np.int64)
        )
        sizes = np.diff(np.append(first, n))
        # numbered along each pipe: 1, 2, ... from the start of its segment
        own = np.ones(n, np.int32)
        own[first[1:]] = 1 - sizes[:-1]
        np.cumsum(own, out=own)
        self.own = own
        self.ev_access = role[ev] == _ACCESS
        sync = np.flatnonzero(~self.ev_access).astype(np.int32)  # the rows of the clocks
        self.s_ev, self.s_pos, self.s_col = sync, ev[sync], ev_col[sync]
        # the last sync event of its pipe at or before each event (-1: none); pipe by
        # pipe (a sync event of an earlier pipe is not one of this one's)
        last = np.full(n, -1, np.int32)
        last[sync] = np.arange(len(sync), dtype=np.int32)
        np.maximum.accumulate(last, out=last)
        for f, size, r in zip(
            first.tolist(), sizes.tolist(), np.searchsorted(sync, first).tolist(), strict=True
        ):
            part = last[f : f + size]
            part[part < r] = -1
        self.ev_last = last
        d = (role == _DWAIT) | (role == _BARRIER_ALL)
        if self.sacc.any():  # the scalar unit's accesses teach the dispatcher too
            sacc = self.sacc[codes]
            self.d_pos = np.flatnonzero(d | sacc)
            self.d_role = np.where(sacc[self.d_pos], _SCALAR_ACCESS, role[self.d_pos])
            # their events, in program order as they are on their pipe
            self.sacc_ev = np.flatnonzero(self.ev_access & (ev_col == self.scol))
        else:
            self.d_pos = np.flatnonzero(d)
            self.d_role = role[self.d_pos]
        # the row of the dispatcher's clocks (0: before its first event) each event joins
        self.ev_epoch = (
            np.searchsorted(self.d_pos, ev).astype(np.int32) if len(self.d_pos) else None
        )
        return True

    # --- knowledge --------------------------------------------------------------------

    def _match(self) -> bool:
        """The set each wait consumes (k-th set to k-th wait of a flag)."""
        codes, role = self.codes, self.role_at
        sets = np.flatnonzero(role == _SET).astype(np.int32)
        waits = np.flatnonzero((role == _WAIT) | (role == _DWAIT)).astype(np.int32)
        del self.role_at, role  # not read again
        ks, kw = self.ukey[codes[sets]], self.ukey[codes[waits]]
        os_, ow = _stable_order(ks), _stable_order(kw)
        sets, waits, ks, kw = sets[os_], waits[ow], ks[os_], kw[ow]
        if len(sets) != len(waits) or not np.array_equal(ks, kw):
            return False  # a set never waited (or a wait the run never passed)
        self.m_set, self.m_wait, self.m_key = sets, waits, ks
        return True

    def _knowledge(self) -> bool:
        """Vector clocks of the sync events (rows of K) and of the dispatcher after each
        of its events (rows of KD, row 0 before any). Columns: the pipes that sync (only
        they pass on what they know; every pipe when a barrier lets the dispatcher learn
        all of them), ``kcol`` maps a pipe to its column, the others to a zero column."""
        if not self._match():
            return False
        cols, ns, nd = self.cols, len(self.s_pos), len(self.d_pos)
        syncing = np.zeros(cols, bool)
        syncing[self.s_col] = True
        if (self.d_role == _BARRIER_ALL).any():
            syncing[:] = True
        if (self.d_role == _SCALAR_ACCESS).any():  # the dispatcher learns the scalar pipe
            syncing[self.scol] = True
        active = np.flatnonzero(syncing)
        ka = len(active)
        self.kcol = np.full(cols, ka, np.int64)  # column ka: always zero
        self.kcol[active] = np.arange(ka)
        s_row = np.full(self.n, -1, np.int32)
        s_row[self.s_pos] = np.arange(ns, dtype=np.int32)
        # a pipe's rows carry its base, above every value of the pipes before it: a
        # running maximum down the rows then never crosses from one pipe into the next
        big = len(self.ev) + 1
        dtype = np.int32 if (cols + 1) * big < 2**31 else np.int64
        s_base = (self.s_col.astype(np.int64) * big).astype(dtype)[:, None]
        K = np.zeros((ns, ka), dtype)
        K[np.arange(ns), self.kcol[self.s_col]] = self.own[self.s_ev]
        K += s_base
        on_pipe = s_row[self.m_wait] >= 0
        w_rows, w_sets = s_row[self.m_wait[on_pipe]], s_row[self.m_set[on_pipe]]
        w_delta = s_base[w_rows] - s_base[w_sets]
        KD = np.zeros((nd + 1, ka), dtype)
        dispatch = (
            Dispatcher(
                self,
                (s_row, on_pipe, s_base, dtype),
                np.flatnonzero(self.d_role == _BARRIER_ALL),
                np.flatnonzero(self.d_role == _SCALAR_ACCESS),
            )
            if nd
            else None
        )
        self._state = [K, KD, s_base, dispatch, w_rows, w_sets, w_delta]
        self.s_row, self.rounds = s_row, 0
        return True

    def _rounds(self, limit: int) -> bool:
        """Up to ``limit`` more rounds towards the fixed point (each carries knowledge one
        hop from a set to its wait, then down the pipes); ``K`` / ``KD`` are then the
        clocks so far. Whether they are the fixed point."""
        K, KD, s_base, dispatch, w_rows, w_sets, w_delta = self._state
        if self.rounds:
            K += s_base  # back to carrying the bases (below)
        settled = False
        for _ in range(limit):
            self.rounds += 1
            changed = dispatch.learn(K, KD) if dispatch is not None else False
            if len(w_rows):
                old = K[w_rows]
                new = np.maximum(old, K[w_sets] + w_delta)
                if (new != old).any():
                    K[w_rows] = new
                    changed = True
            if not changed and self.rounds > 1:
                settled = True
                break
            np.maximum.accumulate(K, axis=0, out=K)
        K -= s_base
        self.K, self.KD = K, KD
        return settled

    def _flags(self) -> bool:
        """No set of a flag while its previous set is still pending."""
        k = self.m_key
        if len(k) < 2:
            return True
        nxt = np.flatnonzero(k[1:] == k[:-1]) + 1  # sets with a previous one
        if len(self.tpop):
            nxt = nxt[~np.isin(k[nxt], self.tpop)]
        prev_wait, this_set = self.m_wait[nxt - 1], self.m_set[nxt]
        w_row = self.s_row[prev_wait]
        on_pipe = w_row >= 0
        # ordered: a wait on a pipe, when the set knows of it; a wait of the dispatcher,
        # when the set was issued after it
        ordered = ~on_pipe & (prev_wait < this_set)
        w = w_row[on_pipe]
        own = self.own[self.s_ev[w]]
        ordered[on_pipe] = self.K[self.s_row[this_set[on_pipe]], self.kcol[self.s_col[w]]] >= own
        if ordered.all():
            return True
        if self.sync_ends is None or not any(map(len, self.sync_ends)):
            return False
        # else by the run's cycles: the set fired after the wait was taken (at the same
        # cycle, the detector's order is the event loop's, which the logs do not keep)
        at = np.full(self.n, -1, np.int64)
        for start, ends in zip(self.starts[:-1], self.sync_ends, strict=True):
            at[start + ends[:, 0]] = ends[:, 1]
        late = ~ordered
        t_wait, t_set = at[prev_wait[late]], at[this_set[late]]
        return bool(np.all((t_wait >= 0) & (t_set > t_wait)))

    # --- accesses ---------------------------------------------------------------------

    def _accesses(self) -> bool:
        if not self.distinct_accesses:
            return True
        if self._rows is None:
            self._rows = self._access_rows()
        ev_acc, row, cluster, write, col, own = self._rows
        return self._ordered(row, cluster, write, col, own, self._clocks(ev_acc))

    def _access_rows(self) -> tuple:
        """One row per access of every access event (what the clocks do not change, made
        once): the events, each row's event, cluster of overlapping bytes, whether it
        writes, its pipe and number along the pipe. Also the unit's GM accesses (``gm``)."""
        items = self.distinct_accesses
        # the distinct accesses (by identity: an equal copy only joins their cluster)
        per_item = [acc for _, acc in items]
        count = np.fromiter(map(len, per_item), np.int32, len(per_item))
        flat = list(chain.from_iterable(per_item))
        ids = np.fromiter(map(id, flat), np.int64, len(flat))
        at = np.array([i for i, _ in items], np.int64)
        # distinct by identity within a unit (the units of a chip share accesses)
        owner = np.repeat(self.unit[at], count)
        _, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        if len(self.logs) > 1:
            _, first, inv = np.unique(
                inv.reshape(-1).astype(np.int64) * len(self.logs) + owner,
                return_index=True,
                return_inverse=True,
            )
        inv = inv.reshape(-1).astype(np.int32)
        distinct = [flat[i] for i in first.tolist()]
        a_unit = owner[first].tolist()
        offset = np.zeros(len(self.role), np.int32)
        nacc = np.zeros(len(self.role), np.int32)
        offset[at] = np.cumsum(count) - count
        nacc[at] = count
        # the access events, one row per access
        ev_acc = np.flatnonzero(self.ev_access)
        codes = self.codes[self.ev[ev_acc]]
        per = nacc[codes]
        row = np.repeat(np.arange(len(ev_acc), dtype=np.int32), per)
        within = np.arange(len(row), dtype=np.int32)
        within -= np.repeat((np.cumsum(per) - per).astype(np.int32), per)
        within += np.repeat(offset[codes], per)
        row_acc = inv[within]
        del within, codes, per
        # clusters of overlapping bytes per space, a unit's spaces its own
        space_of = [a.space for a in distinct]
        owned = list(zip(a_unit, space_of, strict=True))
        spaces = {s: i for i, s in enumerate(dict.fromkeys(owned))}
        a_space = np.fromiter(map(spaces.__getitem__, owned), np.int64, len(owned))
        a_start = np.array([a.start for a in distinct], np.int64)
        a_end = np.array([a.end for a in distinct], np.int64)
        a_write = np.array([a.write for a in distinct], bool)
        for a, u, s in zip(distinct, a_unit, space_of, strict=True):
            if s.startswith("GM:"):
                self.gm[u].append(a)
        order = np.lexsort((a_start, a_space))
        g, s = a_space[order], a_start[order]
        span = int(a_end.max()) + 1
        reach = a_end[order] + g * span
        np.maximum.accumulate(reach, out=reach)
        reach -= g * span
        new = np.ones(len(order), bool)
        new[1:] = (g[1:] != g[:-1]) | (s[1:] >= reach[:-1])
        cluster = np.empty(len(order), np.int32)
        cluster[order] = np.cumsum(new) - 1
        return (
            ev_acc,
            row,
            cluster[row_acc],
            a_write[row_acc],
            self.ev_col[ev_acc][row],
            self.own[ev_acc][row],
        )

    def _clocks(self, evs: np.ndarray) -> np.ndarray:
        """The clocks (columns of K, then the zero column) of pipe events ``evs``: their
        pipe's last sync event's joined with the dispatcher's at issue."""
        ka = self.K.shape[1]
        out = np.zeros((len(evs), ka + 1), self.K.dtype)
        last = self.ev_last[evs]
        has = last >= 0
        out[has, :ka] = self.K[last[has]]
        if self.ev_epoch is not None:
            np.maximum(out[:, :ka], self.KD[self.ev_epoch[evs]], out=out[:, :ka])
        return out

    def _ordered(self, row, cluster, write, col, own, KA) -> bool:
        """Is every conflicting pair of accesses of two pipes in one cluster ordered? For an
        access and another pipe of its cluster, the first access of that pipe it does not
        know of (among those it conflicts with) must know of it. Per access: ``row``, its
        row of the clocks ``KA``; its cluster, whether it writes, its pipe and number."""
        cols, kcol = self.cols, self.kcol
        present = np.zeros((int(cluster.max()) + 1, cols), bool)
        present[cluster, col] = True
        if not (present.sum(axis=1) > 1).any():
            return True
        lane = cluster.astype(np.int64) * cols + col
        order = _stable_order(lane).astype(np.int32)  # by lane, then along the pipe
        key_all = lane[order]
        del lane
        key_all <<= 32
        key_all |= own[order]
        wo = write[order]
        w_order, key_w = order[wo], key_all[wo]
        del wo
        for p in range(cols):
            # accesses of other pipes in the clusters pipe p touches, a chunk at a time
            b_all = np.flatnonzero(present[cluster, p] & (col != p)).astype(np.int32)
            for i in range(0, len(b_all), _CHUNK):
                b = b_all[i : i + _CHUNK]
                knows = KA[row[b], kcol[p]]
                wb = write[b]
                for keys, rows, sel in ((key_all, order, wb), (key_w, w_order, ~wb)):
                    if not len(keys) or not sel.any():
                        continue
                    q = b[sel]
                    want = cluster[q].astype(np.int64) * cols + p
                    at = np.searchsorted(keys, (want << 32) | knows[sel], "right")
                    found = at < len(keys)
                    at = np.minimum(at, len(keys) - 1)
                    found &= (keys[at] >> 32) == want
                    a, q = rows[at[found]], q[found]
                    if len(a) and np.any(KA[row[a], kcol[col[q]]] < own[q]):
                        return False
        return True


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """Indices that sort ``keys`` (non-negative integers), equal keys in their order."""
    top = int(keys.max()) if len(keys) else 0
    if top < 1 << 16:  # a radix sort
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if top < 1 << 23:
        return np.argsort((keys.astype(np.int64) << _SHIFT) | np.arange(len(keys)))
    return np.argsort(keys, kind="stable")
