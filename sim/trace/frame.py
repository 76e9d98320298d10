"""Small helpers every analysis of a trace shares.

A trace is a pandas DataFrame with the columns of ``sim.trace.schema``. Traces read from
files, or imported from other simulators, may lack some columns; ``normalize`` adds them
with neutral defaults (0, empty text) so every analysis can rely on the full schema.
Lanes are the rows of a Gantt: one per (core, unit, pipe), ordered core by core, then
unit, then pipe in the order data flows through a core.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sim.trace.schema import COLUMNS, DTYPES, RANK_COLUMNS

__all__ = [
    "normalize",
    "total_cycles",
    "lanes",
    "lane_label",
    "busy_rows",
    "PIPE_ORDER",
    "BUSY_KINDS",
    "covered",
]

PIPE_ORDER = ("PIPE_S", "PIPE_MTE2", "PIPE_MTE1", "PIPE_V", "PIPE_M", "PIPE_FIX", "PIPE_MTE3")
BUSY_KINDS = ("op", "scalar")  # rows whose duration is work on their pipe


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """The schema columns in schema order (missing ones filled), schema dtypes, row order.

    Extra columns are kept after the schema ones; ``rank`` and ``launch`` (a run with
    ranks) before them. Rows are ordered by ``start_cycle``,
    then ``id``, as the engine writes them.
    """
    df = df.copy()
    if "block" not in df.columns and "core" in df.columns:  # a trace from before waves
        df["block"] = df["core"]
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = 0 if DTYPES[col] == "int64" else ""
    for col in COLUMNS:
        if DTYPES[col] != "int64":  # text (categorical)
            df[col] = df[col].fillna("").astype(str)
        else:
            df[col] = pd.to_numeric(df[col]).fillna(0)
    if "duration_cycles" in df.columns and len(df):
        df["duration_cycles"] = df["end_cycle"] - df["start_cycle"]
    ranks = [c for c in RANK_COLUMNS if c in df.columns]  # a run with ranks: first
    extra = [c for c in df.columns if c not in COLUMNS and c not in ranks]
    df = df[ranks + list(COLUMNS) + extra].astype(DTYPES)
    return df.sort_values(["start_cycle", "id"], kind="stable").reset_index(drop=True)


def total_cycles(trace: pd.DataFrame) -> int:
    """The run's length: the largest ``end_cycle`` (0 for an empty trace)."""
    return int(trace["end_cycle"].max()) if len(trace) else 0


def _pipe_key(pipe: str):
    return (PIPE_ORDER.index(pipe) if pipe in PIPE_ORDER else len(PIPE_ORDER), pipe)


def lanes(trace: pd.DataFrame) -> list[tuple[int, str, str]]:
    """(core, unit, pipe) of every pipe that appears in the trace, in display order.

    ``PIPE_ALL`` rows (barriers that hold dispatch) are not a lane of their own.
    """
    keys = trace.loc[trace["pipe"] != "PIPE_ALL", ["core", "unit", "pipe"]].drop_duplicates()
    out = [(int(c), str(u), str(p)) for c, u, p in keys.itertuples(index=False)]
    return sorted(out, key=lambda k: (k[0], k[1], _pipe_key(k[2])))


def lane_label(lane: tuple, all_lanes: list) -> str:
    """A short name for a lane: just the pipe when the trace has one unit of one core."""
    core, unit, pipe = lane
    if len({(c, u) for c, u, _ in all_lanes}) <= 1:
        return pipe
    if len({c for c, _, _ in all_lanes}) <= 1:
        return f"{unit} {pipe}"
    return f"core {core} {unit} {pipe}"


def busy_rows(trace: pd.DataFrame) -> pd.DataFrame:
    """The rows that are work on a pipe (instructions and scalar-unit instructions)."""
    return trace[trace["kind"].isin(BUSY_KINDS)]


def covered(starts, ends, at) -> np.ndarray:
    """Time covered by disjoint intervals ``[starts, ends)`` within ``[0, at)``, per ``at``.

    ``starts`` must be sorted and the intervals must not overlap (one pipe runs one item
    at a time). Vectorised over ``at``; the covered time inside ``[a, b)`` is
    ``covered(.., b) - covered(.., a)``.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    at = np.asarray(at, dtype=np.int64)
    if not len(starts):
        return np.zeros(at.shape, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(ends - starts)])  # covered up to interval i
    i = np.searchsorted(starts, at, side="right") - 1  # last interval starting <= at
    inside = np.clip(at - starts[np.maximum(i, 0)], 0, (ends - starts)[np.maximum(i, 0)])
    return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)
