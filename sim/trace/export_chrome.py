"""Chrome Trace Event export: open a trace in Perfetto or chrome://tracing.

The file is the JSON object form of the Trace Event Format:

* one process per AI core (``pid`` = core, named ``core <n>``; in the trace of a run with
  ranks one per core of each rank's launch, named ``rank <r> [kernel <s>] core <n>``, with
  ``rank`` and ``launch`` in every slice's ``args``), one thread per pipe of a
  unit (``tid`` = ``"<unit> <pipe>"``, e.g. ``"AIV0 PIPE_V"``), named by ``thread_name``
  metadata and ordered by ``thread_sort_index`` as data flows through a core;
* one complete slice (``ph: "X"``) per trace row: instructions, sync statements (a
  ``wait_flag`` slice spans the time its pipe was blocked) and, with ``--detail cce``,
  the CCE instructions nested inside their op. ``args`` holds every schema column, so
  the file imports back into the same DataFrame;
* one flow arrow (``ph: "s"`` on the producer, ``ph: "f"`` on the consumer, a shared
  ``id``) per matched set_flag -> wait_flag pair, named by the flag.

``ts`` and ``dur`` are core clock cycles, not microseconds: the viewers label the axis in
their own unit, so read "1 us" as 1 cycle. ``otherData`` says so and records the total.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from sim.trace.flags import edge_positions
from sim.trace.frame import lanes, total_cycles
from sim.trace.schema import COLUMNS, DTYPES, RANK_COLUMNS

__all__ = ["to_chrome", "write_chrome", "TIME_UNIT_NOTE"]

TIME_UNIT_NOTE = "ts and dur are core clock cycles (the viewer's 1 us = 1 cycle)"


def tid_of(unit: str, pipe: str) -> str:
    return f"{unit} {pipe}"


def _processes(trace: pd.DataFrame) -> tuple[list[int], dict[int, str]]:
    """Each row's ``pid`` and every process's name: a core (``pid`` = core); in the trace of
    a run with ranks, a core of one rank's launch (``pid`` numbers them in order)."""
    core = [int(c) for c in trace["core"]]
    if "rank" not in trace.columns:
        return core, {c: f"core {c}" for c in set(core)}
    launch = trace["launch"] if "launch" in trace.columns else [0] * len(trace)
    keys = [(int(r), int(s), c) for r, s, c in zip(trace["rank"], launch, core, strict=True)]
    order = {k: i for i, k in enumerate(sorted(set(keys)))}
    several = any(s for _, s, _ in order)
    names = {
        i: f"rank {r}" + (f" kernel {s}" if several else "") + f" core {c}"
        for (r, s, c), i in order.items()
    }
    return [order[k] for k in keys], names


def _metadata(trace: pd.DataFrame, pids: list[int], names: dict[int, str]) -> list[dict]:
    events = []
    t = trace.assign(core=pids)  # a process per pid: its lanes as a core's
    all_lanes = lanes(t)
    extra = t.loc[t["pipe"] == "PIPE_ALL", ["core", "unit"]].drop_duplicates()
    all_lanes += [(int(c), str(u), "PIPE_ALL") for c, u in extra.itertuples(index=False)]
    for pid in sorted({c for c, _, _ in all_lanes}):
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": 0,
                "name": "process_name",
                "args": {"name": names[pid]},
            }
        )
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": 0,
                "name": "process_sort_index",
                "args": {"sort_index": pid},
            }
        )
    for i, (pid, unit, pipe) in enumerate(all_lanes):
        tid = tid_of(unit, pipe)
        events.append(
            {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": tid}}
        )
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "name": "thread_sort_index",
                "args": {"sort_index": i},
            }
        )
    return events


def _name(row: dict) -> str:
    if row["kind"] in ("set_flag", "wait_flag", "barrier"):
        return f"{row['opcode']} {row['operands']}".strip()
    return row["opcode"]


def _slices(trace: pd.DataFrame, pids: list[int]) -> list[dict]:
    cols = [c for c in RANK_COLUMNS if c in trace.columns] + list(COLUMNS)
    records: list[dict[Any, Any]] = trace[cols].to_dict("records")
    out = []
    for r, pid in zip(records, pids, strict=True):
        args = {k: (str(v) if DTYPES.get(k, "int64") != "int64" else int(v)) for k, v in r.items()}
        out.append(
            {
                "name": _name(r),
                "cat": r["kind"],
                "ph": "X",
                "ts": args["start_cycle"],
                "dur": args["duration_cycles"],
                "pid": pid,
                "tid": tid_of(r["unit"], r["pipe"]),
                "args": args,
            }
        )
    return out


def _edges(trace: pd.DataFrame) -> list[tuple]:
    """``edge_positions`` of the trace; of each rank's launch apart in the trace of a run
    with ranks (a flag pairs only within one chip), positions into the whole trace."""
    if "rank" not in trace.columns:
        return edge_positions(trace)
    t = trace.reset_index(drop=True)
    keys = [k for k in ("rank", "launch") if k in t.columns]
    out = []
    for _, g in t.groupby(keys, sort=True):
        at = g.index.to_numpy()
        out += [(f, int(at[p]), int(at[c]), r) for f, p, c, r in edge_positions(g)]
    return out


def _flows(trace: pd.DataFrame, pids: list[int]) -> list[dict]:
    core = pids
    tid = [tid_of(u, p) for u, p in zip(trace["unit"], trace["pipe"], strict=True)]
    start, end = trace["start_cycle"].to_numpy(), trace["end_cycle"].to_numpy()
    out = []
    for n, (flag, prod, cons, _ready) in enumerate(_edges(trace), start=1):
        # the start must lie inside the producer's slice to bind to it
        ts = int(max(start[prod], end[prod] - 1))
        out.append(
            {
                "name": flag,
                "cat": "flag",
                "ph": "s",
                "id": n,
                "pid": int(core[prod]),
                "tid": tid[prod],
                "ts": ts,
            }
        )
        out.append(
            {
                "name": flag,
                "cat": "flag",
                "ph": "f",
                "bp": "e",
                "id": n,
                "pid": int(core[cons]),
                "tid": tid[cons],
                "ts": int(start[cons]),
            }
        )
    return out


def to_chrome(trace: pd.DataFrame, *, kernel: str = "", target: str = "") -> dict:
    """The trace as a Chrome Trace Event JSON object (a dict ready for ``json.dump``)."""
    pids, names = _processes(trace)
    return {
        "traceEvents": _metadata(trace, pids, names) + _slices(trace, pids) + _flows(trace, pids),
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "pto-sim",
            "time_unit": "cycles",
            "note": TIME_UNIT_NOTE,
            "total_cycles": total_cycles(trace),
            "kernel": kernel,
            "target": target,
        },
    }


def write_chrome(trace: pd.DataFrame, path, **meta) -> Path:
    """Write ``to_chrome(trace)`` to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        json.dump(to_chrome(trace, **meta), f, separators=(",", ":"))
    return path
