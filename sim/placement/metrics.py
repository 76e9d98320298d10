"""What a run cost in synchronisation and memory, from its trace and its program.

* ``sync_counts``: set/wait pairs (executed ``set_flag`` rows), ``wait_flag`` rows, pipe
  barriers and full (``PIPE_ALL``) barriers;
* ``occupancy``: one interval per (tile, address) — from the start of the first
  instruction that touches the tile at that address to the end of the last one — with
  its byte range. Addresses come from the ``alloc_tile`` (or the engine's own placement
  for tiles declared without one), follow ``TASSIGN`` rows, and alternate by iteration for
  auto mode's double-buffered tiles (a new iteration starts at the tile's first access in
  the loop body);
* ``peak_bytes``: per buffer, the largest number of bytes covered by intervals live at
  the same cycle (overlapping tiles count their shared bytes once).
"""

from __future__ import annotations

import re

import pandas as pd

from sim.isa.program import Alloc, Reshape, Subview, walk
from sim.placement.ir import constant_addresses

__all__ = ["sync_counts", "occupancy", "peak_bytes", "initial_addresses", "OCCUPANCY_COLUMNS"]

OCCUPANCY_COLUMNS = ["tile", "buffer", "start_byte", "end_byte", "start_cycle", "end_cycle"]
_NAME = re.compile(r"%([A-Za-z0-9_.$-]+)")
_ASSIGN = re.compile(r"^%([A-Za-z0-9_.$-]+) <- (-?\d+)\s*$")


def sync_counts(trace: pd.DataFrame) -> dict:
    kind, pipe = trace["kind"], trace["pipe"]
    bar = kind == "barrier"
    return {
        "syncs": int((kind == "set_flag").sum()),
        "waits": int((kind == "wait_flag").sum()),
        "barriers": int((bar & (pipe != "PIPE_ALL")).sum()),
        "full_barriers": int((bar & (pipe == "PIPE_ALL")).sum()),
    }


def occupancy(
    trace: pd.DataFrame, program, addresses: dict, double: dict | None = None
) -> pd.DataFrame:
    """Tile live intervals of a run. ``addresses``: tile name -> initial byte address
    (tiles missing from it are skipped); ``double``: tile name -> ``(addr0, addr1, opcode,
    operands)`` of auto mode's double-buffered tiles and their first access in the body."""
    double = double or {}
    tiles: dict = {}
    root: dict = {}
    for st in (s for f in program.functions for s in walk(f.body)):
        if isinstance(st, Alloc):
            tiles[st.tile.name] = st.tile
        elif isinstance(st, (Subview, Reshape)):
            root[st.result.name] = root.get(st.source.name, st.source.name)
    current = {n: a for n, a in addresses.items() if a is not None}
    count: dict[str, int] = {}
    spans: dict[tuple, list] = {}
    rows = trace[trace["kind"].isin(["op", "scalar"])].sort_values("id", kind="stable")
    for opcode, text, start, end in zip(
        rows["opcode"], rows["operands"], rows["start_cycle"], rows["end_cycle"], strict=True
    ):
        text = "" if pd.isna(text) else str(text)
        if opcode == "TASSIGN":
            m = _ASSIGN.match(text)
            if m:
                current[m.group(1)] = int(m.group(2))
            continue
        for name in dict.fromkeys(_NAME.findall(text)):
            name = root.get(name, name)
            if name not in tiles:
                continue
            if name in double:
                a0, a1, op0, text0 = double[name]
                if (opcode, text) == (op0, text0):
                    count[name] = count.get(name, 0) + 1
                addr = (a0, a1)[(max(count.get(name, 1), 1) - 1) % 2]
            else:
                addr = current.get(name)
            if addr is None:
                continue
            span = spans.setdefault((name, addr), [int(start), int(end)])
            span[0], span[1] = min(span[0], int(start)), max(span[1], int(end))
    out = [
        (n, tiles[n].loc.buffer, a, a + tiles[n].type.nbytes, s, e)
        for (n, a), (s, e) in spans.items()
    ]
    df = pd.DataFrame(out, columns=OCCUPANCY_COLUMNS)
    return df.sort_values(["buffer", "start_cycle", "start_byte"], kind="stable").reset_index(
        drop=True
    )


def _union(ranges) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(ranges):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def peak_bytes(occ: pd.DataFrame) -> dict:
    """Buffer -> most bytes held by live tiles at one time (intervals are [start, end)
    in cycles; a zero-length one counts for its start cycle)."""
    out = {}
    for buf, g in occ.groupby("buffer", sort=True):
        iv = [
            (int(s), max(int(e), int(s) + 1), int(a), int(b))
            for s, e, a, b in zip(
                g["start_cycle"], g["end_cycle"], g["start_byte"], g["end_byte"], strict=True
            )
        ]
        best = 0
        for t in sorted({s for s, *_ in iv}):
            best = max(best, _union((a, b) for s, e, a, b in iv if s <= t < e))
        out[str(buf)] = best
    return out


def initial_addresses(program, engine_placed: dict) -> dict:
    """Tile name -> address at allocation, in every function: a constant ``addr=`` (a
    literal or an ``arith.constant`` value), else the engine's choice."""
    out = {}
    for f in program.functions:
        hand = constant_addresses(f)
        for st in walk(f.body):
            if isinstance(st, Alloc):
                if st.tile in hand:
                    out[st.tile.name] = hand[st.tile]
                elif st.addr is None and st.tile in engine_placed:
                    out[st.tile.name] = int(engine_placed[st.tile])
    return out
