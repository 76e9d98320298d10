"""The critical path: the chain of instructions and waits that sets the total cycle count.

Every instruction starts as soon as its last constraint is released. The constraints
readable from the trace are

* ``pipe``: the previous item on the same pipe has finished (queues are in order);
* ``flag``: the instruction whose ``set_flag`` matched a ``wait_flag`` just before it
  (pairs from ``sim.trace.flags``) has set the flag;
* ``dispatch``: the scalar unit handed the item over only after a ``pipe_barrier(PIPE_ALL)``
  or a scalar-unit ``wait_flag`` let it go on;
* ``drain``: a ``pipe_barrier(PIPE_ALL)`` ends when the last instruction before it
  finishes.

Starting from the instruction that ends last, the walk steps back to whichever
constraint was released last (ties prefer flag, then pipe, dispatch, drain) until an
item has none. A barrier or a scalar-unit wait on the path is released when it ends, so
its place in time is its ``end_cycle``. The result lists the path from the start of the
run to its end; the ``duration_cycles`` of its instructions (kind op or scalar) plus all
``gap_cycles`` add up to the total.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sim.trace.flags import edge_positions
from sim.trace.frame import BUSY_KINDS

__all__ = ["critical_path"]

_PRIORITY = {"flag": 0, "pipe": 1, "dispatch": 2, "drain": 3}
_COLUMNS = [
    "id",
    "core",
    "unit",
    "pipe",
    "kind",
    "opcode",
    "start_cycle",
    "end_cycle",
    "duration_cycles",
    "gap_cycles",
    "via",
    "flag",
    "row",
]


class _Graph:
    """Predecessor candidates of each node, from the trace alone."""

    def __init__(self, t: pd.DataFrame):
        self.t = t
        busy = t["kind"].isin(BUSY_KINDS)
        barrier_all = (t["kind"] == "barrier") & (t["pipe"] == "PIPE_ALL")
        scalar_wait = (t["kind"] == "wait_flag") & (t["pipe"] == "PIPE_S")
        self.busy = busy.to_numpy()
        self.ids = t["id"].to_numpy()
        self.start = t["start_cycle"].to_numpy()
        self.end = t["end_cycle"].to_numpy()
        self.lane_of, self.lane = {}, {}  # position -> lane key; key -> (ids, positions)
        for key, g in t[busy | scalar_wait].groupby(["core", "unit", "pipe"], sort=False):
            g = g.sort_values("id", kind="stable")
            self.lane[key] = (g["id"].to_numpy(), g.index.to_numpy())
            for p in g.index:
                self.lane_of[p] = key
        self.blockers, self.drains = {}, {}  # (core, unit) -> sorted (ids, positions)
        for key, g in t[barrier_all | scalar_wait].groupby(["core", "unit"], sort=False):
            g = g.sort_values("id", kind="stable")
            self.blockers[key] = (g["id"].to_numpy(), g.index.to_numpy())
        for key, g in t[busy].groupby(["core", "unit"], sort=False):
            g = g.sort_values("id", kind="stable")
            ends = g["end_cycle"].to_numpy()
            best = np.maximum.accumulate(ends)
            # position of the latest-ending busy row among the first i (ties: later id)
            arg = np.zeros(len(ends), dtype=np.int64)
            for i in range(1, len(ends)):
                arg[i] = i if ends[i] >= best[i - 1] else arg[i - 1]
            self.drains[key] = (g["id"].to_numpy(), g.index.to_numpy()[arg])
        self.flags_in: dict = {}
        for flag, prod, cons, ready in edge_positions(t):
            self.flags_in.setdefault(cons, []).append((prod, ready, flag))

    @staticmethod
    def _before(table, x_id):
        """Position of the last entry of ``table`` with id < x_id, or None."""
        if table is None:
            return None
        ids, pos = table
        i = int(np.searchsorted(ids, x_id)) - 1
        return int(pos[i]) if i >= 0 else None

    def candidates(self, x: int) -> list[tuple]:
        """(ready cycle, edge kind, predecessor position, flag text) for node ``x``."""
        row = self.t.iloc[x]
        unit_key = (row["core"], row["unit"])
        out = []
        lane = self.lane_of.get(x)
        if lane is not None:
            p = self._before(self.lane[lane], self.ids[x])
            if p is not None:
                out.append((self.end[p], "pipe", p, ""))
        for prod, ready, flag in self.flags_in.get(x, ()):
            out.append((ready, "flag", prod, flag))
        p = self._before(self.blockers.get(unit_key), self.ids[x])
        if p is not None:
            out.append((self.end[p], "dispatch", p, ""))
        if row["kind"] == "barrier":
            p = self._before(self.drains.get(unit_key), self.ids[x])
            if p is not None:
                out.append((self.end[p], "drain", p, ""))
        return [c for c in out if c[0] <= self.release(x)]

    def release(self, x: int) -> int:
        """When node ``x`` could go: an instruction's start, a sync item's end."""
        return int(self.start[x] if self.busy[x] else self.end[x])


def critical_path(trace: pd.DataFrame) -> pd.DataFrame:
    """The chain of items that sets the run's length, first to last.

    Columns: ``id, core, unit, pipe, kind, opcode, start_cycle, end_cycle,
    duration_cycles``; ``gap_cycles`` (from the end of its predecessor to its start, or
    to its end for a barrier or scalar-unit wait);
    ``via`` (``start`` for the first item, else ``pipe``, ``flag``, ``dispatch`` or
    ``drain``); ``flag`` (the flag text of a ``flag`` step); ``row`` (index label in
    ``trace``).
    """
    t = trace.reset_index(drop=True)
    busy = t[t["kind"].isin(BUSY_KINDS)]
    if not len(busy):
        return pd.DataFrame(columns=_COLUMNS)
    g = _Graph(t)
    last = busy.sort_values(["end_cycle", "id"], kind="stable").index[-1]
    steps, seen, x = [], set(), int(last)
    while x is not None and x not in seen:
        seen.add(x)
        cands = [c for c in g.candidates(x) if c[2] not in seen]
        if not cands:
            steps.append((x, "start", "", g.release(x)))
            break
        ready, via, pred, flag = max(cands, key=lambda c: (c[0], -_PRIORITY[c[1]]))
        steps.append((x, via, flag, g.release(x) - int(g.end[pred])))
        x = pred
    steps.reverse()
    pos = [s[0] for s in steps]
    out = t.iloc[pos][_COLUMNS[:9]].reset_index(drop=True)
    out["gap_cycles"] = np.asarray([s[3] for s in steps], dtype=np.int64)
    out["via"] = pd.array([s[1] for s in steps], dtype="string")
    out["flag"] = pd.array([s[2] for s in steps], dtype="string")
    out["row"] = trace.index.to_numpy()[pos]
    return out
