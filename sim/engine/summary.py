"""The report's summaries straight from a run's recording, without the trace DataFrame.

``ptosim run`` prints totals per pipe, per unit and per opcode and the first instruction
rows. Building the whole trace frame for that (``sim.engine.record.frame``) cost a chip
GEMM of 388 224 instructions 0.4 s and 140 MB; these summaries read the recorders' row
arrays instead. Every row of a unit repeats one of a few static rows (pipe, kind,
opcode, operands ...), so the sums are one ``bincount`` per unit over the static ids, and
only two small selections look at rows one by one: the first appearance of each opcode
(it orders opcodes of equal cycles) and the first instruction rows by id.

The figures are those ``sim.trace.report`` computes from the frame, in the same order
(tests/test_summary.py compares the two): the frame is ordered by start cycle, then core,
unit and id, and each sort here keeps that order among equals.
"""

from __future__ import annotations

import numpy as np

from sim.engine.record import _END, _SEQ, _SID, _START, _rows
from sim.trace.text import PIPE_RANK, units_from_totals

__all__ = ["Summary"]

_SYNC = ("set_flag", "wait_flag", "barrier")  # rows that list no pipe of their own
_BUSY = ("op", "scalar")  # rows whose duration is work
# fields of a static row (sim.engine.record._STATIC)
_PIPE, _KIND, _OPCODE, _OPERANDS = 0, 1, 2, 5


class Summary:
    """Per unit and static row: how many rows and their busy cycles; see the module doc."""

    def __init__(self, recorders):
        self._units = []  # (recorder, rows, {sid: (rows, busy cycles)})
        for r in recorders:
            rows = _rows(r)
            if not len(rows):
                continue
            sid = rows[:, _SID]
            count = np.bincount(sid)
            # float sums of integers below 2^53: exact
            busy = np.bincount(sid, weights=rows[:, _END] - rows[:, _START])
            present = np.flatnonzero(count).tolist()
            self._units.append((r, rows, {s: (int(count[s]), int(busy[s])) for s in present}))

    def _each(self):
        """(core, unit, static row, rows, busy) of every static row a unit has rows of."""
        for r, _, per in self._units:
            statics = r.statics
            for s, (n, b) in per.items():
                yield r.core, r.unit, statics[s], n, b

    @property
    def instructions(self) -> int:
        return sum(n for _, _, st, n, _ in self._each() if st[_KIND] == "op")

    def pipes(self, total: int) -> dict:
        """``sim.trace.report.pipe_summary``: pipe -> busy cycles, utilisation, instructions."""
        holders: dict[str, set] = {}
        listed: set = set()
        busy: dict = {}
        for core, unit, st, n, b in self._each():
            pipe, kind = st[_PIPE], st[_KIND]
            if pipe == "PIPE_ALL":
                continue
            holders.setdefault(pipe, set()).add((core, unit))
            if kind not in _SYNC:
                listed.add(pipe)
            if kind in _BUSY:
                t = busy.setdefault(pipe, [0, 0])
                t[0] += b
                t[1] += n
        out = {}
        for pipe in sorted(listed, key=PIPE_RANK):
            b, n = busy.get(pipe, (0, 0))
            span = total * len(holders[pipe])
            out[pipe] = {
                "busy_cycles": b,
                "utilization": round(b / span, 4) if span else 0.0,
                "instructions": n,
            }
        return out

    def units(self, total: int) -> list[dict]:
        """``sim.trace.report.unit_summary``: per (core, unit), its pipes and opcodes."""
        totals: dict = {}
        for core, unit, st, _, _ in self._each():
            if st[_PIPE] != "PIPE_ALL":
                totals.setdefault((core, unit), ({}, {}))
        for core, unit, st, n, b in self._each():
            if st[_KIND] not in _BUSY or (core, unit) not in totals:
                continue
            pipes, ops = totals[(core, unit)]
            t = pipes.get(st[_PIPE], (0, 0))
            pipes[st[_PIPE]] = (t[0] + b, t[1] + n)
            if st[_KIND] == "op":
                ops[st[_OPCODE]] = ops.get(st[_OPCODE], 0) + b
        return units_from_totals([(c, u, p, o) for (c, u), (p, o) in totals.items()], total)

    def ops(self) -> list[tuple]:
        """``sim.trace.report.op_summary`` as rows ``(opcode, pipe, count, total cycles,
        mean cycles)``: by total cycles, descending; equals in order of first appearance."""
        sums: dict = {}
        for _, _, st, n, b in self._each():
            if st[_KIND] == "op":
                t = sums.setdefault((st[_OPCODE], st[_PIPE]), [0, 0])
                t[0] += n
                t[1] += b
        first: dict = {}
        for r, rows, _ in self._units:
            ops = rows[self._is_op(r)[rows[:, _SID]]]
            order = np.lexsort((ops[:, _SEQ], ops[:, _START]))
            sids, at = np.unique(ops[order, _SID], return_index=True)
            for s, i in zip(sids.tolist(), order[at].tolist(), strict=True):
                st = r.statics[s]
                key = (st[_OPCODE], st[_PIPE])
                where = (int(ops[i, _START]), r.core, r.unit, int(ops[i, _SEQ]))
                if key not in first or where < first[key]:
                    first[key] = where
        keys = sorted(sums, key=lambda k: first[k])
        keys.sort(key=lambda k: -sums[k][1])
        return [
            (o, p, sums[(o, p)][0], sums[(o, p)][1], sums[(o, p)][1] / sums[(o, p)][0])
            for o, p in keys
        ]

    def rows(self, count: int) -> list[dict]:
        """The first ``count`` instruction rows by id (equals in trace order), as mappings
        of the schema's columns."""
        found = []
        for r, rows, _ in self._units:
            ops = rows[self._is_op(r)[rows[:, _SID]]]
            for i in np.lexsort((ops[:, _START], ops[:, _SEQ]))[:count].tolist():
                row = ops[i]
                found.append(((int(row[_SEQ]), int(row[_START]), r.core, r.unit), r, row))
        found.sort(key=lambda f: f[0])
        out = []
        for (seq, start, core, unit), r, row in found[:count]:
            st = r.statics[int(row[_SID])]
            end = int(row[_END])
            out.append(
                {
                    "core": core,
                    "unit": unit,
                    "id": seq,
                    "opcode": st[_OPCODE],
                    "pipe": st[_PIPE],
                    "start_cycle": start,
                    "end_cycle": end,
                    "duration_cycles": end - start,
                    "operands": st[_OPERANDS],
                }
            )
        return out

    @staticmethod
    def _is_op(r) -> np.ndarray:
        return np.array([st[_KIND] == "op" for st in r.statics] or [False], bool)
