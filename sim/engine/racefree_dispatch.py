"""What the dispatcher learns in the proof of race freedom (``sim.engine.racefree``): the
dispatcher issues every item of a unit in program order, and an item joins the dispatcher's
clock at issue. It learns at a wait that holds it (the set's clock), at
``pipe_barrier(PIPE_ALL)`` (every pipe's) and at an access of the scalar unit (PIPE_S's,
with that access: the race detector's dispatcher takes PIPE_S's clock after each). Rows of
``KD`` are the dispatcher's clock after each of its events, row 0 before any."""

from __future__ import annotations

import numpy as np

__all__ = ["Dispatcher", "SHIFT"]

SHIFT = 40  # key = group << SHIFT | position


class Dispatcher:
    """What the dispatcher learns at its events (``_Proof._knowledge``): at a wait that
    holds it, the clock of the set it consumes; at ``pipe_barrier(PIPE_ALL)``, every pipe
    as it was before the barrier; at an access of the scalar unit, the scalar pipe's clock
    with that access (the detector's dispatcher takes PIPE_S's clock after each); and what
    every sync event learns from it at issue."""

    def __init__(self, proof, clocks, bars, sa):
        """``clocks``: the proof's (row of each sync event's clock by position, which of its
        matched waits run on a pipe (the others hold the dispatcher), each row's base,
        dtype); ``bars``, ``sa``: the dispatcher's events that are barriers and scalar
        accesses."""
        pr = proof
        s_row, on_pipe, s_base, dtype = clocks
        cols, ns = pr.cols, len(pr.s_pos)
        self.d_index = np.searchsorted(pr.d_pos, pr.m_wait[~on_pipe]) + 1
        self.d_sets = s_row[pr.m_set[~on_pipe]]
        self.d_delta = -s_base[self.d_sets]
        self.b_d = b_d = np.repeat(bars, cols) + 1
        b_col = np.tile(np.arange(cols), len(bars))
        # per (barrier, pipe): the pipe's last event before the barrier (its count of
        # events) and the last sync event at or before that
        ev_key = (pr.ev_col.astype(np.int64) << SHIFT) | pr.ev
        probe = (b_col.astype(np.int64) << SHIFT) | pr.d_pos[b_d - 1]
        before = np.searchsorted(ev_key, probe)
        self.b_own = (before - np.searchsorted(ev_key, b_col.astype(np.int64) << SHIFT)).astype(
            dtype
        )
        prev = np.maximum(before - 1, 0)
        if len(pr.ev):
            last = pr.ev_last[prev]
            self.b_ok = (before > 0) & (pr.ev_col[prev] == b_col) & (last >= 0)
        else:
            last, self.b_ok = np.zeros(len(b_d), np.int64), np.zeros(len(b_d), bool)
        self.b_last = np.where(self.b_ok, last, 0)
        if len(sa):
            # a scalar access: one (event, pipe) as a barrier's, the scalar pipe's clock
            # at its last set before the access, and the access's own number
            e = pr.sacc_ev
            last = pr.ev_last[e]
            self.b_d = np.concatenate((b_d, sa + 1))
            b_col = np.concatenate((b_col, np.full(len(sa), pr.scol, b_col.dtype)))
            self.b_own = np.concatenate((self.b_own, pr.own[e].astype(dtype)))
            self.b_ok = np.concatenate((self.b_ok, last >= 0))
            self.b_last = np.concatenate((self.b_last, np.maximum(last, 0)))
        self.b_col = pr.kcol[b_col]
        self.b_delta = -s_base[self.b_last] if ns else 0
        self.s_epoch = pr.ev_epoch[pr.s_ev]
        self.e_delta = s_base

    def learn(self, K, KD) -> bool:
        """One round: the dispatcher learns, then every sync event learns from it at
        issue. Whether anything changed."""
        before = KD.copy()
        if len(self.d_sets):
            KD[self.d_index] = np.maximum(KD[self.d_index], K[self.d_sets] + self.d_delta)
        if len(self.b_d):
            got = (
                np.where(self.b_ok[:, None], K[self.b_last] + self.b_delta, 0)
                if len(K)
                else np.zeros((len(self.b_d), KD.shape[1]), KD.dtype)
            )
            i = np.arange(len(self.b_d))
            got[i, self.b_col] = np.maximum(got[i, self.b_col], self.b_own)
            np.maximum.at(KD, self.b_d, got)
        np.maximum.accumulate(KD, axis=0, out=KD)
        changed = not np.array_equal(before, KD)
        if len(K):
            new = np.maximum(K, KD[self.s_epoch] + self.e_delta)
            if (new != K).any():
                K[...] = new
                changed = True
        return changed
