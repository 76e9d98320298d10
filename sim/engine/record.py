"""Columnar trace recording: what the pipes did, as integers, turned into a DataFrame on demand.

A run of 10^6 instructions writes over 2 * 10^6 trace rows. Most of a row never changes
between the dynamic instances of one statement — its pipe, kind, opcode, repeats, bytes,
operand text, source line and CCE text — so the recorder keeps one *static row* per
distinct issued item and, per dynamic row, only integers in one flat ``array``: sequence
number, static id, dispatch / start / end cycle, stream state, and the ids of its
``waits`` / ``records`` texts (interned). No Python object is kept per row.

``frame()`` builds the trace DataFrame of ``sim.trace.schema`` from these arrays with numpy:
the text columns are categoricals whose codes come straight from the static ids, rows sorted
by start cycle then id (stable), as the schema promises. ``Result.trace`` calls it lazily.
A chip's units are merged the same way (``frame(recorders)``: each unit's static ids and
texts mapped onto one table, rows by start cycle, core, unit and id).

What is kept is selectable (``simulate(..., trace=...)``): ``"full"`` every row, ``"ops"``
no rows for synchronisation statements (their flags still show in ``waits`` / ``records``),
``"none"`` no rows at all — only the totals a sweep needs (cycles, per-pipe busy cycles and
instruction counts).
"""

from __future__ import annotations

import struct
from array import array
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from sim.base.errors import UserError
from sim.timing.plan import COLD, RESTART, WARM
from sim.trace.schema import COLUMNS, DTYPES

if TYPE_CHECKING:  # pandas loads with the first frame: a run's report needs none
    import pandas as pd

__all__ = ["Recorder", "TRACE_MODES", "STREAM", "frame"]

TRACE_MODES = ("full", "ops", "none")
STREAM = {"": 0, COLD: 1, WARM: 2, RESTART: 3}  # stream state -> code in the row array
_STREAM_TEXT = ("", COLD, WARM, RESTART)

# layout of one dynamic row in the flat array
_SEQ, _SID, _DISPATCH, _START, _END, _STREAM, _WAITS, _RECORDS = range(8)
_W = 8
# A row goes in as the bytes of its 8 int64s: ``array.extend`` of a tuple converts each item
# through the generic argument parser (~600 ns a row, a fifth of a timing-only run);
# ``struct`` packs them with the fast integer conversion and ``frombytes`` copies (~190 ns).
_PACK = struct.Struct(f"{_W}q").pack
# fields of one static row
_STATIC = ("pipe", "kind", "opcode", "repeats", "bytes", "operands", "source", "cce")
_BUSY = ("op", "scalar")


class Recorder:
    """Trace rows of one unit (``core``, ``unit``) in columnar form; see the module doc."""

    def __init__(self, core: int = 0, unit: str = "AIV0", mode: str = "full", statics=None):
        """``statics``: a (rows, ids) pair of static-row table shared with other recorders
        (a chip's units and the runs of one program), whose items carry their static id
        from one recorder to the next; None for a table of its own."""
        if mode not in TRACE_MODES:
            raise UserError(f"trace: expected one of {', '.join(TRACE_MODES)}, found {mode!r}")
        self.core, self.unit, self.mode = core, unit, mode
        self.block = core  # the block it ran (sim.engine.waves: another with waves)
        self.cols = array("q")
        self.statics: list[tuple]
        self._static_ids: dict[tuple, int]
        self.statics, self._static_ids = statics if statics is not None else ([], {})
        self.texts = [""]  # waits / records strings, interned
        self._text_ids = {"": 0}
        self._joined: dict = {}  # (records id, text) -> id of both joined
        self._end = 0  # largest end cycle of the rows not kept
        self.busy: dict[str, list[int]] = {}  # pipe -> [busy cycles, instructions] ("none")
        self.ops = 0  # op rows ("none")
        self.op_busy: dict[str, int] = {}  # opcode -> busy cycles of its op rows ("none")
        # the mode picks the recording methods once, per instance (no test per row); mypy
        # does not let an instance shadow a method, hence the ignores
        if mode == "none":
            self.row = self._count  # type: ignore[method-assign]
            # a sync row is never busy: only its end counts
            self.sync_row = self._skip  # type: ignore[method-assign]
        elif mode == "ops":
            self.sync_row = self._skip  # type: ignore[method-assign]

    # --- recording -----------------------------------------------------------------------

    def static_id(self, item) -> int:
        """The static row of an issued item (cached on the item)."""
        sid = item.sid
        if sid is None:
            plan = item.plan
            sid = item.sid = self.intern(
                (
                    item.pipe,
                    item.kind,
                    item.opcode,
                    plan.repeats if plan else 0,
                    plan.bytes if plan else 0,
                    item.text,
                    item.source,
                    plan.detail if plan else "",
                )
            )
        return sid

    def intern(self, static: tuple) -> int:
        sid = self._static_ids.get(static)
        if sid is None:
            sid = self._static_ids[static] = len(self.statics)
            self.statics.append(static)
        return sid

    def text_id(self, text: str) -> int:
        i = self._text_ids.get(text)
        if i is None:
            i = self._text_ids[text] = len(self.texts)
            self.texts.append(text)
        return i

    def row(self, item, seq, dispatch, start, end, stream=0, waits=0) -> int:
        """Append a row; returns its offset (for ``add_record``)."""
        sid = item.sid
        if sid is None:
            sid = self.static_id(item)
        cols = self.cols
        at = len(cols)
        cols.frombytes(_PACK(seq, sid, dispatch, start, end, stream, waits, 0))
        return at

    sync_row = row  # rows of set_flag / wait_flag / barrier statements

    def _count(self, item, seq, dispatch, start, end, stream=0, waits=0) -> int:
        if end > self._end:
            self._end = end
        kind = item.kind
        if kind in _BUSY:
            b = self.busy.get(item.pipe)
            if b is None:
                b = self.busy[item.pipe] = [0, 0]
            b[0] += end - start
            b[1] += 1
            if kind == "op":
                self.ops += 1
                self.op_busy[item.opcode] = self.op_busy.get(item.opcode, 0) + end - start
        return -1

    def _skip(self, item, seq, dispatch, start, end, stream=0, waits=0) -> int:
        if end > self._end:
            self._end = end
        return -1

    def keep_sync_ends(self) -> None:
        """Keep the sequence number and end cycle of every sync row (``sync_ends``), also
        where its rows are not kept: when a set fired and a wait was taken, which a race
        check's proof reads (``sim.engine.racefree``)."""
        self._ends = array("q")
        if self.mode != "full":
            self.sync_row = self._skip_ends  # type: ignore[method-assign]

    def _skip_ends(self, item, seq, dispatch, start, end, stream=0, waits=0) -> int:
        if end > self._end:
            self._end = end
        ends = self._ends
        ends.append(seq)
        ends.append(end)
        return -1

    def sync_ends(self) -> np.ndarray:
        """(sequence number, end cycle) of the sync rows, one row each (``keep_sync_ends``;
        with every row kept, those of every row)."""
        if self.mode == "full":
            return _rows(self)[:, [_SEQ, _END]]
        return np.frombuffer(self._ends, np.int64).reshape(-1, 2)

    def add_record(self, at: int, text: str) -> None:
        """Append ``text`` to the ``records`` of the row at offset ``at``."""
        if at < 0:
            return
        i = at + _RECORDS
        old = self.cols[i]
        new = self._joined.get((old, text))
        if new is None:
            new = self._joined[(old, text)] = self.text_id(
                f"{self.texts[old]};{text}" if old else text
            )
        self.cols[i] = new

    def cce_rows(self, steps, item, seq, pipe, dispatch, start, end) -> None:
        """One row per CCE item of an op (``steps``: (item, cycles) of its timeline), laid
        end to end inside the op's interval."""
        t = float(start)
        for it, cycles in steps:
            s = min(int(t + 0.5), end)
            t += cycles
            e = min(int(t + 0.5), end)
            static = (
                pipe,
                "cce",
                it.name or it.kind,
                it.repeats,
                it.bytes,
                item.text,
                item.source,
                it.describe(),
            )
            self.cce_row(static, seq, dispatch, s, e)

    def cce_row(self, static: tuple, seq, dispatch, start, end) -> None:
        if self.mode == "none":
            return
        self.cols.frombytes(_PACK(seq, self.intern(static), dispatch, start, end, 0, 0, 0))

    # --- reading -------------------------------------------------------------------------

    @property
    def end(self) -> int:
        """The largest end cycle of any item (of the kept rows: read from the array)."""
        if not len(self.cols):
            return self._end
        ends = np.frombuffer(self.cols, dtype=np.int64)[_END::_W]
        return max(self._end, int(ends.max()))

    def pipe_totals(self) -> dict:
        """Pipe -> (busy cycles, instructions) of op and scalar items (mode ``"none"``)."""
        return {p: tuple(v) for p, v in self.busy.items()}

    def frame(self) -> pd.DataFrame:
        """The trace DataFrame (schema of ``sim.trace.schema``), rows by start cycle, then id."""
        return frame((self,))


def _rows(r: Recorder) -> np.ndarray:
    return (
        np.frombuffer(r.cols, dtype=np.int64).reshape(-1, _W)
        if len(r.cols)
        else np.zeros((0, _W), np.int64)
    )


def frame(recorders) -> pd.DataFrame:
    """The trace DataFrame of one or more units' recordings (the schema of
    ``sim.trace.schema``): rows by start cycle, then core, unit and id.

    Every unit numbers its static rows and texts itself; with several units they are
    merged into one table each (a unit's ids mapped onto it with numpy), so the whole
    chip's trace is built from integer arrays as one unit's is."""
    import pandas as pd

    if len(recorders) == 1:
        r = recorders[0]
        rows, statics, texts = _rows(r), r.statics, r.texts
        unit_names = [r.unit]
        order = np.lexsort((rows[:, _SEQ], rows[:, _START]))
        n = len(order)
        cores, units = np.full(n, r.core, np.int64), np.zeros(n, np.int8)
        blocks = np.full(n, r.block, np.int64)

        def column(i):  # one field, rows sorted: its own contiguous array
            return rows[:, i].take(order)
    else:
        column, n, cores, blocks, units, statics, texts, unit_names = _merged(recorders)

    sid = column(_SID)
    static = list(zip(*statics, strict=True)) if statics else [()] * len(_STATIC)
    field = dict(zip(_STATIC, static, strict=True))
    start, end = column(_START), column(_END)
    cols = {
        "id": column(_SEQ),
        "core": cores,
        "block": blocks,
        "unit": _categorical(units, unit_names),
        "dispatch_cycle": column(_DISPATCH),
        "start_cycle": start,
        "end_cycle": end,
        "duration_cycles": end - start,
        "stream": _categorical(column(_STREAM), _STREAM_TEXT),
        "waits": _categorical(column(_WAITS), texts),
        "records": _categorical(column(_RECORDS), texts),
    }
    used = _used(sid, len(statics))  # the static rows the trace has: one count for all
    for name in _STATIC:
        values = field[name]
        if DTYPES[name] == "int64":
            cols[name] = (
                np.asarray(values, np.int64).reshape(-1)[sid] if n else np.zeros(0, np.int64)
            )
        else:
            cols[name] = _categorical(sid, values, used)
    # the columns are fresh arrays: no copy (pandas would stack the int64 ones into one
    # block, doubling the peak memory of a long trace)
    return pd.DataFrame({c: cols[c] for c in COLUMNS}, copy=False)


def _merged(recorders):
    """Several units' rows in one order — start cycle, core, unit, block, id — for
    ``frame``: ``(column, row count, core, block and unit index of each row, statics, texts,
    unit names)``,
    where ``column(i)`` is field ``i`` of every row in that order, static ids and text ids
    mapped onto the merged tables.

    No merged copy of the rows is made (a long trace's peak memory): the order is one
    stable sort of a key packing start, (core, unit) rank and id into an int64 when they
    fit (else a lexsort of the three), and each column is scattered from the units' own
    arrays straight to its place."""
    static_ids: dict = {}
    text_ids: dict = {}
    unit_names = sorted({r.unit for r in recorders})
    parts = [_rows(r) for r in recorders]
    bounds = np.cumsum([0] + [len(p) for p in parts]).tolist()
    n = bounds[-1]
    unit_of = [unit_names.index(r.unit) for r in recorders]
    # a core's blocks run one after the other: (core, unit, block) ranks the units
    keys = [(r.core, u, r.block) for r, u in zip(recorders, unit_of, strict=True)]
    at_rank = {p: i for i, p in enumerate(sorted(set(keys)))}
    pairs = list(at_rank)
    rank = [at_rank[k] for k in keys]
    maps: dict[int, list] = {_SID: [], _WAITS: [], _RECORDS: []}
    shared = all(r.statics is recorders[0].statics for r in recorders)
    if shared:  # one table (a chip's units): the ids are the merged ids
        static_ids = dict.fromkeys(recorders[0].statics)
    for r in recorders:
        if not shared:
            maps[_SID].append(
                np.array(
                    [static_ids.setdefault(st, len(static_ids)) for st in r.statics] or [0],
                    np.int64,
                )
            )
        maps[_WAITS].append(
            np.array([text_ids.setdefault(t, len(text_ids)) for t in r.texts], np.int64)
        )
    maps[_RECORDS] = maps[_WAITS]
    if shared:
        del maps[_SID]

    def top(i):
        return max((int(p[:, i].max()) for p in parts if len(p)), default=0)

    seq_bits, rank_bits = top(_SEQ).bit_length(), (len(pairs) - 1).bit_length()
    low = min((int(p[:, _START].min()) for p in parts if len(p)), default=0)
    if low >= 0 and top(_START).bit_length() + rank_bits + seq_bits <= 63:
        key = np.empty(n, np.int64)
        for p, (a, b), k in zip(parts, pairwise(bounds), rank, strict=True):
            part = key[a:b]
            np.left_shift(p[:, _START], rank_bits + seq_bits, out=part)
            part |= (k << seq_bits) | p[:, _SEQ]
        order = key.argsort(kind="stable")
    else:

        def joined(i):
            return np.concatenate([p[:, i] for p in parts])

        key = np.repeat(np.array(rank, np.int64), np.diff(bounds))
        order = np.lexsort((joined(_SEQ), key, joined(_START)))
    del key
    small = np.int32 if n < 2**31 else np.intp
    at = np.empty(n, small)  # where each unit's rows go
    at[order] = np.arange(n, dtype=small)
    del order
    places = [at[a:b] for a, b in pairwise(bounds)]

    def column(i):
        out = np.empty(n, np.int64)
        m = maps.get(i)
        for j, (p, to) in enumerate(zip(parts, places, strict=True)):
            out[to] = p[:, i] if m is None else m[j][p[:, i]]
        return out

    def fill(values):
        out = np.empty(n, np.int64)
        for v, to in zip(values, places, strict=True):
            out[to] = v
        return out

    return (
        column,
        n,
        fill([r.core for r in recorders]),
        fill([r.block for r in recorders]),
        fill(unit_of),
        list(static_ids),
        list(text_ids),
        unit_names,
    )


def _used(codes: np.ndarray, size: int) -> list:
    """The codes in ``codes`` (of ``range(size)``), ascending."""
    return np.flatnonzero(np.bincount(codes, minlength=size)).tolist()


def _categorical(codes: np.ndarray, values, used=None) -> pd.Categorical:
    """Categorical of ``values[codes]``: categories the values used (``used``: the codes
    present, when known), sorted, as pandas infers."""
    import pandas as pd

    values = list(values)
    if used is None:
        used = _used(codes, len(values))
    cats = sorted({values[i] for i in used})
    at = {c: i for i, c in enumerate(cats)}
    # codes in the small dtype pandas keeps them in, so it need not convert them
    remap = np.zeros(len(values), np.min_scalar_type(-len(cats) - 1))
    remap[used] = [at[values[i]] for i in used]
    return pd.Categorical.from_codes(remap[codes], dtype=_dtype(tuple(cats)), validate=False)


_DTYPES: dict[tuple, pd.CategoricalDtype] = {}
_MAX_DTYPES = 1024


def _dtype(cats: tuple) -> pd.CategoricalDtype:
    """The categorical dtype of ``cats``, made once per process: building one validates its
    categories (a hash table of them), which costs more than the column of a short run."""
    dtype = _DTYPES.get(cats)
    if dtype is None:
        import pandas as pd

        if len(_DTYPES) >= _MAX_DTYPES:
            _DTYPES.clear()
        # the string dtype pandas infers
        dtype = _DTYPES[cats] = pd.CategoricalDtype(pd.Index(cats, dtype=_str_dtype(pd)))
    return dtype


_STR: list = []


def _str_dtype(pd):
    """The string dtype pandas infers, resolved once."""
    if not _STR:
        _STR.append(pd.Index([], dtype=str).dtype)
    return _STR[0]
