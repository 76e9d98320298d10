"""Event dependencies of a trace: which instruction's flag released which instruction.

A flag is named by its text ``SRC->DST#id`` (Perf-Sim imports use ``E<signal event>``).
Flags are counters, so the k-th set of a flag releases its k-th wait, in program order.
Two sources give the same pairs:

* traces written by the engine carry ``set_flag`` / ``wait_flag`` rows (the flag text in
  ``operands``). The producer of a set is the last instruction on its pipe before it;
  the consumer of a wait is the next instruction on its pipe after it, or the wait row
  itself when the scalar unit waits (it then holds dispatch). A set is ready at its row's
  ``start_cycle``.
* traces without sync rows (imports) name the flags in the instructions' ``records`` and
  ``waits`` columns. A set is ready when its producer ends. Perf-Sim's automatic
  dependencies are signalled once and waited on by many, so when there are fewer sets
  than waits, the extra waits pair with the last set.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from sim.trace.frame import BUSY_KINDS

__all__ = ["flag_edges", "edge_positions"]

_COLUMNS = [
    "flag",
    "core",
    "producer_id",
    "producer_pipe",
    "producer_row",
    "consumer_id",
    "consumer_pipe",
    "consumer_row",
    "ready_cycle",
    "consumer_start",
]


def _split(text) -> list[str]:
    return [f for f in str(text).split(";") if f] if text else []


def _from_sync_rows(t: pd.DataFrame) -> list[tuple]:
    out = []
    for _, g in t.groupby(["core", "unit"], sort=False):
        busy: dict[Any, tuple] = {}  # pipe -> (sorted ids, positions)
        r: Any  # a trace row (itertuples): its fields are the schema's
        for pipe, rows in g[g["kind"].isin(BUSY_KINDS)].groupby("pipe", sort=False):
            rows = rows.sort_values("id", kind="stable")
            busy[pipe] = (rows["id"].to_numpy(), rows.index.to_numpy())
        sets, waits = defaultdict(list), defaultdict(list)
        for r in g[g["kind"] == "set_flag"].sort_values("id", kind="stable").itertuples():
            ids, pos = busy.get(r.pipe, (np.empty(0, int), None))
            i = int(np.searchsorted(ids, r.id)) - 1
            sets[r.operands].append((int(pos[i]) if i >= 0 else -1, int(r.start_cycle)))
        for r in g[g["kind"] == "wait_flag"].sort_values("id", kind="stable").itertuples():
            if r.pipe == "PIPE_S":  # the scalar unit waits: dispatch is held
                waits[r.operands].append(r.Index)
                continue
            ids, pos = busy.get(r.pipe, (np.empty(0, int), None))
            i = int(np.searchsorted(ids, r.id))
            waits[r.operands].append(int(pos[i]) if i < len(ids) else -1)
        for flag, ws in waits.items():
            # the n-th set of a flag feeds its n-th wait; a set never waited for has no edge
            for (prod, ready), cons in zip(sets.get(flag, []), ws, strict=False):
                out.append((flag, prod, cons, ready))
    return out


def _from_columns(t: pd.DataFrame) -> list[tuple]:
    out = []
    r: Any  # a trace row (itertuples): its fields are the schema's
    busy = t[t["kind"].isin(BUSY_KINDS)]
    for _, g in busy.groupby("core", sort=False):
        sets, waits = defaultdict(list), defaultdict(list)
        for r in g.sort_values(["end_cycle", "id"], kind="stable").itertuples():
            for f in _split(r.records):
                sets[f].append((r.Index, int(r.end_cycle)))
        for r in g.sort_values(["start_cycle", "id"], kind="stable").itertuples():
            for f in _split(r.waits):
                waits[f].append(r.Index)
        for flag, ws in waits.items():
            ss = sets.get(flag)
            if not ss:
                continue
            for k, cons in enumerate(ws):
                prod, ready = ss[min(k, len(ss) - 1)]
                out.append((flag, prod, cons, ready))
    return out


def edge_positions(trace: pd.DataFrame) -> list[tuple]:
    """``(flag, producer position, consumer position, ready cycle)`` for each matched pair.

    Positions index ``trace`` by row number; pairs without a producer or consumer
    instruction are dropped.
    """
    t = trace.reset_index(drop=True)
    has_sync = t["kind"].isin(["set_flag", "wait_flag"]).any()
    edges = _from_sync_rows(t) if has_sync else _from_columns(t)
    return [e for e in edges if e[1] >= 0 and e[2] >= 0]


def flag_edges(trace: pd.DataFrame) -> pd.DataFrame:
    """One row per set -> wait pair: the flag, producer and consumer instructions.

    ``producer_row`` / ``consumer_row`` are index labels of ``trace``; ``ready_cycle`` is
    when the flag was set, ``consumer_start`` when the released instruction started.
    """
    edges = edge_positions(trace)
    if not edges:
        return pd.DataFrame(columns=_COLUMNS)
    flag, prod, cons, ready = map(list, zip(*edges, strict=True))
    p, c = trace.iloc[prod], trace.iloc[cons]
    return pd.DataFrame(
        {
            "flag": flag,
            "core": c["core"].to_numpy(),
            "producer_id": p["id"].to_numpy(),
            "producer_pipe": p["pipe"].to_numpy(),
            "producer_row": p.index.to_numpy(),
            "consumer_id": c["id"].to_numpy(),
            "consumer_pipe": c["pipe"].to_numpy(),
            "consumer_row": c.index.to_numpy(),
            "ready_cycle": np.asarray(ready, dtype=np.int64),
            "consumer_start": c["start_cycle"].to_numpy(),
        }
    )
