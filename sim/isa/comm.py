"""The PTO communication ISA between ranks (NPUs), as IR and pure semantics.

communication.md restates the ISA; this module holds what does not depend on time:

* ``CommOp``, the statement of a communication instruction (``pto.comm.tput`` ...): its
  operands, attributes and the **peer** rank its remote operand lives on. Windows are
  symmetric (communication.md §3: a buffer sits at the same offset in every rank's window,
  ``CommRemotePtr``), so a remote GM operand is "this GM view, on rank ``peer``";
* the signal rules: ``NotifyOp`` (``set``, ``atomic_add``, §2) and ``WaitCmp`` (``eq ne gt
  ge lt le``, §2), on int32 words;
* the chunking of the UB-staged ``TPUT`` / ``TGET`` (§5.1: rows ``d0..d3`` flattened, columns
  ``d4``; one chunk when all fits the staging tile's valid rows x cols, else row chunks of the
  valid rows, then column chunks of the valid cols; a static valid extent must divide the
  transfer's);
* the automatic intra-tile ping-pong (§5.1 step 3, ``half_split``): one staging tile whose
  full capacity is every chunk, and enough chunks, moves each chunk as two half-height halves
  through the tile's top and bottom halves, one half's store overlapping the other's load.

The engine (``sim.engine.comm``) runs the statements; the builder (``sim.kernel.comm``)
writes them.
"""

from __future__ import annotations

import numpy as np
from attrs import field, frozen

from sim.base.errors import UserError
from sim.isa.program import SourceLoc

__all__ = [
    "COLLECTIVES",
    "CONTEXT_WORDS",
    "WINDOW_BYTES",
    "context_words",
    "COMM_OPS",
    "NOTIFY_OPS",
    "WAIT_CMPS",
    "ATOMIC_TYPES",
    "CommOp",
    "chunks",
    "half_split",
    "notify",
    "satisfied",
]

# op -> (first pipe, last pipe): where a token the op waits on is waited, and which pipe the
# token it returns is on (communication.md §1 table: UB-staged TPUT / TGET load on MTE2 and
# store on MTE3; signals are scalar-unit code)
COMM_OPS = {
    "pto.comm.tput": ("PIPE_MTE2", "PIPE_MTE3"),
    "pto.comm.tget": ("PIPE_MTE2", "PIPE_MTE3"),
    "pto.comm.tnotify": ("PIPE_S", "PIPE_S"),
    "pto.comm.twait": ("PIPE_S", "PIPE_S"),
    "pto.comm.ttest": ("PIPE_S", "PIPE_S"),
    # the collectives, AIV engine (§5.4): the root's MTE2 loads and MTE3 stores
    "pto.comm.tbroadcast": ("PIPE_MTE2", "PIPE_MTE3"),
    "pto.comm.tscatter": ("PIPE_MTE2", "PIPE_MTE3"),
    "pto.comm.tgather": ("PIPE_MTE2", "PIPE_MTE3"),
    "pto.comm.treduce": ("PIPE_MTE2", "PIPE_MTE3"),
    # the async forms: the scalar unit posts to the SDMA engines and polls (§5.5)
    "pto.comm.build_async_session": ("PIPE_S", "PIPE_S"),
    "pto.comm.tput_async": ("PIPE_S", "PIPE_S"),
    "pto.comm.tget_async": ("PIPE_S", "PIPE_S"),
    "pto.comm.wait_async_event": ("PIPE_S", "PIPE_S"),
    "pto.comm.test_async_event": ("PIPE_S", "PIPE_S"),
}

# The communication context a kernel reads its rank and its peers' windows from
# (communication.md §3, CommDeviceContext, 64-bit words): [0] workSpace, [1] workSpaceSize,
# [2] rankId (low 32 bits) | rankNum (high 32 bits), [3] winSize, [4 + r] windowsIn[r],
# [68 + r] windowsOut[r]. The simulator's windows are WINDOW_BYTES apart: rank r's at
# (r + 1) * WINDOW_BYTES, so a pointer moved by windowsIn[peer] - windowsIn[rankId] (the
# CommRemotePtr rule) lands that many windows away, in the peer's copy of the same buffer.
WINDOW_BYTES = 1 << 59  # (r + 1) * 2^59 fits an int64 for 8 ranks
CONTEXT_WORDS = 4 + 64 + 64


def context_words(rank: int, ranks: int) -> np.ndarray:
    """The CommDeviceContext of ``rank`` in a run of ``ranks`` (int64 words)."""
    w = np.zeros(CONTEXT_WORDS, np.int64)
    w[2] = rank | (ranks << 32)
    w[3] = WINDOW_BYTES
    for r in range(ranks):
        w[4 + r] = w[68 + r] = (r + 1) * WINDOW_BYTES
    return w


NOTIFY_OPS = ("atomic_add", "set")  # NotifyOp: AtomicAdd (0), Set (1)
WAIT_CMPS = ("eq", "ne", "gt", "ge", "lt", "le")  # WaitCmp 0..5
ATOMIC_TYPES = ("atomic_none", "atomic_add")  # TPUT's AtomicType

_CMP = {
    "eq": np.equal,
    "ne": np.not_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "lt": np.less,
    "le": np.less_equal,
}
_CMP_TEXT = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _attr_items(a) -> tuple:
    return tuple(sorted(dict(a).items()))


@frozen
class CommOp:
    """A communication instruction (communication.md §1).

    ``op`` is its IR name (``COMM_OPS``); ``operands`` in the IR's order: ``tput`` / ``tget``
    (dst view, src view, ping tile[, pong tile]), ``tnotify`` / ``twait`` / ``ttest`` (signal
    view, value), ``build_async_session`` (scratch tile[, workspace]), ``tput_async`` /
    ``tget_async`` (dst view, src view, session), ``wait_async_event`` /
    ``test_async_event`` (event, session); ``results`` the ``i1`` of ``ttest``, the session,
    the event, the ``i1`` of a wait / test; ``build_async_session``'s ``attrs`` are
    ``queue_num``, ``block_bytes``, ``channel_group_idx``. The collectives (``tbroadcast``:
    src; ``tscatter``: the root's src; ``tgather``: the root's dst) take (that view, the
    ``stages`` staging tiles, the group's views) with ``root``; a builder group is one view
    meaning that view on every rank (``symmetric``); ``treduce`` takes (dst, acc tile, the
    ``stages`` recv tiles, the group) with ``root`` and ``reduceOp``; ``attrs`` ``atomicType``,
    ``notifyOp`` or ``cmp``; ``peer`` the rank whose window holds the remote operand (TPUT's
    dst, TGET's src, TNOTIFY's signal), a scalar or constant; None for this rank."""

    results: tuple = field(converter=tuple)
    op: str = ""
    operands: tuple = field(default=(), converter=tuple)
    attrs: tuple = field(default=(), converter=_attr_items)
    peer: object = None
    loc: SourceLoc | None = field(default=None, eq=False, repr=False, kw_only=True)

    def attr(self, key: str, default=None):
        return dict(self.attrs).get(key, default)


def check_attrs(op: str, a: dict, where: str) -> None:
    """The enumerated attributes of ``op`` are ones the ISA has (communication.md §2)."""
    rules = {
        "pto.comm.tput": ("atomicType", ATOMIC_TYPES),
        "pto.comm.tnotify": ("notifyOp", NOTIFY_OPS),
        "pto.comm.twait": ("cmp", WAIT_CMPS),
        "pto.comm.ttest": ("cmp", WAIT_CMPS),
    }
    rule = rules.get(op)
    if rule is None:
        return
    key, allowed = rule
    v = a.get(key)
    if v is not None and v not in allowed:
        raise UserError(f"{where}: {op}: {key}: expected one of {', '.join(allowed)}, found {v!r}")


COLLECTIVES = ("pto.comm.tbroadcast", "pto.comm.tscatter", "pto.comm.tgather", "pto.comm.treduce")
REDUCE_OPS = ("sum", "max", "min")  # ReduceOp (§2: no product)


def satisfied(values: np.ndarray, cmp: str, value: int) -> bool:
    """Whether **every** element of a signal satisfies ``signal cmp value`` (TWAIT returns,
    TTEST answers true: communication.md §5.3)."""
    return bool(_CMP[cmp](np.asarray(values, np.int32), np.int32(value)).all())


def cmp_text(cmp: str) -> str:
    return _CMP_TEXT[cmp]


def notify(old: int, op: str, value: int) -> int:
    """A signal's int32 after ``TNOTIFY(value, op)``: ``set`` stores, ``atomic_add`` adds
    with the int32 wrap of the hardware atomic (communication.md §5.2)."""
    if op == "set":
        return int(np.int32(value))
    return int((np.int64(old) + np.int64(value) + 2**31) % 2**32 - 2**31)


def chunks(
    rows: int, cols: int, stage_rows: int, stage_cols: int, where: str = ""
) -> list[tuple[int, int, int, int]]:
    """The (row, rows, col, cols) chunks a UB-staged transfer of ``rows x cols`` elements
    moves through a staging tile whose valid region is ``stage_rows x stage_cols``
    (communication.md §5.1: row chunks over the rows, column chunks inside each)."""
    if stage_rows <= 0 or stage_cols <= 0:
        raise UserError(
            f"{where}: the staging tile's valid region is {stage_rows}x{stage_cols}; "
            f"expected a non-empty one"
        )
    if rows <= 0 or cols <= 0:
        return []  # a zero extent moves nothing (communication.md §1.1)
    if rows <= stage_rows and cols <= stage_cols:
        return [(0, rows, 0, cols)]
    for extent, step, what in ((rows, stage_rows, "rows"), (cols, stage_cols, "cols")):
        if extent > step and extent % step:
            raise UserError(
                f"{where}: the transfer's {extent} {what} are not a multiple of the staging "
                f"tile's {step} valid {what} (communication.md §5.1: a static valid extent "
                f"must divide the transfer's)"
            )
    r_step, c_step = min(rows, stage_rows), min(cols, stage_cols)
    return [(r, r_step, c, c_step) for r in range(0, rows, r_step) for c in range(0, cols, c_step)]


# §5.1 step 3: the chunk counts for which the library splits each full chunk in two (TPUT
# 8..16 chunks, TGET 8 and more: a code difference between the two, §11)
HALF_SPLIT_CHUNKS = {"tput": (8, 16), "tget": (8, None)}


def half_split(
    op: str, stage, n_stages: int, parts: list[tuple[int, int, int, int]]
) -> list[tuple[int, int, int, int]] | None:
    """The chunks of a TPUT / TGET (``op`` "tput" / "tget") after the automatic intra-tile
    ping-pong of communication.md §5.1 step 3, or None when it does not apply: one staging
    tile (no pong) of type ``stage`` (a ``TileType``) that is Vec, row-major and unboxed with
    an even number of rows (>= 2), every chunk the tile's full capacity, and a chunk count of
    8..16 for TPUT (8 or more for TGET). Each chunk then becomes its top and bottom halves,
    which run as the two-tile ping-pong of step 4 (the tile's halves being ping and pong)."""
    lo, hi = HALF_SPLIT_CHUNKS[op]
    n = len(parts)
    if (
        n_stages != 1
        or stage.loc.value != "vec"
        or not stage.is_row_major
        or stage.rows < 2
        or stage.rows % 2
        or n < lo
        or (hi is not None and n > hi)
        or any(nr != stage.rows or nc != stage.cols for _, nr, _, nc in parts)
    ):
        return None
    h = stage.rows // 2
    return [(r + k * h, h, c, nc) for r, _, c, nc in parts for k in (0, 1)]
